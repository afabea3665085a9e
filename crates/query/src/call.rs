//! `call_tool`: the caller may use the tool, its arguments are validated against the tool's
//! JSON Schema, then the call goes to the executor the host registered. Recording calls is
//! the disclosure runtime's audit trail's job, not the engine's.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolsearch_catalog::{SchemaValidator, Tool};

use crate::engine::Engine;
use crate::error::{Call, ErrorCode, ProtocolError};
use crate::principal::Principal;

/// Why a tool call that passed every check did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFailure {
    /// The tool ran and reported its own failure, in its own words.
    #[error("{0}")]
    Failed(String),
    /// The executor could not run the tool to its end (it could not start, timed out, or
    /// printed too much); the text says which.
    #[error("{0}")]
    Executor(String),
}

/// Runs validated tool calls. Implemented by the host (an MCP client, an HTTP client, ...).
pub trait Executor: Send + Sync {
    /// Runs `tool` with `arguments` (already valid against its `args_schema`). A failure is
    /// reported to the caller as a result with `is_error`.
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, ToolFailure>;
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

impl Engine {
    /// Registers the executor that runs `call_tool` (replacing any previous one).
    pub fn set_executor(&self, executor: Arc<dyn Executor>) {
        *self.executor.write().unwrap_or_else(|p| p.into_inner()) = Some(executor);
    }

    /// `call_tool`: checks `who` may use the tool (as `expand_tool` does), validates the
    /// arguments against its `args_schema` (`INVALID_ARGUMENT` with the failing JSON pointers),
    /// and hands the call to the registered [`Executor`].
    pub fn call_tool(&self, who: &Principal, req: &CallToolRequest) -> Result<CallToolResponse, ProtocolError> {
        let tool = self.checked_tool(who, req)?;
        let executor = self.executor.read().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(executor) = executor else {
            return Err(ProtocolError::new(
                ErrorCode::Internal,
                "no executor is registered: the host must call Engine::set_executor",
            ));
        };
        Ok(match executor.execute(&tool, &req.arguments) {
            Ok(result) => CallToolResponse { tool_id: tool.id.clone(), result, is_error: false },
            Err(failure) => CallToolResponse {
                tool_id: tool.id.clone(),
                result: json!({ "error": failure.to_string() }),
                is_error: true,
            },
        })
    }

    /// Everything `call_tool` checks before running a call, without running it: `who` may use
    /// the tool and the arguments match its `args_schema`. The same errors as `call_tool`.
    pub fn check_call(&self, who: &Principal, req: &CallToolRequest) -> Result<(), ProtocolError> {
        self.checked_tool(who, req).map(|_| ())
    }

    fn checked_tool(&self, who: &Principal, req: &CallToolRequest) -> Result<Tool, ProtocolError> {
        let tool = self.usable_tool(who, &req.tool_id)?;
        let validator = self.validators.get(&tool);
        validate(&tool, &validator, &req.arguments)?;
        Ok(tool)
    }
}

/// Most compiled schemas an engine keeps (past it, the cache starts over).
const VALIDATORS_KEPT: usize = 4096;

/// The compiled argument schemas of the tools called lately, by tool id. Compiling a schema
/// (checking it against its dialect's meta-schema, then building the validator) costs far
/// more than validating a call's arguments, and a gateway validates every forwarded call. An
/// engine serves one index build, so an entry never outlives the schema it was compiled from.
#[derive(Default)]
pub(crate) struct Validators(std::sync::Mutex<std::collections::HashMap<String, Arc<SchemaValidator>>>);

impl Validators {
    fn get(&self, tool: &Tool) -> Arc<SchemaValidator> {
        if let Some(v) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&tool.id) {
            return v.clone();
        }
        let compiled = Arc::new(SchemaValidator::new(&tool.details.args_schema.value()));
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= VALIDATORS_KEPT {
            cache.clear();
        }
        cache.insert(tool.id.clone(), compiled.clone());
        compiled
    }
}

/// Checks `arguments` against the tool's schema in its dialect; `INVALID_ARGUMENT` lists each
/// failing JSON pointer. A schema that cannot be compiled validates nothing: the call is passed
/// on and whoever runs the tool decides (`expand_tool` says so in its `validation` field).
fn validate(tool: &Tool, validator: &SchemaValidator, arguments: &Value) -> Result<(), ProtocolError> {
    let problems = validator.problems(arguments, 5);
    if problems.is_empty() {
        return Ok(());
    }
    Err(ProtocolError::new(
        ErrorCode::InvalidArgument,
        format!("arguments of {:?} do not match its schema: {}", tool.id, problems[0]),
    )
    .with_hints(problems)
    .with_next(Call::ExpandTool, json!({ "tool_id": tool.id })))
}
