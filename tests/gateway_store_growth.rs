//! What a fleet's PostgreSQL store holds over time. A replica's audit trail: a backlog (the
//! store was away, or traffic outran the shipper) reaches the store at the store's pace, not a
//! fixed batch every half second, and with `state.audit_days` the store keeps no line longer
//! than that. Rate-limit buckets: one for each address that sent a refused token, deleted once
//! it has refilled, so a guesser's many addresses do not pile up. Debian's PostgreSQL; the
//! gateway in front of the `notes` test server.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::gateway::HttpGateway;
use common::postgres::Postgres;
use common::{python, write_config};
use serde_json::{json, Value};

/// Lines already in the replica's trail when it starts: two files' worth.
const BACKLOG: usize = 40_000;

/// Writes [`BACKLOG`] call lines into `dir` as a rotated trail (`trail.1.jsonl`, then
/// `trail.jsonl`), the newest last; each line's message is `b{i}`.
fn write_backlog(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
        - BACKLOG as u64 * 10;
    for (file, range) in [("trail.1.jsonl", 0..BACKLOG / 2), ("trail.jsonl", BACKLOG / 2..BACKLOG)] {
        let text: String = range
            .map(|i| {
                let line = json!({"time": start + i as u64 * 10, "token": "agent", "session": format!("s{}", i / 20),
                                  "event": "call", "tool_id": "notes.add_note",
                                  "arguments": {"message": format!("b{i}")}, "outcome": "ok", "ms": 3});
                format!("{line}\n")
            })
            .collect();
        std::fs::write(dir.join(file), text).unwrap();
    }
}

