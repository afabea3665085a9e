//! Answers an agent can act on, through the gateway as an agent meets it (the official Python
//! MCP client, the npm reference servers): a paraphrase of what the memory server does finds
//! its tools, each answer says how answerable the request is, and a `NO_MATCH_IN_CATEGORY`
//! carries the closest tools as hints.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

/// A search's answer (or error) as the client got it.
fn answer(v: &Value) -> Value {
    let text = v["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| json!({ "unparsed": text }))
}

fn ids(a: &Value) -> Vec<String> {
    a["results"].as_array().into_iter().flatten().map(|p| p["tool_id"].as_str().unwrap_or("").to_owned()).collect()
}

#[test]
fn memory_requests_find_its_tools_and_every_answer_says_how_answerable_it_is() {
    let dir = common::scratch().join("answers");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let config = write_config(&dir, &json!({"mcpServers": {"memory": memory, "everything": everything}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let steps = json!([
        ["search_tool_by_category", {"query": "remember that Ada wrote the first program"}],
        ["search_tool_by_category", {"query": "add an observation to the entity Ada"}],
        ["search_tool_by_category", {"query": "xqzv blorft wibble", "category_path": "memory"}]
    ]);
    let out = client_steps(&gateway.url(), "-", &steps);
    let (remember, observe, gibberish) = (answer(&out[0]), answer(&out[1]), answer(&out[2]));
    assert!(ids(&remember).first().is_some_and(|id| id.starts_with("memory.")), "{remember}");
    assert_eq!(ids(&observe).first().map(String::as_str), Some("memory.add_observations"), "{observe}");
    for a in [&remember, &observe] {
        assert!(a["answerable"].as_f64().is_some_and(|p| p > 0.0 && p <= 1.0), "{a}");
    }
    assert!(
        answer(&out[1])["answerable"].as_f64() > remember["answerable"].as_f64(),
        "naming the tool's own words makes a request more answerable than a paraphrase: {observe} {remember}"
    );
    if gibberish.get("code").is_some() {
        // Refused: the closest memory tools come along as hints.
        assert_eq!(gibberish["code"], "NO_MATCH_IN_CATEGORY", "{gibberish}");
        let hints = gibberish["hints"].to_string();
        assert!(hints.contains("closest in scope: \\\"memory."), "{gibberish}");
    } else {
        // Answered: weak guesses, and said to be weak.
        assert!(gibberish["answerable"].as_f64().is_some_and(|p| p < 0.3), "{gibberish}");
    }
}
