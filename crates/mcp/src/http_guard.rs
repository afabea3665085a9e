//! The checks every HTTP request passes before the SDK sees it: its `Origin`, its bearer
//! token (`http_auth`), that a session is used only by the caller that opened it, and that a
//! POST body is one well-formed JSON-RPC message, read within a time and size bound.
//!
//! A session is bound to the digest of the caller that opened it (its token's, or its OAuth
//! principal's); any request on it (POST, the GET stream, DELETE, notifications such as
//! `cancelled`) by another caller gets 404, the very answer a session that never was gets.
//!
//! Refused tokens are counted per client address (`crate::strikes`): past a burst, an
//! address's tokens get 429 without being compared, except on a session they opened.
//!
//! The static tokens change with a reloaded config ([`Guard::reload`]): the sessions and
//! listen streams of a token removed, or granted otherwise, end (its client opens a new
//! session, with what its token holds now, or is refused).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::http_access::{HttpAccess, HttpLimits};
use crate::http_auth::{same, Authenticator, TokenDigest, ANYONE};
use crate::session::Caller;
use crate::session::SESSION_HEADER;

mod idle;
mod reload;

pub(crate) use idle::watch as watch_idle;

/// The requests a session answers; any other method is "method not found: NAME". (Resources
/// and prompts are answered by a gateway's sessions; a `serve` session answers those with
/// "method not found" itself.)
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
];

/// What the guard knows: who may call (static tokens as digests, the OAuth verifier), the
/// allowed origins, the limits, and which caller opened each session.
pub(crate) struct Guard {
    pub(crate) auth: Authenticator,
    allowed_origins: crate::http_origin::Origins,
    /// The limits, replaced by a reloaded config's ([`Guard::reload`]).
    limits: std::sync::RwLock<HttpLimits>,
    owners: Mutex<HashMap<String, TokenDigest>>,
    /// When each session was last busy (`idle`).
    idle: idle::Idle,
    sessions: Arc<LocalSessionManager>,
    /// Open `subscriptions/listen` streams of session-free callers, by token: counted with the
    /// sessions in the per-token and total caps.
    listens: Arc<Mutex<HashMap<TokenDigest, usize>>>,
    /// Callers' request budgets (`crate::rate`).
    limiter: Arc<crate::rate::Limiter>,
    /// Refused tokens per client address (`crate::strikes`).
    strikes: crate::strikes::Strikes,
    /// Proxies whose `X-Forwarded-For` names the client.
    trusted_proxies: std::sync::RwLock<Arc<Vec<crate::strikes::Block>>>,
    /// The address listened on (whether tokens may be weak, or none).
    addr: SocketAddr,
    /// What ends the open listen streams of each caller (when its token goes).
    cuts: Mutex<HashMap<TokenDigest, CancellationToken>>,
    /// What ends the identity provider's callers' listen streams (when its verifier goes).
    provider_cut: Mutex<CancellationToken>,
    /// The public pages beside the endpoint, replaced with the rest ([`Guard::reload`]).
    pub(crate) pages: crate::http_pages::Pages,
}

/// What a POST opens, beyond its own answer.
#[derive(Clone, Copy, PartialEq)]
enum Opens {
    Nothing,
    /// A session (`initialize` without a session).
    Session,
    /// A session-free `subscriptions/listen` stream.
    Listen,
}

/// A listen stream's place in [`Guard::listens`], given back when its response body is dropped.
struct Listening(Arc<Mutex<HashMap<TokenDigest, usize>>>, TokenDigest);

impl Drop for Listening {
    fn drop(&mut self) {
        let mut listens = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = listens.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                listens.remove(&self.1);
            }
        }
    }
}

impl Guard {
    pub(crate) fn new(
        addr: SocketAddr,
        access: HttpAccess,
        origins: crate::http_origin::Origins,
        auth: Authenticator,
        sessions: Arc<LocalSessionManager>,
        limiter: Arc<crate::rate::Limiter>,
    ) -> Guard {
        Guard {
            auth,
            addr,
            cuts: Mutex::default(),
            provider_cut: Mutex::default(),
            limiter: limiter.clone(),
            strikes: crate::strikes::Strikes::new(
                access.limits.refused_tokens_per_minute,
                access.limits.refused_tokens_burst,
            )
            .sharing(limiter.shared()),
            // Checked before anything starts (`HttpAccess::check`).
            trusted_proxies: std::sync::RwLock::new(Arc::new(
                crate::strikes::parse_blocks(&access.trusted_proxies).unwrap_or_default(),
            )),
            allowed_origins: origins,
            limits: std::sync::RwLock::new(access.limits),
            owners: Mutex::new(HashMap::new()),
            idle: idle::Idle::default(),
            sessions,
            listens: Arc::default(),
            pages: crate::http_pages::Pages::new(access.documents, access.callbacks.0),
        }
    }