#[test]
fn a_backlog_reaches_the_store_at_once_and_lines_older_than_audit_days_are_deleted() {
    let dir = common::scratch().join("gateway-audit-store");
    let pg = Postgres::start("audit-store");
    let url = pg.url();
    let notes = common::repo().join("tests/mcp/notes_server.py");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"notes": {"command": python(), "args": [notes, "stdio"]}},
            "toolsearch": {"state": {"store": "${TS_STATE_URL}", "audit_days": 30}}
        }),
    );
    let env = [("TS_STATE_URL", url.as_str())];
    let audit = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["--json", "gateway", "audit", "--config"])
            .arg(&config)
            .args(args)
            .envs(env)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<Value>>()
    };
    // An operator's first read migrates the empty store; then another replica's lines, two
    // shipped 40 days ago and one 2 days ago.
    assert!(audit(&[]).is_empty());
    pg.query(
        "INSERT INTO toolsearch_audit (replica, file, at, line, shipped_at) VALUES \
         ('old', 1, 0, '{\"time\": 1, \"event\": \"call\", \"tool_id\": \"notes.a\"}', now() - interval '40 days'), \
         ('old', 1, 80, '{\"time\": 2, \"event\": \"call\", \"tool_id\": \"notes.b\"}', now() - interval '40 days'), \
         ('old', 1, 160, '{\"time\": 3, \"event\": \"call\", \"tool_id\": \"notes.c\"}', now() - interval '2 days')",
    );
    let state = dir.join("state");
    write_backlog(&state.join("audit"));

    let started = Instant::now();
    let gateway = HttpGateway::start_env(&config, &state, &["--json"], &env);
    let pruned = gateway.wait_for_status("\"event\":\"audit_pruned\"", Duration::from_secs(30));
    assert!(pruned.contains("\"lines\":2") && pruned.contains("\"older_than_days\":30"), "{pruned}");
    assert_eq!(pg.query("SELECT line->>'tool_id' FROM toolsearch_audit WHERE replica = 'old'").trim(), "notes.c");

    // The whole backlog is in the store, each line once. A batch every half second (the
    // shipper before: 500 lines a look) took 40 s for it, and one of 2,000 lines 10 s; the
    // gateway's start is in the bound.
    let count = "SELECT count(*), count(DISTINCT line->'arguments'->>'message') FROM toolsearch_audit \
                 WHERE line->'arguments'->>'message' LIKE 'b%'";
    let expected = format!("{BACKLOG}|{BACKLOG}");
    loop {
        let got = pg.query(count);
        if got.trim() == expected {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(8), "after {:?}: {got} of {BACKLOG}", started.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("{BACKLOG} backlog lines in the store {:?} after the gateway was started", started.elapsed());

    // Read back through the time index: the newest lines, oldest first, and a window.
    let newest = audit(&["--last", "3", "--tool", "notes.add_note"]);
    let messages: Vec<&str> = newest.iter().map(|l| l["arguments"]["message"].as_str().unwrap()).collect();
    assert_eq!(messages, [format!("b{}", BACKLOG - 3), format!("b{}", BACKLOG - 2), format!("b{}", BACKLOG - 1)]);
    let kept = audit(&["--until", "100"]);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!((kept[0]["tool_id"].as_str(), kept[0]["replica"].as_str()), (Some("notes.c"), Some("old")));
    let used = pg.query(
        "EXPLAIN SELECT * FROM toolsearch_audit ORDER BY (CASE WHEN jsonb_typeof(line->'time') = 'number' \
         THEN (line->>'time')::numeric END) DESC NULLS LAST, replica DESC, file DESC, at DESC LIMIT 3",
    );
    assert!(used.contains("toolsearch_audit_by_time"), "{used}");
    drop(gateway);
}

#[test]
fn audit_days_must_be_a_positive_number_of_days_and_needs_the_store() {
    let dir = common::scratch().join("gateway-audit-days");
    let notes = common::repo().join("tests/mcp/notes_server.py");
    for (state, says) in [
        (json!({"store": "postgres://nobody@127.0.0.1:1/x", "audit_days": 0}), "toolsearch.state.audit_days: 0"),
        (json!({"audit_days": 7}), "toolsearch.state.audit_days: only a PostgreSQL store"),
        (json!({"store": "postgres://nobody@127.0.0.1:1/x", "audit_days": -1}), "audit_days"),
    ] {
        let config = write_config(
            &dir,
            &json!({"mcpServers": {"notes": {"command": python(), "args": [&notes, "stdio"]}},
                    "toolsearch": {"state": state}}),
        );
        let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["gateway", "--check", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{state}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains("gateway.json"), "{state}: {stderr}");
    }
}

#[test]
fn buckets_of_many_addresses_are_deleted_once_they_have_refilled_and_budgets_still_hold() {
    use common::gateway::http_post;
    let dir = common::scratch().join("gateway-store-buckets");
    let pg = Postgres::start("buckets");
    let notes = common::repo().join("tests/mcp/notes_server.py");
    let token = "c0ffee00d15ea5e5b01dface12345678";
    // A refused token's strike refills in 1 s (60 a minute); the proxy on loopback is
    // trusted, so each request's X-Forwarded-For is its address.
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"notes": {"command": python(), "args": [notes, "stdio"]}},
            "toolsearch": {"state": {"store": pg.url()}, "tokens": {token: []}, "trusted_proxies": ["127.0.0.1"],
                           "limits": {"http": {"refused_tokens_burst": 2, "refused_tokens_per_minute": 60}}}
        }),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let open = |from: &str, bearer: &str| {
        let auth = format!("Bearer {bearer}");
        http_post(&gateway.addr, &init, &[("Authorization", &auth), ("X-Forwarded-For", from)]).0
    };
    let addresses: Vec<String> = (0..300).map(|i| format!("10.7.{}.{}", i / 200, i % 200 + 1)).collect();
    for (i, from) in addresses.iter().enumerate() {
        assert_eq!(open(from, &format!("guess-{i:016}")), 401);
    }
    let buckets = || pg.query("SELECT count(*) FROM toolsearch_buckets").trim().parse::<usize>().unwrap();
    let seen = buckets();
    assert!(seen >= 250, "{seen} buckets for 300 addresses");
    // Each refilled 1 s after its strike; a replica prunes every 10 s.
    let deadline = Instant::now() + Duration::from_secs(25);
    while buckets() > 0 {
        assert!(Instant::now() < deadline, "{} of {seen} buckets still there after 25 s", buckets());
        std::thread::sleep(Duration::from_millis(250));
    }
    // A pruned bucket starts full again: one address gets its burst (2 refusals), then 429,
    // exactly as a new one, and the right token from another address is let in.
    let codes: Vec<u16> = (0..3).map(|i| open(&addresses[0], &format!("again-{i:016}"))).collect();
    assert_eq!(codes, [401, 401, 429]);
    assert_eq!(open("10.9.0.1", token), 200);
}
