//! Lazy upstreams (`lazy: true`): a server is started by the first call that needs it and
//! stopped when idle, its tools indexed meanwhile from the listing the gateway keeps in its
//! state directory; one that fails to start is reported like any other. Driven by the
//! official Python client against a server written with the Python SDK, whose processes are
//! counted by a marker in their command line.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::gateway::{client_steps, free_port, notes_over_http, running, settles, HttpGateway};
use common::{python, write_config};
use serde_json::json;

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
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(state.join("listings")).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "listings/ is private as the state dir is (#60 T14)");
        }
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

#[test]
fn a_bad_lazy_setting_is_named_with_its_file_and_nothing_starts() {
    let dir = common::scratch().join("gateway-lazy-bad");
    for (config, field) in [
        (json!({"mcpServers": {"notes": {"command": python(), "lazy": "yes"}}}), "lazy"),
        (json!({"mcpServers": {}, "toolsearch": {"idle_stop_secs": -5}}), "idle_stop_secs"),
    ] {
        let file = write_config(&dir, &config);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["gateway", "--config", file.to_str().unwrap(), "--state", dir.join("state").to_str().unwrap()])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains(file.file_name().unwrap().to_str().unwrap()) && err.contains(field), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_lazy_http_server_is_not_reached_until_its_first_call() {
    let dir = common::scratch().join("gateway-lazy-http");
    let port = free_port();
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"remote": {"url": format!("http://127.0.0.1:{port}/mcp"), "lazy": true}},
            "toolsearch": {"idle_stop_secs": 1}
        }),
    );
    let state = dir.join("state");
    {
        // Listed once, and the listing kept.
        let _notes = notes_over_http(port);
        let _gateway = HttpGateway::start(&config, &state, &[]);
        assert!(state.join("listings/remote.json").exists());
    }
    // With the server gone, a restarted gateway serves the kept listing: it does not try to
    // reach the server, so never finds it down.
    let gateway = HttpGateway::start(&config, &state, &[]);
    let found = client_steps(&gateway.url(), "-", &json!([["search_tool_by_category", {"query": "remember a note"}]]));
    assert!(found[0]["text"].as_str().unwrap().contains("remote.remember"), "{}", found[0]);
    std::thread::sleep(Duration::from_secs(2));
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("unavailable"), "{status}");
    // The first call reaches it, once it is there.
    let _notes = notes_over_http(port);
    let out = client_steps(
        &gateway.url(),
        "-",
        &json!([["call", "remote.remember", {"key": "k", "text": "kept"}], ["call", "remote.recall", {"key": "k"}]]),
    );
    assert_eq!(out[0]["text"], "remembered k", "{}", out[0]);
    assert!(out[1]["text"].as_str().unwrap().contains("kept"), "{}", out[1]);
}

/// What a server is started with follows an edit of the config: `idle_stop_secs` restarts the
/// lazy servers (the next start idles out under the new bound), `connect_timeout_secs` every
/// server (an edit of `model` is applied too: tests/gateway_model.rs).
#[test]
fn idle_and_connect_bounds_edited_restart_the_servers_they_bind() {
    let dir = common::scratch().join("gateway-lazy-reload");
    let marker = format!("lazy-reload-{}", std::process::id());
    let notes = common::repo().join("tests/mcp/notes_server.py");
    let config = |idle: u64, connect: u64| {
        let toolsearch = json!({"idle_stop_secs": idle, "connect_timeout_secs": connect});
        write_config(
            &dir,
            &json!({"mcpServers": {
                        "notes": {"command": python(), "args": [&notes, "stdio", &marker], "lazy": true},
                        "eager": {"command": python(), "args": [&notes, "stdio", "eager-notes"]}},
                    "toolsearch": toolsearch}),
        )
    };
    let path = config(600, 30);
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    let reloaded = |n: usize| -> serde_json::Value {
        gateway.wait_for_statuses("\"event\":\"config_reloaded\"", n, Duration::from_secs(60));
        let lines = gateway.status.lock().unwrap().clone();
        let line = lines.iter().filter(|l| l.contains("\"event\":\"config_reloaded\"")).nth(n - 1).unwrap().clone();
        serde_json::from_str(&line).unwrap()
    };
    // Listed once at start, it stays up under a 600 s idle bound.
    assert!(settles(&marker, 1, Duration::from_secs(20)), "{}", running(&marker));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(running(&marker), 1, "kept under the 600 s bound");

    config(1, 30);
    assert_eq!(reloaded(1)["changed"], json!(["notes"]), "the lazy server alone");
    let out = client_steps(&gateway.url(), "-", &json!([["call", "notes.remember", {"key": "k", "text": "t"}]]));
    assert_eq!(out[0]["text"], "remembered k", "{}", out[0]);
    assert!(settles(&marker, 0, Duration::from_secs(10)), "stopped under the new 1 s bound: {}", running(&marker));

    config(1, 20);
    assert_eq!(reloaded(2)["changed"], json!(["eager", "notes"]), "every server");
}
