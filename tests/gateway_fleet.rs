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

    // `gateway audit` reads the fleet's trail from the store: every stored line once, oldest
    // first, each naming its replica; --last keeps the newest.
    let audit = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["--json", "gateway", "audit", "--config"])
            .arg(&config)
            .arg("--state")
            .arg(state(0))
            .args(args)
            .envs(env)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<Value>>()
    };
    let echo = ["--event", "call", "--tool", "everything.echo"];
    // A line of a call the killed replica wrote and never answered may still be on its way.
    let (calls, newest) = loop {
        let (calls, newest) = (audit(&echo), audit(&[&echo[..], &["--last", "5"]].concat()));
        if audit(&echo) == calls {
            break (calls, newest);
        }
    };
    let messages: std::collections::HashSet<&str> =
        calls.iter().filter_map(|l| l["arguments"]["message"].as_str()).collect();
    assert!(answered.iter().all(|m| messages.contains(m)) && messages.len() == calls.len(), "a line lost or twice");
    let stored = pg.query("SELECT count(*) FROM toolsearch_audit WHERE line->>'event' = 'call'");
    assert!(calls.len() >= answered.len() && stored.trim() == calls.len().to_string(), "{stored} rows");
    let times: Vec<u64> = calls.iter().map(|l| l["time"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first");
    let replicas: std::collections::HashSet<&str> = calls.iter().map(|l| l["replica"].as_str().unwrap()).collect();
    assert!(replicas.len() >= 2, "{replicas:?}");
    assert_eq!(newest, calls[calls.len() - 5..]);
}

#[test]
fn a_session_free_rounds_retry_completes_on_another_replica_and_only_for_its_caller() {
    let dir = common::scratch().join("gateway-fleet-rounds");
    let pg = Postgres::start("rounds");
    let url = pg.url();
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
            "toolsearch": {"state": {"store": "${TS_STATE_URL}", "key": "${TS_FLEET_KEY}"},
                           "tokens": {"token-demo": ["demo"], "token-other": ["demo"]}}
        }),
    );
    let env = [("TS_STATE_URL", url.as_str()), ("TS_FLEET_KEY", "a fleet secret")];
    let (a, b) = (
        HttpGateway::start_env(&config, &dir.join("state-a"), &[], &env),
        HttpGateway::start_env(&config, &dir.join("state-b"), &[], &env),
    );
    let call = |on: &HttpGateway, token: &str, extra: Value| common::gateway::ask_session_free(&on.addr, token, extra);
    // Asked on replica a; the retries land on b.
    let asked = call(&a, "token-demo", json!({}));
    let state = asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{asked}")).to_owned();
    let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    // Another caller's retry through b reaches a, which answers it as unknown and keeps the round.
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Mallory", "check": true}}});
    let stolen = call(&b, "token-other", json!({"requestState": state, "inputResponses": answer}));
    let text = stolen["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("unknown or expired") && !text.contains("Mallory"), "{stolen}");
    // A state whose seal names another address is not forwarded.
    let mut parts: Vec<&str> = state.split('~').collect();
    assert_eq!(parts.len(), 3, "{state}");
    parts[1] = "aHR0cDovLzEyNy4wLjAuMTo5L21jcA";
    let forged = call(&b, "token-demo", json!({"requestState": parts.join("~"), "inputResponses": answer}));
    assert!(forged["result"]["content"].to_string().contains("unknown or expired"), "{forged}");
    // The owner's own retry through b completes on a.
    let answer = json!({key: {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}});
    let owned = call(&b, "token-demo", json!({"requestState": state, "inputResponses": answer}));
    assert!(owned["result"]["content"].to_string().contains("Name: Ada Lovelace"), "{owned}");

    // The official SDK's session-free client through HAProxy (round robin: its requests take
    // turns between the replicas), answering the question with its callback, every time.
    let haproxy = Haproxy::start(&dir, &[&a.addr, &b.addr]);
    haproxy.checked(2);
    for run in 0..3 {
        let steps = json!([["call", "everything.trigger-elicitation-request", {}]]);
        let out = common::gateway::client_mode_steps("2026-07-28", &haproxy.url(), "token-demo", &steps);
        assert!(out[0]["text"].as_str().unwrap().contains("Name: Ada Lovelace"), "run {run}: {out:?}");
    }
}

#[test]
fn one_login_serves_every_replica_sealed_in_the_store_and_refreshes_never_cross() {
    use common::oauth::{log_in, protected, Idp};
    let dir = common::scratch().join("gateway-fleet-login");
    let pg = Postgres::start("login");
    let url = pg.url();
    let port = common::gateway::free_port();
    let idp = Idp::start(&format!("http://127.0.0.1:{port}/mcp"), 4);
    let (_server, vault) = protected(&idp, port);
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {"url": vault, "oauth": {}}, "everything": everything},
                "toolsearch": {"state": {"store": url, "key": "a fleet secret"}}}),
    );
    let (a, b) = (
        HttpGateway::start(&config, &dir.join("state-a"), &[]),
        HttpGateway::start(&config, &dir.join("state-b"), &[]),
    );
    for r in [&a, &b] {
        r.wait_for_status("UPSTREAM_LOGIN_REQUIRED", Duration::from_secs(20));
    }
    // The operator logs in once, on replica a's host.
    let (ok, printed, page) = log_in(&config, &dir.join("state-a"), "vault", "alice", None);
    assert!(ok, "{printed} {page}");
    let whoami = |r: &HttpGateway| common::gateway::client_steps(&r.url(), "-", &json!([["call", "vault.whoami", {}]]));
    for r in [&a, &b] {
        r.wait_for_status("vault is up", Duration::from_secs(15));
        let out = whoami(r);
        assert_eq!(out[0]["is_error"], false, "{out:?}");
    }
    // Sealed at rest: the token is nowhere in the row.
    let grant: Value =
        serde_json::from_slice(&std::fs::read(dir.join("state-a/oauth/vault.grant.json")).unwrap()).unwrap();
    let token = grant["access_token"].as_str().unwrap();
    let row = pg.query("SELECT encode(sealed, 'hex') FROM toolsearch_grants WHERE server = 'vault'");
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!row.trim().is_empty() && !row.contains(&hex), "{row}");
    // A login on b's host runs as the client a's login registered (kept in the store, sealed).
    let (ok, printed, page) = log_in(&config, &dir.join("state-b"), "vault", "alice", None);
    assert!(ok, "{printed} {page}");
    let client = |state: &str| -> Value {
        let kept: Value =
            serde_json::from_slice(&std::fs::read(dir.join(state).join("oauth/clients.json")).unwrap()).unwrap();
        kept.as_object().unwrap().values().next().unwrap()["client_id"].clone()
    };
    assert_eq!(client("state-a"), client("state-b"));
    assert_eq!(pg.query("SELECT count(*) FROM toolsearch_registrations").trim(), "1");
    // Tokens live 4 s and each refresh rotates the refresh token: both replicas keep calling
    // for 14 s (three lifetimes), refreshing under the fleet's lock, and neither is logged out.
    let until = Instant::now() + Duration::from_secs(14);
    while Instant::now() < until {
        for r in [&a, &b] {
            let out = whoami(r);
            assert_eq!(out[0]["is_error"], false, "{out:?}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // A logout on b's host reaches a too.
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "logout", "vault", "--config", config.to_str().unwrap()])
        .args(["--state", dir.join("state-b").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(15);
    while dir.join("state-a/oauth/vault.grant.json").exists() {
        assert!(Instant::now() < deadline, "replica a kept the grant after the logout");
        std::thread::sleep(Duration::from_millis(200));
    }
}
