//! A fleet of gateways on one PostgreSQL (#62): Debian's PostgreSQL started in a temporary
//! directory, three replicas with state dirs of their own and `toolsearch.state.store`
//! naming it, the upstream `hostile_server.py phases` (its `act` turns destructive in phase 2),
//! the clients the official Python SDK.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use common::gateway::{client_steps, HttpGateway};
use common::postgres::Postgres;
use common::{python, write_config};
use serde_json::{json, Value};

/// The gateway config: one `phases` server, the pins in the store at `${TS_STATE_URL}`.
fn fleet_config(dir: &Path, flag: &Path) -> std::path::PathBuf {
    let hostile = common::repo().join("tests/mcp/hostile_server.py");
    write_config(
        dir,
        &json!({
            "mcpServers": {"ph": {"command": python(), "args": [hostile, "phases", flag]}},
            "toolsearch": {"state": {"store": "${TS_STATE_URL}"}}
        }),
    )
}

fn toolsearch(args: &[&str], url: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).env("TS_STATE_URL", url).output().unwrap()
}

/// `/readyz` of a replica: its HTTP status and body.
fn readyz(gateway: &HttpGateway) -> (u16, Value) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(&gateway.addr).unwrap();
    write!(s, "GET /readyz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", gateway.addr).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("{}");
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn wait_ready(gateway: &HttpGateway, ready: bool, within: Duration) {
    let deadline = Instant::now() + within;
    while (readyz(gateway).0 == 200) != ready {
        assert!(Instant::now() < deadline, "readyz never became {ready}: {:?}", readyz(gateway));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Moves each replica's upstream to its next phase; waits until every replica holds `act`.
fn next_phase_everywhere(replicas: &[HttpGateway], held: &str) {
    for r in replicas {
        client_steps(&r.url(), "-", &json!([["call", "ph.restart", {}]]));
    }
    for r in replicas {
        r.wait_for_status(held, Duration::from_secs(30));
    }
}

/// The digest `gateway held` prints for `ph.act`, and how many definitions of it are held.
fn held_digest(config: &str, url: &str) -> (String, usize) {
    let held = toolsearch(&["gateway", "held", "--config", config], url);
    let text = String::from_utf8_lossy(&held.stdout).to_string();
    assert!(
        held.status.success() && text.contains("ph.act (changed)"),
        "{text}{}",
        String::from_utf8_lossy(&held.stderr)
    );
    (text.split("digest ").nth(1).unwrap()[..16].to_owned(), text.matches("ph.act (").count())
}

#[test]
fn an_approval_made_once_is_honoured_by_all_three_replicas_within_two_seconds() {
    let dir = common::scratch().join("gateway-store-approve");
    let pg = Postgres::start("approve");
    let url = pg.url();
    let flag = dir.join("phase");
    let config = fleet_config(&dir, &flag);
    let env = [("TS_STATE_URL", url.as_str())];
    let replicas: Vec<HttpGateway> =
        (0..3).map(|i| HttpGateway::start_env(&config, &dir.join(format!("state{i}")), &["--json"], &env)).collect();
    for r in &replicas {
        let first = client_steps(&r.url(), "-", &json!([["call", "ph.act", {}]]));
        assert_eq!(first[0]["text"], "acted in phase1", "{first:?}");
    }
    // Each replica's upstream moves to phase 2 (destructive): each holds it against the one pin.
    next_phase_everywhere(&replicas, "\"event\":\"tool_held\"");
    for r in &replicas {
        let refused = client_steps(&r.url(), "-", &json!([["call", "ph.act", {}]]));
        assert!(
            refused[0]["is_error"] == true && !refused[0]["text"].as_str().unwrap().contains("acted"),
            "{refused:?}"
        );
    }
    let config_s = config.to_str().unwrap();
    let (digest, definitions) = held_digest(config_s, &url);
    assert_eq!(definitions, 1, "three replicas hold one definition");

    // Clients on every replica call `act` until it runs; the operator approves once.
    let go = std::thread::scope(|scope| {
        let waiting: Vec<_> = replicas
            .iter()
            .map(|r| {
                let url = r.url();
                scope.spawn(move || client_steps(&url, "-", &json!([["until", "ph.act", {}, "phase2", 30]])))
            })
            .collect();
        std::thread::sleep(Duration::from_secs(2));
        let ok = toolsearch(&["gateway", "approve", "ph.act", "--digest", &digest, "--config", config_s], &url);
        assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
        let approved = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64();
        let answers: Vec<Vec<Value>> = waiting.into_iter().map(|w| w.join().unwrap()).collect();
        (approved, answers)
    });
    let (approved, answers) = go;
    let mut after = Vec::new();
    for a in &answers {
        assert_eq!(a[0]["text"], "acted in phase2", "{answers:?}");
        after.push(a[0]["at"].as_f64().unwrap() - approved);
    }
    eprintln!("approval honoured after {after:?} s");
    assert!(after.iter().all(|s| *s < 2.0), "not within 2 s on every replica: {after:?}");
}

#[test]
fn with_the_database_stopped_nothing_held_runs_readiness_says_so_and_state_catches_up() {
    let dir = common::scratch().join("gateway-store-down");
    let pg = Postgres::start("down");
    let url = pg.url();
    let flag = dir.join("phase");
    let config = fleet_config(&dir, &flag);
    let config_s = config.to_str().unwrap();
    let env = [("TS_STATE_URL", url.as_str())];
    let replicas: Vec<HttpGateway> =
        (0..2).map(|i| HttpGateway::start_env(&config, &dir.join(format!("state{i}")), &["--json"], &env)).collect();
    for r in &replicas {
        wait_ready(r, true, Duration::from_secs(10));
    }
    next_phase_everywhere(&replicas, "\"event\":\"tool_held\"");

    // The database goes away for 30 s; meanwhile each upstream moves on to phase 3.
    pg.down();
    for r in &replicas {
        wait_ready(r, false, Duration::from_secs(5));
        assert!(readyz(r).1["not_ready"].as_str().unwrap().contains("state store is unreachable"), "{:?}", readyz(r));
    }
    let stopped = Instant::now();
    next_phase_everywhere(&replicas, "Version 3");
    while stopped.elapsed() < Duration::from_secs(30) {
        for r in &replicas {
            let answer = client_steps(&r.url(), "-", &json!([["call", "ph.act", {}]]));
            assert!(
                answer[0]["is_error"] == true && !answer[0]["text"].as_str().unwrap().contains("acted"),
                "{answer:?}"
            );
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let log = std::fs::read_to_string(format!("{}.log", flag.display())).unwrap_or_default();
    assert!(!log.contains("phase2") && !log.contains("phase3"), "a held tool ran: {log}");

    // Back: ready again, and what each replica held while it was away reaches the store.
    pg.up();
    for r in &replicas {
        wait_ready(r, true, Duration::from_secs(10));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let digest = loop {
        let held = toolsearch(&["gateway", "held", "--config", config_s], &url);
        let text = String::from_utf8_lossy(&held.stdout).to_string();
        if let Some(d) = text.split("Version 3").next().filter(|_| text.contains("Version 3")) {
            break d.split("digest ").last().unwrap()[..16].to_owned();
        }
        assert!(Instant::now() < deadline, "phase 3 never reached the store: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let ok = toolsearch(&["gateway", "approve", "ph.act", "--digest", &digest, "--config", config_s], &url);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    for r in &replicas {
        let ran = client_steps(&r.url(), "-", &json!([["until", "ph.act", {}, "phase3", 10]]));
        assert_eq!(ran[0]["text"], "acted in phase3", "{ran:?}");
    }
}

#[test]
fn ten_calls_a_minute_hold_across_three_replicas_behind_haproxy_under_eight_clients() {
    let dir = common::scratch().join("gateway-store-rate");
    let pg = Postgres::start("rate");
    let url = pg.url();
    let hostile = common::repo().join("tests/mcp/hostile_server.py");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"ph": {"command": python(), "args": [hostile, "phases", dir.join("phase")]}},
            "toolsearch": {"state": {"store": "${TS_STATE_URL}"},
                           "limits": {"rate": [{"principal": "*", "tool": "ph.act", "per_minute": 10}],
                                      "rate_when_store_down": "closed"}}
        }),
    );
    let env = [("TS_STATE_URL", url.as_str())];
    let replicas: Vec<HttpGateway> =
        (0..3).map(|i| HttpGateway::start_env(&config, &dir.join(format!("state{i}")), &["--json"], &env)).collect();
    let addrs: Vec<&str> = replicas.iter().map(|r| r.addr.as_str()).collect();
    let haproxy = common::haproxy::Haproxy::start(&dir, &addrs);
    haproxy.checked(3);
    // Eight clients, each its own session (HAProxy spreads them over the replicas), call for
    // 24 s. One principal's budget: a burst of 1, then 10 a minute: 5 calls in all.
    let seconds = 24.0;
    let answers: Vec<Value> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let url = haproxy.url();
                scope.spawn(move || client_steps(&url, "-", &json!([["burst", "ph.act", {}, 1, seconds]])))
            })
            .collect();
        clients
            .into_iter()
            .map(|c| serde_json::from_str(c.join().unwrap()[0]["text"].as_str().unwrap()).unwrap())
            .collect()
    });
    let count = |key: &str| -> u64 {
        answers
            .iter()
            .flat_map(|a| a.as_object().unwrap())
            .filter(|(k, _)| k.contains(key))
            .map(|(_, n)| n.as_u64().unwrap())
            .sum()
    };
    let (ran, limited) = (count("acted in phase1"), count("RATE_LIMITED"));
    eprintln!("{ran} calls ran, {limited} refused: {answers:?}");
    let budget = 1 + (seconds * 10.0 / 60.0) as u64;
    assert!(ran.abs_diff(budget) <= 1, "{ran} calls ran against a budget of {budget}: {answers:?}");
    assert!(limited > 0, "{answers:?}");
    let sessions: Vec<usize> =
        replicas.iter().map(|r| r.status.lock().unwrap().iter().filter(|l| l.contains("ph.act")).count()).collect();
    assert!(sessions.iter().filter(|n| **n > 0).count() >= 2, "the calls reached several replicas: {sessions:?}");
}

