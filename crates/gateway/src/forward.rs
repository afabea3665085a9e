//! Running catalogue tools on the upstream servers: a tool id `SERVER.TOOL` is called on
//! `SERVER` by the name it gave, and an upstream prompt found by search is fetched with
//! `prompts/get` and answered as a tool result.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;
use toolsearch_catalog::Tool;

use crate::child::TOO_LARGE_CODE;
use crate::upstream::{Line, Upstream, REQUEST_ID_META};
use toolsearch_mcp::{BoxFuture, RunContext, RunError, ToolRunner};

impl Upstream {
    /// Gets prompt `name` with `arguments` (string values), as a tool result: a prompt found by
    /// search is called like a tool (and asks its questions as a call does).
    pub(crate) async fn prompt(
        &self,
        name: String,
        arguments: Value,
        cx: RunContext,
        timeout: Duration,
    ) -> Result<rmcp::model::CallToolResult, RunError> {
        let arguments: Option<serde_json::Map<String, Value>> = arguments.as_object().map(|a| {
            a.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned).into())).collect()
        });
        let request = |answers, state| {
            let mut params = rmcp::model::GetPromptRequestParams::new(name.clone());
            params.arguments = arguments.clone();
            params.input_responses = answers;
            params.request_state = state;
            ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params))
        };
        let answer = self.rounds("prompts/get", &cx, timeout, request).await?;
        let mut v = serde_json::to_value(answer).map_err(|_| {
            RunError::Failed(format!("MCP server {:?} answered prompts/get with something unreadable", self.name))
        })?;
        crate::offers::namespace_answer(&self.name, &mut v);
        self.bounded(crate::offers::prompt_as_result(&v))
    }

    /// `result`, cut to the limit a client is given, with a notice, when it is over it.
    pub(crate) fn bounded(&self, result: rmcp::model::CallToolResult) -> Result<rmcp::model::CallToolResult, RunError> {
        let bytes = serde_json::to_vec(&result).map_or(0, |v| v.len());
        if bytes > self.limits().max_result_bytes {
            return Ok(crate::cut::cut(result, bytes, self.limits().max_result_bytes));
        }
        Ok(result)
    }

    /// Forwards one call to the upstream session.
    pub(crate) async fn call(
        &self,
        name: String,
        arguments: Value,
        cx: RunContext,
        timeout: Duration,
    ) -> Result<rmcp::model::CallToolResult, RunError> {
        let request = |answers, state| {
            let mut params = CallToolRequestParams::new(name.clone());
            params.arguments = arguments.as_object().cloned();
            params.input_responses = answers;
            params.request_state = state;
            ClientRequest::CallToolRequest(CallToolRequest::new(params))
        };
        match self.rounds("tools/call", &cx, timeout, request).await? {
            ServerResult::CallToolResult(result) => self.bounded(result),
            _ => Err(RunError::Failed(format!(
                "MCP server {:?} answered tools/call with something that is not a tool result",
                self.name
            ))),
        }
    }

    /// Sends the request `make` builds for `method` and waits for its answer, through the
    /// `input_required` rounds the server asks for ([`crate::upstream::Asks::rounds`]).
    async fn rounds(
        &self,
        method: &str,
        cx: &RunContext,
        timeout: Duration,
        make: impl Fn(Option<rmcp::model::InputResponses>, Option<String>) -> ClientRequest,
    ) -> Result<ServerResult, RunError> {
        let Some((peer, _held)) = self.ready_peer(timeout).await else {
            return Err(self.down_error());
        };
        // A per-user server is called, for a caller the gateway tells apart, on that caller's
        // own session, with its own grant; never on the gateway's (`upstream::per_user`).
        let caller = cx.caller.as_deref().filter(|_| self.users.is_some());
        let Some(caller) = caller else {
            let line = &Line { peer, asks: self.asks.clone(), router: self.router().clone() };
            let send = move |request| self.call_once(line, request, cx, timeout);
            let fail = |e: rmcp::ErrorData| RunError::Failed(e.message.to_string());
            return line.asks.rounds((&self.name, method), cx, make, send, fail).await;
        };
        let mut again = true;
        loop {
            let line = &self.user_line(caller, cx).await?;
            let send = move |request| self.call_once(line, request, cx, timeout);
            let fail = |e: rmcp::ErrorData| RunError::Failed(e.message.to_string());
            match line.asks.rounds((&self.name, method), cx, &make, send, fail).await {
                // The server stopped taking the caller's grant (revoked, or its refresh
                // failed): refused before it ran anything, so asked again once, after a login.
                Err(RunError::LoginRequired(_)) if again => {
                    self.forget_user(caller);
                    again = false;
                }
                answer => return answer,
            }
        }
    }

    /// Sends one request and waits for its answer (or the client's cancellation).
    async fn call_once(
        &self,
        line: &Line,
        request: ClientRequest,
        cx: &RunContext,
        timeout: Duration,
    ) -> Result<ServerResult, RunError> {
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        // The upstream request's span, whose `traceparent` goes with it (`toolsearch_mcp::trace`).
        let method = request.method().to_owned();
        let attributes = vec![
            opentelemetry::KeyValue::new("mcp.method.name", method.clone()),
            opentelemetry::KeyValue::new("server.name", self.name.clone()),
        ];
        let span = toolsearch_mcp::trace::span(
            &cx.trace,
            format!("{method} {}", self.name),
            opentelemetry::trace::SpanKind::Client,
            attributes,
        );
        let mut meta = rmcp::model::RequestMetaObject::new();
        if let Some(id) = &cx.request_id {
            meta.insert(REQUEST_ID_META.to_owned(), Value::String(id.clone()));
        }
        for (k, v) in toolsearch_mcp::trace::carrier(&span) {
            meta.insert(k, Value::String(v));
        }
        if !meta.is_empty() {
            options.meta = Some(meta);
        }
        let (peer, router) = (&line.peer, &line.router);
        let handle = peer.send_request_with_option(request, options).await.map_err(|e| self.failed(&e))?;
        let (id, token) = (handle.id.clone(), handle.progress_token.clone());
        // A question sent on this request's response stream is this caller's (Streamable HTTP).
        let _sent = line.asks.sent(id.clone(), cx);
        if let Some(sink) = cx.progress.clone() {
            router.attach(token.clone(), sink).await;
        }
        let outcome = tokio::select! {
            _ = cx.cancel.cancelled() => {
                let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), Some("cancelled by the client".into()))).await;
                Err(RunError::Cancelled)
            }
            r = handle.await_response() => match r {
                Ok(answer) => Ok(answer),
                Err(rmcp::service::ServiceError::Timeout { .. }) => Err(RunError::Timeout(timeout.as_secs())),
                Err(rmcp::service::ServiceError::McpError(e)) if e.code.0 == TOO_LARGE_CODE => {
                    let bytes = e.data.as_ref().and_then(|d| d["bytes"].as_u64()).unwrap_or_default();
                    Err(RunError::TooLarge { bytes: bytes as usize, limit: self.limits().max_result_bytes })
                }
                Err(e) => Err(self.failed(&e)),
            },
        };
        router.detach(&token);
        outcome
    }
}

