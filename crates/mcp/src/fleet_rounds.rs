//! Session-free rounds across a fleet of replicas: a 2026-07-28 client's retry of an
//! `input_required` round may land on any replica behind the load balancer, while the round
//! (the call waiting for the answer) lives in the replica that began it.
//!
//! A replica that knows its fleet (a shared key, and the URL the others reach it at) seals its
//! address into every `requestState` it gives: `TOKEN~OWNER~MAC`, where `OWNER` is its URL in
//! base64url and `MAC` an HMAC-SHA256 of it under the fleet's key. A retry whose state names
//! another replica, under a MAC that verifies, is forwarded there whole (the client's own
//! headers, so the owner authenticates the client itself and binds the round to it as
//! always), and the owner's answer is passed back as it came. A state whose MAC does not verify
//! is never forwarded (no one can make a replica send requests to an address of their
//! choosing); the replica answers it as an unknown state. A forwarded request is marked, and
//! is never forwarded again.
//!
//! The same seal ends the OAuth `state` of a per-user login a replica begins, so the browser's
//! redirect, wherever it lands, reaches the replica waiting for it (`page_elsewhere`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{HeaderValue, StatusCode};
use sha2::{Digest, Sha256};

/// The header that marks a request forwarded by another replica.
pub const FORWARDED: &str = "x-toolsearch-forwarded";
/// The headers of the client's request passed on to the owner.
const PASSED: [&str; 7] =
    ["authorization", "content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name", "traceparent"];
/// The longest a forwarded request may take.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(300);

/// This replica's place in its fleet.
pub struct FleetRounds {
    key: [u8; 32],
    /// The URL of this replica's `/mcp` endpoint as the others reach it (set when the listener
    /// is bound, unless advertised).
    me: OnceLock<String>,
    client: reqwest::Client,
}

