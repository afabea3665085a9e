//! MCP over Streamable HTTP at `/mcp`, through the official SDK, one tool set per session.
//!
//! Security, as the MCP transport specification asks: the default bind is loopback; a request
//! with an `Origin` that is neither loopback nor configured is refused (DNS-rebinding
//! protection), as is a `Host` that is not the bind address's; with bearer tokens configured,
//! a request without a known token is refused and each token's scopes decide what its
//! sessions see and call; a non-loopback bind without tokens refuses to start.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use toolsearch_query::Principal;

use crate::config::ServeError;
use crate::hub::Hub;
use crate::session::{Caller, Session};

/// Who may call the HTTP endpoint.
#[derive(Debug, Clone, Default)]
pub struct HttpAccess {
    /// Bearer tokens and the scopes each grants; empty: no token needed (loopback only).
    pub tokens: BTreeMap<String, Vec<String>>,
    /// Browser origins allowed besides loopback ones.
    pub allowed_origins: Vec<String>,
}

impl HttpAccess {
    /// Refuses a non-loopback address without tokens (checked before anything starts).
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        if !addr.ip().is_loopback() && self.tokens.is_empty() {
            return Err(ServeError::Http(format!(
                "refusing to listen on {addr} without bearer tokens: anyone who can reach it could call every tool; \
                 add \"tokens\" to the toolsearch section, or bind 127.0.0.1"
            )));
        }
        Ok(())
    }
}

/// Serves `hub` on `addr` until `stop` is cancelled. Refuses a non-loopback address without
/// tokens. `ready` gets the bound address (port 0 picks a free one).
pub async fn serve_http(
    hub: Arc<Hub>,
    addr: SocketAddr,
    access: HttpAccess,
    stop: CancellationToken,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    access.check(addr)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Http(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| ServeError::Http(e.to_string()))?;
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    config = if addr.ip().is_loopback() {
        config.with_allowed_hosts([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            bound.to_string(),
            format!("localhost:{}", bound.port()),
        ])
    } else {
        // Reachable by name from elsewhere: tokens (required above) protect it.
        config.disable_allowed_hosts()
    };
    let session_hub = hub.clone();
    let service = StreamableHttpService::new(
        move || Ok(Session::new(session_hub.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let access = Arc::new(access);
    let app =
        axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn_with_state(access, guard));
    ready(bound);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
        .map_err(|e| ServeError::Http(e.to_string()))
}

/// Checks `Origin` and the bearer token; puts the caller's principal on the request.
async fn guard(State(access): State<Arc<HttpAccess>>, mut request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !origin_allowed(origin, &access.allowed_origins) {
            return (StatusCode::FORBIDDEN, format!("origin {origin:?} is not allowed")).into_response();
        }
    }
    if !access.tokens.is_empty() {
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let Some(scopes) = token.and_then(|t| access.tokens.get(t)) else {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a valid bearer token is required",
            )
                .into_response();
        };
        request.extensions_mut().insert(Caller(Principal::with_scopes(scopes.iter().cloned())));
    }
    next.run(request).await
}

/// Loopback origins are always allowed; others only when configured (exactly).
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    let host = rest.map(|r| r.split('/').next().unwrap_or(r)).unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && !h.ends_with(':') => h,
        _ => host,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::origin_allowed;

    #[test]
    fn only_loopback_and_configured_origins_pass() {
        assert!(origin_allowed("http://localhost:3000", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(origin_allowed("http://[::1]:8080", &[]));
        assert!(!origin_allowed("http://evil.example", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        assert!(!origin_allowed("null", &[]));
        assert!(origin_allowed("https://app.example", &["https://app.example".into()]));
    }
}
