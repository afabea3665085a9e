//! What a token may call, and the credentials the gateway sends upstream, proven with the
//! official Python MCP client in front of the MCP reference servers from npm.

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
                           "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}},
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
}
