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
//! its headers slowly is cut off; with `TCP_NODELAY`, so a keep-alive response is not held
//! back by Nagle's algorithm; and with a bound on how long a silent peer is waited for
//! (`bound_silence`). An HTTP/1 answer sent before its request's body was read to the end (a
//! refusal, a body too large or too slow) says `Connection: close` (`close_unread`).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::config::ServeError;
pub use crate::http_access::{HttpAccess, HttpLimits};
use crate::http_auth::Authenticator;
use crate::http_guard::{guard, Guard};
use crate::hub::Hub;
use crate::oauth::Verifier;
use crate::ops_http::{self as ops, OpsState};
use crate::session::Session;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Version};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::get;
use http_body::{Frame, SizeHint};

/// Serves `hub` on `addr` until `stop` is cancelled. Refuses a non-loopback address without
/// tokens. `ready` gets the bound address (port 0 picks a free one).
pub async fn serve_http(
    hub: Arc<Hub>,
    addr: SocketAddr,
    mut access: HttpAccess,
    stop: CancellationToken,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    access.check(addr)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Http(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| ServeError::Http(e.to_string()))?;
    if let Some(fleet) = hub.fleet_rounds() {
        fleet.bound(bound);
    }
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
    let mut sessions = LocalSessionManager::default();
    // Idle sessions are the guard's to close (`http_guard::idle`), with the limit as it is now.
    sessions.session_config.keep_alive = None;
    let sessions = Arc::new(sessions);
    hub.attach_http_sessions(&sessions);
    let session_hub = hub.clone();
    let service = StreamableHttpService::new(move || Ok(Session::new(session_hub.clone())), sessions.clone(), config);
    let verifier = match access.oauth.clone() {
        Some(settings) => Some(Verifier::new(settings).map_err(|e| ServeError::Http(format!("auth.oauth.{e}")))?),
        None => None,
    };
    if let Some(v) = verifier.clone() {
        tokio::spawn(async move { v.warm().await });
    }
    let origins = crate::http_origin::Origins::new(access.allowed_origins.clone());
    hub.prepare_for_callers(&access);
    let auth = Authenticator::new(std::mem::take(&mut access.tokens), verifier);
    let state = Arc::new(Guard::new(addr, access, origins.clone(), auth, sessions, hub.limiter().clone()));
    let public = public_routes(state.clone(), hub.fleet_rounds().cloned());
    let live = state.clone();
    crate::http_guard::watch_idle(state.clone(), stop.clone());
    let reload: Arc<dyn crate::access_reload::AccessReload> = state.clone();
    hub.attach_guard(Arc::downgrade(&reload));
    let ops = Arc::new(OpsState { hub: hub.clone(), guard: state.clone() });
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        // After the guard (limits, authentication): a retry of a round another replica holds goes there.
        .layer(axum::middleware::from_fn_with_state(hub.fleet_rounds().cloned(), crate::fleet_rounds::forward))
        .layer(axum::middleware::from_fn_with_state(state, guard))
        .layer(axum::middleware::from_fn_with_state((origins, hosts.clone()), crate::http_origin::cors))
        .merge(
            axum::Router::new()
                .route("/healthz", get(ops::healthz))
                .route("/readyz", get(ops::readyz))
                .route("/metrics", get(ops::metrics))
                .with_state(ops)
                .merge(public)
                .layer(axum::middleware::from_fn_with_state(hosts, crate::http_origin::host_guard)),
        )
        .layer(axum::middleware::from_fn(close_unread));
    ready(bound);
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (stream, peer) = tokio::select! {
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
        bound_silence(&stream, live.limits().peer_timeout_secs);
        // The peer's address, for counting refused tokens per client (`crate::strikes`).
        let service = TowerToHyperService::new(tower::ServiceExt::map_request(
            app.clone(),
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                request
            },
        ));
        // The limits as a reloaded config left them.
        let read_timeout = Duration::from_secs(live.limits().read_timeout_secs.max(1));
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

/// Bounds how long `stream` outlives a peer gone without a word (`limits.http.peer_timeout_secs`;
/// 0 leaves it to the kernel): data unacknowledged for `secs` ends it, and one quiet for `secs`
/// is probed three times, `secs / 3` apart. Without it, a client machine that vanished with a
/// stream open would hold the stream, and its session, for as long as the kernel retransmits
/// (about 15 minutes on Linux). A socket that refuses an option keeps the kernel's default.
/// The server calls it on each connection it accepts (public for its benchmark,
/// `benches/bound_silence.rs`).
pub fn bound_silence(stream: &tokio::net::TcpStream, secs: u64) {
    if secs == 0 {
        return;
    }
    let socket = socket2::SockRef::from(stream);
    let wait = Duration::from_secs(secs);
    let keepalive = socket2::TcpKeepalive::new().with_time(wait);
    #[cfg(target_os = "linux")]
    let keepalive = {
        let _ = socket.set_tcp_user_timeout(Some(wait));
        keepalive.with_interval((wait / 3).max(Duration::from_secs(1))).with_retries(3)
    };
    let _ = socket.set_tcp_keepalive(&keepalive);
}

/// The routes readable without a token: the RFC 9728 metadata, and the public pages
/// (`crate::http_pages`) answering what no route took. Readable from any origin, as a
/// browser-based client must read the metadata before it has a token. The metadata is the
/// identity provider's as it is now (`auth.oauth`, replaced by a reload: [`Guard::reload`]), at
/// the paths its resource URL gives; without one, those paths are not found.
fn public_routes(guard: Arc<Guard>, fleet: Option<Arc<crate::fleet_rounds::FleetRounds>>) -> axum::Router {
    use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
    use axum::response::IntoResponse;
    let pages = guard.clone();
    let metadata = move |uri: Uri| {
        let verifier = guard.auth.verifier().filter(|v| v.metadata_paths().iter().any(|p| p == uri.path()));
        async move {
            match verifier {
                Some(v) => (
                    [(header::CONTENT_TYPE, "application/json"), (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")],
                    v.metadata().to_string(),
                )
                    .into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
    };
    let page = move |method: Method, uri: Uri, headers: HeaderMap| {
        let (pages, fleet) = (pages.clone(), fleet.clone());
        async move { crate::http_pages::answer(&pages.pages, fleet.as_deref(), &method, &uri, &headers).await }
    };
    let well_known = crate::oauth::WELL_KNOWN;
    axum::Router::new()
        .route(well_known, get(metadata.clone()))
        .route(&format!("{well_known}/{{*rest}}"), get(metadata))
        .fallback(page)
}

/// Marks an HTTP/1 answer `Connection: close` when its request's body was not read to the end
/// (refused before it was read, over the size limit, or sent too slowly). hyper cannot read the
/// next request on such a connection and drops it; a client not told so may send its next
/// request (an OAuth client's retry with a fresh token) down the dropped connection.
///
/// Public so that its cost can be measured on its own (`cargo bench -p toolsearch-mcp --bench
/// close_unread`); the server puts it around every route.
pub async fn close_unread(request: Request, next: Next) -> Response {
    if request.version() >= Version::HTTP_2 || request.body().is_end_stream() {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let request = request.map(|inner| Body::new(Watched { inner, read: read.clone() }));
    let mut answer = next.run(request).await;
    if !read.load(Ordering::Relaxed) {
        answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}

/// A request body that notes when it has been read to its end (`close_unread`).
struct Watched {
    inner: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use tower::ServiceExt;

    /// Answers `POST /read` after reading the body (its length and the size hint it had before),
    /// `POST /refuse` without reading it.
    fn app() -> axum::Router {
        async fn read(request: Request) -> String {
            let hint = request.body().size_hint().exact();
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.expect("the body reads");
            format!("{} {hint:?}", body.len())
        }
        axum::Router::new()
            .route("/read", post(read))
            .route("/refuse", post(|| async { axum::http::StatusCode::UNAUTHORIZED }))
            .layer(axum::middleware::from_fn(close_unread))
    }

    async fn answer(path: &str, body: &'static str) -> (Option<HeaderValue>, String) {
        let request = Request::post(path).body(Body::from(body)).expect("a request");
        let answer = app().oneshot(request).await.expect("an answer");
        let close = answer.headers().get(header::CONNECTION).cloned();
        let text = axum::body::to_bytes(answer.into_body(), 1 << 20).await.expect("the answer reads");
        (close, String::from_utf8_lossy(&text).into_owned())
    }

    #[tokio::test]
    async fn an_answer_before_the_body_was_read_says_close_and_one_after_does_not() {
        let (close, text) = answer("/read", "{\"jsonrpc\":\"2.0\"}").await;
        assert_eq!(close, None);
        // The handler sees the body's length before reading it, as without the layer.
        assert_eq!(text, "17 Some(17)");
        let (close, _) = answer("/refuse", "{\"jsonrpc\":\"2.0\"}").await;
        assert_eq!(close, Some(HeaderValue::from_static("close")));
        // Nothing to read: nothing left unread.
        let (close, _) = answer("/refuse", "").await;
        assert_eq!(close, None);
    }
}
