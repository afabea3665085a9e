//! `toolsearch gateway login SERVER` and `logout`: the authorization-code grant with PKCE,
//! on a loopback redirect, and forgetting a grant.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolsearch_mcp::oauth::fetch;

use super::discover::{discover, Discovered};
use super::store::{self, Grant, Registration};
use super::tokens::token_request;
use super::{GrantKind, UpstreamOAuth};

/// Longest wait for the person to finish logging in.
const WAIT: Duration = Duration::from_secs(600);

pub(crate) fn random_b64(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf))
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The PKCE S256 challenge of `verifier`.
pub(crate) fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The address a person opens to log in: the authorization-code request with PKCE S256, the
/// RFC 8707 `resource`, the scopes, and consent asked for where offline access is.
pub(crate) fn authorization_address(
    authorize: &str,
    client_id: &str,
    redirect_uri: &str,
    challenge: &str,
    state: &str,
    found: &Discovered,
) -> String {
    let mut address = format!(
        "{authorize}?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&state={state}&resource={}",
        encode(client_id),
        encode(redirect_uri),
        encode(&found.resource)
    );
    if !found.scope.is_empty() {
        address.push_str(&format!("&scope={}", encode(&found.scope)));
    }
    // OpenID providers grant offline access only with consent asked for.
    if found.scope.split(' ').any(|s| s == "offline_access") {
        address.push_str("&prompt=consent");
    }
    address
}

/// The code a redirect carries, once its `state` is `state` and its `iss` (where the server
/// sends one) is `found`'s; else why it is refused (an attack, or a stale tab).
pub(crate) fn redirect_code(
    params: &std::collections::HashMap<String, String>,
    state: &str,
    found: &Discovered,
) -> Result<String, String> {
    if params.get("state").map(String::as_str) != Some(state) {
        Err("the redirect's state is not this login's: refused (an old tab, or someone else's redirect)".to_owned())
    } else if params.get("iss").is_some_and(|i| *i != found.issuer)
        || (found.iss_in_redirect && !params.contains_key("iss"))
    {
        Err(format!("the redirect's iss is not {}: refused (RFC 9207)", found.issuer))
    } else if let Some(error) = params.get("error") {
        Err(format!(
            "{} refused the login: {error} {}",
            found.issuer,
            params.get("error_description").map_or("", String::as_str)
        ))
    } else {
        params.get("code").cloned().ok_or_else(|| "the redirect carries no code".to_owned())
    }
}

/// How a person logs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// In a browser on this host: the address is opened (`xdg-open`, `open`) and printed.
    Browser,
    /// In a browser on this host, the address only printed.
    Print,
    /// On another device (RFC 8628): a code to enter at the address printed.
    Device,
}