#[test]
fn a_replica_on_a_fresh_state_dir_indexes_lazy_servers_from_the_fleets_kept_listings() {
    let dir = common::scratch().join("gateway-store-listings");
    let pg = Postgres::start("listings");
    let url = pg.url();
    let hostile = common::repo().join("tests/mcp/hostile_server.py");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"ph": {"command": python(), "args": [hostile, "phases", dir.join("phase")], "lazy": true}},
            "toolsearch": {"state": {"store": url}}
        }),
    );
    // The first replica starts the lazy server once to list it, keeps the listing, and pushes it.
    let a = HttpGateway::start(&config, &dir.join("state-a"), &["--json"]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while !pg.query("SELECT server FROM toolsearch_listings").contains("ph") {
        assert!(Instant::now() < deadline, "the listing never reached the store");
        std::thread::sleep(Duration::from_millis(200));
    }
    // A second replica on a fresh state dir takes it, and serves the tool before any call.
    let b = HttpGateway::start(&config, &dir.join("state-b"), &["--json"]);
    b.wait_for_status("\"event\":\"listings_taken\"", Duration::from_secs(5));
    assert!(dir.join("state-b/listings/ph.json").exists());
    let found =
        client_steps(&b.url(), "-", &json!([["search_tool_by_category", {"query": "read the service status"}]]));
    assert!(found[0]["text"].as_str().unwrap().contains("ph.act"), "{found:?}");
    drop(a);
}

