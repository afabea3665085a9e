//! `toolsearch gateway` in front of upstreams that do what real servers do and the SDKs would
//! not: a hand-written MCP server (tests/mcp/rude_server.py) with old-style and uncompilable
//! schemas, tools without schemas, tool lists that page forever or are full of bad tools, and
//! answers too large to carry; and a front that closes idle kept-alive connections
//! (tests/mcp/closing_front.py). The official Python MCP SDK client drives the gateway
//! (tests/mcp/probe.py).

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Duration;

use common::probe::probe;
use common::{python, write_config};
use serde_json::{json, Value};

fn rude(mode: &str) -> Value {
    json!({"command": python(), "args": [common::repo().join("tests/mcp/rude_server.py"), mode]})
}

fn text(step: &Value) -> &str {
    step["text"].as_str().unwrap()
}

#[test]
fn every_tool_a_real_client_accepts_is_listed_and_callable_and_validated_where_understood() {
    let dir = common::scratch().join("gw-schemas");
    let steps = json!([
        {"search": "read the pages of a PDF file"},
        {"call": "rude.read_pdf", "arguments": {"path": "a.pdf", "page": 0}},
        {"call": "rude.read_pdf", "arguments": {"path": "a.pdf", "page": 1}},
        {"call": "rude.take_anything", "arguments": {"whatever": [1, 2]}},
        {"expand": "rude.fetch_remote"},
        {"call": "rude.fetch_remote", "arguments": {"url": 5}},
        {"call": "rude.set_alarm", "arguments": {"hour": 7, "label": null}},
        {"call": "rude.set_alarm", "arguments": {"hour": 30}},
        {"search": "take a screenshot of the screen"},
        {"tool": "rude.set_alarm", "arguments": {"hour": 6}},
        {"tool": "rude.no_such_tool", "arguments": {}},
    ]);
    let p = probe(&dir, json!({"rude": rude("schemas")}), json!({}), steps);
    assert_eq!(p.step(0)["json"]["results"][0]["tool_id"], "rude.read_pdf");
    // draft-04 `exclusiveMinimum: true` with `minimum: 0` keeps its meaning: 0 is refused, by name.
    assert!(p.step(1)["is_error"].as_bool().unwrap(), "{}", p.step(1));
    assert!(text(p.step(1)).contains("INVALID_ARGUMENT") && text(p.step(1)).contains("/page"), "{}", p.step(1));
    assert!(!p.step(2)["is_error"].as_bool().unwrap() && text(p.step(2)).contains("\"page\": 1"), "{}", p.step(2));
    // No inputSchema: any arguments, passed on as they are.
    assert!(text(p.step(3)).contains("\"whatever\": [1, 2]"), "{}", p.step(3));
    // A remote $ref is never fetched: the tool is kept, unvalidated, and says so; its calls
    // reach the upstream, which decides.
    assert!(p.step(4)["json"]["validation"].as_str().unwrap().starts_with("off: "), "{}", p.step(4));
    assert!(text(p.step(5)).contains("\"url\": 5"), "{}", p.step(5));
    // OpenAPI `nullable` is "or null"; a strict schema still refuses what it forbids.
    assert!(!p.step(6)["is_error"].as_bool().unwrap(), "{}", p.step(6));
    assert!(text(p.step(7)).contains("/hour"), "{}", p.step(7));
    assert_eq!(p.step(8)["json"]["results"][0]["tool_id"], "rude.take_anything");
    // A tool id is accepted as a tool name (what a search returned), with every check.
    assert!(text(p.step(9)).contains("\"hour\": 6"), "{}", p.step(9));
    assert!(p.step(10)["is_error"].as_bool().unwrap() && text(p.step(10)).contains("UNKNOWN_TOOL"), "{}", p.step(10));
    // The status names each tool kept unvalidated, the second read_pdf and the nameless tool.
    let unvalidated = p.events_of("tool_unvalidated");
    assert!(unvalidated.iter().any(|e| e["tool"] == "rude.fetch_remote"), "{:?}", p.events);
    let skipped = p.events_of("tool_skipped");
    assert!(skipped.iter().any(|e| e["tool"] == "rude.read_pdf" && e["kind"] == "duplicate_name"), "{skipped:?}");
    assert!(skipped.iter().any(|e| e["reason"].as_str().unwrap_or_default().contains("name")), "{skipped:?}");
    assert_eq!(p.events_of("upstream_up")[0]["tools"], 6);
}

