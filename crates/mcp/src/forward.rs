//! Running catalogue tools on the upstream servers: a tool id `SERVER.TOOL` is called on
//! `SERVER` by the name it gave, and an upstream prompt found by search is fetched with
//! `prompts/get` and answered as a tool result.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ClientRequest;
use rmcp::service::PeerRequestOptions;
use serde_json::Value;
use toolsearch_catalog::Tool;

use crate::runner::{BoxFuture, RunContext, RunError, ToolRunner};
use crate::upstream::Upstream;

impl Upstream {
    /// Gets prompt `name` with `arguments` (string values), as a tool result: a prompt found by
    /// search is called like a tool.
    pub(crate) async fn prompt(
        &self,
        name: String,
        arguments: Value,
        timeout: Duration,
    ) -> Result<rmcp::model::CallToolResult, RunError> {
        let Some(peer) = self.peer() else { return Err(RunError::Unavailable(self.client_reason())) };
        let mut params = rmcp::model::GetPromptRequestParams::new(name);
        params.arguments = arguments.as_object().map(|a| {
            a.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned).into())).collect()
        });
        let request = ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let handle = peer.send_request_with_option(request, options).await.map_err(|e| self.failed(&e))?;
        match handle.await_response().await {
            Ok(answer) => {
                let mut v = serde_json::to_value(answer).map_err(|_| {
                    RunError::Failed(format!(
                        "MCP server {:?} answered prompts/get with something unreadable",
                        self.name
                    ))
                })?;
                crate::offers::namespace_answer(&self.name, &mut v);
                self.bounded(crate::offers::prompt_as_result(&v))
            }
            Err(rmcp::service::ServiceError::Timeout { .. }) => Err(RunError::Timeout(timeout.as_secs())),
            Err(e) => Err(self.failed(&e)),
        }
    }
}

/// Runs catalogue tools on their upstream servers: tool id `SERVER.TOOL` goes to `SERVER`,
/// called by the name the upstream gave it.
pub struct UpstreamRunner {
    /// The upstreams.
    pub fleet: Arc<crate::fleet::Fleet>,
    /// Per-call timeout.
    pub timeout: Duration,
}

impl ToolRunner for Arc<UpstreamRunner> {
    fn run(
        &self,
        tool: Tool,
        arguments: Value,
        cx: RunContext,
    ) -> BoxFuture<Result<rmcp::model::CallToolResult, RunError>> {
        let this = self.clone();
        Box::pin(async move {
            let server = tool.group.clone().unwrap_or_default();
            let Some(up) = this.fleet.get(&server) else {
                return Err(RunError::Failed(format!("no upstream server owns tool {:?}", tool.id)));
            };
            let meta = tool.details.meta.as_ref().map(|m| m.value()).unwrap_or_default();
            let name = meta["upstream_name"].as_str().map_or_else(|| tool.name.clone(), str::to_owned);
            if meta["kind"] == "prompt" {
                return up.prompt(name, arguments, this.timeout).await;
            }
            let mut result = up.call(name, arguments, cx, this.timeout).await?;
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
