//! `toolsearch serve`: an MCP client's view over stdio.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// The sample index, built once per test binary.
fn index() -> &'static std::path::Path {
    static I: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    I.get_or_init(|| common::build(&common::sample_catalog(), "serve-sample"))
}

/// Runs `toolsearch serve` over the sample index with `input` on stdin; the messages it printed.
fn serve(extra_args: &[&str], input: &[u8]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", index().to_str().unwrap()])
        .args(extra_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON message per line"))
        .collect()
}

fn session(config: &Value, messages: &[Value], raw: &[&str]) -> Vec<Value> {
    let config_file = common::scratch().join(format!("serve-{}.json", std::process::id()));
    std::fs::write(&config_file, config.to_string()).unwrap();
    let mut input = String::new();
    for m in messages {
        input.push_str(&format!("{m}\n"));
    }
    for line in raw {
        input.push_str(&format!("{line}\n"));
    }
    serve(&["--config", config_file.to_str().unwrap()], input.as_bytes())
}

fn by_id(messages: &[Value], id: u64) -> &Value {
    messages.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no answer to {id}: {messages:?}"))
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[test]
fn an_mcp_client_sees_the_tool_set_unfold_and_is_told_when_it_changes() {
    let config = json!({
        "toolset": {"pinned": ["weather.current"]},
        "checks": {"github_reachable": ["false"], "slack_connected": ["true"]},
        "executor": ["sh", "-c", "cat"]
    });
    let messages = session(
        &config,
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            call(3, "git_tools", json!({})),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
            call(5, "github_tools", json!({})),
            call(6, "current", json!({"location": "Oslo"})),
            call(7, "current", json!({"location": 5})),
            json!({"jsonrpc": "2.0", "id": 8, "method": "resources/list"}),
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}}),
        ],
        &["this is not json"],
    );
    let init = &by_id(&messages, 1)["result"];
    assert_eq!(init["protocolVersion"], "2025-03-26");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    assert!(init["instructions"].as_str().unwrap().contains("expand_tool"));
    let names = |m: &Value| -> Vec<String> {
        m["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let first = names(by_id(&messages, 2));
    assert!(first.contains(&"git_tools".to_owned()) && !first.contains(&"commit".to_owned()));
    assert!(by_id(&messages, 2)["result"]["tools"][0]["inputSchema"]["type"] == "object");
    // The unfold answer is followed by list_changed, and the next list shows the new tools.
    let pos3 = messages.iter().position(|m| m["id"] == 3).unwrap();
    assert_eq!(messages[pos3 + 1]["method"], "notifications/tools/list_changed");
    let second = names(by_id(&messages, 4));
    assert!(second.contains(&"commit".to_owned()) && !second.contains(&"git_tools".to_owned()));
    // The github check command fails: its tools stay hidden, and the unfold says why.
    let unfolded = by_id(&messages, 5)["result"]["content"][0]["text"].as_str().unwrap();
    assert!(unfolded.contains("Hidden for now") && unfolded.contains("GITHUB_TOKEN"), "{unfolded}");
    // The executor command gets the call; bad arguments never reach it.
    let ran = by_id(&messages, 6)["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(ran).unwrap()["arguments"]["location"], "Oslo");
    assert_eq!(by_id(&messages, 7)["result"]["isError"], true);
    assert_eq!(by_id(&messages, 8)["error"]["code"], -32601);
    assert_eq!(by_id(&messages, 9)["error"]["code"], -32602);
    assert!(messages.iter().any(|m| m["error"]["code"] == -32700 && m["id"].is_null()));
}

#[test]
fn a_bad_config_names_the_file() {
    let index = index();
    let file = common::scratch().join("bad-serve.json");
    std::fs::write(&file, r#"{"toolset": {"pinned": ["no.such.tool"]}}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", index.to_str().unwrap(), "--config", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no.such.tool"));
    std::fs::write(&file, r#"{"toolsets": {}}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", index.to_str().unwrap(), "--config", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-serve.json") && err.contains("toolsets"), "{err}");
}

#[test]
fn bytes_that_are_not_utf8_get_an_error_and_the_session_goes_on() {
    let mut input = b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\xff\xfe\"}\n".to_vec();
    input.extend(format!("{}\n", json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).bytes());
    let messages = serve(&[], &input);
    assert_eq!(messages[0]["error"]["code"], -32700, "{messages:?}");
    assert!(messages[0]["error"]["message"].as_str().unwrap().contains("UTF-8"));
    assert!(by_id(&messages, 2)["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
}
