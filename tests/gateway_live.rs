//! The gateway's config applied live: a server added to the config file while a client
//! session stays open becomes searchable and callable in that session (told `list_changed`),
//! a config that does not load is refused with the running one kept, a server removed is
//! stopped, one whose call timeout changed is restarted, the gateway's own call timeout bounds
//! the next call without a restart, SIGHUP reloads, and a config written in pieces is read once
//! it is whole. The official Python MCP client and the npm reference servers.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::gateway::{client_steps, http_get, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

fn ready(gateway: &HttpGateway) -> Value {
    serde_json::from_str(&http_get(&gateway.addr, "/readyz", &[]).1).unwrap()
}

fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count(gateway: &HttpGateway, text: &str) -> usize {
    gateway.status.lock().unwrap().iter().filter(|l| l.contains(text)).count()
}

#[test]
fn a_server_added_to_the_config_becomes_searchable_in_an_open_session() {
    let dir = common::scratch().join("gateway-live");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(&dir, &json!({"mcpServers": {"everything": everything}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let go = dir.join("go");
    let query = "create entities in the knowledge graph";
    let steps = json!([
        ["search_tool_by_category", {"query": query}],
        ["wait_for_file", go],
        ["list_changed"],
        ["search_tool_by_category", {"query": query}],
        ["call", "memory.read_graph", {}],
        ["call", "everything.echo", {"message": "still here"}]
    ]);
    let url = gateway.url();
    let client = std::thread::spawn(move || client_steps(&url, "-", &steps));
    wait_until("the client searched", || count(&gateway, "\"event\":\"request\"") >= 1);

    // A config that does not load is refused; the running one stays and still serves.
    std::fs::write(&config, "{\"mcpServers\": {\"everything\": ").unwrap();
    wait_until("config_error", || count(&gateway, "\"event\":\"config_error\"") >= 1);
    assert!(gateway.status.lock().unwrap().iter().any(|l| l.contains("config_error") && l.contains("gateway.json")));
    assert_eq!(ready(&gateway)["upstreams"]["everything"]["state"], "up");

    // The edit that adds server-memory: started, indexed, and the open session is told.
    let before = count(&gateway, "\"event\":\"indexed\"");
    write_config(&dir, &json!({"mcpServers": {"everything": everything, "memory": memory}}));
    wait_until("config_reloaded", || count(&gateway, "\"event\":\"config_reloaded\"") >= 1);
    wait_until("memory searchable", || {
        count(&gateway, "\"event\":\"indexed\"") > before && {
            let r = client_steps(&gateway.url(), "-", &json!([["search_tool_by_category", {"query": query}]]));
            r[0]["text"].as_str().unwrap().contains("memory.create_entities")
        }
    });
    let reloaded = gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(1));
    let reloaded: Value = serde_json::from_str(&reloaded).unwrap();
    assert_eq!((reloaded["added"].clone(), reloaded["removed"].clone()), (json!(["memory"]), json!([])));
    std::fs::write(&go, "").unwrap();
    let out = client.join().unwrap();
    let ids = |r: &Value| -> String { r["text"].as_str().unwrap().to_owned() };
    assert!(!ids(&out[0]).contains("memory."), "not there before: {out:?}");
    assert!(out[2]["text"].as_str().unwrap().parse::<u32>().unwrap() >= 1, "list_changed: {out:?}");
    assert!(ids(&out[3]).contains("memory.create_entities"), "searchable in the same session: {out:?}");
    assert!(!out[4]["is_error"].as_bool().unwrap(), "{out:?}");
    assert_eq!(out[5]["text"], "Echo: still here", "{out:?}");

    // Removing a server stops it and takes its tools away; SIGHUP reloads too.
    write_config(&dir, &json!({"mcpServers": {"memory": memory}}));
    wait_until("everything removed", || ready(&gateway)["upstreams"].get("everything").is_none());
    wait_until("reindexed", || {
        let r =
            client_steps(&gateway.url(), "-", &json!([["search_tool_by_category", {"query": "echo a message back"}]]));
        !r[0]["text"].as_str().unwrap().contains("everything.echo")
    });
    let reloads = count(&gateway, "\"event\":\"config_reloaded\"");
    std::process::Command::new("kill").args(["-HUP", &gateway.pid().to_string()]).status().unwrap();
    wait_until("reloaded on SIGHUP", || count(&gateway, "\"signal\":true") >= 1);
    assert_eq!(count(&gateway, "\"event\":\"config_reloaded\""), reloads + 1);

    // Whether a server is lazy is fixed when it starts: an edit to it restarts the server.
    let mut lazy = memory.clone();
    lazy["lazy"] = json!(true);
    write_config(&dir, &json!({"mcpServers": {"memory": lazy}}));
    wait_until("memory restarted", || count(&gateway, "\"changed\":[\"memory\"]") >= 1);
}

#[test]
fn check_starts_every_server_once_and_reports_what_is_wrong_with_an_exit_status() {
    let dir = common::scratch().join("gateway-check");
    let shifty = common::repo().join("tests/mcp/shifty_server.py");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {
            "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]},
            "shifty": {"command": common::python(), "args": [shifty]},
            "typo": {"command": "definitely-not-a-command-7d1e", "args": ["--token", "s3cr3t-value"]},
            "bare": {"command": "definitely-not-a-command-9f2c"}
        }}),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["--json", "gateway", "--check", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a server is down: the check fails");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server =
        |name: &str| report["servers"].as_array().unwrap().iter().find(|s| s["server"] == name).unwrap().clone();
    assert_eq!(report["ok"], false);
    let everything = server("everything");
    assert!(everything["up"].as_bool().unwrap() && everything["tools"].as_array().unwrap().iter().any(|t| t == "echo"));
    let typo = server("typo");
    assert!(
        !typo["up"].as_bool().unwrap() && typo["reason"].as_str().unwrap().contains("command was not found"),
        "{typo}"
    );
    let bare = server("bare")["reason"].to_string();
    assert!(bare.contains("the command `definitely-not-a-command-9f2c`: "), "named as written: {bare}");
    assert!(!report.to_string().contains("s3cr3t-value"), "credentials masked: {report}");
    let warnings = server("shifty")["warnings"].to_string();
    assert!(warnings.contains("add_numbers: looks injected") && warnings.contains("U+200B"), "{warnings}");
    // Without the broken server it passes.
    let ok = write_config(
        &dir.join("ok"),
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}}}),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--check", "--config", ok.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("everything: up"));
}

