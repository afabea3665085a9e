//! A model's tool calls in each API's own shape, and the answers in the shape that API takes
//! back: what [`ToolSet::handle_calls`](crate::ToolSet::handle_calls) reads and writes, and
//! the Python package's `ToolSet.handle_calls` too.
//!
//! | dialect | calls | answers |
//! |---|---|---|
//! | `openai` | `message.tool_calls`: `{id, function: {name, arguments}}` | `{"role": "tool", "tool_call_id", "content"}` |
//! | `openai-responses` | `response.output` items of type `function_call` | `{"type": "function_call_output", "call_id", "output"}` |
//! | `anthropic` | `message.content` blocks of type `tool_use` | `{"type": "tool_result", "tool_use_id", "content", "is_error"}` |
//! | `gemini` | content parts with a `functionCall` | `{"functionResponse": {"name", "response": {"output" or "error"}, "id"?}}` |
//!
//! Items that are not tool calls (text, reasoning) are passed over, so a whole response may be
//! given as it came. MCP is no model API: its calls come as `tools/call` requests.

use serde_json::{json, Map, Value};

use crate::{Dialect, DisclosureError};

/// One tool call of a model: the API's id for it (`None` when it gives none), the tool's
/// name, and its arguments, or why they could not be read. As JSON (the Python package's
/// form): `{"id", "name", "arguments", "unreadable"}`, every field but `name` optional.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelCall {
    /// The API's id of the call, which its answer must carry.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's name as the model called it.
    pub name: String,
    /// Its arguments (a JSON object).
    #[serde(default)]
    pub arguments: Value,
    /// Why the arguments could not be read (then the call is answered with that, unrun).
    #[serde(default)]
    pub unreadable: Option<String>,
}

/// The tool calls among `items` (a response's output items, content blocks or parts, as
/// JSON), in `dialect`'s shape; anything else among them is passed over.
pub fn model_calls(items: &[Value], dialect: Dialect) -> Result<Vec<ModelCall>, DisclosureError> {
    if dialect == Dialect::Mcp {
        return Err(DisclosureError::NotAModelApi(dialect.name()));
    }
    let mut found = Vec::new();
    for item in items {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let (id, name, arguments) = match dialect {
            Dialect::OpenAi => {
                let Some(f) = item.get("function") else { continue };
                (text(item.get("id")), text(f.get("name")), f.get("arguments"))
            }
            Dialect::OpenAiResponses if item["type"] == "function_call" => {
                (text(item.get("call_id")), text(item.get("name")), item.get("arguments"))
            }
            Dialect::Anthropic if item["type"] == "tool_use" => {
                (text(item.get("id")), text(item.get("name")), item.get("input"))
            }
            Dialect::Gemini => {
                let Some(f) = item.get("functionCall").or_else(|| item.get("function_call")) else { continue };
                (text(f.get("id")), text(f.get("name")), f.get("args"))
            }
            _ => continue,
        };
        let (arguments, unreadable) = match object(arguments) {
            Ok(a) => (a, None),
            Err(why) => (json!({}), Some(format!("the arguments could not be read: {why}"))),
        };
        found.push(ModelCall { id, name: name.unwrap_or_default(), arguments, unreadable });
    }
    Ok(found)
}

/// The answer to `call` in `dialect`'s shape: `text` is the result (or the error) as the model
/// reads it. Gemini's takes a JSON result as the value it holds.
pub fn model_answer(dialect: Dialect, call: &ModelCall, text: &str, is_error: bool) -> Result<Value, DisclosureError> {
    Ok(match dialect {
        Dialect::OpenAi => json!({"role": "tool", "tool_call_id": call.id, "content": text}),
        Dialect::OpenAiResponses => json!({"type": "function_call_output", "call_id": call.id, "output": text}),
        Dialect::Anthropic => {
            json!({"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": is_error})
        }
        Dialect::Gemini => {
            let value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
            let mut response = Map::new();
            response.insert("name".into(), call.name.clone().into());
            response.insert("response".into(), json!({ if is_error { "error" } else { "output" }: value }));
            if let Some(id) = &call.id {
                response.insert("id".into(), id.clone().into());
            }
            json!({ "functionResponse": response })
        }
        Dialect::Mcp => return Err(DisclosureError::NotAModelApi(dialect.name())),
    })
}

/// A call's arguments: a JSON object, given as one or, as OpenAI gives them, in a string;
/// none given is none.
fn object(arguments: Option<&Value>) -> Result<Value, String> {
    let value = match arguments {
        None | Some(Value::Null) => return Ok(json!({})),
        Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| e.to_string())?,
        Some(other) => other.clone(),
    };
    if value.is_object() {
        Ok(value)
    } else {
        Err("the arguments are not a JSON object".into())
    }
}
