//! Reading an upstream's `tools/list`, page by page and tool by tool.
//!
//! The SDK parses a whole list into typed tools, so one tool it cannot parse (no
//! `inputSchema`, say) fails the list and every tool of that server is lost. Here each page is
//! taken as JSON and each tool kept as the JSON its server wrote: the catalogue decides, tool by
//! tool, what it can index, and one bad tool costs only itself. Every list is bounded in pages,
//! tools and bytes, so a server that pages forever or lists without end cannot exhaust memory.

use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde::Deserialize;
use serde_json::Value;

/// Bounds on one server's tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListLimits {
    /// Most pages of one `tools/list` (default 100).
    pub max_pages: usize,
    /// Most tools of one server (default 10,000).
    pub max_tools: usize,
    /// Most bytes of one server's tool definitions, as JSON (default 32 MiB).
    pub max_bytes: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits { max_pages: 100, max_tools: 10_000, max_bytes: 32 << 20 }
    }
}

/// What an upstream said about itself and its tools when last connected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// Its `instructions`, or its title or name.
    pub summary: String,
    /// Its tools, each as the JSON object it sent.
    pub tools: Vec<Value>,
}

/// Every page of the server's tool list, within `limits`; the reason when it fails or passes
/// a bound.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>, limits: &ListLimits) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut cursor: Option<String> = None;
    for _ in 0..limits.max_pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let answer = peer.send_request(request).await.map_err(|e| format!("tools/list failed: {e}"))?;
        let page = page_json(answer)?;
        let Some(Value::Array(list)) = page.get("tools") else {
            return Err("tools/list answered without a `tools` array".into());
        };
        for tool in list {
            bytes += tool.to_string().len();
            if tools.len() == limits.max_tools || bytes > limits.max_bytes {
                return Err(format!(
                    "tools/list is over the gateway's limit of {} tools or {} bytes (toolsearch.limits.list)",
                    limits.max_tools, limits.max_bytes
                ));
            }
            tools.push(tool.clone());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
            _ => return Ok(tools),
        }
    }
    Err(format!("tools/list is over the gateway's limit of {} pages (toolsearch.limits.list)", limits.max_pages))
}

/// A `tools/list` answer as JSON, whether the SDK parsed it (every tool well-formed) or kept it
/// as a custom result (some tool it could not parse).
fn page_json(answer: ServerResult) -> Result<Value, String> {
    match answer {
        ServerResult::ListToolsResult(r) => serde_json::to_value(r).map_err(|e| e.to_string()),
        ServerResult::CustomResult(c) => Ok(c.0),
        other => {
            let v = serde_json::to_value(other).map_err(|e| e.to_string())?;
            if v.get("tools").is_some() {
                Ok(v)
            } else {
                Err("tools/list answered with something that is not a tool list".into())
            }
        }
    }
}
