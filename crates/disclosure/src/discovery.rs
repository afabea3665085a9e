//! Discovery as tools: the protocol calls exposed as ordinary tool definitions.
//!
//! One general set (`search_tool_by_category`, `search_nodes`, `list`, `expand_tool`, and
//! optionally `call_tool`), or per-domain sets: one `discover_<domain>_tools` per category,
//! each searching only there, plus `expand_tool` (and `call_tool`). Search answers come at
//! one of three levels of detail.

use crate::error::DisclosureError;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolsearch_catalog::{display_path, Catalog, CategoryPath};

use crate::definition::{object_schema, sanitize_name, ToolDef};

/// How much a discovery search tells about each tool it finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Tool ids only: the cheapest; the model expands the one it wants.
    Names,
    /// Pointers: id, summary, path and confidence.
    #[default]
    Summaries,
    /// Full definitions of the tools found, which become callable at once.
    Full,
}

/// Which discovery tools a set offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiscoveryMode {
    /// No discovery tools.
    Off,
    /// The general set over the whole catalogue.
    #[default]
    General,
    /// One `discover_<domain>_tools` per category listed in [`DiscoveryConfig::domains`].
    Domains,
}

/// Discovery settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiscoveryConfig {
    /// Which tools.
    pub mode: DiscoveryMode,
    /// The categories of `domains` mode, as paths ("Coding/Git").
    pub domains: Vec<String>,
    /// The level of detail of search answers.
    pub detail: Detail,
    /// Whether `call_tool` (call any tool by id) is offered.
    pub call_tool: bool,
    /// How many tools a search returns unless the model asks for another number (1-50).
    pub limit: usize,
    /// Whether searches and listings take a `kind` argument (`tool`, `prompt` or `any`): set
    /// where the catalogue also holds prompts, as entries tagged [`PROMPT_TAG`] (the gateway's
    /// upstream prompts).
    pub kinds: bool,
}

/// The tag of catalogue entries that are prompts, not tools: searches with `kind: "prompt"`
/// keep only them, `kind: "tool"` leaves them out, and their pointers say `"kind": "prompt"`.
pub const PROMPT_TAG: &str = "kind:prompt";

impl Default for DiscoveryConfig {
    fn default() -> Self {
        DiscoveryConfig {
            mode: DiscoveryMode::General,
            domains: Vec::new(),
            detail: Detail::Summaries,
            call_tool: false,
            limit: 5,
            kinds: false,
        }
    }
}

/// One discovery tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum DiscoveryTool {
    SearchTools,
    SearchNodes,
    List,
    Expand,
    Call,
    /// `discover_<domain>_tools` over this category.
    Domain(CategoryPath),
}

impl DiscoveryConfig {
    /// The discovery tools this configuration offers, in display order. Unknown domain
    /// paths are an error naming the path.
    pub(crate) fn tools(&self, catalog: &Catalog) -> Result<Vec<DiscoveryTool>, DisclosureError> {
        if !(1..=50).contains(&self.limit) {
            return Err(DisclosureError::Discovery(format!("limit {} is not between 1 and 50", self.limit)));
        }
        let mut tools = match self.mode {
            DiscoveryMode::Off => return Ok(Vec::new()),
            DiscoveryMode::General => vec![DiscoveryTool::SearchTools, DiscoveryTool::SearchNodes, DiscoveryTool::List],
            DiscoveryMode::Domains => {
                if self.domains.is_empty() {
                    return Err(DisclosureError::Discovery(
                        "mode \"domains\" needs at least one category in `domains`".into(),
                    ));
                }
                let mut v = Vec::new();
                for p in &self.domains {
                    let segments: CategoryPath =
                        p.split('/').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
                    if !catalog.nodes.iter().any(|n| n.path == segments) {
                        return Err(DisclosureError::Discovery(format!(
                            "domain {p:?} is not a category of the catalogue"
                        )));
                    }
                    v.push(DiscoveryTool::Domain(segments));
                }
                v
            }
        };
        tools.push(DiscoveryTool::Expand);
        if self.call_tool {
            tools.push(DiscoveryTool::Call);
        }
        Ok(tools)
    }
}

