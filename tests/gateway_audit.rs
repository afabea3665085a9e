//! `toolsearch gateway audit`: an operator reads back the trail a running gateway wrote, across
//! its rotated files, filtered by caller, tool, kind and time. The official Python MCP client
//! drives the gateway in front of the npm `everything` reference server. (A fleet's trail read
//! from PostgreSQL: `gateway_fleet`.) Operator commands end quietly when their reader stops.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Output};

use common::gateway::{client_steps, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

fn audit(config: &std::path::Path, state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "audit", "--config"])
        .arg(config)
        .arg("--state")
        .arg(state)
        .args(args)
        .output()
        .unwrap()
}

/// The `--json` lines `args` print.
fn lines(config: &std::path::Path, state: &std::path::Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json"];
    all.extend(args);
    let out = audit(config, state, &all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn an_operator_reads_the_trail_back_by_caller_tool_kind_and_time_across_rotated_files() {
    let dir = common::scratch().join("gateway-audit");
    // Small files, so the trail rotates while the clients work.
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
            "toolsearch": {"tokens": {"agent-secret": {"name": "agent", "scopes": []},
                                      "other-secret": {"name": "other", "scopes": []}},
                           "audit": {"max_bytes": 2048, "keep": 20}}
        }),
    );
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let mut steps = vec![
        json!(["search_tool_by_category", {"query": "repeat a message back"}]),
        json!(["expand_tool", {"tool_id": "everything.echo"}]),
    ];
    steps.extend((0..12).map(|i| json!(["call", "everything.echo", {"message": format!("m{i}")}])));
    steps.push(json!(["call", "everything.get-sum", {"a": 1, "b": 2}]));
    client_steps(&gateway.url(), "agent-secret", &json!(steps));
    client_steps(&gateway.url(), "other-secret", &json!([["call", "everything.echo", {"message": "hi"}]]));
    let audit_dir = state.join("audit");
    assert!(audit_dir.join("trail.1.jsonl").exists(), "the trail rotated");

    // Everything, oldest first, exactly the lines of the files from the oldest to the current.
    let mut written = Vec::new();
    for path in toolsearch::mcp::trail::files(&audit_dir).unwrap() {
        written
            .extend(std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
    }
    let all = lines(&config, &state, &[]);
    assert_eq!(all, written);
    let times: Vec<u64> = all.iter().map(|l| l["time"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");

    // Filters combine.
    let echo = lines(&config, &state, &["--token", "agent", "--tool", "everything.echo", "--event", "call"]);
    assert_eq!(echo.len(), 12, "{echo:?}");
    assert!(echo.iter().all(|l| l["token"] == "agent" && l["outcome"] == "ok"), "{echo:?}");
    let other = lines(&config, &state, &["--token", "other"]);
    assert_eq!(other.iter().filter(|l| l["event"] == "call").count(), 1, "{other:?}");
    let searches = lines(&config, &state, &["--event", "search"]);
    assert_eq!(searches.len(), 1);
    assert_eq!(searches[0]["query"], "repeat a message back");
    let session = searches[0]["session"].as_str().unwrap();
    let of_session = lines(&config, &state, &["--session", session]);
    assert!(of_session.len() >= 15 && of_session.iter().all(|l| l["token"] == "agent"), "{of_session:?}");
    assert_eq!(lines(&config, &state, &["--last", "3"]), all[all.len() - 3..]);
    let t = echo[5]["time"].as_u64().unwrap();
    let at = |l: &Value| l["time"].as_u64().unwrap();
    let later = lines(&config, &state, &["--since", &t.to_string(), "--tool", "everything.echo", "--event", "call"]);
    let want: Vec<&Value> = echo.iter().chain(&other).filter(|l| l["event"] == "call" && at(l) >= t).collect();
    assert_eq!(later.iter().collect::<Vec<_>>(), want);
    assert!(later.len() >= 7 && later.contains(&echo[5]), "{later:?}");
    let before = lines(&config, &state, &["--until", &t.to_string(), "--token", "agent"]);
    assert_eq!(
        before.iter().collect::<Vec<_>>(),
        all.iter().filter(|l| l["token"] == "agent" && at(l) <= t).collect::<Vec<_>>()
    );
    assert_eq!(lines(&config, &state, &["--since", "1h"]), all, "all written within the hour");

    // Nothing matches: no line, said on stderr, success.
    let out = audit(&config, &state, &["--tool", "everything.nothing"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no trail line matches"), "{out:?}");

    // Without --json, one readable line each: when, who, session, what.
    let out = audit(&config, &state, &["--tool", "everything.get-sum"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains("  call  ")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("Z  agent  ") && line.contains("  everything.get-sum  ok  ") && line.ends_with(" ms"),
        "{line}"
    );

    // A time that is none: exit 2 naming the flag and the forms it takes.
    let out = audit(&config, &state, &["--since", "yesterday"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--since") && err.contains("\"yesterday\" is not a time") && err.contains("RFC 3339"),
        "{err}"
    );
    // A directory holding no trail is said to be one, not taken for an empty trail.
    let out = audit(&config, &dir.join("elsewhere"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("no audit trail in ") && err.contains("elsewhere/audit"), "{err}");
    // A reader that stops reading (`| head -1`) ends an operator command quietly, never a panic.
    for verb in ["audit", "held"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolsearch"));
        command.args(["gateway", verb, "--config"]).arg(&config).arg("--state").arg(&state);
        let out = common::with_stdout_closed(&mut command);
        assert!(out.status.success() && out.stderr.is_empty(), "{verb}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A replica's own trail dir, by --audit-dir: here the same files.
    assert_eq!(
        lines(&config, &state, &["--audit-dir", audit_dir.to_str().unwrap(), "--last", "1"]),
        all[all.len() - 1..]
    );
    drop(gateway);
}
