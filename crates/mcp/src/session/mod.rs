//! One downstream client's session: its tool set, answered through the official SDK's
//! [`ServerHandler`].
//!
//! Requests are handled concurrently (the SDK runs each in a task of its own). The tool set is
//! behind a mutex that is held only for the tool set's own work (a search, an unfold, the
//! checks of a call, recording its outcome), never while a catalogue tool runs: a slow call
//! delays neither a `ping` nor a search of the same client, nor any other client.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock as Content};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value};
use toolsearch_disclosure::{Outcome, ToolSet};
use toolsearch_query::{Principal, ToolFailure};

use crate::hub::Hub;
use crate::notifier::Notifier;
use crate::runner::{result_text, RunError};
use crate::session_view::{MakeSet, SessionHandle, SessionView};

/// The header that names a client's HTTP session (Streamable HTTP's `Mcp-Session-Id`).
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

mod driving;
mod handler;
mod offers;
mod record;
mod remake;
mod rounds;
use record::{is_search, note, write_trail};
use rounds::CallNote;
pub(crate) use rounds::Rounds;

/// What a session knows of its client's identity, set by the HTTP front for each request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The scopes held.
    pub principal: Principal,
    /// The name of its token, for logs and the audit trail (never the token).
    pub name: String,
    /// Who it is: its token's SHA-256 in hex (or the OAuth subject). Sessions and
    /// `input_required` rounds are bound to it, not to the scopes it holds (two tokens with
    /// the same scopes are two callers).
    pub identity: String,
}

/// The caller name of a client the transport does not identify (stdio, or HTTP without tokens).
const LOCAL: &str = "local";

/// Who the caller of `context` is ([`Caller::identity`]; empty for a client the transport does
/// not identify).
pub(crate) fn identity_of(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<http::request::Parts>();
    parts.and_then(|p| p.extensions.get::<Caller>()).map(|c| c.identity.clone()).unwrap_or_default()
}

/// The name of the caller of `context` ([`Caller::name`]; [`LOCAL`] for a client the transport
/// does not identify).
pub(crate) fn name_of(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<http::request::Parts>();
    parts.and_then(|p| p.extensions.get::<Caller>()).map_or_else(|| LOCAL.to_owned(), |c| c.name.clone())
}

/// The refusal of a request whose caller began the session (or the call waiting for input)
/// under other scopes than it has now.
const SCOPES_CHANGED: &str =
    "this caller's scopes changed since this session began: start a new session (or call the tool again)";

/// How long a session-free client may keep a list (`ttlMs`) before asking again; a
/// `subscriptions/listen` stream tells it sooner when the list changes.
const LIST_TTL_MS: u64 = 60_000;
/// The `_meta` key of a tool a client must never defer (Claude Code's tool search honours it).
const ALWAYS_LOAD_META: &str = "anthropic/alwaysLoad";

/// One client's session.
#[derive(Clone)]
pub struct Session {
    hub: Arc<Hub>,
    state: Arc<SessionState>,
}

pub(crate) struct SessionState {
    set: OnceLock<Mutex<ToolSet>>,
    /// The caller's principal, set by its first request; replaced only when its set is made
    /// again under a new default ([`SessionView::remake`]).
    principal: RwLock<Option<Principal>>,
    /// The generation of the hub's configuration its tool set was made from.
    made: AtomicU64,
    /// Whether its caller is one the transport does not identify (it holds the hub's default
    /// principal), set by its first request.
    local: OnceLock<bool>,
    /// The caller's name (its token's), for logs and the audit trail.
    caller: OnceLock<String>,
    /// Who the caller is ([`Caller::identity`]), set by its first request.
    identity: OnceLock<String>,
    /// This session's id in logs and the audit trail.
    id: String,
    /// The last audit step written to the trail on disk.
    audited: AtomicUsize,
    /// The digest of what its caller may see of the catalogue, when last told (`Hub`).
    catalogue: AtomicU64,
    /// Whether this state serves one request of a session-free (2026-07-28) client: its tool
    /// set is made for the request and dropped after it, and it is never registered for
    /// `list_changed` (see [`Session::scoped`]).
    request_only: bool,
    /// How its client is told of changes, when not through the connection of the request
    /// that made its tool set (a `subscriptions/listen` stream).
    notifier: OnceLock<Notifier>,
    /// Its HTTP session (the manager and the `Mcp-Session-Id`), once a request carried it.
    http: OnceLock<(std::sync::Weak<crate::hub::HttpSessions>, String)>,
}

