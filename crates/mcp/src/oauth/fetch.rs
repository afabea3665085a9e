//! Fetching the documents OAuth runs on (authorization-server metadata, key sets, protected-
//! resource metadata), bounded the same way everywhere: [`FETCH_TIMEOUT`], [`MAX_DOCUMENT`]
//! bytes, HTTPS except on loopback, and errors that name the URL and never a credential.
//! Shared by the protected resource (this crate) and the gateway's upstream logins.

use std::time::Duration;

use serde_json::Value;

pub use super::config::secure_url;

/// Longest wait for one document.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest document read.
pub const MAX_DOCUMENT: usize = 1 << 20;

/// An HTTP client for OAuth documents and endpoints: TLS from [`crate::tls`], no redirect
/// followed, [`FETCH_TIMEOUT`] (plus a margin) as a backstop.
pub fn client() -> Result<reqwest::Client, String> {
    crate::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT + Duration::from_secs(2))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}

/// The body of `response` as JSON, at most [`MAX_DOCUMENT`] bytes.
pub async fn json_body(url: &str, mut response: reqwest::Response) -> Result<Value, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {}", without_url(e)))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOCUMENT {
            return Err(format!("{url} sent more than {MAX_DOCUMENT} bytes"));
        }
    }
    serde_json::from_slice::<Value>(&body).map_err(|e| format!("{url} did not send JSON: {e}"))
}

/// GETs `url` (which must be [`secure_url`]) as JSON, within the bounds above.
pub async fn fetch_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    secure_url(url)?;
    let fetch = async {
        let response = client
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {}", without_url(e)))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        json_body(url, response).await
    };
    tokio::time::timeout(FETCH_TIMEOUT, fetch)
        .await
        .unwrap_or_else(|_| Err(format!("{url} did not answer within {} s", FETCH_TIMEOUT.as_secs())))
}

/// The authorization-server metadata of `issuer`: RFC 8414's well-known URL (the path
/// inserted after the host), then OpenID discovery's. Its `issuer` must be exactly `issuer`.
pub async fn server_metadata(client: &reqwest::Client, issuer: &str) -> Result<Value, String> {
    let base = secure_url(issuer)?;
    let path = base.path().trim_end_matches('/');
    let origin = base.origin().ascii_serialization();
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')),
    ];
    let mut last = String::new();
    for url in candidates {
        let doc = match fetch_json(client, &url).await {
            Ok(d) => d,
            Err(e) => {
                last = e;
                continue;
            }
        };
        let named = doc.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if named != issuer {
            let named: String = named.chars().take(100).collect();
            return Err(format!("the metadata at {url} names issuer {named:?}, not {issuer:?}: refused"));
        }
        return Ok(doc);
    }
    Err(format!("no authorization-server metadata for {issuer}: {last}"))
}

/// A reqwest error's text without the URL it carries (the caller names the URL once).
fn without_url(e: reqwest::Error) -> String {
    match e.is_timeout() {
        true => "timed out".into(),
        false => e.without_url().to_string(),
    }
}