/// Logs the gateway in to `server` (at `url`, with `settings`): tells the person what to open
/// through `say`, waits for the login, and keeps the grant in `state`.
pub async fn login(
    server: &str,
    url: &str,
    settings: &UpstreamOAuth,
    state: &Path,
    how: How,
    say: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    if settings.grant == GrantKind::ClientCredentials {
        return Err(format!("{server} uses client credentials: the gateway gets its tokens itself, no login"));
    }
    let _one = store::try_lock(state, &format!("{server}.login"))?.ok_or_else(|| {
        format!("a login to {server} is already running (another `toolsearch gateway login {server}`)")
    })?;
    let client = fetch::client()?;
    let found = discover(&client, url, settings).await?;
    if how == How::Device {
        let endpoint = found.device_endpoint.clone().ok_or_else(|| match settings.token_endpoint {
            Some(_) => "a device login starts at oauth.device_authorization_endpoint: give it".to_owned(),
            None => format!("{} offers no device flow: log in with a browser", found.issuer),
        })?;
        let (tokens, client_id, secret) =
            super::device::device_login(&client, server, settings, &found, &endpoint, state, say).await?;
        return keep(server, state, &found, tokens, client_id, secret, say).await;
    }
    let authorize = found.authorization_endpoint.clone().ok_or_else(|| match settings.token_endpoint {
        Some(_) => "a login in a browser starts at oauth.authorization_endpoint: give it".to_owned(),
        None => format!("{}'s metadata has no authorization_endpoint", found.issuer),
    })?;
    let kept = store::registrations(state).get(&found.issuer).cloned();
    // The redirect listener: the port a kept registration names, if free, else any.
    let kept_port = kept.as_ref().and_then(|r| reqwest::Url::parse(&r.redirect_uri).ok()).and_then(|u| u.port());
    let listener = match kept_port {
        Some(p) => match tokio::net::TcpListener::bind(("127.0.0.1", p)).await {
            Ok(l) => l,
            Err(_) => tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?,
        },
        None => tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?,
    };
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let body = serde_json::json!({
        "client_name": "toolsearch gateway",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "application_type": "native",
    });
    let (key, redirect) = (found.issuer.as_str(), redirect_uri.as_str());
    let (client_id, secret) =
        client_identity((&client, state), server, settings, &found, (key, redirect), body).await?;
    let verifier = random_b64(32)?;
    let challenge = challenge(&verifier);
    let expected_state = random_b64(16)?;
    let address = authorization_address(&authorize, &client_id, &redirect_uri, &challenge, &expected_state, &found);
    say(&format!("To log the gateway in to {server}, open this address in a browser:\n{address}"));
    if how == How::Browser {
        for opener in ["xdg-open", "open"] {
            if std::process::Command::new(opener)
                .arg(&address)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .is_ok()
            {
                break;
            }
        }
    }
    let code = tokio::time::timeout(WAIT, redirected(&listener, &expected_state, &found))
        .await
        .map_err(|_| format!("nobody completed the login within {} minutes", WAIT.as_secs() / 60))??;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("code_verifier", verifier.as_str()),
        ("resource", found.resource.as_str()),
    ];
    let tokens = token_request(&client, &found.token_endpoint, &client_id, secret.as_deref(), &form).await?;
    keep(server, state, &found, tokens, client_id, secret, say).await
}

/// The grant a login got from `found`'s token endpoint as `client_id`.
pub(crate) fn grant_of(
    found: &Discovered,
    (access, refresh, expires, scope): super::tokens::Answer,
    client_id: String,
    secret: Option<String>,
) -> Grant {
    Grant {
        issuer: found.issuer.clone(),
        token_endpoint: found.token_endpoint.clone(),
        client_id,
        client_secret: secret,
        resource: found.resource.clone(),
        access_token: access,
        refresh_token: refresh,
        expires_at: expires,
        obtained_at: super::tokens::now(),
        scope,
    }
}

/// Keeps the grant a login got.
async fn keep(
    server: &str,
    state: &Path,
    found: &Discovered,
    answer: super::tokens::Answer,
    client_id: String,
    secret: Option<String>,
    say: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let grant = grant_of(found, answer, client_id, secret);
    let _grant = store::lock(state, server).await?;
    store::save_grant(state, server, &grant)?;
    say(&format!("logged in to {server} at {}; a running gateway uses the grant within seconds", found.issuer));
    if let Some(warning) = short_lived(server, &grant, &found.scope) {
        say(&warning);
    }
    Ok(())
}

/// What to tell the operator of a grant for `server` (asked for with `asked`, the scopes) that
/// holds no refresh token and expires: the gateway cannot renew it, so the server is down again
/// once it does.
fn short_lived(server: &str, grant: &Grant, asked: &str) -> Option<String> {
    let expires = grant.expires_at.filter(|_| grant.refresh_token.is_none())?;
    let minutes = expires.saturating_sub(super::tokens::now()).div_ceil(60);
    let hint = match asked.split(' ').any(|s| s == "offline_access") {
        true => "",
        false => {
            " (or add \"offline_access\" to oauth.scopes, if its authorization server grants refresh tokens for it)"
        }
    };
    Some(format!(
        "no refresh token was issued: the login to {server} lasts until its access token expires (in {minutes} min); \
         then run `toolsearch gateway login {server}` again{hint}"
    ))
}

