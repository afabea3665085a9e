//! `toolsearch gateway` end to end, with parts nobody here wrote: the official Python MCP SDK
//! client drives it, and its upstreams are the MCP reference servers from npm plus a small
//! server written with the Python SDK, over stdio and Streamable HTTP. `scripts/test-deps`
//! (run by `scripts/test`) installs them under target/.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{free_port, notes_over_http};
use common::{python, write_config};

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn everything() -> PathBuf {
    let p = common::repo().join("target/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(p.exists(), "{} is missing: run scripts/test-deps (scripts/test does)", p.display());
    p
}

fn notes_server() -> PathBuf {
    common::repo().join("tests/mcp/notes_server.py")
}

fn client() -> PathBuf {
    common::repo().join("tests/mcp/client.py")
}

/// Runs the Python client with `args`; its JSON observations.
fn run_client(args: &[&str]) -> Result<Value, String> {
    let out = Command::new(python())
        .arg(client())
        .args(args)
        .env("TOOLSEARCH_BIN", env!("CARGO_BIN_EXE_toolsearch"))
        .output()
        .expect("python runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("client output: {e}: {}", String::from_utf8_lossy(&out.stdout))))
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) {
                found.push(cmd);
            }
        }
    }
    found
}

#[test]
fn a_python_mcp_client_searches_expands_and_calls_real_upstream_servers_over_stdio() {
    let dir = common::scratch().join("gateway-stdio");
    let marker = format!("gw-stdio-{}", std::process::id());
    let config = write_config(
        &dir,
        &json!({"mcpServers": {
            "notes": {"command": python(), "args": [notes_server(), "stdio", marker]},
            "everything": {"command": "node", "args": [everything(), "stdio"]}
        }}),
    );
    let state = dir.join("state");
    let out = run_client(&["stdio", config.to_str().unwrap(), state.to_str().unwrap()]).unwrap();

    // Only discovery up front (call_tool is on in gateway mode), with instructions for it.
    let initial: Vec<&str> = out["initial_tools"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(initial, ["search_tool_by_category", "search_nodes", "list", "expand_tool", "call_tool"]);
    assert!(out["instructions"].as_str().unwrap().contains("call_tool"));
    // Search finds the upstream tool; expand shows its title and annotations and reveals it,
    // with its title and annotations re-served in tools/list; calling it reaches the upstream.
    assert_eq!(out["search_top"], "notes.remember");
    assert_eq!(out["expanded"]["title"], "Remember a note");
    assert_eq!(out["expanded"]["annotations"]["readOnlyHint"], false);
    assert_eq!(out["revealed"]["title"], "Remember a note");
    assert_eq!(out["revealed"]["annotations"]["destructiveHint"], false);
    assert!(out["list_changed_after_expand"].as_u64().unwrap() >= 1, "{out}");
    assert_eq!(out["remember"], "remembered k1");
    // The stateful upstream kept its state across calls (one session for the gateway's life).
    let recall = out["recall"]["content"][0]["text"].as_str().unwrap();
    assert!(recall.contains("hello"), "{recall}");
    assert_eq!(out["echo"], "Echo: hi there");
    // A long call neither delays a ping nor a search; progress flows back; cancel reaches
    // the upstream.
    assert!(out["ping_during_call_ms"].as_f64().unwrap() < 1000.0, "{out}");
    assert_eq!(out["search_during_call_top"], "everything.echo");
    assert!(out["cancelled_after_s"].as_f64().unwrap() < 10.0, "{out}");
    assert!(out["progress_seen"].as_u64().unwrap() >= 1, "{out}");
    assert_eq!(out["stats_after_cancel"]["cancelled"], 1, "{out}");
    // The upstream's own list_changed re-imports it.
    assert_eq!(out["new_tool_found"], "notes.weather_forecast");
    assert_eq!(out["new_tool_call"], "sunny in Oslo");
    // Killed mid-session: UNAVAILABLE naming the server but never its command line (which may
    // hold credentials), then back (restarted, new process).
    let down = out["down_text"].as_str().unwrap();
    assert!(down.contains("UNAVAILABLE") && down.contains("MCP server \\\"notes\\\" is unavailable"), "{down}");
    assert!(!down.contains("notes_server.py") && !down.contains(&marker), "{down}");
    assert!(out["back"]["pid"].is_number() && out["back"]["pid"] != out["stats_after_cancel"]["pid"], "{out}");
    assert!(out["list_changed_on_down_up"].as_u64().unwrap() >= 1, "{out}");
    // Ending the gateway ended its children.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(processes_with(&marker).is_empty(), "children outlived the gateway: {:?}", processes_with(&marker));
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // SIGTERM: the gateway ends its children on the way out.
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A raw HTTP POST of an initialize request; the status code.
fn post_status(addr: &str, headers: &[(&str, &str)]) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn http_clients_with_different_tokens_see_different_tools_and_upstreams_can_be_http() {
    let dir = common::scratch().join("gateway-http");
    // The notes server as a Streamable HTTP upstream.
    let notes_port = free_port();
    let _notes = notes_over_http(notes_port);
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {
                "notes": {"url": format!("http://127.0.0.1:{notes_port}/mcp")},
                "everything": {"command": "node", "args": [everything(), "stdio"]}
            },
            "toolsearch": {
                "requires": {"notes": ["notes"], "everything": ["everything"]},
                "tokens": {"token-notes": ["notes"], "token-everything": ["everything"]}
            }
        }),
    );
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--config", config.to_str().unwrap(), "--http", "127.0.0.1:0"])
        .args(["--state", dir.join("state").to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = gateway.stderr.take().unwrap();
    let gateway = Killed(gateway);
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("the gateway printed its address").unwrap();
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.trim_end_matches("/mcp").to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let url = format!("http://{addr}/mcp");

    let a = run_client(&["http", &url, "token-notes"]).unwrap();
    let b = run_client(&["http", &url, "token-everything"]).unwrap();
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .map_or_else(Vec::new, |r| r.iter().map(|p| p["tool_id"].as_str().unwrap().to_owned()).collect())
    };
    // Each token sees and calls only its own server's tools.
    assert!(
        ids(&a["notes_search"]).iter().all(|i| i.starts_with("notes.")) && !ids(&a["notes_search"]).is_empty(),
        "{a}"
    );
    assert!(ids(&a["echo_search"]).iter().all(|i| i.starts_with("notes.")), "{a}");
    assert_eq!(a["remember_call"]["content"][0]["text"], "remembered h", "{a}");
    assert!(a["echo_call"]["content"][0]["text"].as_str().unwrap().contains("TOOL_NOT_FOUND"), "{a}");
    assert!(
        ids(&b["echo_search"]).iter().all(|i| i.starts_with("everything.")) && !ids(&b["echo_search"]).is_empty(),
        "{b}"
    );
    assert_eq!(b["echo_call"]["content"][0]["text"], "Echo: over http", "{b}");
    assert!(b["remember_call"]["content"][0]["text"].as_str().unwrap().contains("TOOL_NOT_FOUND"), "{b}");
    // No token, a wrong token, or a foreign Origin: refused.
    assert!(run_client(&["http", &url, "-"]).is_err());
    assert_eq!(post_status(&addr, &[]), 401);
    assert_eq!(post_status(&addr, &[("Authorization", "Bearer nope")]), 401);
    assert_eq!(post_status(&addr, &[("Authorization", "Bearer token-notes"), ("Origin", "http://evil.example")]), 403);
    assert_eq!(post_status(&addr, &[("Authorization", "Bearer token-notes")]), 200);
    drop(gateway);
}