/// Call timeouts, the gateway's own `call_timeout_secs` and a server's, apply to the next call
/// once the edit is read: the server keeps running (its notes and process with it), and no
/// restart of the gateway is asked for.
#[test]
fn call_timeouts_bound_the_next_call_without_a_restart() {
    let dir = common::scratch().join("gateway-live-timeout");
    let notes = json!({"command": common::python(), "args": [common::repo().join("tests/mcp/notes_server.py")]});
    let file = |gateway: u64, own: Option<u64>| {
        let mut notes = notes.clone();
        if let Some(own) = own {
            notes["call_timeout_secs"] = json!(own);
        }
        json!({"mcpServers": {"notes": notes}, "toolsearch": {"call_timeout_secs": gateway}})
    };
    let config = write_config(&dir, &file(60, None));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let job = json!([["call", "notes.slow_job", {"seconds": 3}]]);
    let finishes = || {
        let done = client_steps(&gateway.url(), "-", &job).remove(0);
        assert!(!done["is_error"].as_bool().unwrap() && done["text"].as_str().unwrap().contains("job done"), "{done}");
    };
    let cut_within = |secs: u64| {
        let cut = client_steps(&gateway.url(), "-", &job).remove(0);
        assert!(cut["is_error"].as_bool().unwrap(), "{cut}");
        assert!(cut["text"].as_str().unwrap().contains(&format!("within {secs} s")), "{cut}");
    };
    let mut reloads = 0;
    let mut edit = |gateway_secs: u64, own: Option<u64>| {
        write_config(&dir, &file(gateway_secs, own));
        reloads += 1;
        wait_until("config_reloaded", || count(&gateway, "\"event\":\"config_reloaded\"") >= reloads);
    };
    let remember =
        json!([["call", "notes.remember", {"key": "k", "text": "kept"}], ["call", "notes.recall", {"key": "k"}]]);
    let before = client_steps(&gateway.url(), "-", &remember).remove(1);
    finishes();

    edit(1, None);
    cut_within(1);
    edit(60, Some(2));
    cut_within(2);
    edit(60, None);
    finishes();

    let after = client_steps(&gateway.url(), "-", &json!([["call", "notes.recall", {"key": "k"}]])).remove(0);
    let held = |r: &Value| serde_json::from_str::<Value>(r["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (held(&after)["text"].clone(), held(&after)["pid"].clone()),
        (json!("kept"), held(&before)["pid"].clone())
    );
    assert_eq!(count(&gateway, "config_restart_needed"), 0);
    assert_eq!(count(&gateway, "\"changed\":[\"notes\"]"), 0);
}

/// A new `limits.max_result_bytes` applies to the next call: every server restarts with it (the
/// bounds on what a server may send are fixed when it starts), and no restart of the gateway is
/// asked for.
#[test]
fn a_new_result_limit_applies_to_the_next_call_without_a_restart() {
    let dir = common::scratch().join("gateway-live-result-limit");
    let file = |limit: u64| {
        json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
               "toolsearch": {"limits": {"max_result_bytes": limit}}})
    };
    let config = write_config(&dir, &file(1 << 20));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let long = "x".repeat(4000);
    let echo = || {
        let step =
            client_steps(&gateway.url(), "-", &json!([["call", "everything.echo", {"message": long}]])).remove(0);
        step["text"].as_str().unwrap().to_owned()
    };
    assert!(echo().contains(&long), "the whole result within 1 MiB");
    write_config(&dir, &file(1000));
    wait_until("config_reloaded", || count(&gateway, "\"event\":\"config_reloaded\"") >= 1);
    let cut = echo();
    assert!(!cut.contains(&long) && cut.contains("over the limit of 1000 bytes"), "{}", &cut[..cut.len().min(300)]);
    write_config(&dir, &file(1 << 20));
    wait_until("config_reloaded", || count(&gateway, "\"event\":\"config_reloaded\"") >= 2);
    assert!(echo().contains(&long), "the whole result again");
    assert_eq!(count(&gateway, "\"changed\":[\"everything\"]"), 2, "the server restarted with each limit");
    assert_eq!(count(&gateway, "config_restart_needed"), 0);
}

