//! docs/gateway-operations.md's HAProxy recipe, as the page prints it, with Debian's HAProxy in front of
//! two gateway replicas: both pass its health check (a check the replicas refused would mark
//! them DOWN, and every request would get 503), and a client session goes through it.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;

use common::gateway::{client_steps, reference_server, step_json, HttpGateway};
use common::haproxy::{docs_backend, Haproxy};
use common::write_config;
use serde_json::json;

#[test]
fn the_docs_haproxy_recipe_checks_both_replicas_up_and_carries_a_session() {
    let dir = common::scratch().join("gateway-haproxy");
    let state = dir.join("state");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}}}),
    );
    let built = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--build", "--config", config.to_str().unwrap(), "--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let a = HttpGateway::start(&config, &state, &["--replica"]);
    let b = HttpGateway::start(&config, &state, &["--replica"]);
    assert!(docs_backend().contains("server a 127.0.0.1:8801 check"), "the recipe names its example servers");
    let haproxy = Haproxy::start(&dir, &[&a.addr, &b.addr]);
    let seen = haproxy.checked(2);
    assert!(seen.iter().all(|(_, status, check)| status == "UP" && check == "L7OK"), "{seen:?}\n{}", haproxy.config);
    let out = client_steps(
        &haproxy.url(),
        "-",
        &json!([["search_tool_by_category", {"query": "echo a message back"}], ["call", "everything.echo", {"message": "through haproxy"}]]),
    );
    let found = step_json(&out[0]);
    assert_eq!(found["results"][0]["tool_id"], "everything.echo", "{found}");
    assert!(out[1]["text"].as_str().unwrap().contains("through haproxy"), "{}", out[1]);
}

/// With the recipe's `option forwardfor` and HAProxy's address in `trusted_proxies`, refused
/// tokens count against the client HAProxy saw, not against HAProxy: a guesser behind it is
/// throttled and its neighbour behind the same proxy is not. (HAProxy reaches the gateway from
/// 127.0.0.9 here, the clients come from 127.0.0.2 and 127.0.0.3, so the three are told apart.)
#[test]
fn behind_the_docs_haproxy_a_guesser_is_throttled_and_its_neighbour_is_not() {
    use common::gateway::http_from;
    use std::net::Ipv4Addr;
    let dir = common::scratch().join("gateway-haproxy-strikes");
    let token = "5e0b7c2a9d4f6183b5a7c9e1f3d50a2c";
    let server = common::repo().join("tests/mcp/hostile_server.py").display().to_string();
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"count": {"command": common::python(), "args": [server, "count"]}},
                "toolsearch": {"tokens": {token: []}, "trusted_proxies": ["127.0.0.9"],
                               "limits": {"http": {"refused_tokens_burst": 2}}}}),
    );
    assert!(docs_backend().contains("option forwardfor"), "the recipe passes the client's address on");
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let haproxy = Haproxy::start_with(&dir, &[&gateway.addr], &["source 127.0.0.9"]);
    haproxy.checked(1);
    let front = format!("127.0.0.1:{}", haproxy.front);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let open = |source: Ipv4Addr, bearer: &str| {
        let auth = format!("Bearer {bearer}");
        http_from(source, &front, "POST", "/mcp", &init, &[("Authorization", auth.as_str())]).0
    };
    let (guesser, neighbour) = (Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3));
    assert_eq!([open(guesser, "guess-one-0000000000"), open(guesser, "guess-two-0000000000")], [401, 401]);
    assert_eq!(open(guesser, token), 429, "the guesser is throttled, its right token not compared");
    assert_eq!(open(neighbour, token), 200, "its neighbour behind the same proxy is not");
    assert_eq!(open(neighbour, "guess-three-00000000"), 401, "and has a budget of its own");
}
