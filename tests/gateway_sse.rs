//! Servers that speak only MCP 2024-11-05's HTTP+SSE transport: the reference `everything`
//! server in its `sse` mode is reached from a Claude Code style entry (`"type": "sse"`) and
//! from Gemini CLI's `url` (its SSE field), its tools called with progress on the way; an
//! OAuth-protected one (the official Python SDK's server auth, oidc-provider's tokens) is
//! logged in to and called with the grant, refreshed after a 401; a server whose `endpoint`
//! event names another origin is refused, and nothing (no message, no credential) is posted
//! there; a broken stream and a message that is not JSON-RPC are said in the operator's log.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Stdio};

use std::time::Duration;

use common::gateway::{client_steps, everything_over, free_port, wait_for_port, HttpGateway, Killed};
use common::oauth::{assert_refreshed, log_in, protected_over, spoil_access_token, Idp};
use common::write_config;
use serde_json::{json, Value};

/// `toolsearch --json gateway --config CONFIG --check`: its success and report.
fn check(config: &std::path::Path) -> (bool, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["--json", "gateway", "--config", config.to_str().unwrap(), "--check"])
        .output()
        .unwrap();
    (out.status.success(), serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn an_sse_only_server_is_reached_from_a_claude_code_entry_and_from_gemini_clis_url() {
    let dir = common::scratch().join("gateway-sse");
    let port = free_port();
    let _everything = everything_over("sse", port);
    let url = format!("http://127.0.0.1:{port}/sse");

    // `"type": "sse"`, as Claude Code's .mcp.json writes it: calls go through, a long one
    // with its progress notifications on the same event stream.
    let config = write_config(&dir, &json!({"mcpServers": {"everything": {"type": "sse", "url": url}}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let steps = json!([
        ["call", "everything.echo", {"message": "over the event stream"}],
        ["call", "everything.trigger-long-running-operation", {"duration": 1, "steps": 3}],
        ["call", "everything.get-sum", {"a": 2, "b": 3}]
    ]);
    let out = client_steps(&gateway.url(), "-", &steps);
    assert!(out.iter().all(|r| r["is_error"] == false), "{out:?}");
    assert!(out[0]["text"].as_str().unwrap().contains("over the event stream"), "{out:?}");
    assert!(out[1]["text"].as_str().unwrap().contains("completed"), "{out:?}");
    assert!(out[2]["text"].as_str().unwrap().contains('5'), "{out:?}");
    drop(gateway);

    // Gemini CLI's `url` is its SSE field (`httpUrl` is Streamable HTTP): read as such.
    let gemini = dir.join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let settings = gemini.join("settings.json");
    std::fs::write(&settings, json!({"mcpServers": {"everything": {"url": url}}}).to_string()).unwrap();
    let (ok, report) = check(&settings);
    assert!(ok, "{report}");
    assert!(report["servers"][0]["tools"].as_array().unwrap().contains(&json!("echo")), "{report}");
    // The same entry said to be Streamable HTTP is not reached as SSE (the `sse` server has
    // no Streamable HTTP endpoint there).
    std::fs::write(&settings, json!({"mcpServers": {"everything": {"url": url, "type": "http"}}}).to_string()).unwrap();
    let (ok, report) = check(&settings);
    assert!(!ok && report["servers"][0]["up"] == false, "{report}");
}

/// A server whose event stream breaks (it died mid-stream) is down, and the operator's log says
/// why: the stream, and the error that broke it.
#[test]
fn a_broken_event_stream_is_named_in_the_operators_log() {
    let dir = common::scratch().join("gateway-sse-broken");
    let port = free_port();
    let everything = everything_over("sse", port);
    let url = format!("http://127.0.0.1:{port}/sse");
    let config = write_config(&dir, &json!({"mcpServers": {"everything": {"type": "sse", "url": url}}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    gateway.wait_for_status("everything is up", Duration::from_secs(30));
    drop(everything);
    let said = gateway.wait_for_status("its event stream broke", Duration::from_secs(30));
    assert!(said.contains("everything"), "{said}");
}

/// A `message` event that is not JSON-RPC is skipped and said in the operator's log; the session
/// goes on (the server is still called).
#[test]
fn a_message_that_is_not_json_rpc_is_skipped_and_named_in_the_operators_log() {
    let dir = common::scratch().join("gateway-sse-garbled");
    let port = free_port();
    let garbled = Command::new(common::python())
        .arg(common::repo().join("tests/mcp/sse_garbled.py"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _garbled = Killed(garbled);
    wait_for_port(port);
    let url = format!("http://127.0.0.1:{port}/sse");
    let config = write_config(&dir, &json!({"mcpServers": {"garbled": {"type": "sse", "url": url}}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let said = gateway.wait_for_status("not JSON-RPC, skipped", Duration::from_secs(30));
    assert!(said.contains("garbled"), "{said}");
    let r = client_steps(&gateway.url(), "-", &json!([["call", "garbled.noop", {}]])).remove(0);
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(r["text"], "still here", "{r}");
}

#[test]
fn an_endpoint_on_another_origin_is_refused_and_nothing_is_posted_there() {
    let dir = common::scratch().join("gateway-sse-elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    let (port, other) = (free_port(), free_port());
    let requests = dir.join("requests");
    let _ = std::fs::remove_file(&requests);
    let hostile = Command::new(common::python())
        .arg(common::repo().join("tests/mcp/sse_elsewhere.py"))
        .args([&port.to_string(), &other.to_string(), requests.to_str().unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _hostile = Killed(hostile);
    wait_for_port(port);
    wait_for_port(other);
    let entry = json!({"type": "sse", "url": format!("http://127.0.0.1:{port}/sse"),
                       "headers": {"Authorization": "Bearer secret-for-the-server"}});
    let config = write_config(&dir, &json!({"mcpServers": {"hostile": entry}}));
    let (ok, report) = check(&config);
    let reason = report["servers"][0]["reason"].as_str().unwrap_or_default();
    assert!(!ok, "{report}");
    let named = format!("its endpoint event names another origin (http://127.0.0.1:{other}): refused");
    assert!(reason.contains(&named), "{report}");
    assert!(!report.to_string().contains("secret-for-the-server"), "{report}");
    assert!(!requests.exists(), "posted elsewhere: {:?}", std::fs::read_to_string(&requests));
}

#[test]
fn an_oauth_protected_sse_server_is_logged_in_to_and_called_with_its_grant_refreshed_after_a_401() {
    let dir = common::scratch().join("gateway-sse-oauth");
    let port = free_port();
    let idp = Idp::start(&format!("http://127.0.0.1:{port}/sse"), 60);
    let (_server, url) = protected_over(&idp, port, "sse");
    // With no credentials at all, its 401 is said as such.
    let bare = write_config(&dir.join("bare"), &json!({"mcpServers": {"vault": {"type": "sse", "url": url}}}));
    let (ok, report) = check(&bare);
    let reason = report["servers"][0]["reason"].as_str().unwrap_or_default();
    assert!(!ok && reason.contains("401 Unauthorized: give it credentials"), "{report}");
    let config = write_config(&dir, &json!({"mcpServers": {"vault": {"type": "sse", "url": url, "oauth": {}}}}));
    let state = dir.join("state");
    let (ok, printed, page) = log_in(&config, &state, "vault", "dana", None);
    assert!(ok, "{printed} {page}");
    let gateway = HttpGateway::start(&config, &state, &[]);
    gateway.wait_for_status("vault is up", Duration::from_secs(20));
    let whoami = || client_steps(&gateway.url(), "-", &json!([["call", "vault.whoami", {}]])).remove(0);
    let r = whoami();
    assert_eq!(r["is_error"], false, "{r}");
    let said: Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["subject"], "dana", "{r}");

    // An access token the server refuses (401) is refreshed once, and the call goes through.
    spoil_access_token(&state, "vault");
    let r = whoami();
    assert_eq!(r["is_error"], false, "{r}");
    assert_refreshed(&state, "vault");
}
