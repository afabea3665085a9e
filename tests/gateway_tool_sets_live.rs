//! The gateway's tool set settings applied live: `toolset`, and the `scopes` of a caller the
//! transport does not identify (the stdio client, HTTP without tokens), edited in the config
//! while a session stays open. The session's set is made again under them (told
//! `list_changed`), it stops seeing, searching, calling and hearing of a server its new scopes
//! hide (no more `resources/updated` of a resource it subscribed to, no more of its log
//! messages), the audit trail records the remake, and settings no tool set can be made from are
//! refused with the running ones kept.
//! The official Python MCP client, the npm reference servers, and a server written by hand
//! (tests/mcp/hostile_server.py) that sends log messages without pause.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::gateway::{client_mode_steps, client_steps, reference_server, step_json, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

fn count(gateway: &HttpGateway, text: &str) -> usize {
    gateway.status.lock().unwrap().iter().filter(|l| l.contains(text)).count()
}

fn wait_for(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never came", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The names `tools/list` gave in a `tools` step.
fn names(step: &Value) -> Vec<String> {
    step_json(step)["items"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_local_callers_scopes_and_the_toolset_change_in_an_open_session_without_a_restart() {
    let dir = common::scratch().join("gateway-tool-sets-live");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let servers = json!({"everything": everything, "memory": memory});
    let settings = |toolsearch: Value| json!({"mcpServers": servers, "toolsearch": toolsearch});
    let config = write_config(
        &dir,
        &settings(json!({"requires": {"everything": ["ops"]}, "scopes": ["ops"], "access": "closed"})),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let (ready, go) = (dir.join("ready"), dir.join("go"));
    let watched = "toolsearch://everything/demo://resource/dynamic/text/1";
    let echo = json!({"query": "echo a message back"});
    let steps = json!([
        ["search_tool_by_category", echo],
        ["subscribe", watched],
        ["call", "everything.toggle-subscriber-updates", {}],
        ["wait_updated", watched, 30],
        ["tools"],
        ["touch", ready],
        ["wait_for_file", go],
        ["list_changed"],
        ["notes"],
        ["wait_note", "notifications/never", 12],
        ["search_tool_by_category", echo],
        ["try_call", "everything.echo", {"message": "hidden now"}],
        ["tools"],
        ["call", "memory.read_graph", {}],
        ["resources"]
    ]);
    let url = gateway.url();
    let client = std::thread::spawn(move || client_steps(&url, "-", &steps));
    wait_for(&ready);

    // The stdio client's scopes lose `ops` (hiding everything), and a memory tool is pinned.
    let remade = count(&gateway, "\"event\":\"tool_sets_changed\"");
    let toolset = json!({"pinned": ["memory.read_graph"]});
    write_config(
        &dir,
        &settings(json!({"requires": {"everything": ["ops"]}, "scopes": [], "access": "closed", "toolset": toolset})),
    );
    let changed = gateway.wait_for_status("\"event\":\"tool_sets_changed\"", Duration::from_secs(60));
    assert_eq!(count(&gateway, "\"event\":\"tool_sets_changed\""), remade + 1);
    assert_eq!(serde_json::from_str::<Value>(&changed).unwrap()["sessions_remade"], 1, "{changed}");
    std::fs::write(&go, "").unwrap();
    let out = client.join().unwrap();
    let updates = |step: &Value| step_json(step)["notifications/resources/updated"].as_u64().unwrap_or(0);

    assert!(out[0]["text"].as_str().unwrap().contains("everything.echo"), "{:?}", out[0]);
    assert!(step_json(&out[3]).as_array().unwrap().contains(&json!(watched)), "{:?}", out[3]);
    assert!(!names(&out[4]).iter().any(|n| n.contains("read_graph")), "{:?}", out[4]);
    assert!(out[7]["text"].as_str().unwrap().parse::<u32>().unwrap() >= 1, "list_changed: {out:?}");
    // The server's updates come every 5 s: 12 s bring none to a caller that may not see it.
    assert!(updates(&out[8]) >= 1, "{:?}", out[8]);
    assert_eq!(updates(&out[9]), updates(&out[8]), "updates of a hidden server: {:?}", out[9]);
    assert!(!out[10]["text"].as_str().unwrap().contains("everything."), "{:?}", out[10]);
    assert!(out[11]["is_error"].as_bool().unwrap(), "{:?}", out[11]);
    assert!(!out[11]["text"].as_str().unwrap().contains("hidden now"), "{:?}", out[11]);
    assert!(names(&out[12]).iter().any(|n| n.contains("read_graph")), "pinned now: {:?}", out[12]);
    assert!(!out[13]["is_error"].as_bool().unwrap(), "{:?}", out[13]);
    assert!(!out[14]["text"].as_str().unwrap().contains("toolsearch://everything/"), "{:?}", out[14]);
    assert_eq!(count(&gateway, "config_restart_needed"), 0);
    // The audit trail records the remake between the session's two searches, with what changed.
    let trail = std::fs::read_to_string(dir.join("state/audit/trail.jsonl")).unwrap();
    let lines: Vec<Value> = trail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let at = |event: &str| -> Vec<usize> { (0..lines.len()).filter(|&i| lines[i]["event"] == event).collect() };
    let (searches, remakes) = (at("search"), at("tool_set_remade"));
    assert!(searches.len() == 2 && remakes.len() == 1, "{trail}");
    let remade = &lines[remakes[0]];
    assert!(searches[0] < remakes[0] && remakes[0] < searches[1], "{trail}");
    assert_eq!((&remade["session"], &remade["scopes"]), (&lines[searches[0]]["session"], &json!([])), "{remade}");
    let added = remade["tools_added"].as_array().unwrap();
    assert!(added.iter().any(|n| n.as_str().unwrap().contains("read_graph")), "the pinned tool: {remade}");

    // A pinned tool no server has: refused once, naming the setting; the running set is kept.
    write_config(
        &dir,
        &settings(json!({"requires": {"everything": ["ops"]}, "scopes": [], "access": "closed",
                         "toolset": {"pinned": ["memory.no_such_tool"]}})),
    );
    let refused = gateway.wait_for_status("memory.no_such_tool", Duration::from_secs(60));
    assert!(refused.contains("config_error") && refused.contains("toolset"), "{refused}");
    let now = client_steps(&gateway.url(), "-", &json!([["tools"]]));
    assert!(names(&now[0]).iter().any(|n| n.contains("read_graph")), "{:?}", now[0]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(count(&gateway, "memory.no_such_tool"), 1, "said once");
}

/// The same over stdio, where the client cannot start another session: the gateway the
/// official client spawned takes the edited `scopes` and `toolset` into its one session.
#[test]
fn the_stdio_clients_scopes_and_toolset_change_without_restarting_its_client() {
    let dir = common::scratch().join("gateway-tool-sets-stdio");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let settings = |toolsearch: Value| json!({"mcpServers": {"everything": everything, "memory": memory}, "toolsearch": toolsearch});
    let config = write_config(&dir, &settings(json!({"requires": {"everything": ["ops"]}, "scopes": ["ops"]})));
    let ready = dir.join("ready");
    let echo = json!({"query": "echo a message back"});
    let steps = json!([
        ["search_tool_by_category", echo],
        ["raw_tools"],
        ["touch", ready],
        ["wait_list_changed", 60],
        ["search_tool_by_category", echo],
        ["call", "everything.echo", {"message": "hidden now"}],
        ["raw_tools"],
        ["call", "memory.read_graph", {}]
    ]);
    let target = format!("stdio:{}:{}", config.display(), dir.join("state").display());
    let client = std::thread::spawn(move || client_mode_steps("legacy", &target, "-", &steps));
    wait_for(&ready);
    let toolset = json!({"pinned": ["memory.read_graph"]});
    write_config(&dir, &settings(json!({"requires": {"everything": ["ops"]}, "scopes": [], "toolset": toolset})));
    let out = client.join().unwrap();
    let listed = |step: &Value| step["text"].as_str().unwrap().contains("read_graph");

    assert!(out[0]["text"].as_str().unwrap().contains("everything.echo"), "{:?}", out[0]);
    assert!(!listed(&out[1]), "{:?}", out[1]);
    assert!(!out[3]["is_error"].as_bool().unwrap(), "told list_changed: {:?}", out[3]);
    assert!(!out[4]["text"].as_str().unwrap().contains("everything."), "{:?}", out[4]);
    assert!(out[5]["is_error"].as_bool().unwrap(), "{:?}", out[5]);
    assert!(!out[5]["text"].as_str().unwrap().contains("hidden now"), "{:?}", out[5]);
    assert!(listed(&out[6]), "pinned now: {:?}", out[6]);
    assert!(!out[7]["is_error"].as_bool().unwrap(), "{:?}", out[7]);
}

/// A caller a token identifies keeps its own scopes when `toolset` changes: its session's set
/// is made again from the new settings under them, and it is told `list_changed`.
#[test]
fn a_token_callers_session_takes_a_new_toolset_under_its_own_scopes() {
    let dir = common::scratch().join("gateway-tool-sets-token");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let settings = |toolset: Value| {
        json!({"mcpServers": {"everything": everything, "memory": memory}, "toolsearch": {
            "requires": {"everything": ["ops"]}, "scopes": [],
            "tokens": {"token-ops-0123456789abcdef": {"name": "ops", "scopes": ["ops"]}}, "toolset": toolset}})
    };
    let config = write_config(&dir, &settings(json!({})));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let (ready, go) = (dir.join("ready"), dir.join("go"));
    let echo = json!({"query": "echo a message back"});
    let steps = json!([
        ["tools"],
        ["touch", ready],
        ["wait_for_file", go],
        ["list_changed"],
        ["tools"],
        ["search_tool_by_category", echo],
        ["call", "everything.echo", {"message": "still mine"}]
    ]);
    let url = gateway.url();
    let client = std::thread::spawn(move || client_steps(&url, "token-ops-0123456789abcdef", &steps));
    wait_for(&ready);
    write_config(&dir, &settings(json!({"pinned": ["memory.read_graph"]})));
    let changed = gateway.wait_for_status("\"event\":\"tool_sets_changed\"", Duration::from_secs(60));
    assert_eq!(serde_json::from_str::<Value>(&changed).unwrap()["sessions_remade"], 1, "{changed}");
    std::fs::write(&go, "").unwrap();
    let out = client.join().unwrap();

    assert!(!names(&out[0]).iter().any(|n| n.contains("read_graph")), "{:?}", out[0]);
    assert!(out[3]["text"].as_str().unwrap().parse::<u32>().unwrap() >= 1, "list_changed: {out:?}");
    assert!(names(&out[4]).iter().any(|n| n.contains("read_graph")), "pinned now: {:?}", out[4]);
    assert!(out[5]["text"].as_str().unwrap().contains("everything.echo"), "its scopes kept: {:?}", out[5]);
    assert_eq!(out[6]["text"], "Echo: still mine", "{out:?}");
}

/// The log messages of a server the stdio client's new scopes hide stop coming: each is judged
/// by the caller's scopes when it is relayed, not by those it set its level with.
#[test]
fn a_hidden_servers_log_messages_stop_when_the_scopes_change() {
    let dir = common::scratch().join("gateway-tool-sets-logs");
    let chatty = json!({"command": common::python(),
                        "args": [common::repo().join("tests/mcp/hostile_server.py"), "chatty"]});
    let settings = |scopes: Value| json!({"mcpServers": {"chatty": chatty}, "toolsearch": {"requires": {"chatty": ["ops"]}, "scopes": scopes}});
    let config = write_config(&dir, &settings(json!(["ops"])));
    let ready = dir.join("ready");
    let steps = json!([
        ["set_level", "debug"],
        ["logs", 2],
        ["touch", ready],
        ["wait_list_changed", 60],
        ["logs", 1],
        ["logs", 3]
    ]);
    let target = format!("stdio:{}:{}", config.display(), dir.join("state").display());
    let client = std::thread::spawn(move || client_mode_steps("legacy", &target, "-", &steps));
    wait_for(&ready);
    write_config(&dir, &settings(json!([])));
    let out = client.join().unwrap();
    let seen = |i: usize| step_json(&out[i]).as_array().unwrap().len();

    assert!(seen(1) > 0, "the server's messages came while it was visible: {:?}", out[1]);
    assert!(!out[3]["is_error"].as_bool().unwrap(), "told list_changed: {:?}", out[3]);
    assert_eq!(seen(5), seen(4), "messages of a hidden server: {} then {}", seen(4), seen(5));
}