    /// Who `request` comes from, as [`Authenticator::authenticate`] says, with refused tokens
    /// throttled per client address (`crate::strikes`): while the address has no strikes left,
    /// its static tokens are compared only on a session they opened, and any refusal is 429.
    /// `headers` and `peer` are a request's (the request itself is not `Sync`: it cannot be
    /// held across the identity provider's answer).
    pub(crate) async fn identify(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Option<(TokenDigest, Caller)>, Response> {
        let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let token = crate::http_auth::bearer(authorization);
        let proxies = self.trusted_proxies.read().unwrap_or_else(|p| p.into_inner()).clone();
        let client = peer.map(|p| crate::strikes::client_address(p, headers, &proxies));
        let locked = match (client, token) {
            (Some(c), Some(_)) if self.auth.required() => self.strikes.locked(c),
            _ => None,
        };
        // Only a throttled address's token is hashed here (the authenticator hashes it anyway).
        let statics = locked.is_none() || {
            let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
            let owner = session.and_then(|s| self.owner_of(s));
            matches!((owner, token), (Some(o), Some(t)) if same(&o, &crate::http_auth::digest(t)))
        };
        match self.auth.authenticate(authorization, statics).await {
            Err(_) if locked.is_some() => {
                self.strikes.throttled();
                let seconds = locked.unwrap_or_default().as_secs_f64().ceil().max(1.0) as u64;
                let text = format!(
                    "too many refused tokens from this address (limits.http.refused_tokens_per_minute); retry in {seconds} s"
                );
                let mut answer = (StatusCode::TOO_MANY_REQUESTS, text).into_response();
                answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
                Err(answer)
            }
            Err(answer) => {
                if let (Some(c), Some(t), StatusCode::UNAUTHORIZED) = (client, token, answer.status()) {
                    self.strikes.strike(c, t).await;
                }
                Err(answer)
            }
            found => found,
        }
    }

    /// The limits as they are now.
    pub(crate) fn limits(&self) -> HttpLimits {
        *self.limits.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Refused tokens and throttled requests, since the start.
    pub(crate) fn strike_counts(&self) -> (u64, u64) {
        self.strikes.counts()
    }

    /// Sessions open now.
    pub(crate) async fn session_count(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }

    fn owner_of(&self, session: &str) -> Option<TokenDigest> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner()).get(session).copied()
    }

    /// Binds `session` to `owner`, authenticated at token `generation`; ends it instead if the
    /// tokens changed since (its token may be gone).
    async fn bind(&self, session: String, owner: TokenDigest, generation: u64) {
        let stale = {
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            // Checked under the lock `reload` collects under, after it replaced the tokens.
            let stale = self.auth.generation() != generation;
            if !stale {
                owners.insert(session.clone(), owner);
            }
            stale
        };
        match stale {
            true => self.end(&session).await,
            false => self.idle.opened(&session),
        }
    }
}

