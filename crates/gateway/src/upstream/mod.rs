//! The gateway's upstream MCP servers: one long-lived client session each (a child process
//! over stdio, or Streamable HTTP), supervised: a server that fails to start, exits or stops
//! answering pings is marked down (its tools hidden), restarted with backoff, and comes back.
//! Calls are forwarded to the owning session with cancellation and progress.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::Peer;
use rmcp::RoleClient;
use tokio::sync::mpsc;

use crate::config::{GatewayLimits, ServerSpec};
use crate::credentials::Credentials;
use crate::listing::list_tools;
pub use crate::listing::Listing;
use toolsearch_mcp::RunError;

mod asks;
mod client;
mod connect;
mod failure;
mod kept;
pub(crate) mod lazy;
mod per_user;
mod sse;
mod supervise;

pub(crate) use asks::Asks;
pub use failure::Failure;
pub(crate) use per_user::Line;

use lazy::Lazy;
pub use lazy::LazySettings;

/// Lines of an upstream's stderr kept for error messages.
const STDERR_LINES: usize = 12;
/// Longest wait between two restarts of a failing upstream.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a connected upstream is pinged, and how long it has to answer.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// The failure kind of a lazy server's session closed for want of use (not a failure).
const IDLE: &str = "idle";

/// What happened to an upstream, for the gateway to act on.
#[derive(Debug, Clone, PartialEq)]
pub enum UpEvent {
    /// Connected (again), with its tools listed.
    Up(String),
    /// Went down.
    Down(String),
    /// Its tool list changed (it said so); listed again.
    ToolsChanged(String),
    /// Its resources, templates or prompts changed (it said so); to be listed again.
    OffersChanged(String),
    /// A resource it was asked to watch changed: the server, and the URI as it gave it.
    ResourceUpdated(String, String),
    /// It sent a log message (`notifications/message`; deprecated by 2026-07-28, still sent by
    /// servers of the older revisions).
    #[allow(deprecated)]
    Logged(String, rmcp::model::LoggingMessageNotificationParam),
    /// A request to it (or its event stream, over HTTP+SSE) failed on the way: the server,
    /// and the detail for the operator's log (clients get only the server's name and a
    /// reason code, `crate::reasons`).
    RequestFailed(String, String),
}

/// One upstream server.
pub struct Upstream {
    /// Its name in the config (the category and the id prefix of its tools).
    pub name: String,
    spec: ServerSpec,
    limits: GatewayLimits,
    peer: Mutex<Option<Peer<RoleClient>>>,
    available: Arc<AtomicBool>,
    listing: Mutex<Option<Listing>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    last_error: Mutex<Option<Failure>>,
    /// Headers from commands (HTTP upstreams that configure them).
    credentials: Option<Arc<Credentials>>,
    /// The session now connected: cancelling the first closes it; the second is cancelled
    /// once it has closed (its child reaped, its process group ended).
    session: Mutex<Option<(tokio_util::sync::CancellationToken, tokio_util::sync::CancellationToken)>>,
    /// Where it reports (set when supervised).
    events: Mutex<Option<mpsc::UnboundedSender<UpEvent>>>,
    /// Its open requests and where their progress goes.
    router: Arc<crate::progress::Router>,
    /// Set when it is lazy: started on demand, stopped when idle (`lazy`).
    lazy: Option<Lazy>,
    /// Where its last listing is kept for the next start (none on a replica, or a check).
    kept: Option<kept::KeptListing>,
    /// Its open calls, whose clients its questions (elicitation, sampling) are relayed to.
    pub(crate) asks: Arc<Asks>,
    /// Whether it speaks only the session-free revision (learnt from its refusal of
    /// `initialize`): it is reached with `server/discover` (`connect`).
    modern: AtomicBool,
    /// The state directory (its grants, and its callers' with `per_user`).
    state: std::path::PathBuf,
    /// Its callers' own sessions, when every caller logs in for itself (`per_user`).
    pub(crate) users: Option<per_user::UserSessions>,
    /// Its own longest forwarded request in milliseconds, if its entry gives one (0: none; see
    /// [`Upstream::call_timeout`]): a reload changes it for the next request.
    call_timeout_ms: AtomicU64,
}

/// A request's hold on an upstream's session: a lazy server is not stopped while one is held.
pub(crate) struct InUse<'a>(&'a Upstream);

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        if let Some(lazy) = &self.0.lazy {
            lazy.leave();
        }
    }
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("name", &self.name).field("up", &self.is_up()).finish()
    }
}

