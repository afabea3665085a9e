//! Search through the gateway over a real server's tools (the npm reference memory server),
//! asked the way a user asks: #60 item 8's paraphrase finds the tool that does it.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, reference_server, HttpGateway};
use common::write_config;
use serde_json::json;

/// "store facts about a person" is what `create_entities` does: its entities' fields (name,
/// entity type, observations) are nested one level under its one parameter, and are indexed
/// with it (it ranked 4th at 0.08 when only top-level parameters were).
#[test]
fn a_paraphrase_finds_the_memory_servers_create_entities_first() {
    let dir = common::scratch().join("gateway-search");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(&dir, &json!({"mcpServers": {"memory": memory}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let query = "store facts about a person in the knowledge graph";
    let out = client_steps(&gateway.url(), "-", &json!([["search_tool_by_category", {"query": query}]]));
    let text = out[0]["text"].as_str().unwrap();
    let first = text.find("memory.create_entities").unwrap_or_else(|| panic!("not found: {text}"));
    for other in ["add_observations", "create_relations", "read_graph", "search_nodes", "open_nodes"] {
        let at = text.find(&format!("memory.{other}")).unwrap_or(usize::MAX);
        assert!(first < at, "{other} ranks above create_entities: {text}");
    }
}
