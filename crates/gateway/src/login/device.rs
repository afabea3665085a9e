//! The device authorization grant (RFC 8628), `gateway login SERVER --device`: for a host
//! with no browser. The gateway asks for a user code, prints where to enter it, and polls the
//! token endpoint at the interval the server sets (slower when told `slow_down`) until the
//! person has approved, refused, or the code expired.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolsearch_mcp::oauth::fetch;

use super::discover::Discovered;
use super::tokens::token_request;
use super::UpstreamOAuth;

/// The grant type a device's token request names.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The client a device login runs as: the configured one, else the gateway's Client ID
/// Metadata Document, else one registered for the device grant (kept per authorization server,
/// apart from the redirect-based one).
async fn device_client(
    client: &reqwest::Client,
    server: &str,
    settings: &UpstreamOAuth,
    found: &Discovered,
    state: &Path,
) -> Result<(String, Option<String>), String> {
    let body = serde_json::json!({
        "client_name": "toolsearch gateway (device)",
        "grant_types": [DEVICE_GRANT, "refresh_token"],
        "response_types": [],
        "redirect_uris": [],
        "application_type": "native",
    });
    let key = format!("{}#device", found.issuer);
    super::flow::client_identity((client, state), server, settings, found, (&key, ""), body).await
}

/// Runs the device grant; the token answer (access, refresh, expiry, scope) and the client.
pub(crate) async fn device_login(
    client: &reqwest::Client,
    server: &str,
    settings: &UpstreamOAuth,
    found: &Discovered,
    device_endpoint: &str,
    state: &Path,
    say: &(dyn Fn(&str) + Sync),
) -> Result<(super::tokens::Answer, String, Option<String>), String> {
    let (client_id, secret) = device_client(client, server, settings, found, state).await?;
    let mut form = vec![("resource", found.resource.as_str())];
    if !found.scope.is_empty() {
        form.push(("scope", found.scope.as_str()));
    }
    let mut request = client.post(device_endpoint).header("accept", "application/json");
    match &secret {
        Some(s) => request = request.basic_auth(&client_id, Some(s)),
        None => form.push(("client_id", client_id.as_str())),
    }
    let response = tokio::time::timeout(fetch::FETCH_TIMEOUT, request.form(&form).send())
        .await
        .map_err(|_| format!("{device_endpoint} did not answer within {} s", fetch::FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| format!("{device_endpoint} could not be reached: {}", e.without_url()))?;
    let status = response.status();
    let answer = fetch::json_body(device_endpoint, response).await?;
    let text = |k: &str| answer.get(k).and_then(Value::as_str).map(str::to_owned);
    if !status.is_success() {
        return Err(format!("{device_endpoint} refused: {}", text("error").unwrap_or_else(|| status.to_string())));
    }
    let device_code = text("device_code").ok_or_else(|| format!("{device_endpoint} gave no device_code"))?;
    let user_code = text("user_code").unwrap_or_default();
    let uri = text("verification_uri").unwrap_or_default();
    let complete = text("verification_uri_complete");
    say(&format!(
        "To log the gateway in to {server}, open {uri} and enter the code {user_code}{}",
        complete.map(|c| format!(", or open:\n{c}")).unwrap_or_default()
    ));
    let mut interval = Duration::from_secs(answer.get("interval").and_then(Value::as_u64).unwrap_or(5).max(1));
    let until = Instant::now() + Duration::from_secs(answer.get("expires_in").and_then(Value::as_u64).unwrap_or(600));
    let poll =
        [("grant_type", DEVICE_GRANT), ("device_code", device_code.as_str()), ("resource", found.resource.as_str())];
    loop {
        if Instant::now() > until {
            return Err("the device code expired before anyone approved it".into());
        }
        tokio::time::sleep(interval).await;
        match token_request(client, &found.token_endpoint, &client_id, secret.as_deref(), &poll).await {
            Ok(tokens) => return Ok((tokens, client_id, secret)),
            Err(e) if e.contains("authorization_pending") => {}
            Err(e) if e.contains("slow_down") => interval += Duration::from_secs(5),
            Err(e) => return Err(e),
        }
    }
}