#[test]
fn thousands_of_bad_tools_cost_only_themselves_and_a_list_that_pages_forever_is_bounded() {
    let dir = common::scratch().join("gw-bad-lists");
    let steps = json!([
        {"search": "ping a network host"},
        {"call": "bad.ping_host", "arguments": {}},
        {"call": "pages.page_tool_0", "arguments": {}},
    ]);
    let p = probe(
        &dir,
        json!({"bad": rude("bad_tools"), "pages": rude("pages")}),
        json!({"limits": {"list": {"max_pages": 50}}}),
        steps,
    );
    assert_eq!(p.step(0)["json"]["results"][0]["tool_id"], "bad.ping_host");
    assert!(!p.step(1)["is_error"].as_bool().unwrap(), "{}", p.step(1));
    assert_eq!(p.events_of("tool_skipped").len(), 3000);
    // The endless list stops at the limit: the server is down with the reason, for the operator;
    // the client is told it is unavailable, nothing more.
    let down = p.events_of("upstream_down");
    assert!(
        down.iter().any(|e| e["server"] == "pages" && e["reason"].as_str().unwrap().contains("limit of 50 pages")),
        "{down:?}"
    );
    assert!(p.step(2)["is_error"].as_bool().unwrap(), "{}", p.step(2));
}

#[test]
fn a_tool_list_over_max_tools_takes_its_server_down_with_the_reason() {
    let dir = common::scratch().join("gw-max-tools");
    let steps = json!([
        {"call": "bad.ping_host", "arguments": {}},
        {"call": "plain.read_pdf", "arguments": {"path": "a.pdf", "page": 1}},
    ]);
    // `bad_tools` lists 3,006 tools; the limit is 1,000. The other server is under it.
    let settings = json!({"limits": {"list": {"max_tools": 1000}}});
    let p = probe(&dir, json!({"bad": rude("bad_tools"), "plain": rude("schemas")}), settings, steps);
    let down = p.events_of("upstream_down");
    assert!(
        down.iter().any(|e| e["server"] == "bad" && e["reason"].as_str().unwrap().contains("limit of 1000 items")),
        "{down:?}"
    );
    assert!(p.step(0)["is_error"].as_bool().unwrap(), "{}", p.step(0));
    assert!(!p.step(1)["is_error"].as_bool().unwrap(), "{}", p.step(1));
    assert!(p.events_of("upstream_up").iter().all(|e| e["server"] != "bad"), "{:?}", p.events);
}

#[test]
fn resource_and_prompt_lists_that_page_forever_are_bounded_and_the_server_stays_up() {
    let dir = common::scratch().join("gw-offer-pages");
    let steps = json!([
        {"list": "resources"},
        {"list": "prompts"},
        {"call": "offers.dump_logs", "arguments": {"mib": 0.001}},
    ]);
    let p = probe(
        &dir,
        json!({"offers": rude("offer_pages"), "plain": rude("schemas")}),
        json!({"limits": {"list": {"max_pages": 20}}}),
        steps,
    );
    // Each endless list stops at the limit and is offered empty; the operator is told which and
    // why; the server stays up and its tool is callable.
    let refused = p.events_of("offers_refused");
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        assert!(
            refused.iter().any(|e| e["server"] == "offers"
                && e["reason"].as_str().unwrap().contains(method)
                && e["reason"].as_str().unwrap().contains("limit of 20 pages")),
            "{method}: {refused:?}"
        );
    }
    assert_eq!(p.step(0)["names"], json!([]), "{}", p.step(0));
    assert_eq!(p.step(1)["names"], json!([]), "{}", p.step(1));
    assert!(!p.step(2)["is_error"].as_bool().unwrap(), "{}", p.step(2));
    assert!(p.events_of("upstream_up").iter().any(|e| e["server"] == "offers"), "{:?}", p.events);
}

