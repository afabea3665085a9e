//! The gateway over stdio as the official Python MCP SDK client sees it (tests/mcp/probe.py):
//! each step's answer and the gateway's status events.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{python, repo, write_config};

/// What the probe saw, and the gateway's status events (one JSON object per line).
pub struct Probe {
    /// `ready_s` (spawn to `initialize` answered) and each step's answer.
    pub out: Value,
    /// The gateway's `--json` status lines.
    pub events: Vec<Value>,
}

impl Probe {
    /// Step `i`'s answer.
    pub fn step(&self, i: usize) -> &Value {
        &self.out["steps"][i]
    }

    /// The status events of one kind.
    pub fn events_of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["event"] == kind).collect()
    }
}

/// Starts a gateway over stdio on `servers` and `settings` (the `toolsearch` section) under
/// `dir`, runs `steps` through the Python SDK client (tests/mcp/probe.py), and stops it.
pub fn probe(dir: &Path, servers: Value, settings: Value, steps: Value) -> Probe {
    let config = write_config(dir, &json!({"mcpServers": servers, "toolsearch": settings}));
    let stderr = dir.join("gateway.stderr");
    let out = Command::new(python())
        .arg(repo().join("tests/mcp/probe.py"))
        .arg(&config)
        .arg(dir.join("state"))
        .arg(&stderr)
        .arg(steps.to_string())
        .env("TOOLSEARCH_BIN", env!("CARGO_BIN_EXE_toolsearch"))
        .output()
        .expect("python runs");
    let status = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(out.status.success(), "probe failed: {}\ngateway: {status}", String::from_utf8_lossy(&out.stderr));
    let events = status.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    Probe { out: serde_json::from_slice(&out.stdout).unwrap(), events }
}
