//! Per-user grants (`"oauth": {"per_user": true}`): every caller the gateway tells apart holds
//! its own grant for such a server, and nobody else's is ever used for it.
//!
//! A caller without a grant is sent the authorization address (PKCE S256, RFC 8707
//! `resource`) through `ask` (the gateway's URL-mode elicitation, MCP 2025-11-25). The
//! person's browser comes back to the gateway's own redirect endpoint
//! (`toolsearch.auth.callback_url`), where [`UserLogins::callback`] checks `state` and RFC
//! 9207 `iss`, exchanges the code, and keeps the grant as `SERVER@CALLER` in `STATE/oauth/`
//! (0600), where [`super::UpstreamGrant`] refreshes it as it does the gateway's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use toolsearch_mcp::oauth::fetch;

use super::discover::{discover, Discovered};
use super::flow::{authorization_address, challenge, grant_of, random_b64, redirect_code};
use super::store;
use super::tokens::token_request;
use super::UpstreamOAuth;

/// Longest wait for a person to finish logging in.
const WAIT: Duration = Duration::from_secs(600);
/// Most logins waiting for their redirect at once, across callers and servers.
const MAX_WAITING: usize = 64;

/// The name a caller's grant for `server` is kept under: the server and the caller's digest.
pub(crate) fn grant_name(server: &str, caller: &str) -> String {
    let digest: String = caller.chars().filter(char::is_ascii_hexdigit).take(32).collect();
    format!("{server}@{digest}")
}

/// A login sent to a person, waiting for its redirect.
struct Waiting {
    grant: String,
    found: Discovered,
    client: (String, Option<String>),
    redirect: String,
    verifier: String,
    done: tokio::sync::oneshot::Sender<Result<(), String>>,
    /// When it stops waiting. A login whose call ended first (the client cancelled it, or gave
    /// up waiting) still waits till then: the person finishing it keeps the grant for the
    /// caller's next call. Past it, its place among [`MAX_WAITING`] is free.
    until: Instant,
}

/// Puts `login` among the `waiting` ones under `state`: one per grant (a newer login of the
/// same caller and server replaces an abandoned one), at most [`MAX_WAITING`] in all, those
/// no longer `live` (past their time) dropped first.
fn admit<W>(
    waiting: &mut HashMap<String, W>,
    state: String,
    login: W,
    grant: impl Fn(&W) -> &String,
    live: impl Fn(&W) -> bool,
) -> Result<(), String> {
    let new = grant(&login).clone();
    waiting.retain(|_, w| *grant(w) != new && live(w));
    if waiting.len() >= MAX_WAITING {
        return Err(format!("{MAX_WAITING} logins are waiting already: try again later"));
    }
    waiting.insert(state, login);
    Ok(())
}

/// The per-user logins of one state directory.
pub(crate) struct UserLogins {
    state: PathBuf,
    waiting: Mutex<HashMap<String, Waiting>>,
    /// In a fleet, this replica's seal, ending every login's `state` so the redirect reaches
    /// this replica wherever it lands (`toolsearch_mcp::fleet_rounds`).
    fleet: OnceLock<Arc<toolsearch_mcp::fleet_rounds::FleetRounds>>,
}

/// The per-user logins of `state` (one per state directory, shared by its servers and its
/// redirect endpoint).
pub(crate) fn of(state: &Path) -> Arc<UserLogins> {
    static ALL: OnceLock<Mutex<HashMap<PathBuf, Arc<UserLogins>>>> = OnceLock::new();
    let mut all = ALL.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner());
    all.entry(state.to_path_buf())
        .or_insert_with(|| {
            Arc::new(UserLogins { state: state.to_path_buf(), waiting: Mutex::default(), fleet: OnceLock::new() })
        })
        .clone()
}

/// Makes the per-user logins of `state` end their `state` with this replica's seal in `fleet`.
pub(crate) fn join_fleet(state: &Path, fleet: Arc<toolsearch_mcp::fleet_rounds::FleetRounds>) {
    let _ = of(state).fleet.set(fleet);
}

/// The gateway's redirect endpoint for per-user logins under `state`: the page answering a
/// `GET` with its query string.
pub fn callback_page(state: &Path) -> toolsearch_mcp::Callback {
    let logins = of(state);
    Arc::new(move |query: String| {
        let logins = logins.clone();
        Box::pin(async move { logins.callback(&query).await })
    })
}

