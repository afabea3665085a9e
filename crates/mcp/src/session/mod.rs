//! One downstream client's session: its tool set, answered through the official SDK's
//! [`ServerHandler`].
//!
//! Requests are handled concurrently (the SDK runs each in a task of its own). The tool set is
//! behind a mutex that is held only for the tool set's own work (a search, an unfold, the
//! checks of a call, recording its outcome), never while a catalogue tool runs: a slow call
//! delays neither a `ping` nor a search of the same client, nor any other client.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use toolsearch_disclosure::{render, Dialect, Outcome, Step, ToolSet};
use toolsearch_query::{Principal, ToolFailure};

use crate::notifier::Notifier;
use crate::offer_source::Offer;
use crate::session_view::{SessionHandle, SessionView};
use offers::typed;

mod driving;
mod offers;
mod record;
mod rounds;
use record::{is_search, note, write_trail};
pub(crate) use rounds::Rounds;
use rounds::{CallNote, Ran, Round};

use crate::hub::Hub;
use crate::metrics::OWN;
use crate::runner::{result_text, ProgressSink, RunContext, RunError};

/// What a session knows of its client's identity, set by the HTTP front for each request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The scopes held.
    pub principal: Principal,
    /// The name of its token, for logs and the audit trail (never the token).
    pub name: String,
}

