//! Operating the gateway: health and readiness, Prometheus metrics read by the Prometheus
//! client's own parser, request ids from the log through to the upstream, and the audit trail
//! on disk that `toolsearch learn` learns from. The official Python MCP client drives it, in
//! front of a server written with the Python SDK and the npm reference server.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Duration;

use common::gateway::{client_steps, echo_session_free, http_get, reference_server, sample, scrape, HttpGateway};
use common::{python, write_config};
use serde_json::{json, Value};

fn trace_server() -> std::path::PathBuf {
    common::repo().join("tests/mcp/trace_server.py")
}

#[test]
fn health_readiness_metrics_request_ids_and_the_trail_serve_an_operator() {
    let dir = common::scratch().join("gateway-ops");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {
                "trace": {"command": python(), "args": [trace_server()]},
                "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}
            },
            "toolsearch": {"tokens": {
                "agent-secret": {"name": "agent", "scopes": []},
                "prom-secret": {"name": "prometheus", "scopes": ["ops"]}
            }}
        }),
    );
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let steps = json!([
        ["search_tool_by_category", {"query": "show the metadata a request carried"}],
        ["expand_tool", {"tool_id": "trace.request_meta"}],
        ["call", "trace.request_meta", {}],
        ["call", "everything.echo", {"message": "hello"}],
        ["call", "everything.get-sum", {"a": "one", "b": 2}]
    ]);
    let out = client_steps(&gateway.url(), "agent-secret", &steps);
    assert!(out[0]["text"].as_str().unwrap().contains("trace.request_meta"), "{out:?}");

    // The request id the upstream saw is the one the gateway logged for that call.
    let seen: Value = serde_json::from_str(out[2]["text"].as_str().unwrap()).unwrap();
    let id = seen["meta"]["io.toolsearch/requestId"].as_str().expect("the upstream got a request id").to_owned();
    let line = gateway.wait_for_status(&format!("\"request_id\":\"{id}\""), Duration::from_secs(10));
    let logged: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(logged["event"], "request");
    assert_eq!((logged["tool"].as_str(), logged["upstream"].as_str()), (Some("trace.request_meta"), Some("trace")));
    assert_eq!((logged["outcome"].as_str(), logged["token"].as_str()), (Some("ok"), Some("agent")));
    assert!(!line.contains("agent-secret"), "a token never reaches the log: {line}");

    // Liveness for anyone; readiness details and metrics for an operator's token only.
    assert_eq!(http_get(&gateway.addr, "/healthz", &[]), (200, "ok\n".to_owned()));
    let (status, body) = http_get(&gateway.addr, "/readyz", &[]);
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()), (200, json!({"ready": true})));
    let (_, body) = http_get(&gateway.addr, "/readyz", &[("Authorization", "Bearer agent-secret")]);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"ready": true}), "no upstream names for a client");
    let (status, body) = http_get(&gateway.addr, "/readyz", &[("Authorization", "Bearer prom-secret")]);
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 200, "{ready}");
    assert_eq!(
        (ready["upstreams"]["trace"]["state"].as_str(), ready["upstreams"]["trace"]["tools"].as_u64()),
        (Some("up"), Some(2))
    );
    assert_eq!(ready["upstreams"]["everything"]["state"], "up", "{ready}");
    assert!(ready["tools"].as_u64().unwrap() > 2, "{ready}");
    assert_eq!(http_get(&gateway.addr, "/metrics", &[]).0, 401);
    assert_eq!(http_get(&gateway.addr, "/metrics", &[("Authorization", "Bearer agent-secret")]).0, 401);
    assert_eq!(http_get(&gateway.addr, "/metrics", &[("Origin", "http://evil.example")]).0, 403);

    let m = scrape(&format!("http://{}/metrics", gateway.addr), Some("prom-secret"));
    assert!(m["content_type"].as_str().unwrap().starts_with("application/openmetrics-text"), "{m}");
    let ok = [("method", "tools/call"), ("outcome", "ok")];
    assert_eq!(sample(&m, "toolsearch_requests_total", &[ok[0], ok[1], ("upstream", "trace")]), Some(1.0), "{m}");
    assert_eq!(sample(&m, "toolsearch_requests_total", &[ok[0], ok[1], ("upstream", "everything")]), Some(1.0), "{m}");
    // get-sum with a string for a number: refused by the gateway before it reaches the server.
    let refused = [ok[0], ("outcome", "refused"), ("upstream", "toolsearch")];
    assert!(sample(&m, "toolsearch_requests_total", &refused).unwrap_or(0.0) >= 1.0, "{m}");
    let count = sample(&m, "toolsearch_request_duration_seconds_count", &[ok[0], ok[1], ("upstream", "trace")]);
    assert_eq!(count, Some(1.0), "{m}");
    assert_eq!(sample(&m, "toolsearch_search_duration_seconds_count", &[]), Some(1.0), "{m}");
    assert_eq!(sample(&m, "toolsearch_upstream_up", &[("upstream", "trace")]), Some(1.0), "{m}");
    assert_eq!(sample(&m, "toolsearch_index_tools", &[]), ready["tools"].as_f64(), "{m}");

    // #60 T12: a credential in a query, and a refused call naming a huge id.
    let more = json!([
        ["search_tool_by_category", {"query": "echo back my key sk_live_4eC39HqLyjWDarjtT1zdp7dc please"}],
        ["call", "x".repeat(100_000), {}]
    ]);
    client_steps(&gateway.url(), "agent-secret", &more);

    // The trail on disk: private, one line per step, with the token's name and no values.
    let trail = std::fs::read_to_string(state.join("audit/trail.jsonl")).unwrap();
    let lines: Vec<Value> = trail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let call = lines.iter().find(|l| l["event"] == "call" && l["tool_id"] == "everything.echo").expect("the call");
    assert_eq!((call["token"].as_str(), call["outcome"].as_str()), (Some("agent"), Some("ok")), "{call}");
    assert_eq!((call["arguments"].clone(), call["argument_names"].clone()), (Value::Null, json!(["message"])));
    assert!(call["latency_ms"].as_f64().is_some() && call["request_id"].is_string(), "{call}");
    assert!(lines.iter().any(|l| l["event"] == "search" && l["token"] == "agent"), "{trail}");
    assert!(!trail.contains("hello") && !trail.contains("secret"), "no argument values, no tokens: {trail}");
    // The trail's query text goes through the operator log's masker; ids are cut.
    assert!(trail.contains("echo back my key sk_live_***") && !trail.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{trail}");
    assert!(
        trail.lines().all(|l| l.len() < 4096),
        "a line of {} bytes",
        trail.lines().map(str::len).max().unwrap_or(0)
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(state.join("audit/trail.jsonl")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// Queries in a deployment's own words, and the tool each means there.
fn jargon() -> Vec<(String, &'static str, Value)> {
    let mut out = Vec::new();
    let things = [
        "the launch",
        "invoices",
        "the offsite",
        "hiring",
        "the roadmap",
        "quarterly numbers",
        "the migration",
        "customer calls",
        "the budget",
        "onboarding",
        "the audit",
        "support tickets",
        "the release",
        "travel",
        "the demo",
        "vendor contracts",
        "security review",
        "the newsletter",
        "backups",
        "the retro",
    ];
    for (i, t) in things.iter().enumerate() {
        out.push((format!("bump the scoreboard for {t}"), "trace.tally", json!({"name": t})));
        out.push((format!("say back to me what I wrote about {t}"), "everything.echo", json!({"message": t})));
        out.push((format!("crunch {i} with {} for {t}", i + 3), "everything.get-sum", json!({"a": i, "b": i + 3})));
    }
    out
}

#[test]
fn toolsearch_learn_learns_from_the_gateway_trail() {
    let dir = common::scratch().join("gateway-learn");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {
            "trace": {"command": python(), "args": [trace_server()]},
            "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}
        }}),
    );
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &[]);
    // Two clients at once, each searching, expanding and calling in its own session.
    let all = jargon();
    let (a, b): (Vec<_>, Vec<_>) = all.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let run = |part: Vec<(usize, &(String, &str, Value))>| {
        let steps: Vec<Value> = part
            .iter()
            .flat_map(|(_, (q, tool, args))| {
                [
                    json!(["search_tool_by_category", {"query": q}]),
                    json!(["expand_tool", {"tool_id": tool}]),
                    json!(["call", tool, args]),
                ]
            })
            .collect();
        let url = gateway.url();
        std::thread::spawn(move || client_steps(&url, "-", &Value::Array(steps)))
    };
    let (ra, rb) = (run(a), run(b));
    // Every call succeeds (a search may find nothing: the stock ranking does not know these
    // words, which is what learning is for).
    for r in [ra.join().unwrap(), rb.join().unwrap()].iter().flat_map(|r| r.iter().skip(2).step_by(3)) {
        assert!(!r["is_error"].as_bool().unwrap(), "{r}");
    }
    drop(gateway);

    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["--json", "learn"])
        .arg(state.join("index"))
        .arg(state.join("audit"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["labels"].as_u64(), Some(all.len() as u64), "every search-expand-call is a label: {report}");
    assert!(out.status.success(), "learn stored an adapter: {report} {}", String::from_utf8_lossy(&out.stderr));
    assert!(report["ndcg_after"].as_f64() > report["ndcg_before"].as_f64(), "{report}");
}

