//! What an MCP server offers beyond tools passes through the gateway: `server-everything`'s
//! resources, resource templates and prompts reach the official Python MCP client, namespaced,
//! paged, readable, subscribable, searchable (prompts, with `kind`), and hidden from a token
//! without the server's scopes; a server added to the config tells an open session that the
//! resource and prompt lists changed.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::gateway::{client_steps, reference_server, step_json, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

const DOC: &str = "toolsearch://everything/demo://resource/static/document/architecture.md";
const DYNAMIC: &str = "toolsearch://everything/demo://resource/dynamic/text/3";

fn names(list: &Value, key: &str) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|i| i[key].as_str().unwrap().to_owned()).collect()
}

#[test]
fn resources_templates_and_prompts_pass_through_with_scopes_applied() {
    let dir = common::scratch().join("gateway-offers");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]},
                "memory": {"command": "node", "args": [reference_server("memory")],
                           "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}}
            },
            "toolsearch": {
                "tokens": {"token-demo": ["demo"], "token-plain": []},
                "requires": {"everything": ["demo"]},
                "limits": {"list": {"page": 2}}
            }
        }),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let watched = "toolsearch://everything/demo://resource/dynamic/text/1";
    let steps = json!([
        ["resources"],
        ["templates"],
        ["prompts"],
        ["read", DOC],
        ["read", DYNAMIC],
        ["get_prompt", "everything.args-prompt", {"city": "Oslo"}],
        ["search_tool_by_category", {"query": "ask a question about a city", "kind": "prompt"}],
        ["search_tool_by_category", {"query": "ask a question about a city", "kind": "tool", "limit": 50}],
        ["call", "everything.args-prompt", {"city": "Oslo"}],
        ["subscribe", watched],
        ["call", "everything.toggle-subscriber-updates", {}],
        ["wait_updated", watched, 30],
        ["read", "toolsearch://everything/demo://no/such/thing"],
        ["complete", "prompt", "everything.completable-prompt", "department", "Eng", {}],
        ["complete", "prompt", "everything.completable-prompt", "name", "", {"department": "Sales"}],
        ["set_level", "debug"]
    ]);
    let out = client_steps(&gateway.url(), "token-demo", &steps);

    // Lists: namespaced, paged by the gateway (2 a page), the server's own items all there.
    let resources = step_json(&out[0]);
    let uris = names(&resources, "uri");
    assert!(uris.contains(&DOC.to_owned()), "{uris:?}");
    assert!(uris.contains(&"toolsearch://memory/memory://knowledge-graph".to_owned()), "{uris:?}");
    assert!(
        uris.iter().all(|u| u.starts_with("toolsearch://everything/demo://") || u.starts_with("toolsearch://memory/")),
        "{uris:?}"
    );
    assert!(resources["pages"].as_u64().unwrap() >= 3, "paged: {resources}");
    assert!(names(&resources, "name").contains(&"everything.architecture.md".to_owned()), "{resources}");
    let templates = names(&step_json(&out[1]), "uriTemplate");
    assert!(
        templates.contains(&"toolsearch://everything/demo://resource/dynamic/text/{resourceId}".to_owned()),
        "{templates:?}"
    );
    let prompts = names(&step_json(&out[2]), "name");
    for p in ["everything.simple-prompt", "everything.args-prompt", "everything.resource-prompt"] {
        assert!(prompts.contains(&p.to_owned()), "{prompts:?}");
    }

    // Reads: a listed resource and one built from a namespaced template round-trip.
    let doc = step_json(&out[3]);
    assert_eq!(doc["contents"][0]["uri"], DOC, "{doc}");
    assert!(doc["contents"][0]["text"].as_str().unwrap().contains("Architecture"), "{doc}");
    let dynamic = step_json(&out[4]);
    assert_eq!(dynamic["contents"][0]["uri"], DYNAMIC, "{dynamic}");
    assert!(!dynamic["contents"][0]["text"].as_str().unwrap().is_empty(), "{dynamic}");

    // prompts/get forwards the arguments.
    let prompt = step_json(&out[5]);
    assert!(prompt["messages"][0]["content"]["text"].as_str().unwrap().contains("Oslo"), "{prompt}");

    // Prompts are searchable beside tools; `kind` keeps one or the other.
    let found: Value = serde_json::from_str(out[6]["text"].as_str().unwrap()).unwrap();
    assert_eq!(found["results"][0]["tool_id"], "everything.args-prompt", "{found}");
    assert!(found["results"].as_array().unwrap().iter().all(|r| r["kind"] == "prompt"), "{found}");
    let tools_only: Value = serde_json::from_str(out[7]["text"].as_str().unwrap()).unwrap();
    let kinds: Vec<&Value> = tools_only["results"].as_array().unwrap().iter().map(|r| &r["kind"]).collect();
    assert!(!kinds.is_empty() && kinds.iter().all(|k| *k == "tool"), "{tools_only}");
    // ... and a prompt found by search is fetched through call_tool.
    assert!(out[8]["text"].as_str().unwrap().contains("Oslo"), "{:?}", out[8]);

    // A subscription's updates reach the subscriber, with the namespaced URI.
    assert!(step_json(&out[11]).as_array().unwrap().contains(&json!(watched)), "{:?}", out[11]);
    assert!(out[12]["is_error"].as_bool().unwrap(), "{:?}", out[12]);

    // Completions of a prompt's arguments reach the server that owns it, context included;
    // a client may set a log level.
    assert_eq!(step_json(&out[13])["completion"]["values"], json!(["Engineering"]), "{:?}", out[13]);
    assert_eq!(step_json(&out[14])["completion"]["values"], json!(["David", "Eve", "Frank"]), "{:?}", out[14]);
    assert!(!out[15]["is_error"].as_bool().unwrap(), "{:?}", out[15]);

    // A token without the server's scope sees none of it, and is answered as for what does
    // not exist.
    let plain = client_steps(
        &gateway.url(),
        "token-plain",
        &json!([
            ["resources"],
            ["prompts"],
            ["read", DOC],
            ["read", "toolsearch://nowhere/demo://x"],
            ["get_prompt", "everything.args-prompt", {"city": "Oslo"}],
            ["search_tool_by_category", {"query": "ask a question about a city", "kind": "prompt"}],
            ["complete", "prompt", "everything.completable-prompt", "department", "Eng", {}],
            ["complete", "prompt", "everything.no-such-prompt", "department", "Eng", {}]
        ]),
    );
    assert_eq!(names(&step_json(&plain[0]), "uri"), ["toolsearch://memory/memory://knowledge-graph"], "{plain:?}");
    assert_eq!(step_json(&plain[1])["items"], json!([]), "{plain:?}");
    let hidden = plain[2]["text"].as_str().unwrap().replace(DOC, "URI");
    let missing = plain[3]["text"].as_str().unwrap().replace("toolsearch://nowhere/demo://x", "URI");
    assert_eq!(hidden, missing, "a hidden resource reads like a missing one");
    assert!(plain[4]["is_error"].as_bool().unwrap(), "{plain:?}");
    assert!(!plain[5]["text"].as_str().unwrap().contains("everything."), "{plain:?}");
    // A hidden prompt's completions are refused as a missing one's are.
    let hidden = plain[6]["text"].as_str().unwrap().replace("completable-prompt", "P");
    let missing = plain[7]["text"].as_str().unwrap().replace("no-such-prompt", "P");
    assert!(plain[6]["is_error"].as_bool().unwrap() && hidden == missing, "{plain:?}");
    drop(gateway);
}