impl Upstream {
    /// An upstream not started yet, whose tool lists and answers are read within `limits`;
    /// lazy (started on demand, stopped when idle) with `lazy`, its requests forwarded within
    /// `call_timeout` if given (else the gateway's). An OAuth-protected server keeps its grant
    /// under `state` (`crate::login`); with `keep` (or lazy), so does its last listing
    /// (`kept`).
    pub fn new(
        name: String,
        spec: ServerSpec,
        limits: GatewayLimits,
        lazy: Option<LazySettings>,
        call_timeout: Option<Duration>,
        state: &std::path::Path,
        keep: bool,
    ) -> Arc<Upstream> {
        let kept = (keep || lazy.is_some()).then(|| kept::KeptListing::new(state.to_path_buf(), &name, &spec));
        let lazy = lazy.map(Lazy::new);
        let (credentials, login_failure) = match &spec {
            ServerSpec::Http { header_commands, oauth, url, .. } if !header_commands.is_empty() || oauth.is_some() => {
                let grant =
                    oauth.clone().map(|o| crate::login::UpstreamGrant::new(&name, url, state.to_path_buf(), *o));
                match grant.transpose() {
                    Ok(grant) => (Some(Credentials::new(header_commands.clone(), grant)), None),
                    Err(e) => (None, Some(Failure::new("its OAuth client could not be made", e))),
                }
            }
            _ => (None, None),
        };
        let per_user = matches!(&spec, ServerSpec::Http { oauth: Some(o), .. } if o.per_user);
        Arc::new(Upstream {
            credentials,
            state: state.to_path_buf(),
            users: per_user.then(per_user::UserSessions::default),
            name,
            spec,
            limits,
            peer: Mutex::new(None),
            available: Arc::new(AtomicBool::new(false)),
            listing: Mutex::new(None),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            last_error: Mutex::new(login_failure),
            session: Mutex::new(None),
            events: Mutex::new(None),
            router: Arc::default(),
            lazy,
            kept,
            modern: AtomicBool::new(false),
            asks: Arc::default(),
            call_timeout_ms: AtomicU64::new(millis(call_timeout)),
        })
    }

    /// Sets its own longest forwarded request (`None`: the gateway's), from the next request
    /// on: a reload that changes only this keeps the server running.
    pub(crate) fn set_call_timeout(&self, timeout: Option<Duration>) {
        self.call_timeout_ms.store(millis(timeout), Ordering::Relaxed);
    }

    /// How long a request forwarded to it may take: its entry's `call_timeout_secs`, else
    /// `default` (the gateway's).
    pub(crate) fn call_timeout(&self, default: Duration) -> Duration {
        match self.call_timeout_ms.load(Ordering::Relaxed) {
            0 => default,
            ms => Duration::from_millis(ms),
        }
    }

