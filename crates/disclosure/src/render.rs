//! Tool definitions in the JSON each model API expects.
//!
//! - OpenAI Chat Completions `tools`: `[{"type":"function","function":{"name","description","parameters"}}]`
//! - OpenAI Responses API `tools`: `[{"type":"function","name","description","parameters"}]`
//! - Anthropic Messages `tools`: `[{"name","description","input_schema"}]`
//! - Gemini `tools`: `[{"functionDeclarations":[{"name","description","parametersJsonSchema"}]}]`
//! - MCP `tools/list` result: `{"tools":[{"name","description","inputSchema"}]}`

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::definition::ToolDef;

/// A model API's tool-definition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// OpenAI Chat Completions `tools` (function calling).
    OpenAi,
    /// OpenAI Responses API `tools`: function tools, flat.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic `tools`.
    Anthropic,
    /// Gemini `tools`: one tool object holding a function declaration for each, their
    /// arguments as JSON Schema (`parametersJsonSchema`).
    Gemini,
    /// An MCP `tools/list` result.
    Mcp,
}

impl Dialect {
    /// `openai`, `openai-responses`, `anthropic`, `gemini` or `mcp`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::OpenAi => "openai",
            Dialect::OpenAiResponses => "openai-responses",
            Dialect::Anthropic => "anthropic",
            Dialect::Gemini => "gemini",
            Dialect::Mcp => "mcp",
        }
    }

    /// Parses `openai`, `openai-responses`, `anthropic`, `gemini` or `mcp`.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(Dialect::OpenAi),
            "openai-responses" => Some(Dialect::OpenAiResponses),
            "anthropic" => Some(Dialect::Anthropic),
            "gemini" => Some(Dialect::Gemini),
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
        Dialect::OpenAiResponses => {
            json!({"type": "function", "name": def.name, "description": def.description, "parameters": def.input_schema})
        }
        Dialect::Anthropic => {
            json!({"name": def.name, "description": def.description, "input_schema": def.input_schema})
        }
        Dialect::Mcp => json!({"name": def.name, "description": def.description, "inputSchema": def.input_schema}),
        Dialect::Gemini => {
            json!({"name": def.name, "description": def.description, "parametersJsonSchema": def.input_schema})
        }
    }
}

/// A set of definitions as `dialect` expects it: an array for OpenAI and Anthropic, a
/// `tools/list` result object for MCP, for Gemini an array of one tool object holding the
/// declarations (none when there are none).
pub fn render(defs: &[ToolDef], dialect: Dialect) -> Value {
    let tools: Vec<Value> = defs.iter().map(|d| render_one(d, dialect)).collect();
    match dialect {
        Dialect::Mcp => json!({"tools": tools}),
        Dialect::Gemini if tools.is_empty() => json!([]),
        Dialect::Gemini => json!([{"functionDeclarations": tools}]),
        _ => Value::Array(tools),
    }
}

/// Tool search results for Anthropic's tool search over `defer_loading` tools: the
/// `tool_result` of a custom search tool whose content is one `tool_reference` block per tool
/// found (`names` are the names the tools are defined under), best first.
pub fn anthropic_tool_references(tool_use_id: &str, names: &[String]) -> Value {
    let content: Vec<Value> = names.iter().map(|n| json!({"type": "tool_reference", "tool_name": n})).collect();
    json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content})
}

/// Tool search results for OpenAI's client-executed `tool_search` (Responses API): the
/// `tool_search_output` item answering call `call_id`, loading the definitions of the tools
/// found, best first.
pub fn openai_tool_search_output(call_id: &str, defs: &[ToolDef]) -> Value {
    let tools: Vec<Value> = defs.iter().map(|d| render_one(d, Dialect::OpenAiResponses)).collect();
    json!({"type": "tool_search_output", "call_id": call_id, "execution": "client", "status": "completed", "tools": tools})
}

#[cfg(test)]
mod provider_search_tests {
    use super::*;

    #[test]
    fn search_results_render_as_each_providers_tool_search_answer() {
        let a = anthropic_tool_references("toolu_1", &["get_weather".into(), "send_invoice".into()]);
        assert_eq!(a["type"], "tool_result");
        assert_eq!(a["tool_use_id"], "toolu_1");
        assert_eq!(a["content"][1], json!({"type": "tool_reference", "tool_name": "send_invoice"}));
        let def = ToolDef {
            name: "get_weather".into(),
            description: "Weather.".into(),
            input_schema: json!({"type": "object"}),
        };
        let o = openai_tool_search_output("call_9", &[def]);
        assert_eq!(
            (o["type"].as_str(), o["call_id"].as_str(), o["execution"].as_str()),
            (Some("tool_search_output"), Some("call_9"), Some("client"))
        );
        assert_eq!(o["tools"][0]["name"], "get_weather");
        assert_eq!(o["tools"][0]["parameters"]["type"], "object");
    }
}