/// Checks a request (see the module doc); puts the caller's principal on it.
pub(crate) async fn guard(State(g): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !crate::http_origin::origin_allowed(origin, &g.allowed_origins.now()) {
            return (StatusCode::FORBIDDEN, format!("origin {origin:?} is not allowed")).into_response();
        }
    }
    let generation = g.auth.generation();
    let (owner, caller) = match g.identify(request.headers(), peer(&request)).await {
        Ok(None) => (ANYONE, None),
        Ok(Some((digest, caller))) => (digest, Some(caller)),
        Err(answer) => return answer,
    };
    // A caller over its request rate: 429, before anything else is read.
    let key = caller.as_ref().map_or("local", |c| c.identity.as_str());
    if let Err(wait) = g.limiter.request(key).await {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        let mut answer = (
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many requests from this caller (rate_limits.requests_per_principal); retry in {seconds} s"),
        )
            .into_response();
        answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return answer;
    }
    let session = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    // Someone else's session answers as one that never was (or is closed): the same 404.
    if session.as_deref().is_some_and(|s| !g.owner_of(s).is_some_and(|o| same(&o, &owner))) {
        return (StatusCode::NOT_FOUND, "session not found").into_response();
    }
    // Busy from here (its body may be slow to come) until its response ends (`idle`): only
    // its owner's requests keep a session open.
    let busy = session.as_deref().map(|s| g.idle.begin(s));
    let deleting = request.method() == Method::DELETE;
    let (mut request, opens) = if request.method() == Method::POST {
        match checked_body(&g, request, session.is_none(), owner).await {
            Ok(r) => r,
            Err(answer) => return answer,
        }
    } else {
        (request, Opens::Nothing)
    };
    let initialize = opens == Opens::Session;
    // Counted from now (a burst of listens cannot all pass the check), given back when the
    // stream's body is dropped.
    let listening = (opens == Opens::Listen).then(|| {
        *g.listens.lock().unwrap_or_else(|p| p.into_inner()).entry(owner).or_default() += 1;
        Listening(g.listens.clone(), owner)
    });
    if let Some(c) = caller {
        request.extensions_mut().insert(c);
    }
    let mut response = next.run(request).await;
    // The SDK answers a session's DELETE with 202; the official clients expect 200 or 204 and
    // log a warning at every close otherwise. A session ended is a request done, not accepted
    // for later: 200.
    if deleting && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    if initialize && response.status().is_success() {
        if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            g.bind(id.to_owned(), owner, generation).await;
        }
    }
    if let (true, Some(s)) = (deleting && response.status().is_success(), session) {
        g.owners.lock().unwrap_or_else(|p| p.into_inner()).remove(&s);
    }
    if let Some(held) = listening.filter(|_| response.status().is_success()) {
        use futures_util::StreamExt;
        let (parts, body) = response.into_parts();
        // Ends with its caller's token, too.
        let cut = g.cut(owner, generation);
        let stream = body.into_data_stream().take_until(cut.cancelled_owned()).map(move |chunk| {
            let _held = &held;
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    match busy {
        Some(busy) => response.map(|body| idle::Holding::body(body, busy)),
        None => response,
    }
}

/// The address of the peer that sent `request` (put on it where the connection is accepted).
pub(crate) fn peer(request: &Request) -> Option<IpAddr> {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

/// Reads a POST body within the limits and checks it is one JSON-RPC message; the request
/// rebuilt with it and what it opens (a session, a listen stream), or the answer to send
/// instead (a caller at its cap of sessions and streams, or all of them taken).
async fn checked_body(
    g: &Guard,
    request: Request,
    sessionless: bool,
    owner: TokenDigest,
) -> Result<(Request, Opens), Response> {
    let (parts, body) = request.into_parts();
    let limits = g.limits();
    let limit = limits.max_body_bytes;
    let too_large = || {
        let text = format!("the request body is over the limit of {limit} bytes");
        (StatusCode::PAYLOAD_TOO_LARGE, text).into_response()
    };
    // A `Content-Length` over the limit is refused before a byte of the body is read.
    if body.size_hint().lower() > limit as u64 {
        return Err(too_large());
    }
    let wait = Duration::from_secs(limits.read_timeout_secs.max(1));
    let bytes = match tokio::time::timeout(wait, axum::body::to_bytes(body, limit)).await {
        Err(_) => return Err((StatusCode::REQUEST_TIMEOUT, "the request body was not sent in time").into_response()),
        Ok(Err(_)) => return Err(too_large()),
        Ok(Ok(b)) => b,
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => return Err(rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700, &format!("parse error: {e}"))),
    };
    let Some(obj) = message.as_object() else {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32600,
            "invalid request: a message must be one JSON-RPC object (batches are not supported)",
        ));
    };
    let id = obj.get("id").cloned();
    if id.as_ref().is_some_and(|i| !(i.is_string() || i.is_number() || i.is_null())) {
        let message = "invalid request: `id` must be a string or a number";
        return Err(rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600, message));
    }
    if obj.get("params").is_some_and(|p| !p.is_object()) {
        let id = id.unwrap_or(Value::Null);
        let message = "invalid request: `params` must be an object";
        return Err(rpc_error(StatusCode::BAD_REQUEST, id, -32600, message));
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let id = id.unwrap_or(Value::Null);
        return Err(rpc_error(StatusCode::BAD_REQUEST, id, -32600, "invalid request: `jsonrpc` must be \"2.0\""));
    }
    let method = obj.get("method").and_then(Value::as_str);
    let is_response = obj.contains_key("result") || obj.contains_key("error");
    match (method, &id) {
        (None, _) if is_response => {}
        (None, _) => {
            let id = id.unwrap_or(Value::Null);
            return Err(rpc_error(StatusCode::BAD_REQUEST, id, -32600, "invalid request: a request needs a `method`"));
        }
        (Some(m), Some(id)) if !METHODS.contains(&m) => {
            return Err(rpc_error(StatusCode::OK, id.clone(), -32601, &format!("method not found: {m}")));
        }
        _ => {}
    }
    let opens = match method {
        Some("initialize") if sessionless => Opens::Session,
        Some("subscriptions/listen") if sessionless => Opens::Listen,
        _ => Opens::Nothing,
    };
    if opens != Opens::Nothing {
        let live: std::collections::HashSet<String> =
            g.sessions.sessions.read().await.keys().map(|k| k.to_string()).collect();
        let mine = g
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(s, o)| same(o, &owner) && live.contains(s.as_str()))
            .count();
        let (mine, all) = {
            let listens = g.listens.lock().unwrap_or_else(|p| p.into_inner());
            (mine + listens.get(&owner).copied().unwrap_or(0), live.len() + listens.values().sum::<usize>())
        };
        let refusal = if all >= limits.max_sessions {
            Some((StatusCode::SERVICE_UNAVAILABLE, "too many open sessions; retry later, or close unused ones"))
        } else if mine >= limits.per_token_cap(g.auth.required()) {
            Some((
                StatusCode::TOO_MANY_REQUESTS,
                "this caller has as many sessions open as it may (limits.http.max_sessions_per_token); close unused ones",
            ))
        } else {
            None
        };
        if let Some(refusal) = refusal {
            let mut answer = refusal.into_response();
            answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return Err(answer);
        }
    }
    Ok((Request::from_parts(parts, Body::from(bytes)), opens))
}

fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}
