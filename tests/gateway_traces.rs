//! OpenTelemetry traces (issue #62, item 6): with `toolsearch.telemetry`, a client's call is a
//! server span that continues the `traceparent` of its `_meta`, with a call span inside it and
//! a client span for the upstream request, whose `traceparent` reaches the upstream; exported
//! over OTLP/HTTP to a receiver that decodes with the OpenTelemetry project's own protobufs.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::gateway::{free_port, http_post, message, HttpGateway, Killed};
use common::write_config;
use serde_json::{json, Value};

const MODERN: &str = "2026-07-28";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// An OTLP receiver on a free port writing `DIR/NAME.jsonl`, ready: it, its port, its file.
fn receiver(dir: &Path, name: &str) -> (Killed, u16, PathBuf) {
    let port = free_port();
    let spans = dir.join(format!("{name}.jsonl"));
    let mut receiver = std::process::Command::new(common::python())
        .arg(common::repo().join("tests/mcp/otlp_receiver.py"))
        .args([&port.to_string(), spans.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(receiver.stdout.take().unwrap()), &mut line).unwrap();
    (Killed(receiver), port, spans)
}

/// The spans `file` holds.
fn spans_in(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_call_is_traced_from_the_clients_traceparent_to_the_upstream() {
    let dir = common::scratch().join("gateway-traces");
    std::fs::create_dir_all(&dir).unwrap();
    let (_receiver, port, spans) = receiver(&dir, "spans");
    let trace_server = common::repo().join("tests/mcp/trace_server.py");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"trace": {"command": common::python(), "args": [trace_server]}},
                "toolsearch": {"telemetry": {"otlp_endpoint": format!("http://127.0.0.1:{port}"), "service_name": "gw-test"}}}),
    );
    let gateway = HttpGateway::start_env(&config, &dir.join("state"), &[], &[("OTEL_BSP_SCHEDULE_DELAY", "100")]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "traceparent": format!("00-{TRACE}-{PARENT}-01")});
    // A search and an expand first, in the same trace (#62: the three arrive as one trace).
    for (id, tool, arguments) in [
        (1, "search_tool_by_category", json!({"query": "what metadata did the request carry"})),
        (2, "expand_tool", json!({"tool_id": "trace.request_meta"})),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments, "_meta": meta}});
        let headers = [("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)];
        let (status, text) = http_post(&gateway.addr, &body.to_string(), &headers);
        assert_eq!(status, 200, "{text}");
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "call_tool", "arguments": {"tool_id": "trace.request_meta", "arguments": {}}, "_meta": meta}});
    let (status, text) = http_post(
        &gateway.addr,
        &body.to_string(),
        &[("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "call_tool")],
    );
    assert_eq!(status, 200, "{text}");
    let answer = message(&text);
    let said = answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();

    // The spans arrive at the receiver, all in the client's trace.
    let deadline = Instant::now() + Duration::from_secs(15);
    let read = || spans_in(&spans);
    while read().len() < 7 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = read();
    let find =
        |kind: i64| got.iter().find(|s| s["kind"] == kind).unwrap_or_else(|| panic!("no span of kind {kind}: {got:?}"));
    let named = |name: &str| got.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no {name}: {got:?}"));
    let (search, expand) = (named("search"), named("expand"));
    assert_eq!(
        (&search["attributes"]["gen_ai.operation.name"], &expand["attributes"]["gen_ai.operation.name"]),
        (&json!("search"), &json!("expand"))
    );
    let server = got
        .iter()
        .find(|s| s["kind"] == 2 && s["attributes"]["gen_ai.tool.name"] == "call_tool")
        .unwrap_or_else(|| panic!("{got:?}"));
    let client = find(3);
    let call = named("call");
    for s in [search, expand, server, call, client] {
        assert_eq!(s["trace_id"], TRACE, "{s}");
        assert_eq!(s["service"], "gw-test", "{s}");
    }
    assert_eq!(server["parent_span_id"], PARENT, "the client's span is the parent: {server}");
    assert_eq!(call["parent_span_id"], server["span_id"], "{call}");
    assert_eq!(client["parent_span_id"], call["span_id"], "{client}");
    let attrs = &server["attributes"];
    assert_eq!(
        (&attrs["mcp.method.name"], &attrs["gen_ai.operation.name"]),
        (&json!("tools/call"), &json!("execute_tool"))
    );
    assert_eq!(attrs["gen_ai.tool.name"], "call_tool", "{server}");
    assert!(attrs.get("gen_ai.tool.call.arguments").is_none(), "arguments are not recorded unless asked: {server}");
    assert_eq!(client["attributes"]["server.name"], "trace", "{client}");
    // The upstream got the gateway's traceparent: this trace, the client span as parent.
    let client_span = client["span_id"].as_str().unwrap();
    assert!(said.contains(&format!("00-{TRACE}-{client_span}-01")), "{said}");
    drop(gateway);
}

/// `toolsearch.telemetry` edited while the gateway runs applies from the next span, with no
/// restart: added, calls are traced to its endpoint (arguments recorded, as it asks); moved to
/// another endpoint and service name, the next calls go there and no longer to the first;
/// removed, nothing more is exported.
#[test]
fn telemetry_edited_in_the_config_applies_to_the_next_call() {
    let dir = common::scratch().join("gateway-traces-live");
    std::fs::create_dir_all(&dir).unwrap();
    let (_a, port_a, spans_a) = receiver(&dir, "a");
    let (_b, port_b, spans_b) = receiver(&dir, "b");
    let trace_server = common::repo().join("tests/mcp/trace_server.py");
    let write = |telemetry: Option<Value>| {
        let mut settings = json!({});
        if let Some(t) = telemetry {
            settings["telemetry"] = t;
        }
        write_config(
            &dir,
            &json!({"mcpServers": {"trace": {"command": common::python(), "args": [trace_server]}},
                    "toolsearch": settings}),
        )
    };
    let config = write(None);
    let gateway = HttpGateway::start_env(&config, &dir.join("state"), &[], &[("OTEL_BSP_SCHEDULE_DELAY", "100")]);
    gateway.wait_for_status("trace is up", Duration::from_secs(20));
    let call = |n: u64| {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                          "params": {"name": "call_tool",
                                     "arguments": {"tool_id": "trace.request_meta", "arguments": {"n": n}},
                                     "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                               "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                                               "io.modelcontextprotocol/clientCapabilities": {}}}});
        let headers = [("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "call_tool")];
        let (status, text) = http_post(&gateway.addr, &body.to_string(), &headers);
        assert_eq!(status, 200, "{text}");
    };
    // The server spans of `call_tool` in `file`, once `want` have arrived (or 10 s passed).
    let served = |file: &Path, want: usize| -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found: Vec<Value> = spans_in(file)
                .into_iter()
                .filter(|s| s["kind"] == 2 && s["attributes"]["gen_ai.tool.name"] == "call_tool")
                .collect();
            if found.len() >= want || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // What `file` holds after a wait longer than the batch delay (100 ms) many times over.
    let settled = |file: &Path| {
        std::thread::sleep(Duration::from_millis(1500));
        served(file, 0)
    };
    let reloads = |n: usize| gateway.wait_for_statuses("config_reloaded", n, Duration::from_secs(60));

    call(1);
    assert!(settled(&spans_a).is_empty() && settled(&spans_b).is_empty(), "traced before telemetry was set");

    write(Some(json!({"otlp_endpoint": format!("http://127.0.0.1:{port_a}"), "service_name": "gw-a",
                      "record_arguments": true})));
    reloads(1);
    call(2);
    let got = served(&spans_a, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["service"], "gw-a");
    let recorded = got[0]["attributes"]["gen_ai.tool.call.arguments"].as_str().unwrap_or_default();
    assert!(recorded.contains("\"n\":2"), "the arguments, as record_arguments asks: {}", got[0]);

    write(Some(json!({"otlp_endpoint": format!("http://127.0.0.1:{port_b}"), "service_name": "gw-b"})));
    reloads(2);
    call(3);
    let got = served(&spans_b, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["service"], "gw-b");
    assert!(got[0]["attributes"].get("gen_ai.tool.call.arguments").is_none(), "{}", got[0]);
    assert_eq!(settled(&spans_a).len(), 1, "the first endpoint still got spans");

    write(None);
    reloads(3);
    call(4);
    assert_eq!(settled(&spans_b).len(), 1, "spans exported after telemetry was removed");

    // A plain-http endpoint elsewhere than loopback is refused at reload, the running traces kept.
    write(Some(json!({"otlp_endpoint": "http://collector.example:4318"})));
    let error = gateway.wait_for_status("config_error", Duration::from_secs(60));
    assert!(error.contains("toolsearch.telemetry.otlp_endpoint"), "{error}");
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed"), "{status}");
}
