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
