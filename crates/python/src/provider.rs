//! What passes between the package and a model provider's API: tool-search answers in its
//! shape, and a model's tool calls read from its response and answered in its shape
//! ([`toolsearch::disclosure::model_calls`]), all as JSON text.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::{json, Value};
use toolsearch::disclosure::model_calls::ModelCall;
use toolsearch::disclosure::Dialect;

/// Search results as a provider's tool-search answer: `anthropic` (a `tool_result` of
/// `tool_reference` blocks naming `tools[*].name`) or `openai` (a `tool_search_output` item
/// with each tool's definition). `tools` is JSON: `[{"name", "description", "input_schema"}]`.
#[pyfunction]
pub(crate) fn render_tool_search(provider: &str, call_id: &str, tools: &str) -> PyResult<String> {
    let tools: Vec<Value> = serde_json::from_str(tools).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let defs: Vec<toolsearch::disclosure::ToolDef> = tools
        .iter()
        .map(|t| toolsearch::disclosure::ToolDef {
            name: t["name"].as_str().unwrap_or_default().to_owned(),
            description: t["description"].as_str().unwrap_or_default().to_owned(),
            input_schema: t.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        })
        .collect();
    let out = match provider {
        "anthropic" => {
            let names: Vec<String> = defs.into_iter().map(|d| d.name).collect();
            toolsearch::disclosure::anthropic_tool_references(call_id, &names)
        }
        "openai" => toolsearch::disclosure::openai_tool_search_output(call_id, &defs),
        other => return Err(PyValueError::new_err(format!("provider {other:?}: use anthropic or openai"))),
    };
    Ok(out.to_string())
}

/// A dialect a model API speaks, by name.
fn dialect(name: &str) -> PyResult<Dialect> {
    Dialect::from_name(name).filter(|d| *d != Dialect::Mcp).ok_or_else(|| {
        PyValueError::new_err(format!("dialect {name:?}: use openai, openai-responses, anthropic or gemini"))
    })
}

/// The tool calls among `items` (JSON: a list of a response's items, blocks or parts), in
/// `dialect`'s shape, as JSON: `[{"id", "name", "arguments", "unreadable"}]`.
#[pyfunction]
pub(crate) fn model_calls(items: &str, dialect_name: &str) -> PyResult<String> {
    let items: Vec<Value> = serde_json::from_str(items).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let calls = toolsearch::disclosure::model_calls::model_calls(&items, dialect(dialect_name)?)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&calls).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The answer to a call [`model_calls`] read (`call`, JSON), in `dialect`'s shape, as JSON.
#[pyfunction]
pub(crate) fn model_answer(dialect_name: &str, call: &str, text: &str, is_error: bool) -> PyResult<String> {
    let call: ModelCall = serde_json::from_str(call).map_err(|e| PyValueError::new_err(format!("call: {e}")))?;
    let answer = toolsearch::disclosure::model_calls::model_answer(dialect(dialect_name)?, &call, text, is_error)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(answer.to_string())
}
