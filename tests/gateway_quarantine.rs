//! Quarantine comes before calls (#60 T1, T6): a server that reconnects, or a lazy server
//! that starts, with a changed definition gets no call in its new phase before the pins judged
//! it; and an approval names the definition the operator reviewed. The upstream is
//! `hostile_server.py phases` (its `act` turns destructive, with an injected description, in
//! phase 2; every call it runs is logged with its phase); the client is the official Python SDK.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::gateway::{client_steps, settles, HttpGateway};
use common::{python, write_config};
use serde_json::{json, Value};

fn hostile() -> std::path::PathBuf {
    common::repo().join("tests/mcp/hostile_server.py")
}

/// The phases of the calls `act` ran, from the server's own log.
fn ran(flag: &Path) -> Vec<String> {
    let log = format!("{}.log", flag.display());
    std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_owned).collect()
}

fn toolsearch(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().unwrap()
}

#[test]
fn no_call_runs_a_reconnected_servers_changed_tool_before_the_pins_judge_it() {
    let dir = common::scratch().join("gateway-quarantine-eager");
    let flag = dir.join("phase2");
    let config =
        write_config(&dir, &json!({"mcpServers": {"ph": {"command": python(), "args": [hostile(), "phases", &flag]}}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    // Eight callers keep calling `act` while the server restarts in its next phase.
    let steps = client_steps(
        &gateway.url(),
        "-",
        &json!([["call", "ph.act", {}], ["call", "ph.restart", {}], ["burst", "ph.act", {}, 8, 6.0]]),
    );
    assert_eq!(steps[0]["text"], "acted in phase1", "{steps:?}");
    let seen: Value = serde_json::from_str(steps[2]["text"].as_str().unwrap()).unwrap();
    let phases = ran(&flag);
    assert!(!phases.iter().any(|p| p == "phase2"), "calls ran the changed tool: {phases:?}; answers {seen}");
    // It reconnected, was judged and held; the callers were told so.
    gateway.wait_for_status("\"event\":\"tool_held\"", Duration::from_secs(10));
    assert!(seen.as_object().unwrap().keys().any(|k| k.contains("is held")), "{seen}");
}

#[test]
fn a_lazy_servers_first_call_is_checked_against_the_listing_it_gives_when_it_starts() {
    let dir = common::scratch().join("gateway-quarantine-lazy");
    let flag = dir.join("phase2");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"ph": {"command": python(), "args": [hostile(), "phases", &flag], "lazy": true}},
            "toolsearch": {"idle_stop_secs": 1}
        }),
    );
    let marker = flag.to_str().unwrap();
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    assert!(settles(marker, 0, Duration::from_secs(20)), "listed, then stopped when idle");
    let first = client_steps(&gateway.url(), "-", &json!([["call", "ph.act", {}]]));
    assert_eq!(first[0]["text"], "acted in phase1", "{first:?}");
    assert!(settles(marker, 0, Duration::from_secs(20)), "stopped when idle again");

    // While it is stopped, its next version is installed: the kept listing is stale.
    std::fs::write(&flag, "").unwrap();
    let second = client_steps(&gateway.url(), "-", &json!([["call", "ph.act", {}]]));
    assert!(second[0]["is_error"].as_bool().unwrap(), "{second:?}");
    assert!(second[0]["text"].as_str().unwrap().contains("is held"), "{second:?}");
    assert_eq!(ran(&flag), ["phase1"], "the changed tool ran");
}

#[test]
fn approve_pins_only_the_definition_the_operator_reviewed() {
    let dir = common::scratch().join("gateway-quarantine-approve");
    let flag = dir.join("phase2");
    let state = dir.join("state");
    let config =
        write_config(&dir, &json!({"mcpServers": {"ph": {"command": python(), "args": [hostile(), "phases", &flag]}}}));
    let (config_s, state_s) = (config.to_str().unwrap(), state.to_str().unwrap());
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let uri = "toolsearch://ph/phase://thing";
    let complete = json!(["complete", "resource", "toolsearch://ph/phase://{item}", "item", "t", {}]);
    let before = client_steps(&gateway.url(), "-", &json!([["read", uri], complete, ["call", "ph.restart", {}]]));
    assert!(before[0]["text"].as_str().unwrap().contains("read in phase1"), "{before:?}");
    assert!(before[1]["text"].as_str().unwrap().contains("phase1-item"), "{before:?}");
    gateway.wait_for_status("\"event\":\"tool_held\"", Duration::from_secs(20));
    gateway.wait_for_status("ph:template:phase://{item}", Duration::from_secs(20));

    // The held template (#60 T15): neither read through nor completed.
    let after = client_steps(&gateway.url(), "-", &json!([["read", uri], complete]));
    assert!(after.iter().all(|a| a["is_error"] == true), "{after:?}");
    assert!(!after.iter().any(|a| a["text"].as_str().unwrap().contains("phase2")), "{after:?}");

    // The operator reviews what is held: its digest is printed with it.
    let held = toolsearch(&["gateway", "held", "--config", config_s, "--state", state_s]);
    let text = String::from_utf8_lossy(&held.stdout).to_string();
    let reviewed = text.split("digest ").nth(1).unwrap()[..16].to_owned();
    assert!(text.contains("ph.act (changed)"), "{text}");

    // Without a digest nothing is approved, and the held definition is shown with its digest.
    let bare = toolsearch(&["gateway", "approve", "ph.act", "--config", config_s, "--state", state_s]);
    let said = String::from_utf8_lossy(&bare.stderr);
    assert!(!bare.status.success() && said.contains(&reviewed) && said.contains("--digest"), "{said}");

    // The server moves on to another definition before the approval lands: the gateway
    // judges and holds that one; the reviewed digest no longer matches, and nothing is pinned.
    client_steps(&gateway.url(), "-", &json!([["call", "ph.restart", {}]]));
    gateway.wait_for_status("Version 3", Duration::from_secs(20));
    let pins_before = std::fs::read(state.join("pins.json")).unwrap();
    let late =
        toolsearch(&["gateway", "approve", "ph.act", "--digest", &reviewed, "--config", config_s, "--state", state_s]);
    let said = String::from_utf8_lossy(&late.stderr).to_string();
    assert!(!late.status.success() && said.contains("changed again") && said.contains("Version 3"), "{said}");
    assert_eq!(std::fs::read(state.join("pins.json")).unwrap(), pins_before, "nothing pinned");
    assert!(ran(&flag).is_empty(), "{:?}", ran(&flag));

    // What is held now, reviewed and approved by its digest, is served.
    let digest = said.split("digest ").last().unwrap()[..16].to_owned();
    assert_ne!(digest, reviewed);
    let ok =
        toolsearch(&["gateway", "approve", "ph.act", "--digest", &digest, "--config", config_s, "--state", state_s]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let after = client_steps(&gateway.url(), "-", &json!([["call", "ph.act", {}]]));
        if after[0]["text"] == "acted in phase3" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{after:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
