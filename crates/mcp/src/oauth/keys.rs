//! An issuer's signing keys: found through its metadata (RFC 8414, then OpenID discovery),
//! fetched from its `jwks_uri`, kept, and fetched again when a token names a key not yet seen.
//!
//! Fetching is bounded on every side: one fetch at a time per issuer, `fetch`'s time and size
//! bounds, no redirect followed, and at most one fetch per
//! [`REFETCH_EVERY`] however many unknown keys are presented, so forged `kid`s cannot turn the
//! gateway into a load on the identity provider, and a provider that hangs delays only the
//! requests that need its new keys. Symmetric (`oct`) keys and keys not for signatures are
//! never taken.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::config::secure_url;
use super::fetch;

/// Fewest seconds between two fetches of one issuer's keys.
pub(crate) const REFETCH_EVERY: Duration = Duration::from_secs(10);

/// One usable key: what it decodes with, and the algorithm its JWK pins, if any.
#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) decoding: Arc<DecodingKey>,
    pub(crate) alg: Option<Algorithm>,
}

/// What an issuer's metadata says, as far as a resource server needs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Endpoints {
    pub(crate) jwks_uri: Option<String>,
    pub(crate) introspection: Option<String>,
}

/// One issuer's keys and endpoints.
pub(crate) struct IssuerKeys {
    issuer: String,
    configured_jwks: Option<String>,
    client: reqwest::Client,
    endpoints: RwLock<Option<Endpoints>>,
    /// By `kid` (a key without one is kept under "").
    keys: RwLock<HashMap<String, Key>>,
    /// When the keys were last fetched, and the error if that failed (told to requests that
    /// come before the next fetch may be made).
    last_fetch: std::sync::Mutex<Option<(Instant, Option<KeyError>)>>,
    fetching: tokio::sync::Mutex<()>,
}

impl IssuerKeys {
    pub(crate) fn new(issuer: &str, jwks_uri: Option<String>, client: reqwest::Client) -> IssuerKeys {
        IssuerKeys {
            issuer: issuer.to_owned(),
            configured_jwks: jwks_uri,
            client,
            endpoints: RwLock::new(None),
            keys: RwLock::new(HashMap::new()),
            last_fetch: std::sync::Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The key named `kid`, fetching the key set when it is not known and the last fetch is
    /// old enough. The error says what failed, without anything of the token.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Key, KeyError> {
        let kid = kid.unwrap_or("");
        if let Some(k) = self.known(kid) {
            return Ok(k);
        }
        let _one = self.fetching.lock().await;
        if let Some(k) = self.known(kid) {
            return Ok(k);
        }
        {
            let last = self.last_fetch.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, failed)) = last.as_ref().filter(|(at, _)| at.elapsed() < REFETCH_EVERY) {
                return Err(failed.clone().unwrap_or(KeyError::UnknownKey));
            }
        }
        let fetched = self.fetch_keys().await;
        *self.last_fetch.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), fetched.clone().err()));
        fetched?;
        self.known(kid).ok_or(KeyError::UnknownKey)
    }

    fn known(&self, kid: &str) -> Option<Key> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).get(kid).cloned()
    }

    /// The issuer's endpoints, read from its metadata once (a failed read is tried again later).
    pub(crate) async fn endpoints(&self) -> Result<Endpoints, KeyError> {
        if let Some(e) = self.endpoints.read().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(e);
        }
        let found = self.discover().await?;
        *self.endpoints.write().unwrap_or_else(|p| p.into_inner()) = Some(found.clone());
        Ok(found)
    }

    async fn discover(&self) -> Result<Endpoints, KeyError> {
        let doc = fetch::server_metadata(&self.client, &self.issuer).await.map_err(KeyError::Metadata)?;
        let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
        Ok(Endpoints { jwks_uri: text("jwks_uri"), introspection: text("introspection_endpoint") })
    }

    async fn fetch_keys(&self) -> Result<(), KeyError> {
        let uri = match &self.configured_jwks {
            Some(u) => u.clone(),
            None => self
                .endpoints()
                .await?
                .jwks_uri
                .ok_or_else(|| KeyError::Metadata(format!("the metadata of {} gives no jwks_uri", self.issuer)))?,
        };
        secure_url(&uri).map_err(|e| KeyError::Keys(format!("jwks_uri: {e}")))?;
        let doc = fetch::fetch_json(&self.client, &uri).await.map_err(KeyError::Keys)?;
        // Key by key: one key of a kind this library does not know does not lose the others.
        let Some(listed) = doc.get("keys").and_then(Value::as_array) else {
            return Err(KeyError::Keys(format!("{uri} is not a JSON Web Key Set: it has no \"keys\" array")));
        };
        let keys: HashMap<String, Key> = listed
            .iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
            .filter_map(|k| usable(&k))
            .collect();
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = keys;
        Ok(())
    }
}

/// A key of the set that may verify signatures: asymmetric, for signing, decodable.
fn usable(jwk: &Jwk) -> Option<(String, Key)> {
    if matches!(jwk.algorithm, jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
        return None;
    }
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    let alg = jwk.common.key_algorithm.and_then(|a| a.to_string().parse::<Algorithm>().ok());
    Some((jwk.common.key_id.clone().unwrap_or_default(), Key { decoding: Arc::new(decoding), alg }))
}

/// Why a key could not be had.
#[derive(Debug, Clone)]
pub(crate) enum KeyError {
    /// The token names a key the issuer does not publish (after a fetch, or too soon for one).
    UnknownKey,
    /// The issuer's metadata could not be read or is wrong.
    Metadata(String),
    /// Its key set could not be read.
    Keys(String),
}
