//! Rate limits (issue #62, item 5, with the local backend): a caller over its budget of calls
//! of a tool gets a JSON-RPC error carrying `retryAfterSeconds`, one over its HTTP request
//! budget gets 429 with `Retry-After`; each caller (token) has its own budget, and opening a
//! new session does not reset it. An edit to the limits applies to the next call, without a
//! restart.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{echo_session_free, http_post, message, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

const INIT: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

/// A session-free `call_tool` of `everything.echo` by `token`: the JSON-RPC answer.
fn echo(addr: &str, token: &str) -> Value {
    let (status, text) = echo_session_free(addr, token);
    assert_eq!(status, 200, "{text}");
    message(&text)
}

fn config(dir: &std::path::Path, limits: Value) -> std::path::PathBuf {
    write_config(
        dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": {"tokens": {"token-a": [], "token-b": []}, "rate_limits": limits}}),
    )
}

#[test]
fn a_caller_over_its_tool_budget_is_told_when_to_retry_and_others_are_not_affected() {
    let dir = common::scratch().join("gateway-rate-calls");
    let limits = json!({"calls_per_principal": {"per_minute": 600, "burst": 100},
                        "tools": {"everything.echo": {"per_minute": 6, "burst": 2}}});
    let gateway = HttpGateway::start(&config(&dir, limits), &dir.join("state"), &[]);
    for _ in 0..2 {
        let ok = echo(&gateway.addr, "token-a");
        assert!(ok["result"].is_object(), "{ok}");
    }
    let refused = echo(&gateway.addr, "token-a");
    assert_eq!(refused["error"]["code"], -32029, "{refused}");
    assert_eq!(refused["error"]["data"]["code"], "RATE_LIMITED", "{refused}");
    let wait = refused["error"]["data"]["retryAfterSeconds"].as_u64().unwrap();
    assert!((1..=10).contains(&wait), "{refused}");
    // Another token has its own budget.
    assert!(echo(&gateway.addr, "token-b")["result"].is_object());
    // A session of token a, newly initialized, is still over the budget.
    let (status, text) = http_post(&gateway.addr, INIT, &[("Authorization", "Bearer token-a")]);
    assert_eq!(status, 200, "{text}");
    assert_eq!(echo(&gateway.addr, "token-a")["error"]["code"], -32029);
}

#[test]
fn a_caller_over_its_request_budget_gets_429_with_retry_after() {
    let dir = common::scratch().join("gateway-rate-requests");
    // One request per 10 s after the burst: a slow machine cannot refill a token mid-test.
    let limits = json!({"requests_per_principal": {"per_minute": 6, "burst": 5}});
    let gateway = HttpGateway::start(&config(&dir, limits), &dir.join("state"), &[]);
    for i in 0..5 {
        let (status, text) = http_post(&gateway.addr, INIT, &[("Authorization", "Bearer token-a")]);
        assert_eq!(status, 200, "request {i}: {text}");
    }
    let (addr, init) = (gateway.addr.clone(), INIT);
    let (head, _conn) = common::gateway::http_open(
        &addr,
        "POST",
        init,
        &[("Authorization", "Bearer token-a"), ("Connection", "close")],
        std::time::Duration::from_secs(5),
    );
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    let retry = head.to_ascii_lowercase().lines().find_map(|l| l.strip_prefix("retry-after: ").map(str::to_owned));
    let retry: u64 = retry.unwrap_or_else(|| panic!("no Retry-After: {head}")).trim().parse().unwrap();
    assert!((1..=10).contains(&retry), "{head}");
    let (status, _) = http_post(&gateway.addr, INIT, &[("Authorization", "Bearer token-b")]);
    assert_eq!(status, 200, "another token is not limited by a's requests");
}

#[test]
fn limits_changed_in_the_config_apply_to_the_next_call_without_a_restart() {
    let dir = common::scratch().join("gateway-rate-reload");
    let echo_at =
        |per_minute: u32, burst: u32| json!({"tools": {"everything.echo": {"per_minute": per_minute, "burst": burst}}});
    let path = config(&dir, echo_at(1, 1));
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    let calls = |n: usize| (0..n).map(|_| echo(&gateway.addr, "token-a")["error"]["code"].clone()).collect::<Vec<_>>();
    assert_eq!(calls(2), [Value::Null, json!(-32029)], "one call a minute: the second is refused");
    let mut reloads = 0;
    let mut edit = |limits: Value| {
        config(&dir, limits);
        reloads += 1;
        gateway.wait_for_statuses("\"event\":\"config_reloaded\"", reloads, std::time::Duration::from_secs(60));
    };
    // Raised: the caller passes at once (its budget starts afresh) and for the new burst.
    edit(echo_at(6, 3));
    assert_eq!(calls(4), [Value::Null, Value::Null, Value::Null, json!(-32029)]);
    // Taken away: no limit.
    edit(json!({}));
    assert!(calls(5).iter().all(Value::is_null));
    let asked: Vec<String> =
        gateway.status.lock().unwrap().iter().filter(|l| l.contains("config_restart_needed")).cloned().collect();
    assert!(asked.is_empty(), "no restart asked: {asked:?}");
}
