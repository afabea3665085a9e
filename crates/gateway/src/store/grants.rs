//! Upstream OAuth grants shared by a fleet, sealed at rest: a login made on one replica's host
//! (`gateway login`) is in force on every replica, and a refresh one replica makes is the one
//! the others use (with refresh-token rotation, two replicas refreshing with one refresh token
//! would leave one of them logged out).
//!
//! Each grant is kept in `toolsearch_grants` as XChaCha20-Poly1305 ciphertext under a key
//! derived from `toolsearch.state.key`, its server's name bound in as associated data (a row
//! copied to another server does not open), with the time its token was had (`obtained_at`) in
//! clear: the newer of a replica's file and the row wins. A logout leaves a row with no grant,
//! so replicas forget theirs. A refresh runs under a fleet-wide advisory lock on the server's
//! grant, after pulling the row, and pushes what it got before the lock is released.
//!
//! Replicas sync every second (a login reaches them within about a second, their files
//! changing as a local login's would); the login code finds its state dir's store through
//! [`register`], keyed by the state dir.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};
use tokio_postgres::Client;

use crate::login::store::{self as files, Grant};

/// A fleet's grants: where they are and the key that seals them.
pub(crate) struct SharedGrants {
    url: String,
    cipher: XChaCha20Poly1305,
}

fn shared() -> &'static Mutex<HashMap<PathBuf, Arc<SharedGrants>>> {
    static SHARED: OnceLock<Mutex<HashMap<PathBuf, Arc<SharedGrants>>>> = OnceLock::new();
    SHARED.get_or_init(Mutex::default)
}

/// Makes the grants under `state` shared through the store at `url`, sealed with `key`.
pub(crate) fn register(state: &Path, url: &str, key: &str) -> Arc<SharedGrants> {
    let grants = Arc::new(SharedGrants::new(url, key));
    shared().lock().unwrap_or_else(|p| p.into_inner()).insert(state.to_path_buf(), grants.clone());
    grants
}

/// The shared grants of the state dir `state`, if it is in a fleet.
pub(crate) fn of(state: &Path) -> Option<Arc<SharedGrants>> {
    shared().lock().unwrap_or_else(|p| p.into_inner()).get(state).cloned()
}

