//! A server's grant while the gateway runs ([`UpstreamGrant`]), and the token endpoint's
//! requests: the code exchange, a refresh (with rotation: a new refresh token replaces the
//! old), client credentials.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use toolsearch_mcp::oauth::fetch;

use super::discover::{discover, Discovered};
use super::store::{self, Grant};
use super::{GrantKind, UpstreamOAuth, LOGIN_REQUIRED};

pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A token endpoint's answer: the access token, a refresh token, when it expires (seconds
/// since the epoch), the scope granted.
pub(crate) type Answer = (String, Option<String>, Option<u64>, Option<String>);

/// Sends `form` to the token endpoint as client `client_id` (HTTP Basic with a secret, else
/// the id in the form); the new grant. The error carries the server's `error` code and
/// description, never what was sent.
pub(crate) async fn token_request(
    client: &reqwest::Client,
    endpoint: &str,
    client_id: &str,
    secret: Option<&str>,
    form: &[(&str, &str)],
) -> Result<Answer, String> {
    let mut fields: Vec<(&str, &str)> = form.to_vec();
    let mut request = client.post(endpoint).header("accept", "application/json");
    match secret {
        Some(s) => request = request.basic_auth(client_id, Some(s)),
        None => fields.push(("client_id", client_id)),
    }
    let response = tokio::time::timeout(fetch::FETCH_TIMEOUT, request.form(&fields).send())
        .await
        .map_err(|_| format!("{endpoint} did not answer within {} s", fetch::FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| format!("{endpoint} could not be reached: {}", e.without_url()))?;
    let status = response.status();
    let body = fetch::json_body(endpoint, response).await?;
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    if !status.is_success() {
        let code = text("error").unwrap_or_else(|| status.to_string());
        let said: String = text("error_description").unwrap_or_default().chars().take(200).collect();
        return Err(format!("{endpoint} refused: {code} {said}").trim_end().to_owned());
    }
    let access = text("access_token").ok_or_else(|| format!("{endpoint} answered without an access_token"))?;
    let expires = body.get("expires_in").and_then(Value::as_u64).map(|s| now() + s);
    Ok((access, text("refresh_token"), expires, text("scope")))
}

/// One upstream's grant as the running gateway holds it.
pub(crate) struct UpstreamGrant {
    server: String,
    url: String,
    state: PathBuf,
    settings: UpstreamOAuth,
    client: reqwest::Client,
    /// The grant in use and when its file last changed.
    held: Mutex<Option<(Grant, Option<SystemTime>)>>,
    discovered: tokio::sync::Mutex<Option<Discovered>>,
}

impl std::fmt::Debug for UpstreamGrant {
    /// The server only: nothing of the grant.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamGrant").field("server", &self.server).finish_non_exhaustive()
    }
}

impl UpstreamGrant {
    pub(crate) fn new(
        server: &str,
        url: &str,
        state: PathBuf,
        settings: UpstreamOAuth,
    ) -> Result<UpstreamGrant, String> {
        Ok(UpstreamGrant {
            server: server.to_owned(),
            url: url.to_owned(),
            state,
            settings,
            client: fetch::client()?,
            held: Mutex::new(None),
            discovered: tokio::sync::Mutex::new(None),
        })
    }

    fn login_required(&self, why: &str) -> String {
        format!(
            "{LOGIN_REQUIRED}: {why}; run `toolsearch gateway login {}` with this gateway's --config and --state",
            self.server
        )
    }

    /// Whether the token in hand is stale: near expiry, or the grant's file changed (a login
    /// or a logout since it was read).
    pub(crate) fn stale(&self) -> bool {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some((grant, changed)) = held.as_ref() else { return true };
        let near = grant.due(now());
        near || store::grant_changed(&self.state, &self.server) != *changed
    }

