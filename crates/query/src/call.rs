//! `call_tool`: arguments validated against the tool's JSON Schema, then handed to the
//! executor the host registered; every call and its outcome recorded for the audit trail.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolsearch_catalog::Tool;

use crate::error::{ErrorCode, ProtocolError};

/// Runs validated tool calls. Implemented by the host (an MCP client, an HTTP client, ...).
pub trait Executor: Send + Sync {
    /// Runs `tool` with `arguments` (already valid against its `args_schema`). An `Err` is the
    /// tool's own failure, reported to the caller as a result with `is_error`.
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, String>;
}

/// `call_tool`: run a tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallToolRequest {
    /// The tool's id.
    pub tool_id: String,
    /// Its arguments (an object matching its `args_schema`).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// The answer to `call_tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolResponse {
    /// The tool's id.
    pub tool_id: String,
    /// What the tool returned, or `{"error": message}` when it failed.
    pub result: Value,
    /// True when the tool itself failed.
    pub is_error: bool,
}

/// One call as recorded for the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// The tool's id as requested.
    pub tool_id: String,
    /// The arguments as given.
    pub arguments: Value,
    /// `ok`, `tool_error`, or the protocol error code that refused the call.
    pub outcome: String,
    /// The result or error text.
    pub detail: Value,
}

/// Most call records kept; the oldest go first.
const MAX_RECORDS: usize = 10_000;

/// The bounded record of calls.
#[derive(Default)]
pub(crate) struct CallLog(Mutex<VecDeque<CallRecord>>);

impl CallLog {
    pub(crate) fn push(&self, tool_id: &str, arguments: &Value, outcome: &str, detail: Value) {
        let at_unix_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() == MAX_RECORDS {
            log.pop_front();
        }
        log.push_back(CallRecord {
            at_unix_ms,
            tool_id: tool_id.to_owned(),
            arguments: arguments.clone(),
            outcome: outcome.to_owned(),
            detail,
        });
    }

    pub(crate) fn drain(&self) -> Vec<CallRecord> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect()
    }
}

/// Checks `arguments` against the tool's schema; `INVALID_ARGUMENT` lists each failing JSON
/// pointer.
pub(crate) fn validate(tool: &Tool, arguments: &Value) -> Result<(), ProtocolError> {
    let validator = jsonschema::validator_for(&tool.args_schema).map_err(|e| {
        ProtocolError::new(ErrorCode::Internal, format!("tool {:?} has an unusable args_schema: {e}", tool.id))
    })?;
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/".to_owned() } else { at })
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(ProtocolError::new(
        ErrorCode::InvalidArgument,
        format!("arguments of {:?} do not match its schema: {}", tool.id, problems[0]),
    )
    .with_hints(problems)
    .with_next("expand_tool", json!({ "tool_id": tool.id })))
}