/// `toolsearch gateway --config CONFIG --http ADDR --state DIR/state` with `extra`: whether
/// it succeeded, and its stderr.
fn gateway_on(config: &std::path::Path, dir: &std::path::Path, addr: &str, extra: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--config", config.to_str().unwrap(), "--http", addr])
        .args(["--state", dir.join("state").to_str().unwrap()])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_non_loopback_bind_without_tokens_refuses_to_start() {
    let dir = common::scratch().join("gateway-open");
    let everything = json!({"command": "node", "args": [everything(), "stdio"]});
    let config = write_config(&dir, &json!({"mcpServers": {"everything": everything}}));
    let (ok, err) = gateway_on(&config, &dir, "0.0.0.0:0", &[]);
    assert!(!ok && err.contains("without bearer tokens"), "{err}");
    // A token easy to guess (short, or long but made by hand) is refused too, checked or
    // served, named by its name or its length, never its value; on loopback it is taken.
    for (tokens, value, named, why) in [
        (json!({"pass1234": []}), "pass1234", "(8 bytes)", "is under 16 bytes"),
        (
            json!({"pass1234": {"name": "ide", "scopes": []}, "a-long-enough-token-0123456789": []}),
            "pass1234",
            "token \"ide\" (8",
            "is under 16 bytes",
        ),
        (json!({"changemechangeme": {"name": "ci", "scopes": []}}), "changeme", "token \"ci\" (16", "repeats"),
    ] {
        let config =
            write_config(&dir, &json!({"mcpServers": {"everything": everything}, "toolsearch": {"tokens": tokens}}));
        for extra in [&["--check"][..], &[]] {
            let (ok, err) = gateway_on(&config, &dir, "0.0.0.0:0", extra);
            assert!(!ok && err.contains(named) && err.contains(why), "{extra:?}: {err}");
            assert!(!err.contains(value), "the token's value reached the error: {err}");
        }
        let (ok, err) = gateway_on(&config, &dir, "127.0.0.1:0", &["--check"]);
        assert!(ok, "loopback refused a short token: {err}");
    }
}

#[test]
fn a_bad_gateway_config_names_the_file_and_the_server() {
    let dir = common::scratch().join("gateway-bad");
    let config = write_config(&dir, &json!({"mcpServers": {"broken": {"args": ["x"]}}}));
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("gateway.json") && err.contains("broken"), "{err}");
}