impl Session {
    /// A new session of `hub` (its tool set is made at `initialize`).
    pub fn new(hub: Arc<Hub>) -> Session {
        Session::with_state(hub, false)
    }

    fn with_state(hub: Arc<Hub>, request_only: bool) -> Session {
        let id = format!("{}{}", if request_only { "r" } else { "s" }, hub.ops().request_id());
        let state = SessionState {
            request_only,
            notifier: OnceLock::new(),
            http: OnceLock::new(),
            set: OnceLock::new(),
            principal: RwLock::new(None),
            made: AtomicU64::new(0),
            local: OnceLock::new(),
            caller: OnceLock::new(),
            identity: OnceLock::new(),
            id,
            audited: AtomicUsize::new(0),
            catalogue: AtomicU64::new(0),
        };
        Session { hub, state: Arc::new(state) }
    }

    /// The session a request is served in: this one for a client of a revision with sessions
    /// (up to 2025-11-25), and a new one for this request alone for a session-free client
    /// (2026-07-28 and later). A session-free client's tool set is the one a new session
    /// starts with, whatever it called before: its `tools/list` is stable (the discovery
    /// tools and the always-loaded and pinned ones), searches return pointers, `expand_tool`
    /// the schema, and `call_tool` (or a tool's own name) runs any tool the caller may use.
    fn scoped(&self, context: &RequestContext<RoleServer>) -> Session {
        match session_free(context) {
            true => Session::with_state(self.hub.clone(), true),
            false => self.clone(),
        }
    }

    /// Whether this session serves one request of a session-free client.
    fn request_only(&self) -> bool {
        self.state.request_only
    }

    /// Sends `notifications/tools/list_changed` when an outcome changed the visible set of a
    /// session (a session-free client's list never changes with its calls).
    async fn announce(&self, peer: &Peer<RoleServer>, outcome: &Outcome) {
        if !self.request_only() {
            announce(peer, &outcome.added, &outcome.removed).await;
        }
    }

    /// Whether the caller of `context` is the one this session began with (any caller, before
    /// its first request): the same token, not merely the same scopes.
    pub(super) fn belongs_to(&self, context: &RequestContext<RoleServer>) -> bool {
        let identity = identity_of(context);
        self.state.identity.get_or_init(|| identity.clone()) == &identity
    }

    /// The tool set, made on first use for the caller of `context`; refused to any other
    /// caller (another token, even one with the same scopes).
    fn set(&self, context: &RequestContext<RoleServer>) -> Result<&Mutex<ToolSet>, ErrorData> {
        let asked = context.extensions.get::<http::request::Parts>().and_then(|p| p.extensions.get::<Caller>());
        let (principal, name) = match asked {
            Some(c) => (c.principal.clone(), c.name.as_str()),
            None => (self.hub.default_principal(), LOCAL),
        };
        if !self.belongs_to(context) {
            return Err(ErrorData::invalid_request("this session belongs to another caller", None));
        }
        self.state.caller.get_or_init(|| name.to_owned());
        self.state.local.get_or_init(|| asked.is_none());
        self.note_http_session(context);
        self.current(&principal)?;
        if let Some(set) = self.state.set.get() {
            return Ok(set);
        }
        let set = match self.request_only() {
            true => self.hub.fresh_tool_set(principal).map(|set| (0, set)),
            false => self.hub.numbered_tool_set(principal),
        };
        let (made, set) = set.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if self.state.set.set(Mutex::new(set)).is_ok() {
            self.state.made.store(made, Ordering::Relaxed);
        }
        if !self.request_only() {
            let notifier =
                self.state.notifier.get().cloned().unwrap_or_else(|| Notifier::Session(context.peer.clone()));
            self.hub.register(notifier, self.handle());
        }
        self.state.set.get().ok_or_else(|| ErrorData::internal_error("no tool set", None))
    }

