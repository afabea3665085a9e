//! What a session records of each request: its audit entries on the hub's trail (with who,
//! when and the request's id), its request log line, and its metrics.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use toolsearch_disclosure::ToolSet;
use toolsearch_query::Principal;

use super::{Session, SessionState, LOCAL};
use crate::hub::Hub;
use crate::trail::Trail;

/// Writes the audit entries of `set` not yet written to the hub's trail on disk, if it keeps
/// one, with who and when, and `note`. Called with the set locked, so entries go in order.
pub(super) fn write_trail(hub: &Hub, state: &SessionState, set: &ToolSet, note: Map<String, Value>) {
    let Some(trail) = &hub.ops().trail else { return };
    // What happens while the trail is off is never written, not even once it is on again.
    if !trail.enabled() {
        if let Some(entry) = set.audit().entries().last() {
            state.audited.fetch_max(entry.step, Ordering::Relaxed);
        }
        return;
    }
    let last = state.audited.load(Ordering::Relaxed);
    let time = crate::trail::now_ms();
    let mut newest = last;
    // Entries are in step order: the new ones are found without a scan of the whole trail,
    // which a long session would make longer on every request.
    let entries = set.audit().entries();
    for entry in &entries[entries.partition_point(|e| e.step <= last)..] {
        newest = newest.max(entry.step);
        let Ok(Value::Object(mut record)) = serde_json::to_value(entry) else { continue };
        if !trail.arguments() {
            if let Some(arguments) = record.get_mut("arguments") {
                let names: Vec<String> = arguments.as_object().map_or_else(Vec::new, |a| a.keys().cloned().collect());
                *arguments = Value::Null;
                record.insert("argument_names".into(), json!(names));
            }
        }
        // The same masker as the operator's log: credentials in a query or kept arguments are
        // not written; ids are cut (a refused call may name one of any length).
        if let Some(Value::String(query)) = record.get_mut("query") {
            *query = crate::secrets::mask(query);
        }
        if let Some(arguments) = record.get_mut("arguments").filter(|a| !a.is_null()) {
            *arguments = crate::secrets::mask_json(arguments);
        }
        for key in ["tool_id", "via"] {
            if let Some(Value::String(id)) = record.get_mut(key) {
                cut_id(id);
            }
        }
        record.insert("time".into(), json!(time));
        record.insert("session".into(), json!(state.id));
        record.insert("token".into(), json!(state.caller.get().map_or(LOCAL, String::as_str)));
        record.extend(note.clone());
        trail.write(record);
    }
    state.audited.store(newest, Ordering::Relaxed);
}

/// Most tool names a `tool_set_remade` line lists on each side; a count says how many more.
const MAX_NAMES: usize = 100;

/// Writes a `tool_set_remade` line for `state`, whose tool set showing `before` was made again
/// under `who` (a reload changed the configuration or the default principal), showing `after`:
/// the scopes it was made under (`null`: all), the tools it no longer shows and those it shows
/// now.
pub(super) fn write_remade(trail: &Trail, state: &SessionState, who: &Principal, before: &[String], after: &[String]) {
    let time = crate::trail::now_ms();
    let mut record = Map::new();
    record.insert("event".into(), json!("tool_set_remade"));
    record.insert("time".into(), json!(time));
    record.insert("session".into(), json!(state.id));
    record.insert("token".into(), json!(state.caller.get().map_or(LOCAL, String::as_str)));
    record.insert("scopes".into(), json!(who.scopes()));
    for (key, from, not_in) in [("tools_removed", before, after), ("tools_added", after, before)] {
        let not_in: HashSet<&String> = not_in.iter().collect();
        let names: Vec<&String> = from.iter().filter(|n| !not_in.contains(n)).collect();
        if names.len() > MAX_NAMES {
            record.insert(format!("{key}_more"), json!(names.len() - MAX_NAMES));
        }
        record.insert(key.into(), json!(names[..names.len().min(MAX_NAMES)]));
    }
    trail.write(record);
}

/// The longest id the trail keeps whole (the longest a catalogue holds).
const MAX_ID_BYTES: usize = 512;

fn cut_id(id: &mut String) {
    if id.len() > MAX_ID_BYTES {
        let mut end = MAX_ID_BYTES;
        while !id.is_char_boundary(end) {
            end -= 1;
        }
        let bytes = id.len();
        id.truncate(end);
        id.push_str(&format!("... ({bytes} bytes)"));
    }
}

/// Whether a discovery tool name is a search (its latency is `search_duration_seconds`).
pub(super) fn is_search(name: &str) -> bool {
    matches!(name, "search_tool_by_category" | "search_nodes") || name.starts_with("discover")
}

/// The trail note of a request: its id, and its latency once done.
pub(super) fn note(request_id: &str, latency: Option<Duration>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("request_id".into(), json!(request_id));
    if let Some(l) = latency {
        m.insert("latency_ms".into(), json!((l.as_secs_f64() * 1e6).round() / 1e3));
    }
    m
}

impl Session {
    /// Counts a finished `tools/call` and logs it with its id.
    pub(super) fn finished(
        &self,
        id: &str,
        name: &str,
        tool: Option<&str>,
        upstream: &str,
        outcome: &str,
        started: Instant,
    ) {
        let seconds = started.elapsed().as_secs_f64();
        let ops = self.hub.ops();
        ops.metrics.request("tools/call", upstream, outcome, seconds);
        ops.log(
            "request",
            json!({
                "request_id": id,
                "session": self.state.id,
                "token": self.state.caller.get().map_or(LOCAL, String::as_str),
                "method": "tools/call",
                "name": name,
                "tool": tool,
                "upstream": upstream,
                "outcome": outcome,
                "ms": (seconds * 1e6).round() / 1e3,
            }),
        );
    }
}
