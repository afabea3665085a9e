//! `toolsearch serve`: an MCP client's view over stdio.

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// The sample index, built once per test binary.
fn index() -> &'static std::path::Path {
    static I: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    I.get_or_init(|| common::build(&common::sample_catalog(), "serve-sample"))
}

/// `toolsearch serve` over the sample index, its stdio piped.
fn spawn_server(extra_args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", index().to_str().unwrap()])
        .args(extra_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `toolsearch serve` over the sample index with `input` on stdin, all at once; the
/// messages it printed.
fn serve(extra_args: &[&str], input: &[u8]) -> Vec<Value> {
    let mut child = spawn_server(extra_args);
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON message per line"))
        .collect()
}

/// Runs `toolsearch serve` as a client would: each request is sent once the previous one is
/// answered (requests are handled concurrently, so order is only kept by waiting). Raw lines
/// go last, each waiting for the error it gets. Every message received, in order.
fn interactive(extra_args: &[&str], messages: &[Value], raw: &[&str]) -> Vec<Value> {
    use std::io::BufRead;
    let mut child = spawn_server(extra_args);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    let mut read_until = |seen: &mut Vec<Value>, done: &dyn Fn(&Value) -> bool| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended early: {seen:?}");
        let v: Value = serde_json::from_str(&line).expect("one JSON message per line");
        let stop = done(&v);
        seen.push(v);
        if stop {
            break;
        }
    };
    for m in messages {
        writeln!(stdin, "{m}").unwrap();
        match m.get("id").filter(|_| m.get("method").is_some()) {
            Some(id) if id.is_string() || id.is_u64() || id.is_i64() => {
                let id = id.clone();
                read_until(&mut seen, &|v| v["id"] == id && (v.get("result").is_some() || v.get("error").is_some()));
            }
            // Ids that cannot be echoed are answered with a null id.
            Some(_) => read_until(&mut seen, &|v| v.get("error").is_some() && v["id"].is_null()),
            None => {}
        }
    }
    for line in raw {
        writeln!(stdin, "{line}").unwrap();
        read_until(&mut seen, &|v| v.get("error").is_some() && v["id"].is_null());
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    seen
}

fn session(config: &Value, messages: &[Value], raw: &[&str]) -> Vec<Value> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let config_file = common::scratch().join(format!("serve-{}-{n}.json", std::process::id()));
    std::fs::write(&config_file, config.to_string()).unwrap();
    interactive(&["--config", config_file.to_str().unwrap()], messages, raw)
}

fn by_id(messages: &[Value], id: u64) -> &Value {
    messages.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no answer to {id}: {messages:?}"))
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
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
    // The unfold is announced with list_changed (before its answer), and the next list shows
    // the new tools.
    let pos2 = messages.iter().position(|m| m["id"] == 2).unwrap();
    let pos3 = messages.iter().position(|m| m["id"] == 3).unwrap();
    assert!(messages[pos2..pos3].iter().any(|m| m["method"] == "notifications/tools/list_changed"), "{messages:?}");
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
    let mut input = format!("{}\n", initialize(100)).into_bytes();
    input.extend(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\xff\xfe\"}\n");
    input.extend(format!("{}\n", json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).bytes());
    let messages = serve(&[], &input);
    let parse_error = messages.iter().find(|m| m["error"]["code"] == -32700).expect("a parse error");
    assert!(parse_error["error"]["message"].as_str().unwrap().contains("UTF-8"), "{messages:?}");
    assert!(by_id(&messages, 2)["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
}

/// The text of a tools/call answer.
fn text(messages: &[Value], id: u64) -> String {
    by_id(messages, id)["result"]["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn authorization_comes_before_availability() {
    // The github group is down; a caller without github scopes must not learn that its tools
    // exist: expanding or calling one answers exactly as for an id that does not exist.
    let config = json!({
        "scopes": ["mail:read"],
        "toolset": {"discovery": {"call_tool": true}},
        "checks": {"github_reachable": ["false"], "slack_connected": ["true"]},
        "executor": ["sh", "-c", "cat"]
    });
    let messages = session(
        &config,
        &[
            initialize(1),
            call(2, "expand_tool", json!({"tool_id": "github.create_pull_request"})),
            call(3, "expand_tool", json!({"tool_id": "github.no_such_tool"})),
            call(4, "call_tool", json!({"tool_id": "github.create_pull_request", "arguments": {}})),
            call(5, "call_tool", json!({"tool_id": "github.no_such_tool", "arguments": {}})),
            call(6, "create_pull_request", json!({})),
            call(7, "no_such_name", json!({})),
        ],
        &[],
    );
    for (hidden, missing) in [(2, 3), (4, 5)] {
        let (h, m) = (text(&messages, hidden), text(&messages, missing));
        assert!(h.contains("TOOL_NOT_FOUND") && !h.contains("UNAVAILABLE") && !h.contains("GITHUB"), "{h}");
        // The same answer as for a missing id (suggestions are drawn from visible tools like
        // the text asked, so they may differ; they never name a hidden tool).
        let (h, m): (Value, Value) = (serde_json::from_str(&h).unwrap(), serde_json::from_str(&m).unwrap());
        assert_eq!(h["code"], m["code"]);
        assert_eq!(
            h["message"].as_str().unwrap().replace("create_pull_request", "X"),
            m["message"].as_str().unwrap().replace("no_such_tool", "X")
        );
        assert!(!h["hints"].to_string().contains("github."), "{h}");
    }
    // The same answer for a hidden name as for a missing one, but for the closest tools the
    // caller may use, drawn like a search from visible tools for the name asked.
    let (h, m): (Value, Value) =
        (serde_json::from_str(&text(&messages, 6)).unwrap(), serde_json::from_str(&text(&messages, 7)).unwrap());
    assert!(!h["hints"].to_string().contains("github."), "{h}");
    let other_hints = |v: &Value| -> Vec<String> {
        let hints = v["hints"].as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_owned());
        hints.filter(|h| !h.starts_with("the closest tools you may use")).collect()
    };
    assert_eq!((&h["code"], other_hints(&h)), (&m["code"], other_hints(&m)));
    assert_eq!(
        h["message"].as_str().unwrap().replace("create_pull_request", "X"),
        m["message"].as_str().unwrap().replace("no_such_name", "X")
    );
}

#[test]
fn facades_of_categories_the_caller_cannot_see_are_not_shown() {
    // Coding/Git/GitHub holds only github tools: a caller without github scopes sees no
    // github_tools facade, in the instructions, in tools/list or when git_tools unfolds, and
    // never its usage notes.
    let config =
        json!({"scopes": ["mail:read"], "checks": {"github_reachable": ["true"], "slack_connected": ["true"]}});
    let messages = session(
        &config,
        &[
            initialize(1),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            call(3, "github_tools", json!({})),
            call(4, "no_such_facade", json!({})),
            call(5, "git_tools", json!({})),
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}),
        ],
        &[],
    );
    let all = serde_json::to_string(&messages).unwrap();
    assert!(!all.contains("owner/nam"), "usage notes leaked: {all}");
    for id in [2, 6] {
        let tools = by_id(&messages, id)["result"]["tools"].as_array().unwrap();
        assert!(!tools.iter().any(|t| t["name"] == "github_tools"), "{tools:?}");
    }
    assert!(!text(&messages, 5).contains("github_tools"), "{}", text(&messages, 5));
    let instructions = by_id(&messages, 1)["result"]["instructions"].as_str().unwrap();
    assert!(!instructions.contains("github"), "{instructions}");
    assert_eq!(text(&messages, 3).replace("github_tools", "X"), text(&messages, 4).replace("no_such_facade", "X"));
}

#[test]
fn json_rpc_requests_are_checked_as_the_specification_says() {
    let messages = session(
        &json!({}),
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            initialize(2),
            json!({"jsonrpc": "2.0", "id": 3, "method": 5}),
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": [1], "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": true, "method": "ping"}),
            json!({"jsonrpc": "1.0", "id": 4, "method": "ping"}),
            json!({"id": 5, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": "six", "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": "zzz"}}),
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}),
        ],
        &[r#"{"jsonrpc": "2.0", "id": 123456789012345678901234567890, "method": "ping"}"#],
    );
    assert_eq!(by_id(&messages, 1)["error"]["code"], -32600, "before initialize");
    assert!(by_id(&messages, 2)["result"].is_object());
    assert_eq!(by_id(&messages, 3)["error"]["code"], -32600, "a method that is not a string");
    assert_eq!(by_id(&messages, 4)["error"]["code"], -32600, "jsonrpc 1.0");
    assert_eq!(by_id(&messages, 5)["error"]["code"], -32600, "no jsonrpc");
    assert!(messages.iter().any(|m| m["id"] == "six" && m["result"].is_object()));
    // tools/list is one page: a cursor this server never gave is invalid params, as the
    // specification's pagination says.
    assert_eq!(by_id(&messages, 7)["error"]["code"], -32602, "{messages:?}");
    assert!(by_id(&messages, 8)["result"]["tools"].is_array(), "{messages:?}");
    // Ids that are objects, arrays, booleans or too big for 64 bits are refused with a null id,
    // never echoed.
    let null_id_errors = messages.iter().filter(|m| m["id"].is_null() && m["error"]["code"] == -32600).count();
    assert_eq!(null_id_errors, 4, "{messages:?}");
    assert!(!messages.iter().any(|m| m["id"].is_object() || m["id"].is_array() || m["id"].is_boolean()));
    assert!(!messages.iter().any(|m| m["id"].is_f64()));
}

#[test]
fn serve_says_when_it_trusts_its_client_and_a_config_can_close_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["serve", index().to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("trusted"), "{}", String::from_utf8_lossy(&out.stderr));
    let messages = session(
        &json!({"access": "closed"}),
        &[initialize(1), call(2, "expand_tool", json!({"tool_id": "github.create_pull_request"}))],
        &[],
    );
    assert!(text(&messages, 2).contains("TOOL_NOT_FOUND"), "{}", text(&messages, 2));
}