/// The client a login runs as, in the MCP specification's order: the configured one, the
/// gateway's Client ID Metadata Document, the registration kept under `key` for
/// `redirect_uri`, or a new one registered with `body` (RFC 7591) and kept under `key`.
pub(crate) async fn client_identity(
    (client, state): (&reqwest::Client, &Path),
    server: &str,
    settings: &UpstreamOAuth,
    found: &Discovered,
    (key, redirect_uri): (&str, &str),
    body: serde_json::Value,
) -> Result<(String, Option<String>), String> {
    if let Some(configured) = settings.configured_client(server).await? {
        return Ok(configured);
    }
    if let Some(document) = settings.document_client(found) {
        return Ok(document);
    }
    if let Some(r) = store::registrations(state).get(key).filter(|r| r.redirect_uri == redirect_uri) {
        return Ok((r.client_id.clone(), r.client_secret.clone()));
    }
    let (id, secret) = register(client, found, &body).await?;
    let registration =
        Registration { client_id: id.clone(), client_secret: secret.clone(), redirect_uri: redirect_uri.to_owned() };
    store::save_registration(state, key, registration)?;
    Ok((id, secret))
}

/// Registers a client described by `body` (RFC 7591) with `found`'s authorization server; its
/// id and secret. Nothing is kept here.
pub(crate) async fn register(
    client: &reqwest::Client,
    found: &Discovered,
    body: &serde_json::Value,
) -> Result<(String, Option<String>), String> {
    let endpoint = found.registration_endpoint.clone().ok_or_else(|| {
        format!("{} offers no dynamic registration: register a client there and set oauth.client_id", found.issuer)
    })?;
    let response = tokio::time::timeout(fetch::FETCH_TIMEOUT, client.post(&endpoint).json(body).send())
        .await
        .map_err(|_| format!("{endpoint} did not answer within {} s", fetch::FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| format!("{endpoint} could not be reached: {}", e.without_url()))?;
    let status = response.status();
    let answer = fetch::json_body(&endpoint, response).await?;
    let text = |k: &str| answer.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
    if !status.is_success() {
        let code = text("error").unwrap_or_else(|| status.to_string());
        return Err(format!(
            "{} refused to register the gateway: {code} {}",
            found.issuer,
            text("error_description").unwrap_or_default()
        ));
    }
    let id = text("client_id").ok_or_else(|| format!("{endpoint} registered no client_id"))?;
    Ok((id, text("client_secret")))
}

/// Waits for the browser's redirect on `listener`; its code once `state` (and `iss`, where the
/// server sends it) are right. A wrong one ends the login: it is an attack or a stale tab.
async fn redirected(listener: &tokio::net::TcpListener, state: &str, found: &Discovered) -> Result<String, String> {
    loop {
        let (mut conn, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 8192];
        let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut buf)).await.unwrap_or(Ok(0)).unwrap_or(0);
        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
        let target = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let Some(query) = target.strip_prefix("/callback?") else {
            let _ = conn.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            continue;
        };
        let params: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let outcome = redirect_code(&params, state, found);
        let page = match &outcome {
            Ok(_) => "The gateway is logged in. You can close this tab.".to_owned(),
            Err(e) => format!("The login failed: {e}"),
        };
        let status = if outcome.is_ok() { "200 OK" } else { "400 Bad Request" };
        let reply = format!("HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}", page.len());
        let _ = conn.write_all(reply.as_bytes()).await;
        return outcome;
    }
}

/// Forgets `server`'s grant; whether there was one. A running gateway stops using it within
/// seconds.
pub async fn logout(server: &str, state: &Path) -> Result<bool, String> {
    let _grant = store::lock(state, server).await?;
    store::remove_grant(state, server)
}

/// Forgets every caller's own grant for `server` (`per_user`); the names of those forgotten.
/// A running gateway asks each caller to log in again at its next call.
pub fn logout_callers(server: &str, state: &Path) -> Result<Vec<String>, String> {
    let prefix = format!("{server}@");
    let mut forgotten = Vec::new();
    for name in store::servers_with_grants(state).into_iter().filter(|n| n.starts_with(&prefix)) {
        if store::remove_grant(state, &name)? {
            forgotten.push(name);
        }
    }
    Ok(forgotten)
}