#[test]
fn an_answer_over_the_result_limit_is_cut_with_a_notice_or_refused_at_once() {
    let dir = common::scratch().join("gw-huge");
    let steps = json!([
        {"call": "huge.dump_logs", "arguments": {"mib": 0.1}},
        {"call": "huge.dump_logs", "arguments": {"mib": 3}},
        {"call": "huge.dump_logs", "arguments": {"mib": 20}},
        {"call": "huge.dump_logs", "arguments": {"mib": 0.1}},
    ]);
    let p = probe(
        &dir,
        json!({"huge": rude("huge")}),
        // Lines over max(list bytes, result bytes) are answered as they are read (20 MiB); smaller
        // ones are read and measured (3 MiB).
        json!({"limits": {"max_result_bytes": 1048576, "list": {"max_bytes": 4194304}}, "call_timeout_secs": 60}),
        steps,
    );
    assert!(!p.step(0)["is_error"].as_bool().unwrap() && p.step(0)["bytes"].as_u64().unwrap() > 100_000);
    // 3 MiB, held and measured: cut to the limit, with a notice that names it.
    let cut = p.step(1);
    assert!(!cut["is_error"].as_bool().unwrap(), "{cut}");
    let bytes = cut["bytes"].as_u64().unwrap();
    assert!((1_000_000..=1_048_576).contains(&bytes), "{bytes}");
    assert_eq!(cut["notice"].as_str().map(|n| n.contains("1048576") && n.contains("cut")), Some(true), "{cut}");
    // 20 MiB, over what a stdio line may be: never held, refused as it is read.
    let s = p.step(2);
    assert!(s["is_error"].as_bool().unwrap(), "{s}");
    assert!(text(s).contains("RESULT_TOO_LARGE") && text(s).contains("1048576"), "{s}");
    for s in [p.step(1), p.step(2)] {
        // Not a TIMEOUT after the call timeout: the limit is seen as the answer arrives.
        assert!(s["seconds"].as_f64().unwrap() < 30.0, "{s}");
    }
    // The session is still good afterwards.
    assert!(!p.step(3)["is_error"].as_bool().unwrap(), "{}", p.step(3));
}

/// A server's own call timeout (`call_timeout_secs` in its entry, or the `timeout` Cline and Roo
/// Code write, in seconds) bounds its calls alone: a 4 s job times out after 2 s on the server
/// given 2, and finishes on one that keeps the gateway's 60.
#[test]
fn a_servers_own_call_timeout_bounds_its_calls_alone() {
    let dir = common::scratch().join("gw-own-timeout");
    let notes = json!({"command": python(), "args": [common::repo().join("tests/mcp/notes_server.py")]});
    let (mut hasty, mut brisk) = (notes.clone(), notes.clone());
    hasty["timeout"] = json!(2);
    brisk["call_timeout_secs"] = json!(2);
    let job = |server: &str| json!({"call": format!("{server}.slow_job"), "arguments": {"seconds": 4}});
    let steps = json!([job("hasty"), job("brisk"), job("patient")]);
    let servers = json!({"hasty": hasty, "brisk": brisk, "patient": notes});
    let p = probe(&dir, servers, json!({"call_timeout_secs": 60}), steps);
    for cut in [p.step(0), p.step(1)] {
        assert!(cut["is_error"].as_bool().unwrap(), "{cut}");
        assert!(text(cut).contains("TIMEOUT") && text(cut).contains("within 2 s"), "{cut}");
        let took = cut["seconds"].as_f64().unwrap();
        assert!((1.9..6.0).contains(&took), "{took} s");
    }
    let done = p.step(2);
    assert!(!done["is_error"].as_bool().unwrap() && text(done).contains("job done after 4"), "{done}");
}

#[test]
fn a_server_whose_command_does_not_exist_does_not_hold_startup_and_leaks_nothing_to_clients() {
    let dir = common::scratch().join("gw-typo");
    let typo =
        json!({"command": "mcp-server-that-does-not-exist", "args": ["postgresql://admin:hunter2@db.internal/prod"]});
    let steps = json!([{"call": "rude.set_alarm", "arguments": {"hour": 7}}, {"search": "set an alarm clock"}]);
    let p = probe(&dir, json!({"rude": rude("schemas"), "typo": typo}), json!({"connect_timeout_secs": 30}), steps);
    // Served at once with what is up, not after the 30 s connect timeout.
    assert!(p.out["ready_s"].as_f64().unwrap() < 15.0, "{}", p.out);
    assert!(!p.step(0)["is_error"].as_bool().unwrap(), "{}", p.step(0));
    // The operator is told why, with the password masked; nothing of it reaches the client.
    let down = p.events_of("upstream_down");
    let reason = down.iter().find(|e| e["server"] == "typo").expect("typo reported down")["reason"].as_str().unwrap();
    assert!(reason.contains("command was not found") && !reason.contains("hunter2"), "{reason}");
    assert!(!p.out.to_string().contains("hunter2") && !p.out.to_string().contains("db.internal"));
}

