//! What today's MCP clients expect of a gateway in front of many servers, driven by the
//! official Python MCP client against `server-everything`: tools a config marks
//! `always_load` are listed up front in every session, in the same order, with Claude Code's
//! `_meta["anthropic/alwaysLoad"]`, and only to callers that may use them; a tool the session
//! never revealed runs when called by a name clients use, and a name no tool has gets the
//! closest the caller may use.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, reference_server, step_json, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

fn tools(step: &Value) -> Vec<Value> {
    step_json(step)["items"].as_array().unwrap().clone()
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn always_loaded_tools_lead_every_list_and_unrevealed_tools_run_by_the_names_clients_use() {
    let dir = common::scratch().join("gateway-always-load");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [reference_server("everything"), "stdio"],
                               "always_load": ["echo", "get-s*"]}
            },
            "toolsearch": {
                "tokens": {"token-demo": ["demo"], "token-plain": []},
                "requires": {"everything": ["demo"]}
            }
        }),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let first = client_steps(
        &gateway.url(),
        "token-demo",
        &json!([
            ["tools"],
            ["echo", {"message": "loaded up front"}],
            ["tools"],
            ["mcp__everything__get-annotated-message", {"messageType": "success"}],
            ["everything__get-annotated-message", {"messageType": "nonsense"}],
            ["everything.echoo", {"message": "x"}]
        ]),
    );
    let listed = tools(&first[0]);
    let up_front = ["echo", "get-structured-content", "get-sum"];
    assert_eq!(names(&listed)[..3], up_front, "by id, ahead of the discovery tools: {:?}", names(&listed));
    for t in &listed[..3] {
        assert_eq!(t["_meta"]["anthropic/alwaysLoad"], json!(true), "{t}");
        assert!(t["inputSchema"]["properties"].is_object(), "the whole definition: {t}");
    }
    assert!(listed[3..].iter().all(|t| t.get("_meta").is_none_or(|m| m.get("anthropic/alwaysLoad").is_none())));
    assert!(names(&listed).contains(&"search_tool_by_category"), "{:?}", names(&listed));
    assert!(!names(&listed).contains(&"get-env"), "other tools stay deferred: {:?}", names(&listed));
    // Called by its name, as a client calls a listed tool; the list does not move after it.
    assert!(!first[1]["is_error"].as_bool().unwrap() && first[1]["text"].as_str().unwrap().contains("loaded up front"));
    assert_eq!(tools(&first[2]), listed);
    // Never revealed, called by Claude Code's name for it: it runs, its arguments checked.
    assert!(!first[3]["is_error"].as_bool().unwrap(), "{}", first[3]);
    assert!(first[3]["text"].as_str().unwrap().to_lowercase().contains("success"), "{}", first[3]);
    assert!(first[4]["is_error"].as_bool().unwrap() && first[4]["text"].as_str().unwrap().contains("INVALID_ARGUMENT"));
    // A name no tool has: the closest tools the caller may use.
    let missing = first[5]["text"].as_str().unwrap();
    assert!(
        first[5]["is_error"].as_bool().unwrap() && missing.contains("closest tools you may use: everything.echo"),
        "{missing}"
    );

    // A second client gets the very same list: a prompt cache keeps it.
    let second = client_steps(&gateway.url(), "token-demo", &json!([["tools"]]));
    assert_eq!(tools(&second[0]), listed);

    // A caller without the server's scope sees none of them, nor anything of the server.
    let plain = client_steps(
        &gateway.url(),
        "token-plain",
        &json!([["tools"], ["echo", {"message": "x"}], ["mcp__everything__get-annotated-message", {"messageType": "success"}]]),
    );
    let plain_names = names(&tools(&plain[0])).iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert!(plain_names.iter().all(|n| !up_front.contains(&n.as_str())), "{plain_names:?}");
    assert!(plain[1]["is_error"].as_bool().unwrap(), "{}", plain[1]);
    assert!(!plain[1]["text"].as_str().unwrap().contains("everything"), "{}", plain[1]);
    assert!(plain[2]["is_error"].as_bool().unwrap(), "{}", plain[2]);
    assert!(!plain[2]["text"].as_str().unwrap().contains("everything."), "{}", plain[2]);
}

#[test]
fn an_always_load_entry_that_is_not_a_name_is_an_error_naming_the_server() {
    let dir = common::scratch().join("gateway-always-load-bad");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": ["x"], "always_load": ["echo", " "]}}}),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--config", config.to_str().unwrap(), "--check"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("mcpServers.everything.always_load"), "{err}");
}
