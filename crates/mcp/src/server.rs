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
    /// Whether the client has sent `initialize` (before it only `ping` is answered).
    initialized: bool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("set", &self.set).finish()
    }
}

impl Server {
    /// A server over `set`.
    pub fn new(set: ToolSet) -> Server {
        Server { set, initialized: false }
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
        // JSON-RPC 2.0: an id is a string or an integer (a float, or an integer past 64 bits,
        // which JSON parsers read as a float, cannot be echoed faithfully); `jsonrpc` is "2.0".
        let id = match obj.get("id") {
            None => None,
            Some(v @ Value::String(_)) => Some(v.clone()),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n.clone())),
            Some(_) => {
                return vec![error(
                    Value::Null,
                    INVALID_REQUEST,
                    "`id` must be a string or an integer of at most 64 bits",
                )]
            }
        };
        let reply_id = id.clone().unwrap_or(Value::Null);
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return vec![error(reply_id, INVALID_REQUEST, "`jsonrpc` must be \"2.0\"")];
        }
        let method = match obj.get("method") {
            Some(Value::String(m)) => m.as_str(),
            Some(_) => return vec![error(reply_id, INVALID_REQUEST, "`method` must be a string")],
            // A response to a request of ours (we send none), ignored; anything else is invalid.
            None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => return Vec::new(),
            None => return vec![error(reply_id, INVALID_REQUEST, "a request needs a `method`")],
        };
        let Some(id) = id else {
            return Vec::new(); // notifications: initialized, cancelled, ...
        };
        if !self.initialized && method != "initialize" && method != "ping" {
            return vec![error(id, INVALID_REQUEST, "the session is not initialized: send `initialize` first")];
        }
        // Availability may have changed since the last message.
        let drift = self.set.refresh();
        let params = obj.get("params").cloned().unwrap_or_else(|| json!({}));
        let mut changed = !drift.added.is_empty() || !drift.removed.is_empty();
        let response = match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
                let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
                changed = false;
                self.initialized = true;
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

    /// Serves newline-delimited messages from `input` to `output` until `input` ends. A line
    /// that is not UTF-8, or longer than [`MAX_MESSAGE_BYTES`], is answered with a JSON-RPC
    /// error and skipped; the session goes on. Memory per message stays bounded.
    pub fn serve(&mut self, mut input: impl BufRead, mut output: impl Write) -> Result<(), ServeError> {
        let mut line = Vec::new();
        loop {
            let Some(too_long) = read_message(&mut input, &mut line)? else { return Ok(()) };
            let replies = if too_long {
                vec![error(Value::Null, INVALID_REQUEST, &format!("message over {MAX_MESSAGE_BYTES} bytes"))]
            } else {
                match std::str::from_utf8(&line) {
                    Ok(text) if text.trim().is_empty() => continue,
                    Ok(text) => self.handle_line(text),
                    Err(e) => vec![error(Value::Null, PARSE_ERROR, &format!("parse error: not UTF-8: {e}"))],
                }
            };
            for message in replies {
                writeln!(output, "{message}")?;
            }
            output.flush()?;
        }
    }
}

/// Longest message the server reads; a longer line is refused without being kept in memory.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Reads one line into `buf` (without keeping more than [`MAX_MESSAGE_BYTES`]): `None` at the
/// end of input, else whether the line was too long (then `buf` is empty).
fn read_message(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut read = 0;
    let mut too_long = false;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok((read > 0).then_some(too_long));
        }
        let (chunk, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        if !too_long && buf.len() + chunk.len() > MAX_MESSAGE_BYTES {
            too_long = true;
            buf.clear();
            buf.shrink_to_fit();
        }
        if !too_long {
            buf.extend_from_slice(chunk);
        }
        let used = chunk.len() + usize::from(ends);
        input.consume(used);
        read += used;
        if ends {
            return Ok(Some(too_long));
        }
    }
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_whole_and_over_long_ones_dropped() {
        let long = "x".repeat(MAX_MESSAGE_BYTES + 10);
        let text = format!("one\n\n{long}\ntwo\r\nlast");
        let mut input = std::io::BufReader::with_capacity(1024, text.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(read_message(&mut input, &mut buf).unwrap(), Some(false));
        assert_eq!(buf, b"one");
        assert_eq!(read_message(&mut input, &mut buf).unwrap(), Some(false));
        assert!(buf.is_empty());
        assert_eq!(read_message(&mut input, &mut buf).unwrap(), Some(true));
        assert!(buf.is_empty() && buf.capacity() <= MAX_MESSAGE_BYTES);
        assert_eq!(read_message(&mut input, &mut buf).unwrap(), Some(false));
        assert_eq!(buf, b"two\r");
        assert_eq!(read_message(&mut input, &mut buf).unwrap(), Some(false));
        assert_eq!(buf, b"last");
        assert_eq!(read_message(&mut input, &mut buf).unwrap(), None);
    }
}