#[test]
fn replicas_starting_at_once_migrate_once_and_limits_fail_open_or_closed_as_configured() {
    let dir = common::scratch().join("gateway-store-limits-down");
    let pg = Postgres::start("limits");
    let url = pg.url();
    let hostile = common::repo().join("tests/mcp/hostile_server.py");
    let config = |name: &str, when: &str| {
        write_config(
            &dir.join(name),
            &json!({
                "mcpServers": {"ph": {"command": python(), "args": [&hostile, "phases", dir.join("phase")]}},
                "toolsearch": {"state": {"store": url},
                               "limits": {"rate": [{"principal": "*", "tool": "*", "per_minute": 6000}],
                                          "rate_when_store_down": when}}
            }),
        )
    };
    let (open, closed) = (config("open", "open"), config("closed", "closed"));
    // Both start at once on a database no replica has migrated.
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| HttpGateway::start(&open, &dir.join("state-open"), &[]));
        let b = scope.spawn(|| HttpGateway::start(&closed, &dir.join("state-closed"), &[]));
        (a.join().unwrap(), b.join().unwrap())
    });
    let applied = pg.query("SELECT count(*), count(DISTINCT version) FROM toolsearch_migrations");
    let (all, distinct) = applied.trim().split_once('|').unwrap();
    assert!(all == distinct && all != "0", "each migration applied once: {applied}");
    let act = |r: &HttpGateway| client_steps(&r.url(), "-", &json!([["burst", "ph.act", {}, 1, 0.3]]));
    for r in [&a, &b] {
        let out = act(r);
        assert!(out[0]["text"].as_str().unwrap().contains("acted in phase1"), "{out:?}");
    }
    pg.down();
    for r in [&a, &b] {
        wait_ready(r, false, Duration::from_secs(5));
    }
    let (passed, refused) = (act(&a), act(&b));
    assert!(passed[0]["text"].as_str().unwrap().contains("acted in phase1"), "open: {passed:?}");
    let refused = refused[0]["text"].as_str().unwrap();
    assert!(refused.contains("RATE_LIMITED") && !refused.contains("acted"), "closed: {refused}");
    pg.up();
    wait_ready(&b, true, Duration::from_secs(10));
    let back = act(&b);
    assert!(back[0]["text"].as_str().unwrap().contains("acted in phase1"), "closed, the store back: {back:?}");
}