/// A bare command is looked up along the `PATH` of the server's own `env` (the gateway starts
/// it by that full path, without copying itself), and a script with no `#!` line, which only
/// `sh` runs, still starts (`crate::child_program` in the gateway).
#[cfg(unix)]
#[test]
fn a_bare_command_is_found_along_the_servers_own_path_and_a_script_without_a_shebang_still_runs() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::scratch().join("gw-bare");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let server = common::repo().join("tests/mcp/rude_server.py");
    let exec = format!("exec '{}' '{}' \"$@\"\n", python().display(), server.display());
    for (name, first) in [("rude-shebang", "#!/bin/sh\n"), ("rude-bare", "")] {
        let script = bin.join(name);
        std::fs::write(&script, format!("{first}{exec}")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let at = |command: &str| json!({"command": command, "args": ["schemas"], "env": {"PATH": path}});
    let steps = json!([
        {"call": "shebang.set_alarm", "arguments": {"hour": 7}},
        {"call": "bare.set_alarm", "arguments": {"hour": 8}},
    ]);
    let p = probe(&dir, json!({"shebang": at("rude-shebang"), "bare": at("rude-bare")}), json!({}), steps);
    for i in 0..2 {
        assert!(!p.step(i)["is_error"].as_bool().unwrap(), "{}", p.step(i));
    }
    assert!(p.events_of("upstream_down").is_empty(), "{:?}", p.events_of("upstream_down"));
}

/// The resident memory of the gateway process whose command line holds `marker`, in KiB.
fn rss_kib(marker: &str) -> Option<u64> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(marker) && cmd.contains(" gateway ") {
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            return line.split_whitespace().nth(1)?.parse().ok();
        }
    }
    None
}

#[test]
fn rebuilds_coalesce_and_memory_comes_back_when_the_tool_list_churns() {
    let dir = common::scratch().join("gw-churn");
    let marker = dir.to_str().unwrap().to_owned();
    let sampler = std::thread::spawn(move || {
        let (start, mut samples) = (std::time::Instant::now(), Vec::new());
        while start.elapsed() < std::time::Duration::from_secs(22) {
            std::thread::sleep(std::time::Duration::from_millis(250));
            if let Some(kib) = rss_kib(&marker) {
                samples.push((start.elapsed().as_secs_f64(), kib));
            }
        }
        samples
    });
    // The server says its tool list changed every 50 ms for the whole session.
    let p = probe(&dir, json!({"churn": rude("churn")}), json!({}), json!([{"sleep": 18}]));
    let samples = sampler.join().unwrap();
    let indexed = p.events_of("indexed").len();
    // The status says so once per burst, with how many times the server said it.
    let lines = p.events_of("tools_changed");
    let changes: usize = lines.iter().map(|e| e["times"].as_u64().unwrap_or(1) as usize).sum();
    assert!(changes >= 100, "{changes} list changes seen");
    assert!(lines.len() * 3 < changes, "{} status lines for {changes} changes: not coalesced", lines.len());
    // Changes that come faster than a rebuild are taken together: a rebuild at most every
    // 250 ms, whatever the rate of changes.
    assert!(indexed * 3 < changes, "{indexed} rebuilds for {changes} changes");
    // Memory after many rebuilds stays within 20% of memory after the first few.
    let ready = p.out["ready_s"].as_f64().unwrap();
    let peak = |from: f64, to: f64| samples.iter().filter(|(t, _)| (from..to).contains(t)).map(|s| s.1).max();
    let early = peak(ready + 2.0, ready + 5.0).expect("samples early on");
    let late = peak(ready + 14.0, ready + 18.0).expect("samples late");
    eprintln!("churn: {changes} list changes, {indexed} rebuilds, RSS {early} KiB early, {late} KiB late");
    assert!(late as f64 <= early as f64 * 1.2, "RSS {early} KiB early, {late} KiB after {indexed} rebuilds");
}

