//! What a token may call, and the credentials the gateway sends upstream, proven with the
//! official Python MCP client in front of the MCP reference servers from npm.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, reference_server, HttpGateway};
use common::write_config;
use serde_json::json;

#[test]
fn a_read_only_token_cannot_call_a_destructive_tool_and_is_told_which_scope_limits_it() {
    let dir = common::scratch().join("gateway-effects");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {
                "memory": {"command": "node", "args": [reference_server("memory")],
                           "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")},
                           "always_load": ["read_graph", "delete_entities"]},
                "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}
            },
            "toolsearch": {"tokens": {
                "token-reader": ["read-only"],
                "token-careful": ["no-destructive"],
                "token-full": []
            }}
        }),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let entity = json!({"entities": [{"name": "ada", "entityType": "person", "observations": ["wrote notes"]}]});
    let steps = json!([
        ["call", "memory.read_graph", {}],
        ["call", "everything.echo", {"message": "hi"}],
        ["call", "memory.create_entities", entity],
        ["call", "memory.delete_entities", {"entityNames": ["ada"]}],
        ["search_tool_by_category", {"query": "delete entities from the knowledge graph"}]
    ]);
    let reader = client_steps(&gateway.url(), "token-reader", &steps);
    // Tools marked read-only run; the others are refused before reaching the server, with
    // the code and the scope that limits the caller.
    assert!(!reader[0]["is_error"].as_bool().unwrap(), "{reader:?}");
    assert_eq!(reader[1]["text"], "Echo: hi", "{reader:?}");
    for refused in [&reader[2], &reader[3]] {
        assert!(refused["is_error"].as_bool().unwrap(), "{refused}");
        let text = refused["text"].as_str().unwrap();
        assert!(text.contains("NOT_AUTHORIZED") && text.contains("\\\"read-only\\\""), "{text}");
    }
    // Searching still shows what exists.
    assert!(reader[4]["text"].as_str().unwrap().contains("memory.delete_entities"), "{reader:?}");

    // no-destructive: an additive tool runs (the entity is created), a destructive one does not.
    let careful = client_steps(&gateway.url(), "token-careful", &steps);
    assert!(!careful[2]["is_error"].as_bool().unwrap(), "{careful:?}");
    let text = careful[3]["text"].as_str().unwrap();
    assert!(careful[3]["is_error"].as_bool().unwrap() && text.contains("\\\"no-destructive\\\""), "{text}");
    let graph = client_steps(&gateway.url(), "token-reader", &json!([["call", "memory.read_graph", {}]]));
    assert!(graph[0]["text"].as_str().unwrap().contains("ada"), "the refused delete did not run: {graph:?}");

    // A token without limits calls the destructive tool, which reaches the server.
    let full = client_steps(
        &gateway.url(),
        "token-full",
        &json!([["call", "memory.delete_entities", {"entityNames": ["ada"]}]]),
    );
    assert!(!full[0]["is_error"].as_bool().unwrap(), "{full:?}");
    let graph = client_steps(&gateway.url(), "token-reader", &json!([["call", "memory.read_graph", {}]]));
    assert!(!graph[0]["text"].as_str().unwrap().contains("ada"), "{graph:?}");

    // #60 T14: `always_load` lists, for each caller, only what it may call.
    let listed = |token: &str| -> Vec<String> {
        let out = client_steps(&gateway.url(), token, &json!([["tools"]]));
        let tools: serde_json::Value = serde_json::from_str(out[0]["text"].as_str().unwrap()).unwrap();
        tools["items"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let (reader, full) = (listed("token-reader"), listed("token-full"));
    let has = |names: &[String], tool: &str| names.iter().any(|n| n.contains(tool));
    assert!(has(&reader, "read_graph") && !has(&reader, "delete_entities"), "{reader:?} {full:?}");
    assert!(has(&full, "read_graph") && has(&full, "delete_entities"), "{full:?}");
}

#[test]
fn a_header_from_a_command_reaches_an_http_upstream_and_is_fetched_again_after_a_401() {
    use std::process::{Command, Stdio};
    let dir = common::scratch().join("gateway-credentials");
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, "first-7f3a9c").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut upstream = Command::new(common::python())
        .arg(common::repo().join("tests/mcp/guarded_server.py"))
        .args([port.to_string(), token_file.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the guarded server did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The command counts its runs, and prints the token the file holds now.
    let runs = dir.join("runs");
    let script = format!("echo run >> {}; cat {}", runs.display(), token_file.display());
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"Authorization": {"command": ["sh", "-c", script], "prefix": "Bearer "}}
        }}}),
    );
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let runs_now = || std::fs::read_to_string(&runs).unwrap_or_default().lines().count();
    let first = client_steps(&gateway.url(), "-", &json!([["call", "vault.vault_status", {}]]));
    assert!(first[0]["text"].as_str().unwrap().contains("sealed"), "{first:?}");
    assert_eq!(runs_now(), 1, "fetched once, on the first request");

    // The token rotates: the upstream now answers 401 to the old one; the gateway runs the
    // command again, retries, and the client never sees the 401.
    std::fs::write(&token_file, "second-0b81d2").unwrap();
    let second = client_steps(&gateway.url(), "-", &json!([["call", "vault.vault_status", {}]]));
    assert!(second[0]["text"].as_str().unwrap().contains("sealed"), "{second:?}");
    assert!(!second[0]["is_error"].as_bool().unwrap(), "{second:?}");
    assert_eq!(runs_now(), 2, "fetched again after the 401, once");

    // Secrets stay out of the state directory and the status.
    let status = gateway.status.lock().unwrap().join("\n");
    drop(gateway);
    let _ = upstream.kill();
    let _ = upstream.wait();
    assert!(!status.contains("first-7f3a9c") && !status.contains("second-0b81d2"), "{status}");
    for entry in walk(&state) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("first-7f3a9c") && !text.contains("second-0b81d2"), "{} holds a token", entry.display());
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