impl DiscoveryTool {
    /// The tool name the model calls.
    pub(crate) fn name(&self) -> String {
        match self {
            DiscoveryTool::SearchTools => "search_tool_by_category".into(),
            DiscoveryTool::SearchNodes => "search_nodes".into(),
            DiscoveryTool::List => "list".into(),
            DiscoveryTool::Expand => "expand_tool".into(),
            DiscoveryTool::Call => "call_tool".into(),
            DiscoveryTool::Domain(path) => {
                let domain = path.last().map_or("all".to_owned(), |s| s.to_lowercase());
                sanitize_name(&format!("discover_{domain}_tools"))
            }
        }
    }

    /// The definition the model sees.
    pub(crate) fn definition(&self, config: &DiscoveryConfig, catalog: &Catalog) -> ToolDef {
        let detail = match config.detail {
            Detail::Names => "Returns tool ids; call expand_tool on one to get its arguments.",
            Detail::Summaries => {
                "Returns tool ids with a one-line summary and a confidence; call expand_tool on the one you choose."
            }
            Detail::Full => "Returns the full definitions of the best matches, which you can then call directly.",
        };
        let limit = json!({"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to return."});
        let query = json!({"type": "string", "minLength": 1, "description": "What you want to do, in a few words."});
        let tags = json!({"type": "array", "items": {"type": "string"}, "description": "Only tools carrying all these tags (e.g. \"read-only\")."});
        let cursor =
            json!({"type": "string", "description": "The next_cursor of the previous page, to get the next one."});
        let kind = json!({"type": "string", "enum": ["tool", "prompt", "any"], "description": "What to find: tools, prompts (templated messages the servers offer; call_tool with a prompt's id returns its messages), or both (the default)."});
        let with_kind = |mut schema: serde_json::Value| {
            if config.kinds {
                schema["properties"]["kind"] = kind.clone();
            }
            schema
        };
        let (description, input_schema) = match self {
            DiscoveryTool::SearchTools => (
                format!("Search the tool catalogue for tools that can do a task, optionally inside one category. {detail}"),
                with_kind(object_schema(
                    json!({"query": query, "category_path": {"type": "string", "description": "Category to search in, e.g. \"Coding/Git\"; omit to search everything."}, "tags": tags, "limit": limit, "cursor": cursor, "match": {"type": "string", "enum": ["semantic", "regex"], "description": "\"regex\" treats query as a regular expression over tool ids and names (case-insensitive), e.g. \"^github\\\\.\" or \"issue\"; default \"semantic\"."}}),
                    &["query"],
                )),
            ),
            DiscoveryTool::SearchNodes => (
                "Search the catalogue's categories; returns category paths with summaries, to narrow a later tool search."
                    .to_owned(),
                object_schema(json!({"query": query, "limit": limit}), &["query"]),
            ),
            DiscoveryTool::List => (
                "List a category of the tool catalogue: its subcategories and tools (the top level when no path is given)."
                    .to_owned(),
                with_kind(object_schema(json!({"path": {"type": "string", "description": "Category path, e.g. \"Coding/Git\"."}, "tags": tags, "limit": limit, "cursor": cursor}), &[])),
            ),
            DiscoveryTool::Expand => (
                "Get the full definition (arguments, result, usage notes) of a tool found by a search, and make it callable."
                    .to_owned(),
                object_schema(json!({"tool_id": {"type": "string", "description": "A tool_id from a search result."}}), &["tool_id"]),
            ),
            DiscoveryTool::Call => (
                "Call a catalogue tool by id with arguments matching its expanded definition.".to_owned(),
                object_schema(
                    json!({"tool_id": {"type": "string"}, "arguments": {"type": "object", "description": "Arguments as in the tool's args_schema."}}),
                    &["tool_id", "arguments"],
                ),
            ),
            DiscoveryTool::Domain(path) => {
                let summary = catalog.nodes.iter().find(|n| &n.path == path).map_or("", |n| n.summary.as_str());
                (
                    format!("Find tools in {} ({}). {detail}", display_path(path), summary.trim_end_matches('.')),
                    object_schema(json!({"query": query, "limit": limit}), &["query"]),
                )
            }
        };
        ToolDef { name: self.name(), description, input_schema }
    }
}