/// A fleet-wide lock on one server's grant: released when its connection closes (dropped).
pub(crate) struct FleetLock(#[allow(dead_code)] Client);

impl SharedGrants {
    /// Grants in the store at `url`, sealed under a key derived from `key`.
    pub(crate) fn new(url: &str, key: &str) -> SharedGrants {
        let derived: [u8; 32] = Sha256::digest(format!("toolsearch grants\0{key}").as_bytes()).into();
        SharedGrants { url: url.to_owned(), cipher: XChaCha20Poly1305::new(&derived.into()) }
    }

    fn seal(&self, server: &str, grant: &Grant) -> Result<Vec<u8>, String> {
        self.seal_value(server, grant)
    }

    fn open(&self, server: &str, sealed: &[u8]) -> Result<Grant, String> {
        self.open_value(server, sealed, &format!("the shared grant of {server}"))
    }

    /// `value` sealed, `aad` bound in.
    fn seal_value<T: serde::Serialize>(&self, aad: &str, value: &T) -> Result<Vec<u8>, String> {
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).map_err(|e| e.to_string())?;
        let text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: &text, aad: aad.as_bytes() })
            .map_err(|_| "cannot seal it".to_owned())?;
        Ok([nonce.as_slice(), &sealed].concat())
    }

    /// What [`Self::seal_value`] sealed with `aad`; `what` names it in an error.
    fn open_value<T: serde::de::DeserializeOwned>(&self, aad: &str, sealed: &[u8], what: &str) -> Result<T, String> {
        if sealed.len() < 24 {
            return Err(format!("{what} is cut short"));
        }
        let (nonce, body) = sealed.split_at(24);
        let text = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: body, aad: aad.as_bytes() })
            .map_err(|_| format!("{what} does not open with this toolsearch.state.key"))?;
        serde_json::from_slice(&text).map_err(|e| e.to_string())
    }

    /// The gateway's client registrations with upstream authorization servers, shared: the
    /// store's that `state` lacks are kept there, and `state`'s that the store lacks are pushed
    /// (sealed: a registration may carry a client secret), so `gateway login` on any replica's
    /// host runs as the client the fleet registered first.
    pub(crate) async fn sync_registrations(&self, state: &Path) -> Result<(), String> {
        let client = self.connect().await?;
        let db = |e: tokio_postgres::Error| crate::secrets::mask(&e.to_string());
        let aad = |issuer: &str| format!("registration\0{issuer}");
        let rows = client.query("SELECT issuer, sealed FROM toolsearch_registrations", &[]).await.map_err(db)?;
        let local = files::registrations(state);
        let mut stored = std::collections::BTreeSet::new();
        for row in rows {
            let (issuer, sealed): (String, Vec<u8>) = (row.get(0), row.get(1));
            if !local.contains_key(&issuer) {
                let what = format!("the shared registration with {issuer}");
                files::save_registration(state, &issuer, self.open_value(&aad(&issuer), &sealed, &what)?)?;
            }
            stored.insert(issuer);
        }
        for (issuer, registration) in local.iter().filter(|(i, _)| !stored.contains(*i)) {
            let sealed = self.seal_value(&aad(issuer), registration)?;
            client
                .execute(
                    "INSERT INTO toolsearch_registrations (issuer, sealed) VALUES ($1, $2) ON CONFLICT (issuer) DO NOTHING",
                    &[issuer, &sealed],
                )
                .await
                .map_err(db)?;
        }
        Ok(())
    }

    async fn connect(&self) -> Result<Client, String> {
        super::postgres::open(&self.url).await.map(|(c, _)| c)
    }

    /// Brings `state`'s grants and the store's to the newer of each: pulled where the store's
    /// is newer (or a logout), pushed where the file's is. `only`: one server's.
    pub(crate) async fn sync(&self, client: &Client, state: &Path, only: Option<&str>) -> Result<(), String> {
        let db = |e: tokio_postgres::Error| crate::secrets::mask(&e.to_string());
        let rows = client.query("SELECT server, sealed, obtained_at FROM toolsearch_grants", &[]).await.map_err(db)?;
        let mut stored: BTreeMap<String, (Option<Vec<u8>>, i64)> = BTreeMap::new();
        for row in rows {
            stored.insert(row.get(0), (row.get(1), row.get(2)));
        }
        let mut servers: Vec<String> = stored.keys().cloned().collect();
        servers.extend(files::servers_with_grants(state));
        servers.sort();
        servers.dedup();
        for server in servers.iter().filter(|s| only.is_none_or(|o| o == s.as_str())) {
            let local = files::load_grant(state, server).map(|(g, _)| g);
            let local_at = local.as_ref().map_or(-1, |g| g.obtained_at as i64);
            match stored.get(server) {
                Some((sealed, at)) if *at > local_at => match sealed {
                    Some(sealed) => files::save_grant(state, server, &self.open(server, sealed)?)?,
                    None => {
                        files::remove_grant(state, server)?;
                    }
                },
                Some((_, at)) if *at == local_at => {}
                _ => {
                    let Some(grant) = local else { continue };
                    let sealed = self.seal(server, &grant)?;
                    client
                        .execute(
                            "INSERT INTO toolsearch_grants (server, sealed, obtained_at) VALUES ($1, $2, $3) \
                             ON CONFLICT (server) DO UPDATE SET sealed = EXCLUDED.sealed, obtained_at = EXCLUDED.obtained_at \
                             WHERE toolsearch_grants.obtained_at < EXCLUDED.obtained_at",
                            &[server, &sealed, &local_at],
                        )
                        .await
                        .map_err(db)?;
                }
            }
        }
        Ok(())
    }

    /// Takes the fleet-wide lock on `server`'s grant and pulls the store's if it is newer.
    pub(crate) async fn lock(&self, state: &Path, server: &str) -> Result<FleetLock, String> {
        let client = self.connect().await?;
        let key: [u8; 8] =
            Sha256::digest(format!("toolsearch grant\0{server}").as_bytes())[..8].try_into().unwrap_or_default();
        let key = i64::from_le_bytes(key);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&key];
        let held = client.execute("SELECT pg_advisory_lock($1)", &params);
        tokio::time::timeout(Duration::from_secs(15), held)
            .await
            .map_err(|_| format!("the fleet's lock on the grant of {server} stayed taken for 15 s"))?
            .map_err(|e| crate::secrets::mask(&e.to_string()))?;
        self.sync(&client, state, Some(server)).await?;
        Ok(FleetLock(client))
    }

    /// Pushes `server`'s grant as the file holds it now (after a refresh, under [`Self::lock`]).
    pub(crate) async fn pushed(&self, lock: &FleetLock, state: &Path, server: &str) -> Result<(), String> {
        self.sync(&lock.0, state, Some(server)).await
    }

    /// `gateway logout` in a fleet: a row without a grant, newer than any replica's.
    pub(crate) async fn forget(&self, server: &str) -> Result<(), String> {
        let client = self.connect().await?;
        let now = crate::login::tokens::now() as i64 + 1;
        client
            .execute(
                "INSERT INTO toolsearch_grants (server, sealed, obtained_at) VALUES ($1, NULL, $2) \
                 ON CONFLICT (server) DO UPDATE SET sealed = NULL, obtained_at = greatest(toolsearch_grants.obtained_at + 1, $2)",
                &[&server, &now],
            )
            .await
            .map(|_| ())
            .map_err(|e| crate::secrets::mask(&e.to_string()))
    }

    /// Forgets every caller's own grant for `server` (`SERVER@CALLER` rows) in every replica.
    pub(crate) async fn forget_callers(&self, server: &str) -> Result<(), String> {
        let client = self.connect().await?;
        let pattern = format!("{}@%", server.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        client
            .execute(
                "UPDATE toolsearch_grants SET sealed = NULL, obtained_at = obtained_at + 1 \
                 WHERE server LIKE $1 AND sealed IS NOT NULL",
                &[&pattern],
            )
            .await
            .map(|_| ())
            .map_err(|e| crate::secrets::mask(&e.to_string()))
    }

    /// Syncs `state`'s grant of `server` once (`gateway login` after it saved one).
    pub(crate) async fn sync_once(&self, state: &Path, server: &str) -> Result<(), String> {
        let client = self.connect().await?;
        self.sync(&client, state, Some(server)).await
    }

    /// Syncs every second until the gateway stops.
    pub(crate) async fn keep_synced(self: Arc<Self>, state: PathBuf) {
        let mut client: Option<Client> = None;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if client.as_ref().is_none_or(Client::is_closed) {
                client = self.connect().await.ok();
            }
            if let Some(c) = client.as_ref() {
                if self.sync(c, &state, None).await.is_err() {
                    client = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_grant_opens_only_with_its_key_and_for_its_server() {
        let grant: Grant = serde_json::from_value(serde_json::json!({
            "issuer": "i", "token_endpoint": "t", "client_id": "c", "resource": "r",
            "access_token": "secret-access", "obtained_at": 5
        }))
        .unwrap();
        let ours = SharedGrants::new("postgres://x", "k");
        let sealed = ours.seal("github", &grant).unwrap();
        assert!(!String::from_utf8_lossy(&sealed).contains("secret-access"), "sealed, not in clear");
        assert_eq!(ours.open("github", &sealed).unwrap(), grant);
        assert!(ours.open("linear", &sealed).is_err(), "bound to its server");
        assert!(SharedGrants::new("postgres://x", "other").open("github", &sealed).is_err(), "bound to its key");
    }
}
