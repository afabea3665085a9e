//! Bounded work per request (issue #60, T3): a client that sends huge unknown ids to
//! `expand_tool`, `call_tool` or as a tool's name gets its refusal at once, short, with no
//! suggestions computed over the whole id, so no such request holds the serving thread.

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::gateway::{http_post, listen_session_free, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

/// An `initialize` request, as a raw client sends it.
const INIT: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

const MODERN: &str = "2026-07-28";

fn message(body: &str) -> Value {
    let (start, end) = (body.find('{').unwrap_or(0), body.rfind('}').map_or(0, |e| e + 1));
    serde_json::from_str(&body[start..end]).unwrap_or_else(|e| panic!("{e}: {}", &body[..body.len().min(500)]))
}

/// A session-free `tools/call` of `name` with `arguments`: the answer and how long it took.
fn call(addr: &str, name: &str, arguments: Value) -> (Value, Duration) {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments, "_meta": meta}});
    let started = Instant::now();
    let (status, text) = http_post(
        addr,
        &body.to_string(),
        &[("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", name)],
    );
    let took = started.elapsed();
    assert_eq!(status, 200, "{}", &text[..text.len().min(500)]);
    (message(&text), took)
}

#[test]
fn huge_unknown_ids_are_refused_at_once_with_a_short_answer() {
    let dir = common::scratch().join("gateway-bounds");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let huge = "everything.ech".repeat(150_000); // 2.1 MB
                                                 // A name travels in a header too (`Mcp-Name`), which HTTP bounds: 28 KB.
    let long_name = "everything__ech".repeat(2_000);
    let cases = [
        ("expand_tool", json!({"tool_id": huge})),
        ("call_tool", json!({"tool_id": huge, "arguments": {}})),
        (long_name.as_str(), json!({})),
    ];
    for (name, arguments) in cases {
        let what = &name[..name.len().min(20)];
        let (answer, took) = call(&gateway.addr, name, arguments);
        let text = answer.to_string();
        // "At once": work that grew with the square of the id (a suggestion's edit distance)
        // would take minutes at these sizes; 2 s leaves room for a loaded 2-core machine, where
        // the 30 KB name once took 611 ms with other tests running.
        assert!(took < Duration::from_secs(2), "{what}: {took:?}");
        assert!(text.len() < 4096, "{what}: a {} byte answer", text.len());
        assert!(answer["result"]["isError"] == json!(true), "{what}: {text}");
        assert!(text.contains("bytes)"), "{what}: the id is quoted short: {text}");
    }
    // A short mistyped id still gets its suggestion.
    let (answer, _) = call(&gateway.addr, "expand_tool", json!({"tool_id": "everything.ehco"}));
    assert!(answer.to_string().contains("everything.echo"), "{answer}");
    // And a padded id runs the tool it names.
    let (answer, _) =
        call(&gateway.addr, "call_tool", json!({"tool_id": " everything.echo ", "arguments": {"message": "hi"}}));
    assert!(answer["result"]["isError"] != json!(true) && answer.to_string().contains("hi"), "{answer}");
}

/// #60 T11: `subscriptions/listen` streams count in the per-token and total caps, as sessions
/// do: one token cannot open streams without end (each a task and a file descriptor).
#[test]
fn listen_streams_count_in_the_per_token_cap() {
    let dir = common::scratch().join("gateway-bounds-listen");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": {"tokens": {"a": [], "b": []}, "limits": {"http": {"max_sessions_per_token": 3}}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let held: Vec<(u16, std::net::TcpStream)> = (0..3).map(|_| listen_session_free(&gateway.addr, "a", &[])).collect();
    assert_eq!(held.iter().map(|h| h.0).collect::<Vec<_>>(), [200, 200, 200]);
    assert_eq!(listen_session_free(&gateway.addr, "a", &[]).0, 429, "a fourth stream of one token is refused");
    assert_eq!(http_post(&gateway.addr, INIT, &[("Authorization", "Bearer a")]).0, 429, "and so is a session");
    assert_eq!(listen_session_free(&gateway.addr, "b", &[]).0, 200, "another token still gets in");
}

/// #61: one token never holds more than half of `max_sessions`, whatever its own cap says:
/// with `max_sessions` 4 and a per-token cap of 32, its third session is refused (429) and
/// another token still opens two.
#[test]
fn one_token_never_takes_more_than_half_the_sessions() {
    let dir = common::scratch().join("gateway-bounds-half");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": {"tokens": {"a": [], "b": []},
                               "limits": {"http": {"max_sessions": 4, "max_sessions_per_token": 32}}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let open = |token: &str| http_post(&gateway.addr, INIT, &[("Authorization", &format!("Bearer {token}"))]).0;
    assert_eq!([open("a"), open("a"), open("a")], [200, 200, 429], "a third session of one token is refused");
    assert_eq!([open("b"), open("b")], [200, 200], "the other half stays for another token");
    assert_eq!(open("b"), 503, "then every place is taken");
}

fn raw(addr: &str, method: &str, body: &str, headers: &[(&str, &str)]) -> (String, std::net::TcpStream) {
    common::gateway::http_open(addr, method, body, headers, Duration::from_secs(1))
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 =
        status.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

/// #60 T8: a client that asks for every log message of a server sending 256 KB ones and never
/// reads its stream costs the gateway a bounded amount of memory, does not hold up another
/// client's messages, and has its session closed.
#[test]
fn a_client_that_never_reads_its_stream_is_not_queued_for() {
    let dir = common::scratch().join("gateway-bounds-unread");
    let loud = json!([common::repo().join("tests/mcp/hostile_server.py"), "loud"]);
    let config = write_config(&dir, &json!({"mcpServers": {"loud": {"command": common::python(), "args": loud}}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let before = rss_mb(gateway.pid());
    let (head, _init) = raw(&gateway.addr, "POST", INIT, &[]);
    let session = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|v| v.trim().to_owned()))
        .unwrap_or_else(|| panic!("{head}"));
    let hs = [("Mcp-Session-Id", session.as_str()), ("Mcp-Protocol-Version", "2025-06-18")];
    raw(&gateway.addr, "POST", &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(), &hs);
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}});
    raw(&gateway.addr, "POST", &level.to_string(), &hs);
    // The stream it never reads.
    let (_, _stream) = raw(&gateway.addr, "GET", "", &hs);
    std::thread::sleep(Duration::from_secs(8));
    // Another client still gets messages, and the gateway's memory stayed bounded.
    let out = common::gateway::client_mode_steps(
        "legacy",
        &gateway.url(),
        "-",
        &json!([["set_level", "debug"], ["logs", 2]]),
    );
    let seen: Value = serde_json::from_str(out[1]["text"].as_str().unwrap()).unwrap();
    assert!(!seen.as_array().unwrap().is_empty(), "{out:?}");
    let after = rss_mb(gateway.pid());
    assert!(after - before < 60.0, "RSS {before:.0} MB -> {after:.0} MB");
    // Its session was closed: the stream it never read ended, and the session is gone.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
    let (answer, _) = raw(&gateway.addr, "POST", &ping, &hs);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    eprintln!("RSS {before:.0} MB before, {after:.0} MB after the unread stream was closed");
}
