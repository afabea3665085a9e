//! Names clients call tools by (issue #60, T9 and T10): a `SERVER__TOOL` spelling that reads
//! two ways is refused naming both tools, never resolved silently; a server whose name makes
//! such spellings ambiguous is warned about at load; and a caller who may not see a server
//! gets, for every spelling, exactly the answer it would get if the server did not exist.
//! The official Python client against hostile upstreams whose tool names collide.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

fn named(names: &str) -> Value {
    let server = common::repo().join("tests/mcp/hostile_server.py");
    json!({"command": common::python(), "args": [server, "named", names]})
}

fn texts(steps: &[Value]) -> Vec<String> {
    steps.iter().map(|s| format!("{} {}", s["is_error"], s["text"].as_str().unwrap_or_default())).collect()
}

#[test]
fn an_ambiguous_server_tool_spelling_is_refused_and_hidden_servers_answer_as_missing_ones() {
    let dir = common::scratch().join("gateway-names");
    let mut servers = json!({"amb": named("hid__secret_op,open_op"), "amb__hid": named("secret_op")});
    let settings = json!({"requires": {"amb__hid": ["secret"]}, "tokens": {"admin": ["secret"], "plain": []}});
    let with_hidden = write_config(&dir.join("a"), &json!({"mcpServers": servers, "toolsearch": settings}));
    servers.as_object_mut().unwrap().remove("amb__hid");
    let settings = json!({"tokens": {"admin": ["secret"], "plain": []}});
    let without = write_config(&dir.join("b"), &json!({"mcpServers": servers, "toolsearch": settings}));
    let a = HttpGateway::start(&with_hidden, &dir.join("a/state"), &[]);
    let b = HttpGateway::start(&without, &dir.join("b/state"), &[]);
    a.wait_for_status("amb__hid: a server name with `__`", std::time::Duration::from_secs(5));

    // The admin sees both servers: the spelling reads two ways, and is refused naming both.
    let admin =
        client_steps(&a.url(), "admin", &json!([["amb__hid__secret_op", {}], ["mcp__amb__hid__secret_op", {}]]));
    for step in &admin {
        let text = step["text"].as_str().unwrap();
        assert!(step["is_error"].as_bool().unwrap(), "{step}");
        assert!(
            text.contains("names several tools")
                && text.contains("amb.hid__secret_op")
                && text.contains("amb__hid.secret_op"),
            "{text}"
        );
    }
    let by_id = client_steps(&a.url(), "admin", &json!([["call", "amb__hid.secret_op", {}]]));
    assert_eq!(by_id[0]["text"], "secret_op done", "{}", by_id[0]);

    // A caller who may not see `amb__hid`: every spelling answers as where it does not exist.
    let spellings = json!([
        ["amb__hid__secret_op", {}], ["mcp__amb__hid__secret_op", {}], ["amb__hid__nope", {}],
        ["secret_op", {}], ["amb__hid.secret_op", {}], ["mcp__amb__hid__open_op", {}],
        ["call", "amb__hid.secret_op", {}], ["expand_tool", {"tool_id": "amb__hid.secret_op"}],
        ["search_tool_by_category", {"query": "secret_op"}]
    ]);
    let hidden = texts(&client_steps(&a.url(), "plain", &spellings));
    let missing = texts(&client_steps(&b.url(), "plain", &spellings));
    assert_eq!(hidden, missing);
    assert!(hidden[0].contains("hid__secret_op done"), "the one reading it may see runs: {}", hidden[0]);
}
