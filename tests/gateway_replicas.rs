//! Gateway replicas: `gateway --build` builds the index under a state dir and exits; two
//! `--replica` gateways serve it read-only (nothing under the state dir changes), give the
//! same answers, and follow the index when it is rebuilt. The official Python MCP client in
//! front of the npm reference servers. (`scripts/gateway-replicas` puts HAProxy in front.)

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use common::gateway::{client_steps, gateway_build, reference_server, HttpGateway};
use common::write_config;
use serde_json::json;

/// Every file under `dir` with its size and modification time.
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path().display().to_string(), (m.len(), m.modified().unwrap()));
            }
        }
    }
    out
}

#[test]
fn replicas_serve_one_state_dir_read_only_with_the_same_answers_and_follow_a_rebuild() {
    let dir = common::scratch().join("gateway-replicas");
    let state = dir.join("state");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(&dir, &json!({"mcpServers": {"everything": everything}}));

    // A replica without an index to serve is refused, naming what to do.
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--replica", "--http", "127.0.0.1:0", "--config", config.to_str().unwrap()])
        .args(["--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gateway --build"), "{out:?}");

    gateway_build(&config, &state);
    let before = snapshot(&state);
    let a = HttpGateway::start(&config, &state, &["--replica", "--json"]);
    let b = HttpGateway::start(&config, &state, &["--replica", "--json"]);
    let steps = json!([
        ["search_tool_by_category", {"query": "add two numbers"}],
        ["search_tool_by_category", {"query": "echo a message back", "limit": 10}],
        ["call", "everything.echo", {"message": "from a replica"}],
        ["prompts"]
    ]);
    let from_a = client_steps(&a.url(), "-", &steps);
    let from_b = client_steps(&b.url(), "-", &steps);
    assert_eq!(from_a, from_b, "the replicas answer alike");
    assert!(from_a[0]["text"].as_str().unwrap().contains("everything.get-sum"), "{from_a:?}");
    assert_eq!(from_a[2]["text"], "Echo: from a replica");
    assert_eq!(snapshot(&state), before, "a replica writes nothing under the state dir");

    // The config gains a server and the index is rebuilt by `--build`: both replicas start the
    // server, reload the index, and find its tools.
    write_config(&dir, &json!({"mcpServers": {"everything": everything, "memory": memory}}));
    gateway_build(&dir.join("gateway.json"), &state);
    for replica in [&a, &b] {
        replica.wait_for_status("\"event\":\"index_reloaded\"", Duration::from_secs(60));
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let r = client_steps(
                &replica.url(),
                "-",
                &json!([
                    ["search_tool_by_category", {"query": "create entities in the knowledge graph"}],
                    ["call", "memory.read_graph", {}]
                ]),
            );
            if r[0]["text"].as_str().unwrap().contains("memory.create_entities") && r[1]["is_error"] == false {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{r:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