#[test]
fn a_server_added_live_tells_an_open_session_its_resources_and_prompts_changed() {
    let dir = common::scratch().join("gateway-offers-live");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    // A caller without `demo` may not see server-everything; a read answer over 1 KiB is refused.
    let mut settings = json!({
        "tokens": {"token-demo": ["demo"], "token-plain": []},
        "limits": {"max_result_bytes": 1024}
    });
    let config = write_config(&dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": settings}));
    settings["requires"] = json!({"everything": ["demo"]});
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let (go, go_plain) = (dir.join("go"), dir.join("go-plain"));
    let steps = json!([
        ["search_tool_by_category", {"query": "read the knowledge graph"}],
        ["prompts"],
        ["wait_for_file", go],
        ["wait_note", "notifications/prompts/list_changed", 60],
        ["wait_note", "notifications/resources/list_changed", 60],
        ["wait_note", "notifications/tools/list_changed", 60],
        ["prompts"],
        ["resources"],
        ["read", DOC]
    ]);
    let plain_steps = json!([
        ["search_tool_by_category", {"query": "read the knowledge graph"}],
        ["wait_for_file", go_plain],
        ["notes"]
    ]);
    let url = gateway.url();
    let client = std::thread::spawn(move || client_steps(&url, "token-demo", &steps));
    let url = gateway.url();
    let plain = std::thread::spawn(move || client_steps(&url, "token-plain", &plain_steps));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while gateway.status.lock().unwrap().iter().filter(|l| l.contains("\"event\":\"request\"")).count() < 2 {
        assert!(std::time::Instant::now() < deadline, "both sessions searched");
        std::thread::sleep(Duration::from_millis(50));
    }
    write_config(&dir, &json!({"mcpServers": {"memory": memory, "everything": everything}, "toolsearch": settings}));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    std::fs::write(&go, "").unwrap();
    let out = client.join().unwrap();
    // The caller who may not see the new server was told nothing: not about its lists, and
    // not that the catalogue changed (its tools are hidden from that caller).
    std::fs::write(&go_plain, "").unwrap();
    let plain = plain.join().unwrap();
    let told = step_json(&plain[2]);
    assert!(told.get("notifications/prompts/list_changed").is_none(), "{told}");
    assert!(told.get("notifications/resources/list_changed").is_none(), "{told}");
    assert!(told.get("notifications/tools/list_changed").is_none(), "{told}");
    assert_eq!(step_json(&out[1])["items"], json!([]), "{out:?}");
    // The caller who may see it was told about all three. Not in a set order: the server's
    // resources and prompts are offered (and announced) as soon as it is up, its tools once
    // the index holding them is rebuilt, which may be a pass later.
    let seen = step_json(&out[5]);
    assert!(seen["notifications/prompts/list_changed"].as_u64().unwrap() >= 1, "{seen}");
    assert!(seen["notifications/resources/list_changed"].as_u64().unwrap() >= 1, "{seen}");
    assert!(seen["notifications/tools/list_changed"].as_u64().unwrap() >= 1, "{seen}");
    assert!(names(&step_json(&out[6]), "name").contains(&"everything.simple-prompt".to_owned()), "{out:?}");
    assert!(names(&step_json(&out[7]), "uri").contains(&DOC.to_owned()), "{out:?}");
    // The bound on what a client is given holds for reads: an error naming the size and limit.
    let too_large = out[8]["text"].as_str().unwrap();
    assert!(out[8]["is_error"] == true && too_large.contains("max_result_bytes"), "{too_large}");
}
