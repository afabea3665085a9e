//! The embedding model changed under a running gateway: a `model` edit in the config is loaded,
//! every tool embedded again with it and the index swapped, while a client session stays open
//! and is served throughout; a model that cannot be loaded is refused with the running one kept;
//! `--model` on the command line outranks the config; and a replica follows the shared index
//! to the model it was rebuilt with. The official Python client against a server written with
//! the Python SDK.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::gateway::{client_steps, gateway_build, step_json, HttpGateway};
use common::{python, write_config};
use serde_json::{json, Value};
use toolsearch::embed::{MODEL_ID, TOOLS_MODEL_ID};

/// A gateway config in `dir` over the notes server, naming `model`.
fn config(dir: &Path, model: &str) -> PathBuf {
    let notes = common::repo().join("tests/mcp/notes_server.py");
    write_config(
        dir,
        &json!({"mcpServers": {"notes": {"command": python(), "args": [notes, "stdio"]}}, "toolsearch": {"model": model}}),
    )
}

/// The gateway's status lines holding `text`, parsed.
fn events(gateway: &HttpGateway, text: &str) -> Vec<Value> {
    let lines = gateway.status.lock().unwrap().clone();
    lines.iter().filter(|l| l.contains(text)).filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never came", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The first tool a search step found.
fn first(step: &Value) -> String {
    step_json(step)["results"][0]["tool_id"].as_str().unwrap_or_default().to_owned()
}

/// A gateway over the notes server with the stock model, in the scratch directory `name`: the
/// directory, the config's path and the gateway.
fn start_stock(name: &str) -> (PathBuf, PathBuf, HttpGateway) {
    let dir = common::scratch().join(name);
    let path = config(&dir, "stock");
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    (dir, path, gateway)
}

#[test]
fn a_model_edited_in_the_config_is_loaded_and_every_tool_embedded_again_while_a_session_is_served() {
    let (dir, path, gateway) = start_stock("gateway-model");
    let state = dir.join("state");
    let indexed = events(&gateway, "\"event\":\"indexed\"");
    assert_eq!(indexed.len(), 1, "{indexed:?}");
    assert_eq!(indexed[0]["model"], MODEL_ID);

    let (ready, go) = (dir.join("ready"), dir.join("go"));
    let remember = json!({"query": "remember a note under a key"});
    let steps = json!([
        ["search_tool_by_category", remember],
        ["touch", ready],
        ["wait_for_file", go],
        ["search_tool_by_category", remember],
        ["call", "notes.remember", {"key": "k", "text": "t"}]
    ]);
    let url = gateway.url();
    let client = std::thread::spawn(move || client_steps(&url, "-", &steps));
    wait_for(&ready);

    // A directory that holds no model: refused, naming the setting; the running model is kept
    // (the rebuild the edit brings reuses every vector).
    let empty = dir.join("not-a-model");
    std::fs::create_dir_all(&empty).unwrap();
    let bad = |timeout: u64| {
        let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        c["toolsearch"] = json!({"model": empty, "call_timeout_secs": timeout});
        write_config(&dir, &c);
    };
    bad(60);
    let refused = gateway.wait_for_status("toolsearch.model", Duration::from_secs(60));
    assert!(refused.contains("config_error") && refused.contains("the running model is kept"), "{refused}");
    gateway.wait_for_statuses("\"event\":\"indexed\"", 2, Duration::from_secs(60));
    let kept = &events(&gateway, "\"event\":\"indexed\"")[1];
    assert_eq!((&kept["model"], &kept["embedded"]), (&json!(MODEL_ID), &json!(0)), "{kept}");
    // Not taken as running: the next reload (another edit) tries it again.
    bad(61);
    gateway.wait_for_statuses("toolsearch.model", 2, Duration::from_secs(60));
    gateway.wait_for_statuses("\"event\":\"indexed\"", 3, Duration::from_secs(60));

    // The tool-trained model: loaded, and every tool embedded again with it.
    config(&dir, "tools");
    let loaded = gateway.wait_for_status("\"event\":\"model_loaded\"", Duration::from_secs(60));
    assert!(loaded.contains(TOOLS_MODEL_ID), "{loaded}");
    gateway.wait_for_statuses("\"event\":\"indexed\"", 4, Duration::from_secs(60));
    let again = &events(&gateway, "\"event\":\"indexed\"")[3];
    assert_eq!((&again["model"], &again["reused"]), (&json!(TOOLS_MODEL_ID), &json!(0)), "{again}");
    assert_eq!(again["embedded"].as_u64(), again["tools"].as_u64().map(|t| t + 1), "every tool and its node: {again}");
    std::fs::write(&go, "").unwrap();
    let out = client.join().unwrap();

    // One session throughout, answered before and after.
    assert_eq!(first(&out[0]), "notes.remember", "{:?}", out[0]);
    assert_eq!(first(&out[3]), "notes.remember", "{:?}", out[3]);
    assert_eq!(out[4]["text"], "remembered k", "{:?}", out[4]);
    let statuses = gateway.status.lock().unwrap().join("\n");
    assert!(!statuses.contains("config_restart_needed") && !statuses.contains("index_error"), "{statuses}");
    drop(gateway);

    // The index on disk records the new model: querying it with the old one is refused.
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["search", state.join("index").to_str().unwrap(), "remember a note", "--model", "stock"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(TOOLS_MODEL_ID) && err.contains(MODEL_ID), "{err}");
}

#[test]
fn a_replica_follows_the_shared_index_to_its_new_model_and_the_command_line_outranks_the_config() {
    let dir = common::scratch().join("gateway-model-replica");
    let state = dir.join("state");
    let path = config(&dir, "stock");
    gateway_build(&path, &state);
    let replica = HttpGateway::start(&path, &state, &["--json", "--replica"]);
    let remember = json!([["search_tool_by_category", {"query": "remember a note under a key"}]]);
    assert_eq!(first(&client_steps(&replica.url(), "-", &remember)[0]), "notes.remember");

    // Its own config's edit changes nothing for it, and says so; the build applies it.
    config(&dir, "tools");
    let note = replica.wait_for_status("\"event\":\"config_note\"", Duration::from_secs(60));
    assert!(note.contains("the model the shared index records"), "{note}");
    gateway_build(&path, &state);
    replica.wait_for_status("\"event\":\"index_reloaded\"", Duration::from_secs(60));
    assert_eq!(first(&client_steps(&replica.url(), "-", &remember)[0]), "notes.remember");
    let statuses = replica.status.lock().unwrap().join("\n");
    assert!(!statuses.contains("index_error") && !statuses.contains("config_error"), "{statuses}");

    // A gateway told `--model stock` keeps it whatever the config names.
    let pinned = dir.join("pinned");
    std::fs::create_dir_all(&pinned).unwrap();
    let path = config(&pinned, "tools");
    let gateway = HttpGateway::start(&path, &pinned.join("state"), &["--json", "--model", "stock"]);
    config(&pinned, "stock");
    let note = gateway.wait_for_status("\"event\":\"config_note\"", Duration::from_secs(60));
    assert!(note.contains("--model on the command line"), "{note}");
    gateway.wait_for_statuses("\"event\":\"indexed\"", 2, Duration::from_secs(60));
    assert!(events(&gateway, "\"event\":\"indexed\"").iter().all(|e| e["model"] == MODEL_ID));
    assert!(events(&gateway, "model_loaded").is_empty());
}

/// A model edited in while there is nothing to index (here the edit also swaps the only server
/// for one that does not start): loaded, the index on disk keeps serving with the model it was
/// built with, nothing is refused, and the next build that has tools embeds them with the new
/// model.
#[test]
fn a_model_edited_in_with_no_tools_listed_embeds_the_next_build_that_has_tools() {
    let (dir, _, gateway) = start_stock("gateway-model-empty");
    let down = json!({"command": "/bin/false"});
    write_config(&dir, &json!({"mcpServers": {"down": down}, "toolsearch": {"model": "tools"}}));
    gateway.wait_for_status("\"event\":\"model_loaded\"", Duration::from_secs(60));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    let remember = json!([["search_tool_by_category", {"query": "remember a note under a key"}]]);
    let out = client_steps(&gateway.url(), "-", &remember);
    assert!(step_json(&out[0])["results"].is_array(), "still answered: {:?}", out[0]);

    config(&dir, "tools");
    gateway.wait_for_statuses("\"event\":\"indexed\"", 2, Duration::from_secs(60));
    let again = &events(&gateway, "\"event\":\"indexed\"")[1];
    assert_eq!((&again["model"], &again["reused"]), (&json!(TOOLS_MODEL_ID), &json!(0)), "{again}");
    assert_eq!(first(&client_steps(&gateway.url(), "-", &remember)[0]), "notes.remember");
    let statuses = gateway.status.lock().unwrap().join("\n");
    assert!(!statuses.contains("index_error") && !statuses.contains("config_error"), "{statuses}");
}
