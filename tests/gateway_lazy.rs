//! Lazy upstreams (`lazy: true`): a server is started by the first call that needs it and
//! stopped when idle, its tools indexed meanwhile from the listing the gateway keeps in its
//! state directory; one that fails to start is reported like any other. Driven by the
//! official Python client against a server written with the Python SDK, whose processes are
//! counted by a marker in their command line.

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::gateway::{client_steps, HttpGateway};
use common::{python, write_config};
use serde_json::json;

/// How many processes have `marker` in their command line.
fn running(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .count()
}

/// Waits up to `within` until `running(marker) == n`.
fn settles(marker: &str, n: usize, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if running(marker) == n {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    running(marker) == n
}

#[test]
fn a_lazy_server_starts_on_its_first_call_and_stops_when_idle() {
    let dir = common::scratch().join("gateway-lazy");
    let marker = format!("lazy-notes-{}", std::process::id());
    let notes = common::repo().join("tests/mcp/notes_server.py");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {
                "notes": {"command": python(), "args": [notes, "stdio", marker], "lazy": true},
                "broken": {"command": dir.join("no-such-server"), "lazy": true}
            },
            "toolsearch": {"idle_stop_secs": 1}
        }),
    );
    let state = dir.join("state");
    {
        // No listing kept yet: started once to list, kept, then stopped for want of use.
        let gateway = HttpGateway::start(&config, &state, &[]);
        assert!(state.join("listings/notes.json").exists());
        assert!(settles(&marker, 0, Duration::from_secs(20)), "stopped when idle: {}", running(&marker));
        // A lazy server that cannot start is down, as any server is.
        let down = gateway.wait_for_status("broken", Duration::from_secs(10));
        assert!(down.contains("unavailable") && down.contains("not found"), "{down}");
        assert!(!state.join("listings/broken.json").exists());
    }

    // Restarted: serves the kept listing without starting the server.
    let gateway = HttpGateway::start(&config, &state, &[]);
    assert_eq!(running(&marker), 0, "not started at startup");
    let out = client_steps(
        &gateway.url(),
        "-",
        &json!([
            ["search_tool_by_category", {"query": "remember a note under a key"}],
            ["call", "notes.remember", {"key": "k", "text": "kept"}],
            ["call", "notes.recall", {"key": "k"}]
        ]),
    );
    assert!(out[0]["text"].as_str().unwrap().contains("notes.remember"), "{}", out[0]);
    assert_eq!(out[1]["text"], "remembered k", "{}", out[1]);
    assert!(out[2]["text"].as_str().unwrap().contains("kept"), "the same process: {}", out[2]);
    assert!(settles(&marker, 0, Duration::from_secs(20)), "stopped again when idle");

    // Called again: started again (a new process, so a new memory).
    let again = client_steps(&gateway.url(), "-", &json!([["call", "notes.recall", {"key": "k"}]]));
    assert!(!again[0]["is_error"].as_bool().unwrap(), "{}", again[0]);
    assert!(again[0]["text"].as_str().unwrap().contains("null"), "{}", again[0]);
}