/// An HTTP request budget is one across the fleet: with `requests_per_principal` a burst of 5
/// and a slow refill, requests alternating between two replicas get 5 answers and then `429`
/// with `Retry-After`, on whichever replica the sixth lands.
#[test]
fn an_http_request_budget_is_one_across_the_replicas() {
    use common::gateway::http_get;
    let dir = common::scratch().join("gateway-store-requests");
    let pg = Postgres::start("requests");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"everything": {"command": "node", "args": [common::gateway::reference_server("everything"), "stdio"]}},
            "toolsearch": {"state": {"store": pg.url()},
                           "rate_limits": {"requests_per_principal": {"per_minute": 1, "burst": 5}}}
        }),
    );
    let replicas = [
        HttpGateway::start(&config, &dir.join("state-a"), &[]),
        HttpGateway::start(&config, &dir.join("state-b"), &[]),
    ];
    let codes: Vec<u16> = (0..8).map(|i| http_get(&replicas[i % 2].addr, "/mcp", &[]).0).collect();
    assert!(codes[..5].iter().all(|c| *c != 429), "{codes:?}");
    assert!(codes[5..].iter().all(|c| *c == 429), "{codes:?}");
}

/// Refused tokens count in the store too: a guesser spread over two replicas gets the burst
/// (4) once plus one guess per replica (6 compared in all), not a burst per replica (8).
#[test]
fn refused_tokens_count_once_across_the_replicas() {
    use common::gateway::http_post;
    let dir = common::scratch().join("gateway-store-strikes");
    let pg = Postgres::start("strikes");
    let token = "c0ffee00d15ea5e5b01dface12345678";
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"count": {"command": python(), "args": [common::repo().join("tests/mcp/hostile_server.py"), "count"]}},
            "toolsearch": {"state": {"store": pg.url()}, "tokens": {token: []},
                           "limits": {"http": {"refused_tokens_burst": 4, "refused_tokens_per_minute": 1}}}
        }),
    );
    let replicas = [
        HttpGateway::start(&config, &dir.join("state-a"), &[]),
        HttpGateway::start(&config, &dir.join("state-b"), &[]),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let open = |replica: usize, bearer: &str| {
        http_post(&replicas[replica].addr, &init, &[("Authorization", &format!("Bearer {bearer}"))]).0
    };
    let codes: Vec<u16> = (0..10).map(|i| open(i % 2, &format!("guess-{i:016}"))).collect();
    assert_eq!(codes, [401, 401, 401, 401, 401, 401, 429, 429, 429, 429]);
    assert_eq!([open(0, token), open(1, token)], [429, 429], "neither replica compares the right token now");
}
