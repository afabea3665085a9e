//! Request and response types of the discovery protocol: plain data, shaped like the JSON the
//! spec shows. Paths are written `"A/B"` (or as an array of segments in requests).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsearch_catalog::PathSpec;

/// Default page size.
pub const DEFAULT_LIMIT: usize = 10;
/// Largest page size.
pub const MAX_LIMIT: usize = 50;

/// `list`: the child categories and tools at a path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// The category to list; the root when absent.
    #[serde(default)]
    pub path: Option<PathSpec>,
    /// Keep only tools carrying all these tags (and categories holding such tools); `!tag`
    /// keeps the tools without `tag`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Keep only children matching this query, best first.
    #[serde(default)]
    pub query: Option<String>,
    /// Page size (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page of the same request.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A child category in a `list` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeEntry {
    /// Last segment of the path.
    pub name: String,
    /// The category's path.
    pub path: String,
    /// One line on what is inside.
    pub summary: String,
    /// Labels.
    pub tags: Vec<String>,
    /// Tools at or below this category (matching the request's tags, if any).
    pub tool_count: usize,
}

/// A pointer to a tool: enough to choose it, never its schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolPointer {
    /// The id to pass to `expand_tool`.
    pub tool_id: String,
    /// The category path through which the tool matched.
    pub path: String,
    /// One line on what it does.
    pub summary: String,
    /// Labels.
    pub tags: Vec<String>,
    /// Probability-like relevance in [0, 1] (1 for plain listings).
    pub confidence: f32,
}

/// The answer to `list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResponse {
    /// The listed path.
    pub path: String,
    /// Child categories.
    pub nodes: Vec<NodeEntry>,
    /// Tools directly at this path.
    pub tools: Vec<ToolPointer>,
    /// Continuation token, when more items exist.
    pub next_cursor: Option<String>,
}

/// `search_nodes`: categories matching a query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchNodesRequest {
    /// What the caller wants to do.
    pub query: String,
    /// Most results (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A category in a `search_nodes` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeHit {
    /// The category's path.
    pub path: String,
    /// One line on what is inside.
    pub summary: String,
    /// Relevance in [0, 1].
    pub confidence: f32,
}

/// The answer to `search_nodes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchNodesResponse {
    /// Best first.
    pub results: Vec<NodeHit>,
}

/// `search_tool_by_category`: tools matching a query inside a category.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchToolsRequest {
    /// What the caller wants to do.
    pub query: String,
    /// The category to search in; the whole catalogue when absent.
    #[serde(default)]
    pub category_path: Option<PathSpec>,
    /// Keep only tools carrying all these tags; `!tag` keeps the tools without `tag`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Page size (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page of the same request.
    #[serde(default)]
    pub cursor: Option<String>,
    /// How the query is matched: by meaning (the default), or as a regular expression over
    /// tool ids and names.
    #[serde(default, rename = "match")]
    pub match_mode: MatchMode,
}

/// How `search_tool_by_category` matches its query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// Hybrid semantic and lexical ranking; an exact id or name comes first.
    #[default]
    Semantic,
    /// The query is a regular expression (case-insensitive unless it says otherwise) over tool
    /// ids and names; every match, in catalogue order, at confidence 1.
    Regex,
}

/// The answer to `search_tool_by_category`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchToolsResponse {
    /// The category searched (`""` for the whole catalogue).
    pub category_path: String,
    /// Best first.
    pub results: Vec<ToolPointer>,
    /// Continuation token, when more results exist.
    pub next_cursor: Option<String>,
    /// P(some tool the caller may see in this category fits the query), a query-level
    /// estimate apart from each result's confidence; under the engine's threshold the answer
    /// is `NO_MATCH_IN_CATEGORY` instead. Absent for `match: "regex"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answerable: Option<f32>,
}

/// `expand_tool`: everything about one tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpandToolRequest {
    /// The tool's id.
    pub tool_id: String,
}

/// The answer to `expand_tool`: the only answer that carries a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpandToolResponse {
    /// The tool's id.
    pub tool_id: String,
    /// The name a model calls it by.
    pub name: String,
    /// Its first category path.
    pub path: String,
    /// Every category path it sits under.
    pub paths: Vec<String>,
    /// One line.
    pub summary: String,
    /// Full description.
    pub description: String,
    /// Labels.
    pub tags: Vec<String>,
    /// JSON Schema of the arguments.
    pub args_schema: Value,
    /// Whether `call_tool` checks arguments against `args_schema`: `on (DIALECT)`, or
    /// `off: REASON` when the schema cannot be compiled (calls are passed on unchecked).
    #[serde(default)]
    pub validation: String,
    /// JSON Schema of the result.
    pub result_schema: Option<Value>,
    /// Guidance for calling it.
    pub usage_notes: Option<String>,
    /// A human-readable title (from an imported MCP tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Behaviour hints (MCP `annotations`: `readOnlyHint`, `destructiveHint`, ...), as imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}