/// The trail's `arguments` edited in a running gateway's config applies to the next call
/// written, without a restart: argument names only before, values after.
#[test]
fn the_trails_settings_edited_in_the_config_apply_to_the_next_call() {
    let dir = common::scratch().join("gateway-trail-reload");
    let settings = |arguments: bool| {
        json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
               "toolsearch": {"tokens": {"token-a": []}, "audit": {"arguments": arguments}}})
    };
    let config = write_config(&dir, &settings(false));
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let calls = |n: usize| trail_calls(&state, n);
    assert_eq!(echo_session_free(&gateway.addr, "token-a").0, 200);
    let before = calls(1);
    assert!(before[0]["arguments"].is_null() && before[0]["argument_names"] == json!(["message"]), "{before:?}");

    write_config(&dir, &settings(true));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    assert_eq!(echo_session_free(&gateway.addr, "token-a").0, 200);
    let after = calls(2);
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(after[1]["arguments"], json!({"message": "hi"}), "{after:?}");
    let asked: Vec<String> =
        gateway.status.lock().unwrap().iter().filter(|l| l.contains("config_restart_needed")).cloned().collect();
    assert!(asked.is_empty(), "no restart asked: {asked:?}");
}

/// The calls the trail under `state` holds, once it holds `n` (or after 20 s).
fn trail_calls(state: &std::path::Path, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let trail = std::fs::read_to_string(state.join("audit/trail.jsonl")).unwrap_or_default();
        let calls: Vec<Value> =
            trail.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|l| l["event"] == "call").collect();
        if calls.len() >= n || std::time::Instant::now() > deadline {
            return calls;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `audit.enabled` edited in a running gateway's config applies to the next call, without a
/// restart. Off: nothing is written (not even its directory), and learning, which reads the
/// trail, says it is off. On: the next call is written and learning is on. Off again: the
/// calls after it are not written.
#[test]
fn the_trail_turned_on_and_off_in_the_config_applies_to_the_next_call() {
    let dir = common::scratch().join("gateway-trail-on-off");
    let settings = |enabled: bool| {
        json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
               "toolsearch": {"tokens": {"token-a": []}, "audit": {"enabled": enabled}, "learn": {"from": ["*"]}}})
    };
    let config = write_config(&dir, &settings(false));
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let off = gateway.wait_for_status("\"event\":\"learn_off\"", Duration::from_secs(10));
    assert!(off.contains("audit.enabled is false"), "{off}");
    assert_eq!(echo_session_free(&gateway.addr, "token-a").0, 200);
    std::thread::sleep(Duration::from_secs(1));
    assert!(!state.join("audit").exists(), "nothing is written while the trail is off");

    write_config(&dir, &settings(true));
    gateway.wait_for_status("\"event\":\"learn_on\"", Duration::from_secs(60));
    assert_eq!(echo_session_free(&gateway.addr, "token-a").0, 200);
    assert_eq!(trail_calls(&state, 1).len(), 1, "the call after the edit is written");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(state.join("audit")).unwrap().permissions().mode() & 0o777, 0o700);

    write_config(&dir, &settings(false));
    gateway.wait_for_statuses("\"event\":\"learn_off\"", 2, Duration::from_secs(60));
    assert_eq!(echo_session_free(&gateway.addr, "token-a").0, 200);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(trail_calls(&state, 0).len(), 1, "nothing after the trail is off again");
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed") && !status.contains("config_error"), "{status}");
}