    /// Runs `f` on the tool set: light work (no query to embed), see [`Session::with_set_noted`].
    async fn with_set<T: Send + 'static>(
        &self,
        context: &RequestContext<RoleServer>,
        f: impl FnOnce(&mut ToolSet) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        self.with_set_noted(context, Map::new(), Work::Light, f).await
    }

    /// Runs `f` on the tool set, then writes the audit entries `f` added to the trail on disk
    /// with `note` (a request id, a latency).
    ///
    /// Where it runs is chosen for latency, since every forwarded call passes here twice:
    /// - on a multi-threaded runtime (the HTTP gateway), here, the worker's other tasks handed
    ///   to another thread (`block_in_place`): no hop to the blocking pool and back;
    /// - on a current-thread runtime (the stdio gateway, one client), [`Work::Light`] inline
    ///   (microseconds: checking a call's arguments, recording its outcome), no thread hand-off
    ///   at all, and [`Work::Heavy`] (a search embeds its query) on the blocking pool, so the
    ///   one thread keeps answering pings and relaying upstream answers meanwhile.
    async fn with_set_noted<T: Send + 'static>(
        &self,
        context: &RequestContext<RoleServer>,
        note: Map<String, Value>,
        weight: Work,
        f: impl FnOnce(&mut ToolSet) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        self.set(context)?;
        let (state, hub) = (self.state.clone(), self.hub.clone());
        let work = move || {
            let set = state.set.get().expect("made above");
            let mut guard = set.lock().unwrap_or_else(|p| p.into_inner());
            let out = f(&mut guard);
            write_trail(&hub, &state, &guard, note);
            out
        };
        let failed = |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("tool set task failed: {e}"), None);
        let caught =
            |work| std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|_| failed(&"it panicked"));
        match (tokio::runtime::Handle::current().runtime_flavor(), weight) {
            (tokio::runtime::RuntimeFlavor::MultiThread, _) => tokio::task::block_in_place(|| caught(work)),
            (_, Work::Light) => caught(work),
            (_, Work::Heavy) => tokio::task::spawn_blocking(work).await.map_err(|e| failed(&e)),
        }
    }
}

/// How long tool set work may take, which decides where [`Session::with_set_noted`] runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// Microseconds: no query embedded.
    Light,
    /// Milliseconds: a search, which embeds its query.
    Heavy,
}

impl Work {
    /// The weight of a `tools/call` of `name`: a search is heavy, anything else light.
    fn of_call(name: &str) -> Work {
        if is_search(name) {
            Work::Heavy
        } else {
            Work::Light
        }
    }
}

