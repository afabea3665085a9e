//! The JSON-RPC 2.0 message loop of the MCP server.

use std::io::{BufRead, Write};

use serde_json::{json, Value};
use toolsearch_disclosure::{render, Dialect, ToolSet};

use crate::config::ServeError;

/// MCP protocol versions this server speaks, newest first. The client's requested version is
/// echoed when listed here; otherwise the newest is offered.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// One client's session.
pub struct Server {
    set: ToolSet,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("set", &self.set).finish()
    }
}

impl Server {
    /// A server over `set`.
    pub fn new(set: ToolSet) -> Server {
        Server { set }
    }

    /// The tool set (for its audit trail).
    pub fn tool_set(&self) -> &ToolSet {
        &self.set
    }

    /// Handles one incoming message; returns the messages to send, the response first, then
    /// any `notifications/tools/list_changed`. Notifications and client responses get no answer.
    pub fn handle_line(&mut self, line: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return vec![error(Value::Null, PARSE_ERROR, &format!("parse error: {e}"))],
        };
        let Some(obj) = message.as_object() else {
            return vec![error(Value::Null, INVALID_REQUEST, "a message must be one JSON-RPC object (no batches)")];
        };
        // Availability may have changed since the last message.
        let drift = self.set.refresh();
        let Some(method) = obj.get("method").and_then(Value::as_str) else {
            return Vec::new(); // a response to something we never ask, or garbage without an id
        };
        let Some(id) = obj.get("id").cloned() else {
            return Vec::new(); // notifications: initialized, cancelled, ...
        };
        let params = obj.get("params").cloned().unwrap_or_else(|| json!({}));
        let mut changed = !drift.added.is_empty() || !drift.removed.is_empty();
        let response = match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
                let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
                changed = false;
                result(
                    id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": true}},
                        "serverInfo": {"name": "toolsearch", "version": env!("CARGO_PKG_VERSION")},
                        "instructions": self.set.system_prompt(),
                    }),
                )
            }
            "ping" => result(id, json!({})),
            "tools/list" => {
                changed = false;
                result(id, render(&self.set.visible(), Dialect::Mcp))
            }
            "tools/call" => match params.get("name").and_then(Value::as_str) {
                None => error(id, INVALID_PARAMS, "tools/call needs a string `name`"),
                Some(name) => {
                    let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
                    if !arguments.is_object() {
                        error(id, INVALID_PARAMS, "`arguments` must be an object")
                    } else {
                        let outcome = self.set.call(name, &arguments);
                        changed |= !outcome.added.is_empty() || !outcome.removed.is_empty();
                        result(
                            id,
                            json!({"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error}),
                        )
                    }
                }
            },
            other => error(id, METHOD_NOT_FOUND, &format!("method {other:?} is not supported")),
        };
        out.push(response);
        if changed {
            out.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        }
        out
    }

    /// Serves newline-delimited messages from `input` to `output` until `input` ends.
    pub fn serve(&mut self, input: impl BufRead, mut output: impl Write) -> Result<(), ServeError> {
        for line in input.lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            for message in self.handle_line(&line) {
                writeln!(output, "{message}")?;
            }
            output.flush()?;
        }
        Ok(())
    }
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
