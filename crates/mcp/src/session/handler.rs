//! The session's answers to each MCP request, through the official SDK's [`ServerHandler`]:
//! listing, reading and completing what is passed through, subscriptions, and `tools/call`.

use std::time::Instant;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use toolsearch_disclosure::{render, Dialect, Step};

use super::offers::typed;
use super::record::{is_search, note};
use super::rounds::{CallNote, Ran, Round};
use super::{complete, outcome_result, session_free, Session, Work, ALWAYS_LOAD_META, LIST_TTL_MS};
use crate::metrics::OWN;
use crate::notifier::Notifier;
use crate::offer_source::Offer;
use crate::runner::{ProgressSink, RunContext};
use crate::session_view::SessionView;

/// The JSON-RPC error code of a call over its rate limit (`crate::rate`): in the range the
/// specification leaves to servers, 429 in its last digits.
const RATE_LIMITED: i32 = -32029;

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
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The visible set is one page, never a `nextCursor`: any cursor is not one given here.
        if request.and_then(|r| r.cursor).is_some() {
            let why = "tools/list is one page: the cursor is not one this server gave (list again without it)";
            return Err(ErrorData::invalid_params(why, None));
        }
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
        let who = self.state.principal().unwrap_or_else(|| self.hub.default_principal());
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
        let who = listener.state.principal().unwrap_or_else(|| self.hub.default_principal());
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
        // Its spans: the request (continuing the client's `traceparent`), and the search,
        // expand or call in it; each ends when this request (or its round) is done.
        let _request = crate::trace::client_call(&context.meta.0, &name, &this.state.id, &id, &arguments);
        let op = match name.as_str() {
            "search_tool_by_category" | "search_nodes" => "search",
            "expand_tool" => "expand",
            "list" => "list",
            _ => "call",
        };
        let attributes = vec![opentelemetry::KeyValue::new("gen_ai.operation.name", op)];
        let traced = crate::trace::span(&_request, op.to_owned(), opentelemetry::trace::SpanKind::Internal, attributes);
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
        let who = this.state.principal().unwrap_or_else(|| this.hub.default_principal());
        if let Some(error) = toolsearch_query::effects::refusal(&who, &tool) {
            let done = note(&id, Some(started.elapsed()));
            let outcome =
                this.with_set_noted(&context, done, Work::Light, move |set| set.refuse_call(pending, error)).await?;
            this.finished(&id, &name, Some(&tool_id), &upstream, "refused", started);
            this.announce(&context.peer, &outcome).await;
            return Ok(outcome_result(&outcome).into());
        }
        // Rate limits: per caller (not per session), per tool and per server (`crate::rate`).
        let caller = super::identity_of(&context);
        let caller = if caller.is_empty() { super::LOCAL.to_owned() } else { caller };
        let name = super::name_of(&context);
        if let Err(wait) = this.hub.limiter().call(&caller, &name, &upstream, &tool_id).await {
            this.finished(&id, &name, Some(&tool_id), &upstream, "rate_limited", started);
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            let message = format!("RATE_LIMITED: too many calls of {tool_id}; retry in {seconds} s");
            let data = serde_json::json!({"code": "RATE_LIMITED", "retryAfterSeconds": seconds});
            return Err(ErrorData::new(rmcp::model::ErrorCode(RATE_LIMITED), message, Some(data)));
        }
        let progress = context.meta.get_progress_token().map(|t| ProgressSink::new(context.peer.clone(), t));
        let call = CallNote { id: id.clone(), name, tool_id, upstream, started };
        if this.request_only() {
            // A session-free client is asked through `input_required` rounds: the call runs
            // in a task of its own, which outlives this request if the tool asks something.
            let (runner, arguments) = (this.hub.runner(), pending.arguments.clone());
            let subject = ("tools/call", request.name.to_string());
            let trace = traced.clone();
            let who = Some(caller.clone()).filter(|c| c != super::LOCAL);
            let round = Round::start(this.clone(), subject, (Some(pending), call), progress, move |mut cx| {
                cx.trace = trace;
                cx.caller = who;
                let run = runner.run(tool, arguments, cx);
                async move { Ran::Call(run.await) }
            });
            return this.drive(round, &context).await;
        }
        let client = Some(context.peer.clone());
        let trace = traced.clone();
        let who = Some(caller).filter(|c| c != super::LOCAL);
        let cx = RunContext {
            cancel: context.ct.clone(),
            progress,
            request_id: Some(id),
            client,
            asker: None,
            trace,
            caller: who,
        };
        let ran = this.hub.runner().run(tool, pending.arguments.clone(), cx).await;
        this.finish_run(&context, pending, call, ran).await
    }
}