/// Whether `context` is a request of a session-free client: one that names a revision
/// without `initialize` (2026-07-28 or later) in its `_meta`, or whose connection began so.
fn session_free(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// Sends `notifications/tools/list_changed` when an outcome changed the visible set.
async fn announce(peer: &Peer<RoleServer>, added: &[String], removed: &[String]) {
    if !added.is_empty() || !removed.is_empty() {
        let _ = peer.notify_tool_list_changed().await;
    }
}

/// A tool set's answer as an MCP result (text content).
fn outcome_result(outcome: &Outcome) -> CallToolResult {
    let content = vec![Content::text(outcome.text.clone())];
    let result = if outcome.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    complete(result)
}

/// `result` marked complete when it says nothing else (an upstream of an older revision sends
/// no `resultType`, which the 2026-07-28 revision requires; the SDK drops it for older clients).
fn complete(mut result: CallToolResult) -> CallToolResult {
    result.result_type.get_or_insert(rmcp::model::ResultType::COMPLETE);
    result
}

impl SessionView for SessionState {
    fn principal(&self) -> Option<Principal> {
        self.principal.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn saw_catalogue(&self, digest: u64) -> bool {
        self.catalogue.swap(digest, Ordering::Relaxed) != digest
    }

    fn local(&self) -> bool {
        self.local.get() == Some(&true) && !self.request_only
    }

    fn remake(&self, default: &Principal, make: MakeSet<'_>, trail: Option<&crate::trail::Trail>) -> bool {
        self.made_again(default, make, trail)
    }

    fn close(&self) {
        let Some((sessions, id)) = self.http.get() else { return };
        let (Some(sessions), Ok(runtime)) = (sessions.upgrade(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let id: rmcp::transport::streamable_http_server::session::SessionId = id.as_str().into();
        runtime.spawn(async move {
            use rmcp::transport::streamable_http_server::SessionManager;
            let _ = sessions.close_session(&id).await;
        });
    }

    fn refresh(&self) -> bool {
        match self.set.get() {
            Some(set) => {
                let change = set.lock().unwrap_or_else(|p| p.into_inner()).refresh();
                !change.added.is_empty() || !change.removed.is_empty()
            }
            None => false,
        }
    }
}

impl Session {
    /// Notes the HTTP session `context`'s request came in (its `Mcp-Session-Id`), so that
    /// [`SessionView::close`] can end it.
    fn note_http_session(&self, context: &RequestContext<RoleServer>) {
        if self.request_only() || self.state.http.get().is_some() {
            return;
        }
        let parts = context.extensions.get::<http::request::Parts>();
        let id = parts.and_then(|p| p.headers.get(SESSION_HEADER)).and_then(|v| v.to_str().ok());
        if let (Some(id), Some(sessions)) = (id, self.hub.http_sessions()) {
            let _ = self.state.http.set((Arc::downgrade(&sessions), id.to_owned()));
        }
    }

    /// This session as what outlives it may hold it.
    pub(crate) fn handle(&self) -> SessionHandle {
        let state: std::sync::Arc<dyn SessionView> = self.state.clone();
        std::sync::Arc::downgrade(&state)
    }
}

impl Session {
    /// Records a call's end (its outcome in the tool set, the log, the metrics) and answers it.
    async fn finish_run(
        &self,
        context: &RequestContext<RoleServer>,
        pending: toolsearch_disclosure::PendingCall,
        call: CallNote,
        ran: Result<CallToolResult, RunError>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (result, label) = match ran {
            Ok(r) if r.is_error == Some(true) => (r, "tool_error"),
            Ok(r) => (r, "ok"),
            Err(e) => (e.to_result(), e.outcome()),
        };
        let text = result_text(&result);
        let failed = result.is_error == Some(true);
        let done = note(&call.id, Some(call.started.elapsed()));
        let outcome = self
            .with_set_noted(context, done, Work::Light, move |set| {
                set.finish_call(pending, if failed { Err(ToolFailure::Failed(text)) } else { Ok(text) })
            })
            .await?;
        self.finished(&call.id, &call.name, Some(&call.tool_id), &call.upstream, label, call.started);
        self.announce(&context.peer, &outcome).await;
        Ok(complete(result).into())
    }

    /// The instructions a client gets at `initialize` or `server/discover`: the tool set's
    /// system prompt, and the operator's extra words.
    async fn instructions(&self, context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        let instructions = self.with_set(context, |set| set.system_prompt()).await?;
        Ok(match self.hub.extra_instructions() {
            Some(extra) => format!("{instructions}\n\n{extra}"),
            None => instructions,
        })
    }
}