    /// A current access token: the one in hand, or the file's, or a refreshed one (`force`:
    /// the server refused the one in hand).
    pub(crate) async fn access_token(&self, force: bool) -> Result<String, String> {
        if !force && !self.stale() {
            if let Some((g, _)) = self.held.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                return Ok(g.access_token.clone());
            }
        }
        let _lock = store::lock(&self.state, &self.server).await?;
        // In a fleet, the grant is renewed under the fleet's lock, from the newest any replica
        // has (`crate::store::grants`); with the store away, from this replica's own.
        let shared = crate::store::grants::of(&self.state);
        let fleet = match &shared {
            Some(s) => s.lock(&self.state, &self.server).await.ok(),
            None => None,
        };
        let pushed = |out: Result<String, String>| async {
            if let (Some(s), Some(l), Ok(_)) = (&shared, &fleet, &out) {
                let _ = s.pushed(l, &self.state, &self.server).await;
            }
            out
        };
        let on_disk = store::load_grant(&self.state, &self.server);
        let in_hand = self.held.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|(g, _)| g.access_token.clone());
        if let Some((grant, changed)) = on_disk {
            let fresh = !grant.due(now());
            // Another process (a login, or another replica's refresh) may have renewed it.
            let renewed = !force || in_hand.as_deref() != Some(&grant.access_token);
            if fresh && renewed {
                *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((grant.clone(), Some(changed)));
                return Ok(grant.access_token);
            }
            if let Some(refresh) = grant.refresh_token.clone() {
                return pushed(self.refresh(grant, &refresh).await).await;
            }
        }
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = None;
        match self.settings.grant {
            GrantKind::ClientCredentials => pushed(self.client_credentials().await).await,
            GrantKind::AuthorizationCode => Err(self.login_required("it has no grant, or its grant expired")),
        }
    }

    async fn refresh(&self, mut grant: Grant, refresh: &str) -> Result<String, String> {
        let form = [("grant_type", "refresh_token"), ("refresh_token", refresh), ("resource", &grant.resource)];
        let answer =
            token_request(&self.client, &grant.token_endpoint, &grant.client_id, grant.client_secret.as_deref(), &form)
                .await;
        match answer {
            Ok((access, rotated, expires, scope)) => {
                grant.access_token = access.clone();
                grant.refresh_token = rotated.or(grant.refresh_token);
                grant.expires_at = expires;
                grant.obtained_at = now();
                grant.scope = scope.or(grant.scope);
                store::save_grant(&self.state, &self.server, &grant)?;
                let changed = store::grant_changed(&self.state, &self.server);
                *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((grant, changed));
                Ok(access)
            }
            Err(e) => Err(self.login_required(&format!("its refresh failed ({e})"))),
        }
    }

    async fn client_credentials(&self) -> Result<String, String> {
        let found = {
            let mut d = self.discovered.lock().await;
            if d.is_none() {
                *d = Some(discover(&self.client, &self.url, &self.settings).await?);
            }
            d.clone().unwrap_or_else(|| unreachable!())
        };
        let (id, secret) = self
            .settings
            .configured_client(&self.server)
            .await?
            .ok_or("oauth.client_id is needed for client_credentials")?;
        let mut form = vec![("grant_type", "client_credentials"), ("resource", found.resource.as_str())];
        if !found.scope.is_empty() {
            form.push(("scope", found.scope.as_str()));
        }
        let (access, _, expires, scope) =
            token_request(&self.client, &found.token_endpoint, &id, secret.as_deref(), &form).await?;
        let grant = Grant {
            issuer: found.issuer,
            token_endpoint: found.token_endpoint,
            client_id: id,
            client_secret: None,
            resource: found.resource,
            access_token: access.clone(),
            refresh_token: None,
            expires_at: expires,
            obtained_at: now(),
            scope,
        };
        store::save_grant(&self.state, &self.server, &grant)?;
        let changed = store::grant_changed(&self.state, &self.server);
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((grant, changed));
        Ok(access)
    }
}
