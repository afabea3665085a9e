//! A starting gateway and the client waiting for its `initialize` answer: clients give a server
//! 10 (Codex) to 30 s (Claude Desktop), so one server slow to start must not hold back the
//! others (`toolsearch.startup_wait_secs`), and `gateway --build`, which no client waits for,
//! still waits for every server.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::probe::probe;
use common::{python, repo, write_config};
use serde_json::{json, Value};

/// The hand-written server of tests/mcp/rude_server.py, started after `delay` seconds (a
/// shell word: a number, or a command substitution).
fn rude_after(delay: impl std::fmt::Display) -> Value {
    let server = repo().join("tests/mcp/rude_server.py");
    let script = format!("sleep {delay}; exec '{}' '{}' schemas", python().display(), server.display());
    json!({"command": "sh", "args": ["-c", script]})
}

#[test]
fn a_server_slow_to_start_is_added_when_it_is_up_without_holding_the_clients_initialize() {
    let dir = common::scratch().join("gw-slow-start");
    let servers = json!({"quick": rude_after(0), "slow": rude_after(8)});
    let steps = json!([
        {"call": "slow.set_alarm", "arguments": {"hour": 7}},
        {"call": "quick.set_alarm", "arguments": {"hour": 7}},
        {"tool": "slow__set_alarm", "arguments": {"hour": 7}},
        {"search": "set an alarm clock for a time of day"},
        {"sleep": 14},
        {"call": "slow.set_alarm", "arguments": {"hour": 8}},
        {"search": "set an alarm clock for a time of day"},
    ]);
    let p = probe(&dir, servers.clone(), json!({"startup_wait_secs": 1, "connect_timeout_secs": 30}), steps);
    // Served once `quick` was up and the wait was over, not when `slow` came up 8 s in.
    let ready = p.out["ready_s"].as_f64().unwrap();
    assert!(ready < 6.0, "initialize answered after {ready} s: {}", p.out);
    // Nothing of `slow` is listed yet (a first start keeps nothing): a call to one of its tools
    // says it is starting, not that there is no such tool, and a search says more may come.
    let starting = "MCP server \"slow\" is unavailable: it is still starting";
    let first = &p.step(0);
    assert!(first["is_error"].as_bool().unwrap() && first["json"]["code"] == "UNAVAILABLE", "{first}");
    assert!(first["json"]["message"].as_str().unwrap().contains(starting), "{first}");
    assert!(!p.step(1)["is_error"].as_bool().unwrap(), "{}", p.step(1));
    // Called by a client's spelling, it is still `slow`'s: never read as `quick`'s tool of
    // the same name.
    let spelled = &p.step(2);
    assert!(spelled["is_error"].as_bool().unwrap() && spelled["json"]["code"] == "UNAVAILABLE", "{spelled}");
    let message = spelled["json"]["message"].as_str().unwrap();
    assert!(message.contains("no tool \"slow.set_alarm\" is listed yet") && message.contains(starting), "{message}");
    let found = &p.step(3)["json"];
    assert_eq!(found["results"][0]["tool_id"], "quick.set_alarm", "{found}");
    assert_eq!(found["unavailable"][0]["unlisted_tools"], "slow.*", "{found}");
    assert!(found["unavailable"][0]["reason"].as_str().unwrap().contains(starting), "{found}");
    // Said to be starting, not down; indexed and callable once it was up.
    let starting = p.events_of("upstream_starting");
    assert!(starting.iter().any(|e| e["server"] == "slow"), "{:?}", p.events);
    assert!(p.events_of("upstream_down").is_empty(), "{:?}", p.events_of("upstream_down"));
    assert!(p.events_of("upstream_up").iter().any(|e| e["server"] == "slow"), "{:?}", p.events);
    assert!(!p.step(5)["is_error"].as_bool().unwrap(), "{}", p.step(5));
    assert!(p.step(6)["json"].get("unavailable").is_none(), "{}", p.step(6));

    // `--build` has no client waiting: it waits for `slow`, whose tools are in what it built.
    let build = dir.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let config = write_config(&build, &json!({"mcpServers": servers, "toolsearch": {"startup_wait_secs": 1}}));
    common::gateway::gateway_build(&config, &build.join("state"));
    let expand = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .arg("expand")
        .arg(build.join("state/index"))
        .arg("slow.set_alarm")
        .output()
        .unwrap();
    assert!(expand.status.success(), "{}", String::from_utf8_lossy(&expand.stderr));
}

