//! Search through the gateway over a real server's tools (the npm reference memory server),
//! asked the way a user asks: #60 item 8's paraphrase finds the tool that does it.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// "store facts about a person" is what `create_entities` does: its entities' fields (name,
/// entity type, observations) are nested one level under its one parameter, and are indexed
/// with it (it ranked 4th at 0.08 when only top-level parameters were). Under the stock model
/// both paraphrases find it first; under the default, tool-trained model the shorter one does,
/// and the longer one ranks `read_graph` first and `create_entities` fourth (docs/models.md,
/// "Why the default is `tools`"): asserted as it is, so a change either way is seen.
#[test]
fn a_paraphrase_finds_the_memory_servers_create_entities_first() {
    let long = "store facts about a person in the knowledge graph";
    let short = "store facts about a person";
    for (model, first) in [("stock", &[long, short][..]), ("tools", &[short][..])] {
        let dir = common::scratch().join(format!("gateway-search-{model}"));
        let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
        let config = write_config(&dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": {"model": model}}));
        let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
        // Paraphrases of issue #60 (item 8), each a request to create what the graph lacks. (Its
        // third, "remember that Ada wrote the first program", still ranks `read_graph` first.)
        let queries = [long, short];
        let steps: Vec<Value> = queries.iter().map(|q| json!(["search_tool_by_category", {"query": q}])).collect();
        let out = client_steps(&gateway.url(), "-", &json!(steps));
        for (query, answer) in queries.iter().zip(&out) {
            let text = answer["text"].as_str().unwrap();
            let at = |tool: &str| text.find(&format!("memory.{tool}")).unwrap_or(usize::MAX);
            let create = at("create_entities");
            assert!(create < usize::MAX, "{model}: {query}: create_entities not among the results: {text}");
            let others = ["add_observations", "create_relations", "read_graph", "search_nodes", "open_nodes"];
            let above: Vec<&str> = others.iter().copied().filter(|o| at(o) < create).collect();
            if first.contains(query) {
                assert!(above.is_empty(), "{model}: {query}: {above:?} rank above create_entities: {text}");
            } else {
                assert!(
                    above.contains(&"read_graph"),
                    "{model}: {query}: read_graph no longer first, update the docs: {text}"
                );
            }
        }
    }
}

/// The deployment's own words: `toolsearch.examples` gives `create_entities` one sample
/// request ("save a new fact about someone", none of the paraphrase's words but "fact"), and
/// the long paraphrase the default model ranks under `read_graph` finds `create_entities`
/// first once the edited config is read, while a request to read the graph still finds
/// `read_graph`.
#[test]
fn a_sample_request_in_the_config_teaches_a_running_gateway_its_users_words() {
    let dir = common::scratch().join("gateway-search-examples");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(&dir, &json!({"mcpServers": {"memory": memory}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let steps = json!([
        ["search_tool_by_category", {"query": "store facts about a person in the knowledge graph"}],
        ["search_tool_by_category", {"query": "show me the whole graph"}]
    ]);
    let first = |out: &[Value], i: usize| {
        let text = out[i]["text"].as_str().unwrap().to_owned();
        let at = |tool: &str| text.find(&format!("memory.{tool}")).unwrap_or(usize::MAX);
        let best = ["create_entities", "read_graph", "add_observations", "create_relations", "search_nodes"]
            .into_iter()
            .min_by_key(|t| at(t))
            .unwrap();
        (best, text)
    };
    let before = client_steps(&gateway.url(), "-", &steps);
    assert_eq!(first(&before, 0).0, "read_graph", "{:?}", first(&before, 0).1);
    // With a misspelled one beside it, which the operator is told of.
    let examples = json!({"memory.create_entities": ["save a new fact about someone"], "memory.create_entity": ["x"]});
    write_config(&dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": {"examples": examples}}));
    gateway.wait_for_status("config_reloaded", Duration::from_secs(60));
    let unmatched = gateway.wait_for_status("examples_unmatched", Duration::from_secs(60));
    assert!(unmatched.contains("memory.create_entity\"") && !unmatched.contains("create_entities"), "{unmatched}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let after = client_steps(&gateway.url(), "-", &steps);
        if first(&after, 0).0 == "create_entities" {
            assert_eq!(first(&after, 1).0, "read_graph", "{:?}", first(&after, 1).1);
            break;
        }
        assert!(Instant::now() < deadline, "the example never reached the index: {:?}", first(&after, 0).1);
        std::thread::sleep(Duration::from_millis(500));
    }
}