/// A config written slowly, in pieces (as an editor or a sync tool may, after truncating it),
/// is read once it has held still: the watch sees it change while it is half written, waits,
/// and reloads the whole once, with no `config_error` for the pieces.
#[test]
fn a_config_written_in_pieces_is_read_once_it_is_whole() {
    use std::io::Write;
    let dir = common::scratch().join("gateway-live-pieces");
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let config = write_config(&dir, &json!({"mcpServers": {"everything": everything}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let reloads = count(&gateway, "\"event\":\"config_reloaded\"");
    let whole = json!({"mcpServers": {"everything": everything}, "toolsearch": {"call_timeout_secs": 61}});
    let whole = serde_json::to_string_pretty(&whole).unwrap();
    // 40 pieces 30 ms apart: 1.2 s of writing, longer than the watch's look every 0.5 s, each
    // pause shorter than the 0.1 s the file must hold still.
    let mut file = std::fs::File::create(&config).unwrap();
    for piece in whole.as_bytes().chunks(whole.len().div_ceil(40)) {
        file.write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    drop(file);
    gateway.wait_for_statuses("\"event\":\"config_reloaded\"", reloads + 1, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    let status = gateway.status.lock().unwrap().join("\n");
    assert_eq!(count(&gateway, "config_error"), 0, "{status}");
    assert_eq!(count(&gateway, "\"event\":\"config_reloaded\""), reloads + 1, "{status}");
}