#[test]
fn an_sdk_server_with_real_world_schema_forms_keeps_every_tool_listed_searchable_and_callable() {
    let dir = common::scratch().join("gw-sdk-dialects");
    let server = json!({"command": python(), "args": [common::repo().join("tests/mcp/dialect_server.py")]});
    let ids = ["set_volume", "create_user", "store_value", "rename_branch", "fetch_page", "db.query rows", "météo"];
    let mut steps: Vec<Value> = Vec::new();
    for name in ids {
        steps.push(json!({"search": name}));
        steps.push(json!({"expand": format!("sdk.{name}")}));
    }
    steps.extend([
        json!({"call": "sdk.set_volume", "arguments": {"level": 100}}),
        json!({"call": "sdk.set_volume", "arguments": {"level": 99.5}}),
        json!({"call": "sdk.create_user", "arguments": {"name": "ada"}}),
        json!({"call": "sdk.store_value", "arguments": {"key": "k", "value": [1, {"a": null}]}}),
        json!({"call": "sdk.rename_branch", "arguments": {"branch": "main", "note": null}}),
        json!({"call": "sdk.fetch_page", "arguments": {"anything": true}}),
        json!({"call": "sdk.db.query rows", "arguments": {}}),
        json!({"call": "sdk.météo", "arguments": {"ville": "Oslo"}}),
    ]);
    let p = probe(&dir, json!({"sdk": server}), json!({}), Value::Array(steps));
    assert_eq!(p.events_of("upstream_up")[0]["tools"], 7, "{:?}", p.events);
    for (i, name) in ids.iter().enumerate() {
        let id = format!("sdk.{name}");
        assert_eq!(p.step(2 * i)["json"]["results"][0]["tool_id"], id.as_str(), "search {name}: {}", p.step(2 * i));
        assert_eq!(p.step(2 * i + 1)["json"]["tool_id"], id.as_str(), "expand {name}: {}", p.step(2 * i + 1));
    }
    let calls = 2 * ids.len();
    // exclusiveMaximum: true keeps its draft-04 meaning: 100 is refused, naming the field.
    assert!(
        text(p.step(calls)).contains("INVALID_ARGUMENT") && text(p.step(calls)).contains("/level"),
        "{}",
        p.step(calls)
    );
    assert!(text(p.step(calls + 1)).contains("\"level\": 99.5"), "{}", p.step(calls + 1));
    // `required` naming a property declared in allOf is valid, and enforced.
    assert!(
        text(p.step(calls + 2)).contains("INVALID_ARGUMENT") && text(p.step(calls + 2)).contains("email"),
        "{}",
        p.step(calls + 2)
    );
    assert!(!text(p.step(calls + 2)).contains("String("), "{}", p.step(calls + 2));
    for k in 3..8 {
        assert!(!p.step(calls + k)["is_error"].as_bool().unwrap(), "{}", p.step(calls + k));
        assert!(text(p.step(calls + k)).contains("\"tool\""), "reached the server: {}", p.step(calls + k));
    }
    assert!(p.step(9)["json"]["validation"].as_str().unwrap().starts_with("off: "), "{}", p.step(9));
    assert!(p.events_of("tool_unvalidated").iter().any(|e| e["tool"] == "sdk.fetch_page"));
}

#[test]
fn an_http_upstream_that_closes_idle_connections_stays_up_between_pings() {
    // The notes server behind a front that closes any connection a request reuses after 4.5 s
    // idle, as servers whose keep-alive runs out (uvicorn's and Node's 5 s) do at that moment.
    // The gateway pings every 5 s: a ping sent on the kept connection would fail, and the
    // server be marked down although it is there.
    let dir = common::scratch().join("gw-keepalive");
    let (port, front) = (common::gateway::free_port(), common::gateway::free_port());
    let _notes = common::gateway::notes_over_http(port);
    let closing = Command::new(python())
        .arg(common::repo().join("tests/mcp/closing_front.py"))
        .args([front.to_string(), port.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _closing = common::gateway::Killed(closing);
    common::gateway::wait_for_port(front);
    let config =
        write_config(&dir, &json!({"mcpServers": {"notes": {"url": format!("http://127.0.0.1:{front}/mcp")}}}));
    let gateway = common::gateway::HttpGateway::start(&config, &dir.join("state"), &[]);
    gateway.wait_for_status("notes is up", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(12));
    // Up once, never down: not marked unavailable, not reconnected.
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("unavailable") && status.matches("notes is up").count() == 1, "{status}");
    let steps =
        json!([["call", "notes.remember", {"key": "k", "text": "kept"}], ["call", "notes.recall", {"key": "k"}]]);
    let out = common::gateway::client_steps(&gateway.url(), "-", &steps);
    assert_eq!(out[0]["text"], "remembered k", "{}", out[0]);
    assert!(out[1]["text"].as_str().unwrap().contains("kept"), "{}", out[1]);
}