/// On a later start, a server slow to start has its tools from its last listing (kept under
/// the state dir) indexed while it starts, held unavailable: a call is told the server is still
/// starting, not that no such tool exists, and is answered once it is up.
#[test]
fn a_server_slow_to_start_again_is_said_to_be_starting_from_its_kept_listing() {
    let dir = common::scratch().join("gw-slow-again");
    std::fs::create_dir_all(&dir).unwrap();
    // The delay is read from a file: the entry itself stays the same, so its listing is kept.
    let delay = dir.join("delay");
    std::fs::write(&delay, "0").unwrap();
    let servers = json!({"quick": rude_after(0), "slow": rude_after(format!("$(cat '{}')", delay.display()))});
    let settings = json!({"startup_wait_secs": 1, "connect_timeout_secs": 30});
    let call = |hour: u32| json!({"call": "slow.set_alarm", "arguments": {"hour": hour}});
    let first = probe(&dir, servers.clone(), settings.clone(), json!([call(6)]));
    assert!(!first.step(0)["is_error"].as_bool().unwrap(), "{}", first.step(0));

    std::fs::write(&delay, "8").unwrap();
    let search = json!({"search": "set an alarm clock for a time of day"});
    let p = probe(&dir, servers, settings, json!([call(7), search, {"sleep": 14}, call(8), search]));
    let ready = p.out["ready_s"].as_f64().unwrap();
    assert!(ready < 6.0, "initialize answered after {ready} s: {}", p.out);
    let starting = p.step(0).to_string();
    assert!(starting.contains("UNAVAILABLE") && starting.contains("it is still starting"), "{starting}");
    // A search meanwhile offers what is up, and says its match on `slow` is held back and why.
    let found = &p.step(1)["json"];
    let ids =
        |answer: &Value| answer["results"].as_array().unwrap().iter().map(|r| r["tool_id"].clone()).collect::<Vec<_>>();
    assert!(
        ids(found).contains(&json!("quick.set_alarm")) && !ids(found).contains(&json!("slow.set_alarm")),
        "{found}"
    );
    let held = &found["unavailable"][0];
    assert!(held["tool_ids"].as_array().unwrap().contains(&json!("slow.set_alarm")), "{found}");
    assert!(
        held["reason"].as_str().unwrap().contains("MCP server \"slow\" is unavailable: it is still starting"),
        "{found}"
    );
    assert!(!p.step(3)["is_error"].as_bool().unwrap(), "{}", p.step(3));
    let found = &p.step(4)["json"];
    assert!(ids(found).contains(&json!("slow.set_alarm")) && found.get("unavailable").is_none(), "{found}");
}

/// A server with nothing listed yet is named as starting only to a token with its scopes: one
/// without them gets what any unknown id gets, and no word of it in a search or list.
#[test]
fn a_server_with_nothing_listed_yet_is_named_only_to_tokens_with_its_scopes() {
    let dir = common::scratch().join("gw-pending-scopes");
    let servers = json!({"quick": rude_after(0), "slow": rude_after(120)});
    let tokens =
        json!({"tok-full": {"name": "full", "scopes": ["alarms"]}, "tok-none": {"name": "none", "scopes": []}});
    let settings = json!({"requires": {"slow": ["alarms"]}, "tokens": tokens, "startup_wait_secs": 1,
        "connect_timeout_secs": 150});
    let config = write_config(&dir, &json!({"mcpServers": servers, "toolsearch": settings}));
    let gateway = common::gateway::HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let steps = json!([["call", "slow.set_alarm", {"hour": 7}],
        ["search_tool_by_category", {"query": "set an alarm clock for a time of day"}], ["list", {}]]);
    let full = common::gateway::client_steps(&gateway.url(), "tok-full", &steps);
    assert!(full[0]["is_error"].as_bool().unwrap() && full[0]["text"].as_str().unwrap().contains("UNAVAILABLE"));
    assert!(full[0]["text"].as_str().unwrap().contains("still starting"), "{}", full[0]);
    for answer in &full[1..] {
        let body: Value = serde_json::from_str(answer["text"].as_str().unwrap()).unwrap();
        assert_eq!(body["unavailable"][0]["unlisted_tools"], "slow.*", "{body}");
    }
    let none = common::gateway::client_steps(&gateway.url(), "tok-none", &steps);
    assert!(none[0]["text"].as_str().unwrap().contains("TOOL_NOT_FOUND"), "{}", none[0]);
    for (i, answer) in none.iter().enumerate() {
        let text = answer["text"].as_str().unwrap();
        assert!(!text.contains("unavailable") && !text.contains("starting"), "{text}");
        // The call's refusal repeats the id it was asked; the search and the list name nothing.
        assert!(i == 0 || !text.contains("slow"), "{text}");
    }
}

/// The wait is a setting with bounds like the other times, and a bad one is refused naming it.
#[test]
fn a_startup_wait_out_of_range_is_refused_naming_the_field() {
    let dir = common::scratch().join("gw-startup-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"quick": rude_after(0)}, "toolsearch": {"startup_wait_secs": 100000}}),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--check", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("toolsearch.startup_wait_secs: 100000 is out of range"), "{err}");
}

/// The model loads while the servers start: one that does not load ends the start at once,
/// naming its file, not after the servers have been waited for (30 s here), and the servers
/// started meanwhile are ended with it.
#[test]
fn a_model_that_does_not_load_ends_the_start_at_once_naming_the_file() {
    let dir = common::scratch().join("gw-bad-model");
    let model = common::copy_model("tiny-cls", "gw-cut-model");
    let weights = std::fs::read(model.join("model.onnx")).unwrap();
    std::fs::write(model.join("model.onnx"), &weights[..weights.len() / 3]).unwrap();
    let marker = "a-server-that-never-answers";
    let hung = json!({"command": python(), "args": ["-c", "import time; time.sleep(600)", marker]});
    let config = write_config(&dir, &json!({"mcpServers": {"hung": hung}, "toolsearch": {"connect_timeout_secs": 30}}));
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .arg("--model")
        .arg(&model)
        .args(["gateway", "--config", config.to_str().unwrap(), "--state"])
        .arg(dir.join("state"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let named = format!("{}: does not load", model.join("model.onnx").display());
    assert!(err.contains(&named), "{err}");
    assert!(took < Duration::from_secs(10), "refused after {took:?}: {err}");
    assert!(common::gateway::settles(marker, 0, Duration::from_secs(5)), "the starting server was left running");
}