#[test]
fn a_call_without_an_executor_explains_what_to_configure() {
    let messages = session(
        &json!({"toolset": {"pinned": ["weather.current"]}}),
        &[initialize(1), call(2, "current", json!({"location": "Oslo"}))],
        &[],
    );
    let answer = by_id(&messages, 2);
    assert_eq!(answer["result"]["isError"], true);
    let t = text(&messages, 2);
    assert!(t.contains("NOT_CONFIGURED") && t.contains("executor") && !t.contains("set_executor"), "{t}");
}

#[test]
fn serve_answers_every_revision_it_names_session_free_2026_07_28_included() {
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let answer = serve(&[], format!("{init}\n").as_bytes());
        assert_eq!(answer[0]["result"]["protocolVersion"], version, "{answer:?}");
    }
    // Session-free: no `initialize`, the revision and capabilities in each request's `_meta`.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut input = Vec::new();
    for (id, method) in [(1, "tools/list"), (2, "server/discover")] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta}});
        input.extend(format!("{request}\n").bytes());
    }
    let answers = serve(&[], &input);
    let names: Vec<&str> =
        by_id(&answers, 1)["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"git_tools") && names.contains(&"search_tool_by_category"), "{names:?}");
    let discovered = by_id(&answers, 2).to_string();
    assert!(discovered.contains("2026-07-28"), "server/discover names the revision: {discovered}");
}
