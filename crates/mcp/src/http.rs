//! MCP over Streamable HTTP at `/mcp`, through the official SDK, one tool set per session.
//!
//! Security, as the MCP transport specification asks: the default bind is loopback; a request
//! with an `Origin` that is neither loopback nor configured is refused (DNS-rebinding
//! protection), as is a `Host` that is not the bind address's; with bearer tokens configured,
//! a request without a known token is refused and each token's scopes decide what its
//! sessions see and call; a non-loopback bind without tokens refuses to start. The checks of
//! each request (token, session ownership, message shape) are in `http_guard`.
//!
//! Connections are served by hyper directly (not `axum::serve`) so that a client that sends
//! its headers slowly is cut off, and with `TCP_NODELAY`, so a keep-alive response is not held
//! back by Nagle's algorithm.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::config::ServeError;
use crate::http_guard::{guard, Guard};
use crate::hub::Hub;
use crate::ops::{self, OpsState};
use crate::session::Session;
use axum::routing::get;

/// Who may call the HTTP endpoint.
#[derive(Debug, Clone, Default)]
pub struct HttpAccess {
    /// Bearer tokens and what each grants; empty: no token needed (loopback only).
    pub tokens: BTreeMap<String, crate::config::Grant>,
    /// Browser origins allowed besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Bounds on sessions, bodies and slow clients.
    pub limits: HttpLimits,
}

/// Bounds on what HTTP clients may make the gateway hold (`toolsearch.limits.http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpLimits {
    /// Most sessions open at once (default 256); past it, a new session gets 503 with
    /// `Retry-After`.
    pub max_sessions: usize,
    /// Most sessions one bearer token (or, without tokens, all clients together) may hold
    /// open at once (default 32): one caller cannot fill [`HttpLimits::max_sessions`] and lock
    /// every other out. Past it, its new session gets 429 with `Retry-After`.
    pub max_sessions_per_token: usize,
    /// A session with no request for this long is closed (default 300 s).
    pub session_idle_secs: u64,
    /// Longest wait for a request's headers, and for its body (default 10 s each).
    pub read_timeout_secs: u64,
    /// Largest request body (default 4 MiB).
    pub max_body_bytes: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_sessions: 256,
            max_sessions_per_token: 32,
            session_idle_secs: 300,
            read_timeout_secs: 10,
            max_body_bytes: 4 << 20,
        }
    }
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
    // The Host a request may name (DNS-rebinding protection), on every endpoint.
    let hosts: Option<Arc<Vec<String>>> = addr.ip().is_loopback().then(|| {
        Arc::new(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            "[::1]".to_owned(),
            bound.to_string(),
            format!("localhost:{}", bound.port()),
        ])
    });
    config = match &hosts {
        Some(h) => config.with_allowed_hosts(h.iter().cloned()),
        // Reachable by name from elsewhere: tokens (required above) protect it.
        None => config.disable_allowed_hosts(),
    };
    let limits = access.limits;
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(limits.session_idle_secs.max(1)));
    let sessions = Arc::new(sessions);
    let session_hub = hub.clone();
    let service = StreamableHttpService::new(move || Ok(Session::new(session_hub.clone())), sessions.clone(), config);
    let state = Arc::new(Guard::new(access, sessions));
    let ops = Arc::new(OpsState { hub: hub.clone(), guard: state.clone() });
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state, guard))
        .merge(
            axum::Router::new()
                .route("/healthz", get(ops::healthz))
                .route("/readyz", get(ops::readyz))
                .route("/metrics", get(ops::metrics))
                .with_state(ops)
                .layer(axum::middleware::from_fn_with_state(hosts, crate::http_guard::host_guard)),
        );
    ready(bound);
    let read_timeout = Duration::from_secs(limits.read_timeout_secs.max(1));
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (stream, _) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors and the like: wait a moment rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut builder = Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new()).header_read_timeout(read_timeout).keep_alive(true);
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).into_owned();
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    // Open streams end with the sessions (their cancellation token is `stop`'s child); wait a
    // moment for connections to finish what they are sending.
    let _ = tokio::time::timeout(Duration::from_secs(2), connections.shutdown()).await;
    Ok(())
}
