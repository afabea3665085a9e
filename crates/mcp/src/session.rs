//! One downstream client's session: its tool set, answered through the official SDK's
//! [`ServerHandler`].
//!
//! Requests are handled concurrently (the SDK runs each in a task of its own). The tool set is
//! behind a mutex that is held only for the tool set's own work (a search, an unfold, the
//! checks of a call, recording its outcome), never while a catalogue tool runs: a slow call
//! delays neither a `ping` nor a search of the same client, nor any other client.

use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use toolsearch_disclosure::{render, Dialect, Outcome, Step, ToolSet};
use toolsearch_query::{Principal, ToolFailure};

use crate::hub::Hub;
use crate::runner::{result_text, ProgressSink, RunContext};

/// What a session knows of its client's identity, set by the HTTP front for each request.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

/// One client's session.
#[derive(Clone)]
pub struct Session {
    hub: Arc<Hub>,
    state: Arc<SessionState>,
}

pub(crate) struct SessionState {
    set: OnceLock<Mutex<ToolSet>>,
    principal: OnceLock<Principal>,
}

impl Session {
    /// A new session of `hub` (its tool set is made at `initialize`).
    pub fn new(hub: Arc<Hub>) -> Session {
        Session { hub, state: Arc::new(SessionState { set: OnceLock::new(), principal: OnceLock::new() }) }
    }

    /// The tool set, made on first use for the caller of `context`.
    fn set(&self, context: &RequestContext<RoleServer>) -> Result<&Mutex<ToolSet>, ErrorData> {
        let asked = context.extensions.get::<http::request::Parts>().and_then(|p| p.extensions.get::<Caller>());
        let principal = match asked {
            Some(Caller(p)) => p.clone(),
            None => self.hub.default_principal(),
        };
        let held = self.state.principal.get_or_init(|| principal.clone());
        if held != &principal {
            return Err(ErrorData::invalid_request("this session belongs to another caller", None));
        }
        if let Some(set) = self.state.set.get() {
            return Ok(set);
        }
        let set = self.hub.tool_set(principal).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let _ = self.state.set.set(Mutex::new(set));
        self.hub.register(context.peer.clone(), Arc::downgrade(&self.state));
        self.state.set.get().ok_or_else(|| ErrorData::internal_error("no tool set", None))
    }

    /// Runs `f` on the tool set on a blocking thread (tool set work may embed a query).
    async fn with_set<T: Send + 'static>(
        &self,
        context: &RequestContext<RoleServer>,
        f: impl FnOnce(&mut ToolSet) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        self.set(context)?;
        let state = self.state.clone();
        tokio::task::spawn_blocking(move || {
            let set = state.set.get().expect("made above");
            let mut guard = set.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("tool set task failed: {e}"), None))
    }
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
    if outcome.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl SessionState {
    /// Recomputes visibility (availability or the catalogue changed); whether it changed.
    pub(crate) fn refresh(&self) -> bool {
        match self.set.get() {
            Some(set) => {
                let change = set.lock().unwrap_or_else(|p| p.into_inner()).refresh();
                !change.added.is_empty() || !change.removed.is_empty()
            }
            None => false,
        }
    }
}

/// A weak handle on a session's state, for the hub's change announcements.
pub(crate) type SessionHandle = std::sync::Weak<SessionState>;

/// Recomputes a session's visibility; whether it changed.
pub(crate) fn refresh(handle: &SessionHandle) -> Option<bool> {
    handle.upgrade().map(|s| s.refresh())
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut info =
            ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build());
        info.server_info = Implementation::new("toolsearch", env!("CARGO_PKG_VERSION"));
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        // Progressive disclosure needs a session (a tool set per client, list_changed): the
        // session-less 2026-07-28 revision is not offered.
        ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE).into()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        let instructions = self.with_set(&context, |set| set.system_prompt()).await?;
        result.instructions = Some(match self.hub.extra_instructions() {
            Some(extra) => format!("{instructions}\n\n{extra}"),
            None => instructions,
        });
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (rendered, ids) = self
            .with_set(&context, |set| {
                set.refresh();
                let defs = set.visible();
                let ids: Vec<Option<String>> = defs.iter().map(|d| set.tool_id(&d.name)).collect();
                (render(&defs, Dialect::Mcp), ids)
            })
            .await?;
        let mut tools: Vec<Value> = rendered["tools"].as_array().cloned().unwrap_or_default();
        for (t, id) in tools.iter_mut().zip(&ids) {
            self.hub.decorate(id.as_deref(), t);
        }
        serde_json::from_value(json!({ "tools": tools }))
            .map_err(|e| ErrorData::internal_error(format!("tool definitions: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let step = self.with_set(&context, move |set| set.begin_call(&name, &arguments)).await?;
        let pending = match step {
            Step::Done(outcome) => {
                announce(&context.peer, &outcome.added, &outcome.removed).await;
                return Ok(outcome_result(&outcome).into());
            }
            Step::Run(pending) => pending,
        };
        let engine = self.hub.live().engine();
        let Ok(Some(tool)) = engine.full_tool(&pending.tool_id) else {
            return Ok(CallToolResult::error(vec![Content::text("the tool left the catalogue")]).into());
        };
        let who = self.state.principal.get().cloned().unwrap_or_else(|| self.hub.default_principal());
        if let Some(error) = crate::effects::refusal(&who, &tool) {
            let outcome = self.with_set(&context, move |set| set.refuse_call(pending, error)).await?;
            announce(&context.peer, &outcome.added, &outcome.removed).await;
            return Ok(outcome_result(&outcome).into());
        }
        let progress = context.meta.get_progress_token().map(|t| ProgressSink::new(context.peer.clone(), t));
        let cx = RunContext { cancel: context.ct.clone(), progress };
        let result = match self.hub.runner().run(tool, pending.arguments.clone(), cx).await {
            Ok(r) => r,
            Err(e) => e.to_result(),
        };
        let text = result_text(&result);
        let failed = result.is_error == Some(true);
        let outcome = self
            .with_set(&context, move |set| {
                set.finish_call(pending, if failed { Err(ToolFailure::Failed(text)) } else { Ok(text) })
            })
            .await?;
        announce(&context.peer, &outcome.added, &outcome.removed).await;
        Ok(result.into())
    }
}