/// Runs catalogue tools on their upstream servers: tool id `SERVER.TOOL` goes to `SERVER`,
/// called by the name the upstream gave it.
pub struct UpstreamRunner {
    /// The upstreams.
    pub fleet: Arc<crate::fleet::Fleet>,
    /// What the pins passed: a tool is called only in the definition they passed.
    pub(crate) vetted: Arc<crate::vetted::Vetted>,
}

impl ToolRunner for UpstreamRunner {
    fn run(
        &self,
        tool: Tool,
        arguments: Value,
        cx: RunContext,
    ) -> BoxFuture<Result<rmcp::model::CallToolResult, RunError>> {
        let this = UpstreamRunner { fleet: self.fleet.clone(), vetted: self.vetted.clone() };
        Box::pin(async move {
            let server = tool.group.clone().unwrap_or_default();
            let Some(up) = this.fleet.get(&server) else {
                return Err(RunError::Failed(format!("no upstream server owns tool {:?}", tool.id)));
            };
            let meta = tool.details.meta.as_ref().map(|m| m.value()).unwrap_or_default();
            let name = meta["upstream_name"].as_str().map_or_else(|| tool.name.clone(), str::to_owned);
            let timeout = this.fleet.call_timeout(&up);
            if meta["kind"] == "prompt" {
                return up.prompt(name, arguments, cx, timeout).await;
            }
            // The session first (a lazy server started, its fresh listing read), then its
            // definition against the pins, then the call, the session held throughout.
            let Some((_, _session)) = up.ready_peer(timeout).await else {
                return Err(up.down_error());
            };
            this.vetted.check(&up, &tool.id, &name, timeout).await?;
            let mut result = up.call(name, arguments, cx, timeout).await?;
            // Resource links and embedded resources point at URIs a client reads through us.
            let points = |c: &rmcp::model::ContentBlock| {
                matches!(c, rmcp::model::ContentBlock::Resource(_) | rmcp::model::ContentBlock::ResourceLink(_))
            };
            if !result.content.iter().any(points) {
                return Ok(result);
            }
            if let Ok(mut v) = serde_json::to_value(&result) {
                crate::offers::namespace_answer(&server, &mut v);
                if let Ok(r) = serde_json::from_value(v) {
                    result = r;
                }
            }
            Ok(result)
        })
    }
}