impl std::fmt::Debug for FleetRounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetRounds").field("me", &self.me.get()).finish()
    }
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key` (32 bytes, under the block size).
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let (mut inner, mut outer) = (Sha256::new(), Sha256::new());
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

impl FleetRounds {
    /// A fleet member with the shared `secret`, reached at `advertise` (else at the address
    /// its listener binds).
    pub fn new(secret: &str, advertise: Option<String>) -> FleetRounds {
        let key = Sha256::digest(format!("toolsearch fleet rounds\0{secret}").as_bytes()).into();
        let me = OnceLock::new();
        if let Some(url) = advertise {
            let _ = me.set(url);
        }
        let client = crate::tls::client_builder().timeout(FORWARD_TIMEOUT).build().unwrap_or_default();
        FleetRounds { key, me, client }
    }

    /// Records the address the listener bound, unless one was advertised.
    pub(crate) fn bound(&self, addr: std::net::SocketAddr) {
        let _ = self.me.set(format!("http://{addr}/mcp"));
    }

    /// What this replica adds to each `requestState`: `~OWNER~MAC` (empty until it knows its
    /// address).
    pub fn suffix(&self) -> String {
        let Some(me) = self.me.get() else { return String::new() };
        let owner = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(me);
        let mac: String = hmac(&self.key, owner.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        format!("~{owner}~{mac}")
    }

    /// The URL of the replica a `requestState` was sealed by, when that is another replica and
    /// the seal verifies.
    pub fn elsewhere(&self, state: &str) -> Option<String> {
        let mut parts = state.rsplitn(3, '~');
        let (mac, owner) = (parts.next()?, parts.next()?);
        parts.next()?;
        let expected: String = hmac(&self.key, owner.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        // Compared in constant time.
        let same =
            mac.len() == expected.len() && mac.bytes().zip(expected.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        if !same {
            return None;
        }
        let url = String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(owner).ok()?).ok()?;
        (Some(&url) != self.me.get()).then_some(url)
    }
}

/// A page an embedding server answers itself (`crate::http_access::Callbacks`), for a
/// `GET` whose query's `state` another replica sealed (an OAuth redirect of a login that
/// replica began): that replica's answer, fetched from the same path there, marked as
/// forwarded. `None` when the page is this replica's to answer.
pub(crate) async fn page_elsewhere(
    fleet: Option<&FleetRounds>,
    uri: &http::Uri,
    headers: &http::HeaderMap,
) -> Option<(u16, String)> {
    let fleet = fleet?;
    if headers.contains_key(FORWARDED) {
        return None;
    }
    let query = uri.query()?;
    let state = url::form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "state")?.1;
    let owner = reqwest::Url::parse(&fleet.elsewhere(&state)?).ok()?;
    let target = format!("{}{}?{query}", owner.origin().ascii_serialization(), uri.path());
    Some(match fleet.client.get(&target).header(FORWARDED, "1").send().await {
        Ok(answer) => (answer.status().as_u16(), answer.text().await.unwrap_or_default()),
        Err(_) => (502, "The gateway replica that began this login is unreachable: start the call again.".into()),
    })
}

/// The `requestState` of a JSON-RPC request body, if it has one.
fn request_state(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value.get("params")?.get("requestState")?.as_str().map(str::to_owned)
}

/// The middleware: a retry whose round another replica holds is forwarded there.
pub(crate) async fn forward(State(fleet): State<Option<Arc<FleetRounds>>>, request: Request, next: Next) -> Response {
    let Some(fleet) = fleet else { return next.run(request).await };
    if request.method() != http::Method::POST || request.headers().contains_key(FORWARDED) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return (StatusCode::BAD_REQUEST, "the request body could not be read").into_response();
    };
    let owner = (bytes.windows(12).any(|w| w == b"requestState"))
        .then(|| request_state(&bytes))
        .flatten()
        .and_then(|s| fleet.elsewhere(&s));
    let Some(owner) = owner else { return next.run(Request::from_parts(parts, Body::from(bytes))).await };
    let mut out = fleet.client.post(&owner).header(FORWARDED, "1").body(bytes.clone());
    for name in PASSED {
        for v in parts.headers.get_all(name) {
            out = out.header(name, v.clone());
        }
    }
    match out.send().await {
        Ok(answer) => {
            let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let kind = answer.headers().get("content-type").cloned();
            let body = answer.bytes().await.unwrap_or_default();
            let mut response = (status, body).into_response();
            if let Some(kind) = kind.and_then(|k| HeaderValue::from_bytes(k.as_bytes()).ok()) {
                response.headers_mut().insert(http::header::CONTENT_TYPE, kind);
            }
            response
        }
        Err(_) => {
            let id = serde_json::from_slice::<serde_json::Value>(&bytes).ok().and_then(|v| v.get("id").cloned());
            let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                "message": "the replica holding this round is unreachable: send the request again without requestState"}});
            (StatusCode::OK, [(http::header::CONTENT_TYPE, "application/json")], error.to_string()).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_forwarded_only_to_another_replica_under_a_seal_that_verifies() {
        let (a, b) = (FleetRounds::new("k", None), FleetRounds::new("k", None));
        a.bound("127.0.0.1:8801".parse().unwrap());
        b.bound("127.0.0.1:8802".parse().unwrap());
        let state = format!("00ff{}", a.suffix());
        assert_eq!(b.elsewhere(&state).as_deref(), Some("http://127.0.0.1:8801/mcp"));
        assert_eq!(a.elsewhere(&state), None, "its own");
        let stranger = FleetRounds::new("other key", None);
        assert_eq!(stranger.elsewhere(&state), None, "another fleet's seal");
        let forged = state.replace(&a.suffix()[1..].split('~').next().unwrap().to_owned(), "aHR0cDovL2V2aWwv");
        assert_eq!(b.elsewhere(&forged), None, "an address of someone's choosing");
        assert_eq!(b.elsewhere("00ff"), None);
        // RFC 4231 test case 2 shape (key padded to 32 bytes here): the HMAC is deterministic
        // and keyed.
        assert_ne!(hmac(&[0; 32], b"m"), hmac(&[1; 32], b"m"));
    }
}