impl UserLogins {
    /// Logs `caller` in to `server` (at `url`): sends the authorization address to `ask`
    /// (which answers once the person has been asked, `Err` when they declined), then waits
    /// for the redirect, at most 10 minutes. The grant is kept when this returns `Ok`.
    pub(crate) async fn login<F>(
        &self,
        (server, url): (&str, &str),
        settings: &UpstreamOAuth,
        caller: &str,
        ask: impl FnOnce(String) -> F,
    ) -> Result<(), String>
    where
        F: std::future::Future<Output = Result<(), String>>,
    {
        let callback = settings
            .callback_url
            .clone()
            .ok_or_else(|| format!("{server} has per_user grants but toolsearch.auth.callback_url is not set"))?;
        let client = fetch::client()?;
        let found = discover(&client, url, settings).await?;
        let authorize = found
            .authorization_endpoint
            .clone()
            .ok_or_else(|| format!("{}'s metadata has no authorization_endpoint", found.issuer))?;
        let identity = self.identity(&client, server, settings, &found, &callback).await?;
        let verifier = random_b64(32)?;
        let seal = self.fleet.get().map(|f| f.suffix()).unwrap_or_default();
        let state = format!("{}{seal}", random_b64(16)?);
        let address = authorization_address(&authorize, &identity.0, &callback, &challenge(&verifier), &state, &found);
        let grant = grant_name(server, caller);
        let (done, finished) = tokio::sync::oneshot::channel();
        let until = Instant::now() + WAIT;
        let login = Waiting { grant, found, client: identity, redirect: callback, verifier, done, until };
        let live = |w: &Waiting| w.until > Instant::now();
        admit(&mut self.waiting.lock().unwrap_or_else(|p| p.into_inner()), state.clone(), login, |w| &w.grant, live)?;
        let forget = || self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&state);
        if let Err(e) = ask(address).await {
            forget();
            return Err(e);
        }
        match tokio::time::timeout(WAIT, finished).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(format!("a newer login of the same caller to {server} replaced this one")),
            Err(_) => {
                forget();
                Err(format!("nobody completed the login to {server} within {} minutes", WAIT.as_secs() / 60))
            }
        }
    }

    /// The client a per-user login runs as: the configured one, the gateway's Client ID
    /// Metadata Document, or one registered (RFC 7591) for the redirect endpoint, kept per
    /// authorization server.
    async fn identity(
        &self,
        client: &reqwest::Client,
        server: &str,
        settings: &UpstreamOAuth,
        found: &Discovered,
        callback: &str,
    ) -> Result<(String, Option<String>), String> {
        let loopback = reqwest::Url::parse(callback)
            .ok()
            .and_then(|u| u.host_str().map(|h| h == "127.0.0.1" || h == "localhost" || h == "[::1]"))
            .unwrap_or(false);
        let body = serde_json::json!({
            "client_name": "toolsearch gateway (per-user logins)",
            "redirect_uris": [callback],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "application_type": if loopback { "native" } else { "web" },
        });
        let key = format!("{}#{callback}", found.issuer);
        super::flow::client_identity((client, &self.state), server, settings, found, (&key, callback), body).await
    }

    /// The redirect endpoint: the browser's return from a login, whose code is exchanged
    /// and whose grant is kept once `state` and `iss` are right. The status and the page.
    pub(crate) async fn callback(&self, query: &str) -> (u16, String) {
        let params: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let state = params.get("state").cloned().unwrap_or_default();
        let Some(w) = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&state) else {
            return (400, "No login is waiting for this redirect (an old tab, or someone else's): refused.".into());
        };
        if w.until <= Instant::now() {
            return (400, "This login took too long and has expired: start it again from your client.".into());
        }
        let outcome = match redirect_code(&params, &state, &w.found) {
            Ok(code) => self.exchange(&w, &code).await,
            Err(e) => Err(e),
        };
        let page = match &outcome {
            Ok(()) => (200, "You are logged in. You can close this tab; the call goes on.".to_owned()),
            Err(e) => (400, format!("The login failed: {}", crate::secrets::mask(e))),
        };
        let _ = w.done.send(outcome);
        page
    }

    async fn exchange(&self, w: &Waiting, code: &str) -> Result<(), String> {
        let client = fetch::client()?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", w.redirect.as_str()),
            ("code_verifier", w.verifier.as_str()),
            ("resource", w.found.resource.as_str()),
        ];
        let (id, secret) = &w.client;
        let answer = token_request(&client, &w.found.token_endpoint, id, secret.as_deref(), &form).await?;
        let grant = grant_of(&w.found, answer, id.clone(), secret.clone());
        let _lock = store::lock(&self.state, &w.grant).await?;
        store::save_grant(&self.state, &w.grant, &grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_64_logins_wait_and_a_callers_newer_login_replaces_its_older_one() {
        let mut waiting: HashMap<String, String> = HashMap::new();
        for i in 0..MAX_WAITING {
            admit(&mut waiting, format!("state-{i}"), format!("vault@{i:032x}"), |g| g, |_| true).unwrap();
        }
        // A 65th caller is refused, and nothing waiting is dropped for it.
        let refused = admit(&mut waiting, "state-new".into(), "vault@new".into(), |g| g, |_| true).unwrap_err();
        assert!(refused.contains("64 logins are waiting"), "{refused}");
        assert_eq!(waiting.len(), MAX_WAITING);
        assert!(!waiting.contains_key("state-new"));
        // A caller already waiting starts again: its older login goes, the newer one waits.
        admit(&mut waiting, "state-again".into(), format!("vault@{:032x}", 7), |g| g, |_| true).unwrap();
        assert_eq!(waiting.len(), MAX_WAITING);
        assert!(!waiting.contains_key("state-7") && waiting.contains_key("state-again"));
    }

    #[test]
    fn logins_past_their_time_make_room_whoever_left_them() {
        // 64 logins whose calls went away without an end (cancelled): they hold their places
        // while they may still be finished...
        let mut waiting: HashMap<String, (String, Instant)> = HashMap::new();
        let now = Instant::now();
        let live = |w: &(String, Instant)| w.1 > Instant::now();
        for i in 0..MAX_WAITING {
            let login = (format!("vault@{i:032x}"), now + Duration::from_secs(600));
            admit(&mut waiting, format!("state-{i}"), login, |w| &w.0, live).unwrap();
        }
        let another = || (format!("vault@{:032x}", 999), Instant::now() + Duration::from_secs(600));
        assert!(admit(&mut waiting, "state-new".into(), another(), |w| &w.0, live).is_err());
        // ... and, once past their time, they give them up to the next caller.
        for w in waiting.values_mut() {
            w.1 = now;
        }
        admit(&mut waiting, "state-new".into(), another(), |w| &w.0, live).unwrap();
        assert_eq!(waiting.keys().collect::<Vec<_>>(), vec!["state-new"]);
    }
}