    /// What a client is told of `e`, a request to this server that failed on the way; the
    /// detail goes to the operator's log.
    pub(crate) fn failed(&self, e: &rmcp::service::ServiceError) -> RunError {
        if !matches!(e, rmcp::service::ServiceError::McpError(_)) {
            if let Some(events) = self.events.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                let _ = events.send(UpEvent::RequestFailed(self.name.clone(), e.to_string()));
            }
        }
        crate::reasons::run_error(&self.name, e)
    }

    /// Closes the connected session, if any, and waits (a few seconds at most) until it is
    /// closed: a stdio child is asked to exit, then its process group is killed.
    pub(crate) async fn stop(&self) {
        self.available.store(false, Ordering::SeqCst);
        *self.peer.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((close, closed)) = session {
            close.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(6), closed.cancelled()).await;
        }
    }

    /// Whether it is connected now.
    pub fn is_up(&self) -> bool {
        self.available.load(Ordering::SeqCst)
    }

    /// The flag availability checks read.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.available.clone()
    }

    /// What it listed when last connected (kept while it is down, so its tools stay in the
    /// catalogue, hidden).
    pub fn listing(&self) -> Option<Listing> {
        self.listing.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What its last listing offers beyond tools (nothing before the first), without copying
    /// its tools.
    pub(crate) fn offers(&self) -> crate::listing::Offers {
        self.listing.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|l| l.offers.clone()).unwrap_or_default()
    }

    /// The digest ([`crate::pins::Pin`]) of tool `name`'s definition in its current listing.
    pub(crate) fn definition_digest(&self, name: &str) -> Option<String> {
        let listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        let tools = &listing.as_ref()?.tools;
        tools
            .iter()
            .find(|t| t.get("name").and_then(serde_json::Value::as_str) == Some(name))
            .map(|t| crate::pins::Pin::of(t).digest)
    }

    /// How many tools its last listing holds (0 before the first), without copying it.
    pub fn tool_count(&self) -> usize {
        self.listing.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map_or(0, |l| l.tools.len())
    }

    /// Why it is down, as a client may be told: the server's name and the kind of failure,
    /// never its command line, arguments, environment, URL or output (they may hold
    /// credentials).
    pub fn client_reason(&self) -> String {
        let kind = self.failure().map_or_else(|| "it is still starting".to_owned(), |f| f.kind);
        format!(
            "MCP server {:?} is unavailable: {kind}. The gateway restarts it by itself; its operator can see why in the gateway's status.",
            self.name
        )
    }

    /// Why it is down, for the operator's log and status: what runs it, the details and its
    /// last stderr lines, with anything that looks like a credential masked.
    pub fn operator_reason(&self) -> String {
        let what = match &self.spec {
            ServerSpec::Stdio { command, args, .. } => {
                format!(
                    "the command `{}`",
                    std::iter::once(command).chain(args).map(String::as_str).collect::<Vec<_>>().join(" ")
                )
            }
            ServerSpec::Http { url, .. } => format!("the server at {url}"),
        };
        let failure = self.failure().unwrap_or_else(|| Failure::new("it is not connected yet", ""));
        let tail: Vec<String> = self.stderr.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
        let mut text = format!("MCP server {:?} is unavailable: {}: {what}", self.name, failure.kind);
        if !failure.detail.is_empty() {
            text.push_str(&format!(": {}", failure.detail));
        }
        if !tail.is_empty() {
            text.push_str(&format!("; its last stderr lines: {}", tail.join(" | ")));
        }
        crate::secrets::mask(&text)
    }

    /// The error a call gets while it is down: `UPSTREAM_LOGIN_REQUIRED` when it waits for
    /// its operator to log in, else `UNAVAILABLE`.
    pub(crate) fn down_error(&self) -> toolsearch_mcp::RunError {
        let reason = self.client_reason();
        match self.failure().is_some_and(|f| f.kind.contains(crate::login::LOGIN_REQUIRED)) {
            true => toolsearch_mcp::RunError::LoginRequired(reason),
            false => toolsearch_mcp::RunError::Unavailable(reason),
        }
    }

    pub(crate) fn failure(&self) -> Option<Failure> {
        self.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_failure(&self, f: Option<Failure>) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = f;
    }

    /// Lists the tools again after the upstream said they changed.
    pub async fn relist(&self) -> bool {
        let peer = self.peer.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(peer) = peer else { return false };
        match list_tools(&peer, &self.limits.list).await {
            Ok(tools) => {
                let mut listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
                let summary = listing.as_ref().map(|l| l.summary.clone()).unwrap_or_default();
                let offers = listing.as_ref().map(|l| l.offers.clone()).unwrap_or_default();
                *listing = Some(Listing { summary, tools, offers });
                if let (Some(kept), Some(l)) = (&self.kept, listing.as_ref()) {
                    kept.keep(&self.name, l);
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Lists the resources, templates and prompts again after the upstream said they changed.
    pub async fn relist_offers(&self) -> bool {
        let Some(peer) = self.peer() else { return false };
        let offers = crate::offers::list_offers(&peer, &self.limits.list).await;
        let mut listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        match listing.as_mut() {
            Some(l) => {
                l.offers = offers;
                if let Some(kept) = &self.kept {
                    kept.keep(&self.name, l);
                }
                true
            }
            None => false,
        }
    }

    /// The session with the server for one request, and the request's hold on it: a lazy
    /// server not running is started (the wait bounded by `wait`); `None` when it is down or
    /// did not come up in time.
    pub(crate) async fn ready_peer(&self, wait: Duration) -> Option<(Peer<RoleClient>, InUse<'_>)> {
        let Some(lazy) = &self.lazy else { return self.peer().map(|p| (p, InUse(self))) };
        lazy.enter();
        let held = InUse(self);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let connected = lazy.connected.notified();
            if let Some(peer) = self.peer() {
                return Some((peer, held));
            }
            if !self.is_up() {
                return None;
            }
            lazy.wanted.notify_one();
            if tokio::time::timeout_at(deadline, connected).await.is_err() {
                return self.peer().map(|p| (p, held));
            }
        }
    }

    /// The session with the server, while it is up.
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.lock().unwrap_or_else(|p| p.into_inner()).clone().filter(|_| self.is_up())
    }

    /// Progress notifications it sent that named no open request of its own, dropped.
    pub fn progress_dropped(&self) -> u64 {
        self.router.dropped()
    }

    /// The limits its lists and answers are read within.
    pub(crate) fn limits(&self) -> &GatewayLimits {
        &self.limits
    }

    /// Its open requests and where their progress goes.
    pub(crate) fn router(&self) -> &Arc<crate::progress::Router> {
        &self.router
    }
}

/// The `_meta` key of a forwarded call that carries the gateway's request id, so an upstream's
/// logs can be joined with the gateway's.
pub const REQUEST_ID_META: &str = "io.toolsearch/requestId";

/// `timeout` in milliseconds, at least 1 (0 stands for none).
fn millis(timeout: Option<Duration>) -> u64 {
    timeout.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1))
}
