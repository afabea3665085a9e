//! Tool definitions in the JSON each model API expects.
//!
//! - OpenAI Chat Completions `tools`: `[{"type":"function","function":{"name","description","parameters"}}]`
//! - Anthropic Messages `tools`: `[{"name","description","input_schema"}]`
//! - MCP `tools/list` result: `{"tools":[{"name","description","inputSchema"}]}`

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::definition::ToolDef;

/// A model API's tool-definition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// OpenAI `tools` (function calling).
    OpenAi,
    /// Anthropic `tools`.
    Anthropic,
    /// An MCP `tools/list` result.
    Mcp,
}

impl Dialect {
    /// `openai`, `anthropic` or `mcp`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::OpenAi => "openai",
            Dialect::Anthropic => "anthropic",
            Dialect::Mcp => "mcp",
        }
    }

    /// Parses `openai`, `anthropic` or `mcp`.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(Dialect::OpenAi),
            "anthropic" => Some(Dialect::Anthropic),
            "mcp" => Some(Dialect::Mcp),
            _ => None,
        }
    }
}

/// One definition in `dialect`'s shape.
pub fn render_one(def: &ToolDef, dialect: Dialect) -> Value {
    match dialect {
        Dialect::OpenAi => json!({
            "type": "function",
            "function": {"name": def.name, "description": def.description, "parameters": def.input_schema},
        }),
        Dialect::Anthropic => {
            json!({"name": def.name, "description": def.description, "input_schema": def.input_schema})
        }
        Dialect::Mcp => json!({"name": def.name, "description": def.description, "inputSchema": def.input_schema}),
    }
}

/// A set of definitions as `dialect` expects it: an array for OpenAI and Anthropic, a
/// `tools/list` result object for MCP.
pub fn render(defs: &[ToolDef], dialect: Dialect) -> Value {
    let tools: Vec<Value> = defs.iter().map(|d| render_one(d, dialect)).collect();
    match dialect {
        Dialect::Mcp => json!({"tools": tools}),
        _ => Value::Array(tools),
    }
}
