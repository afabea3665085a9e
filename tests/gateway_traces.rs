//! OpenTelemetry traces (issue #62, item 6): with `toolsearch.telemetry`, a client's call is a
//! server span that continues the `traceparent` of its `_meta`, with a call span inside it and
//! a client span for the upstream request, whose `traceparent` reaches the upstream; exported
//! over OTLP/HTTP to a receiver that decodes with the OpenTelemetry project's own protobufs.

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::gateway::{free_port, http_post, message, HttpGateway, Killed};
use common::write_config;
use serde_json::{json, Value};

const MODERN: &str = "2026-07-28";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

#[test]
fn a_call_is_traced_from_the_clients_traceparent_to_the_upstream() {
    let dir = common::scratch().join("gateway-traces");
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let spans = dir.join("spans.jsonl");
    let mut receiver = std::process::Command::new(common::python())
        .arg(common::repo().join("tests/mcp/otlp_receiver.py"))
        .args([&port.to_string(), spans.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(receiver.stdout.take().unwrap()), &mut line).unwrap();
    let _receiver = Killed(receiver);
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
    let read = || -> Vec<Value> {
        std::fs::read_to_string(&spans).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
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