/// The caller name of a client the transport does not identify (stdio, or HTTP without tokens).
const LOCAL: &str = "local";
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
    principal: OnceLock<Principal>,
    /// The caller's name (its token's), for logs and the audit trail.
    caller: OnceLock<String>,
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
            set: OnceLock::new(),
            principal: OnceLock::new(),
            caller: OnceLock::new(),
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

    /// The tool set, made on first use for the caller of `context`.
    fn set(&self, context: &RequestContext<RoleServer>) -> Result<&Mutex<ToolSet>, ErrorData> {
        let asked = context.extensions.get::<http::request::Parts>().and_then(|p| p.extensions.get::<Caller>());
        let (principal, name) = match asked {
            Some(c) => (c.principal.clone(), c.name.as_str()),
            None => (self.hub.default_principal(), LOCAL),
        };
        self.state.caller.get_or_init(|| name.to_owned());
        let held = self.state.principal.get_or_init(|| principal.clone());
        if held != &principal {
            return Err(ErrorData::invalid_request("this session belongs to another caller", None));
        }
        if let Some(set) = self.state.set.get() {
            return Ok(set);
        }
        let set = match self.request_only() {
            true => self.hub.fresh_tool_set(principal),
            false => self.hub.tool_set(principal),
        };
        let set = set.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let _ = self.state.set.set(Mutex::new(set));
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
        self.principal.get().cloned()
    }

    fn saw_catalogue(&self, digest: u64) -> bool {
        self.catalogue.swap(digest, Ordering::Relaxed) != digest
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

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        if self.hub.passthrough().is_some() {
            capabilities.resources = serde_json::from_value(json!({"subscribe": true, "listChanged": true})).ok();
            capabilities.prompts = serde_json::from_value(json!({"listChanged": true})).ok();
            capabilities.completions = Some(serde_json::Map::new());
        }
        // A client may set a log level; the server sends no log messages of its own, so any
        // level is accepted (its status goes to the operator, not to clients).
        capabilities.logging = Some(serde_json::Map::new());
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("toolsearch", env!("CARGO_PKG_VERSION"));
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        crate::protocol_versions().into()
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        info.instructions = Some(self.scoped(&context).instructions(&context).await?);
        // What a caller is told depends on its token's scopes: private to it.
        Ok(rmcp::model::DiscoverResult::from_server_info(crate::protocol_versions().to_vec(), info)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(rmcp::model::CacheScope::Private))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let started = Instant::now();
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.instructions = Some(self.instructions(&context).await?);
        self.hub.ops().metrics.request("initialize", OWN, "ok", started.elapsed().as_secs_f64());
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let this = self.scoped(&context);
        let (rendered, ids) = this
            .with_set(&context, |set| {
                set.refresh();
                let defs = set.visible();
                let ids: Vec<(Option<String>, bool)> = defs
                    .iter()
                    .map(|d| {
                        let id = set.tool_id(&d.name);
                        let always = id.as_deref().is_some_and(|i| set.always_loaded(i));
                        (id, always)
                    })
                    .collect();
                (render(&defs, Dialect::Mcp), ids)
            })
            .await?;
        let started = Instant::now();
        let mut tools: Vec<Value> = rendered["tools"].as_array().cloned().unwrap_or_default();
        for (t, (id, always)) in tools.iter_mut().zip(&ids) {
            this.hub.decorate(id.as_deref(), t);
            if *always {
                // Claude Code's mark for a tool its tool search never defers.
                t["_meta"][ALWAYS_LOAD_META] = Value::Bool(true);
            }
        }
        let mut answer = json!({ "tools": tools, "resultType": "complete" });
        if this.request_only() {
            // A session-free client's list depends only on its caller and the catalogue, so
            // a client may keep it (its token's scopes decide it: private to the caller).
            answer["ttlMs"] = json!(LIST_TTL_MS);
            answer["cacheScope"] = json!("private");
        }
        let result = serde_json::from_value(answer)
            .map_err(|e| ErrorData::internal_error(format!("tool definitions: {e}"), None));
        this.hub.ops().metrics.request("tools/list", OWN, "ok", started.elapsed().as_secs_f64());
        result
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let this = self.scoped(&context);
        this.offer_page(Offer::Resources, request, &context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let this = self.scoped(&context);
        this.offer_page(Offer::Templates, request, &context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let this = self.scoped(&context);
        this.offer_page(Offer::Prompts, request, &context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let round = (request.request_state.clone(), request.input_responses.clone());
        let uri = request.uri.clone();
        let answered = self
            .forward_offer("resources/read", uri.clone(), round, &context, move |pass, who, cx| {
                Box::pin(async move { pass.read(&who, &uri, cx).await })
            })
            .await?;
        match answered {
            Ok(answer) => Ok(typed::<ReadResourceResult>(answer)?.into()),
            Err(asked) => Ok(ReadResourceResponse::InputRequired(asked)),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let round = (request.request_state.clone(), request.input_responses.clone());
        let (name, arguments) = (request.name.clone(), request.arguments.clone());
        let answered = self
            .forward_offer("prompts/get", name.clone(), round, &context, move |pass, who, cx| {
                Box::pin(async move { pass.get_prompt(&who, &name, arguments, cx).await })
            })
            .await?;
        match answered {
            Ok(answer) => Ok(typed::<GetPromptResult>(answer)?.into()),
            Err(asked) => Ok(GetPromptResponse::InputRequired(asked)),
        }
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let this = self.scoped(&context);
        let (pass, who) = this.passthrough("completion/complete", &context)?;
        let (started, id) = (Instant::now(), this.hub.ops().request_id());
        let subject = match &request.r#ref {
            rmcp::model::Reference::Prompt(p) => p.name.clone(),
            rmcp::model::Reference::Resource(r) => r.uri.clone(),
            _ => String::new(),
        };
        let answer = pass.complete(&who, request, &id).await;
        this.offer_done("completion/complete", &subject, &id, &answer, started);
        typed(answer?.1)
    }

    // Deprecated by the 2026-07-28 revision (SEP-2577), still sent by clients of the older
    // ones, which treat an error here as a failure.
    // A session's client is sent the upstream log messages it may see at its level and above
    // (a gateway's); a session-free client's request is accepted and changes nothing (its
    // revision deprecates logging, and has no session to send messages to).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(pass) = self.hub.passthrough().cloned().filter(|_| !session_free(&context)) else { return Ok(()) };
        self.set(&context)?;
        let who = self.state.principal.get().cloned().unwrap_or_else(|| self.hub.default_principal());
        pass.set_level(&who, request.level, Notifier::Session(context.peer.clone()), self.handle()).await;
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (pass, who) = self.passthrough("resources/subscribe", &context)?;
        pass.subscribe(&who, &request.uri, Notifier::Session(context.peer.clone()), self.handle()).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (pass, who) = self.passthrough("resources/unsubscribe", &context)?;
        pass.unsubscribe(&who, &request.uri, &self.handle()).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // The SDK keeps of this what the capabilities advertise: resource and prompt lists
        // only where a gateway passes them through. Resources are subscribed in `listen`,
        // which has the caller; one it may not read is simply never updated.
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let context = subscription.request_context().clone();
        // A session of its own, for the life of the stream: registered with the hub like any
        // session, so it is told what any session is, through this stream. Its tool set is
        // the one a new session starts with, as every session-free request's is.
        let listener = Session::with_state(self.hub.clone(), false);
        let _ = listener.state.notifier.set(Notifier::Listen(subscription.sink().clone()));
        listener.set(&context)?;
        let who = listener.state.principal.get().cloned().unwrap_or_else(|| self.hub.default_principal());
        let uris = subscription.accepted().resource_subscriptions.clone().unwrap_or_default();
        let pass = self.hub.passthrough().cloned();
        let mut watched = Vec::new();
        if let Some(p) = &pass {
            for uri in uris {
                let notifier = Notifier::Listen(subscription.sink().clone());
                if p.subscribe(&who, &uri, notifier, listener.handle()).await.is_ok() {
                    watched.push(uri);
                }
            }
        }
        subscription.cancelled().await;
        if let Some(p) = &pass {
            for uri in watched {
                let _ = p.unsubscribe(&who, &uri, &listener.handle()).await;
            }
        }
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(token) = request.request_state.clone().filter(|_| session_free(&context)) {
            let answers = request.input_responses.clone().unwrap_or_default();
            return self.resume(&token, &request.name, answers, &context).await;
        }
        let this = self.scoped(&context);
        let started = Instant::now();
        let id = this.hub.ops().request_id();
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let called = name.clone();
        let step = this
            .with_set_noted(&context, note(&id, None), Work::of_call(&name), move |set| {
                set.begin_call(&called, &arguments)
            })
            .await?;
        let pending = match step {
            Step::Done(outcome) => {
                if is_search(&name) {
                    this.hub.ops().metrics.search(started.elapsed().as_secs_f64());
                }
                let label = if outcome.is_error { "refused" } else { "ok" };
                this.finished(&id, &name, None, OWN, label, started);
                this.announce(&context.peer, &outcome).await;
                return Ok(outcome_result(&outcome).into());
            }
            Step::Run(pending) => pending,
        };
        let engine = this.hub.live().engine();
        let Ok(Some(tool)) = engine.full_tool(&pending.tool_id) else {
            this.finished(&id, &name, Some(&pending.tool_id), OWN, "failed", started);
            return Ok(complete(CallToolResult::error(vec![Content::text("the tool left the catalogue")])).into());
        };
        let upstream = tool.group.clone().unwrap_or_else(|| OWN.to_owned());
        let tool_id = tool.id.clone();
        let who = this.state.principal.get().cloned().unwrap_or_else(|| this.hub.default_principal());
        if let Some(error) = crate::effects::refusal(&who, &tool) {
            let done = note(&id, Some(started.elapsed()));
            let outcome =
                this.with_set_noted(&context, done, Work::Light, move |set| set.refuse_call(pending, error)).await?;
            this.finished(&id, &name, Some(&tool_id), &upstream, "refused", started);
            this.announce(&context.peer, &outcome).await;
            return Ok(outcome_result(&outcome).into());
        }
        let progress = context.meta.get_progress_token().map(|t| ProgressSink::new(context.peer.clone(), t));
        let call = CallNote { id: id.clone(), name, tool_id, upstream, started };
        if this.request_only() {
            // A session-free client is asked through `input_required` rounds: the call runs
            // in a task of its own, which outlives this request if the tool asks something.
            let (runner, arguments) = (this.hub.runner(), pending.arguments.clone());
            let subject = ("tools/call", request.name.to_string());
            let round = Round::start(this.clone(), subject, (Some(pending), call), progress, |cx| {
                let run = runner.run(tool, arguments, cx);
                async move { Ran::Call(run.await) }
            });
            return this.drive(round, &context).await;
        }
        let client = Some(context.peer.clone());
        let cx = RunContext { cancel: context.ct.clone(), progress, request_id: Some(id), client, asker: None };
        let ran = this.hub.runner().run(tool, pending.arguments.clone(), cx).await;
        this.finish_run(&context, pending, call, ran).await
    }
}
