//! A fleet of gateways behind HAProxy on one PostgreSQL (#62), as clients meet it: a replica
//! killed mid-traffic loses no trail line of a call it answered, and clients that retry carry on.
//! Debian's PostgreSQL and HAProxy; the upstream is the `everything` reference server; the
//! clients the official Python SDK (`tests/mcp/fleet_driver.py`).

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::gateway::{reference_server, HttpGateway};
use common::haproxy::Haproxy;
use common::postgres::Postgres;
use common::{python, write_config};
use serde_json::{json, Value};

#[test]
fn a_replica_killed_mid_traffic_keeps_every_answered_calls_trail_line_and_clients_carry_on() {
    let dir = common::scratch().join("gateway-fleet-kill");
    let pg = Postgres::start("kill");
    let url = pg.url();
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
            "toolsearch": {"state": {"store": "${TS_STATE_URL}"}, "audit": {"arguments": true}}
        }),
    );
    let env = [("TS_STATE_URL", url.as_str())];
    let state = |i: usize| dir.join(format!("state{i}"));
    let mut replicas: Vec<HttpGateway> =
        (0..3).map(|i| HttpGateway::start_env(&config, &state(i), &["--json"], &env)).collect();
    let addrs: Vec<&str> = replicas.iter().map(|r| r.addr.as_str()).collect();
    let haproxy = Haproxy::start(&dir, &addrs);
    haproxy.checked(3);

    // Six clients call for 14 s; 5 s in, one replica is killed (SIGKILL), and a supervisor
    // starts it again on its state dir 2 s later (on another port: HAProxy keeps it down).
    let driver = {
        let url = haproxy.url();
        std::thread::spawn(move || {
            Command::new(python())
                .arg(common::repo().join("tests/mcp/fleet_driver.py"))
                .args([&url, "14", "6"])
                .output()
                .unwrap()
        })
    };
    std::thread::sleep(Duration::from_secs(5));
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(replicas[1].pid() as i32, libc::SIGKILL) };
    std::thread::sleep(Duration::from_secs(2));
    replicas[1] = HttpGateway::start_env(&config, &state(1), &["--json"], &env);
    let out = driver.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answered: Vec<&str> = report["answered"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert!(report["failures"].as_u64().unwrap() >= 1, "no client met the killed replica: {report}");
    // Every worker carried on: each has answers from after the kill (its later messages).
    for n in 0..6 {
        let last = answered.iter().filter(|m| m.starts_with(&format!("w{n}-"))).count();
        assert!(last > 20, "worker {n} stopped after {last} answers: {report}");
    }

    // Every answered call has its trail line in the store (the killed replica's shipped when it
    // came back), once.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows = pg.query("SELECT line->'arguments'->>'message' FROM toolsearch_audit WHERE line ? 'arguments'");
        let stored: std::collections::HashMap<&str, usize> = rows.lines().fold(Default::default(), |mut m, l| {
            *m.entry(l).or_default() += 1;
            m
        });
        let missing: Vec<&&str> = answered.iter().filter(|m| !stored.contains_key(**m)).collect();
        if missing.is_empty() {
            assert!(stored.values().all(|n| *n == 1), "a line stored twice");
            eprintln!("{} answered calls, all in the store; {} failures met", answered.len(), report["failures"]);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} answered calls have no line: {missing:?}",
            missing.len(),
            answered.len()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}
