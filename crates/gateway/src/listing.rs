//! Reading an upstream's lists (`tools/list`, and `resources/list`, `resources/templates/list`
//! and `prompts/list` for what passes through), page by page and item by item.
//!
//! The SDK parses a whole list into typed tools, so one tool it cannot parse (no
//! `inputSchema`, say) fails the list and every tool of that server is lost. Here each page is
//! taken as JSON and each tool kept as the JSON its server wrote: the catalogue decides, tool by
//! tool, what it can index, and one bad tool costs only itself. Every list is bounded in pages,
//! tools and bytes, so a server that pages forever or lists without end cannot exhaust memory.

use rmcp::model::{
    ClientRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest,
    PaginatedRequestParams, ServerResult,
};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde::Deserialize;
use serde_json::Value;

/// Bounds on one server's lists (each of tools, resources, templates and prompts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListLimits {
    /// Most pages of one `tools/list` (default 100).
    pub max_pages: usize,
    /// Most tools of one server (default 10,000).
    pub max_tools: usize,
    /// Most bytes of one server's tool definitions, as JSON (default 32 MiB).
    pub max_bytes: usize,
    /// How many resources, templates or prompts one page of the gateway's own lists holds
    /// (default 100).
    pub page: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits { max_pages: 100, max_tools: 10_000, max_bytes: 32 << 20, page: 100 }
    }
}

/// What an upstream said about itself and its tools when last connected.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, Deserialize)]
pub struct Listing {
    /// Its `instructions`, or its title or name.
    pub summary: String,
    /// Its tools, each as the JSON object it sent.
    pub tools: Vec<Value>,
    /// Its resources, resource templates and prompts (empty when it offers none).
    pub offers: Offers,
}

/// What a server offers beyond tools, each item as the JSON object it sent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, Deserialize)]
pub struct Offers {
    /// `resources/list`.
    pub resources: Vec<Value>,
    /// `resources/templates/list`.
    pub templates: Vec<Value>,
    /// `prompts/list`.
    pub prompts: Vec<Value>,
    /// What `prompts/get` answered for each of its first prompts, by name, with every required
    /// argument set to a fixed value (where the server answered): pinned and scanned with the
    /// prompt, so a prompt whose text changes is held like one whose description does.
    pub prompt_texts: std::collections::BTreeMap<String, String>,
    /// Whether it takes `resources/subscribe`.
    pub subscribe: bool,
    /// Why a list was left out (it failed, or passed a bound of `limits.list`): each is
    /// reported to the operator as `offers_refused`, and the list is offered empty.
    pub problems: Vec<String>,
}

/// One of an upstream's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl ListKind {
    /// The method, and the key of the items in its answer.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            ListKind::Tools => ("tools/list", "tools"),
            ListKind::Resources => ("resources/list", "resources"),
            ListKind::Templates => ("resources/templates/list", "resourceTemplates"),
            ListKind::Prompts => ("prompts/list", "prompts"),
        }
    }

    fn request(self, params: PaginatedRequestParams) -> ClientRequest {
        match self {
            ListKind::Tools => ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params)),
            ListKind::Resources => ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params)),
            ListKind::Templates => {
                ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest::with_param(params))
            }
            ListKind::Prompts => ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params)),
        }
    }
}

/// Every page of the server's tool list, within `limits`; the reason when it fails or passes
/// a bound.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>, limits: &ListLimits) -> Result<Vec<Value>, String> {
    list_all(peer, ListKind::Tools, limits).await
}

/// Every page of one of the server's lists, within `limits` (each item an object); the reason
/// when it fails or passes a bound.
pub(crate) async fn list_all(
    peer: &Peer<RoleClient>,
    kind: ListKind,
    limits: &ListLimits,
) -> Result<Vec<Value>, String> {
    let (method, key) = kind.names();
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut cursor: Option<String> = None;
    for _ in 0..limits.max_pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let answer = peer.send_request(kind.request(params)).await.map_err(|e| format!("{method} failed: {e}"))?;
        let page = page_json(answer, method, key)?;
        let Some(Value::Array(list)) = page.get(key) else {
            return Err(format!("{method} answered without a `{key}` array"));
        };
        for tool in list {
            bytes += tool.to_string().len();
            if tools.len() == limits.max_tools || bytes > limits.max_bytes {
                return Err(format!(
                    "{method} is over the gateway's limit of {} items or {} bytes (toolsearch.limits.list)",
                    limits.max_tools, limits.max_bytes
                ));
            }
            // A tool that is not an object is kept for the catalogue to report; other items are
            // passed on to clients, so only objects are.
            if kind == ListKind::Tools || tool.is_object() {
                tools.push(tool.clone());
            }
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
            _ => return Ok(tools),
        }
    }
    Err(format!("{method} is over the gateway's limit of {} pages (toolsearch.limits.list)", limits.max_pages))
}

/// A list answer as JSON, whether the SDK parsed it (every item well-formed) or kept it as a
/// custom result (some item it could not parse).
fn page_json(answer: ServerResult, method: &str, key: &str) -> Result<Value, String> {
    let v = match answer {
        ServerResult::CustomResult(c) => c.0,
        other => serde_json::to_value(other).map_err(|e| e.to_string())?,
    };
    if v.get(key).is_some() {
        Ok(v)
    } else {
        Err(format!("{method} answered with something that is not its list"))
    }
}
