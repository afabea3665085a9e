//! Refused bearer tokens are throttled per client address (`limits.http.refused_tokens_*`):
//! past the burst, an address's tokens are answered 429 without being compared, so a guess
//! tells nothing, the valid token included; its own live session still answers it; another
//! address keeps its own budget; `/metrics` counts against the same budget; a forged
//! `X-Forwarded-For` from an untrusted peer changes nothing.

#[path = "common/mod.rs"]
mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::gateway::{http_from, sample, scrape, HttpGateway};
use common::{python, write_config};
use serde_json::json;

const VALID: &str = "3f1c9a7e5b2d4086a1c3e5f7092b4d6e";
const OPS: &str = "ops-token-7d2e9c4a1b3f5e60";

const GUESSER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const NEIGHBOUR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

fn init() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

/// An `initialize` from `source` with `token`: the status and the whole answer.
fn open(source: Ipv4Addr, addr: &str, token: &str, extra: &[(&str, &str)]) -> (u16, String) {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    headers.extend_from_slice(extra);
    http_from(source, addr, "POST", "/mcp", &init(), &headers)
}

/// The `Mcp-Session-Id` an answer carries.
fn session_of(answer: &str) -> String {
    let line = answer.lines().find(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:")).expect(answer);
    line.split_once(':').unwrap().1.trim().to_owned()
}

/// A `tools/list` on `session` from `source` with `token`: the status.
fn list_on(source: Ipv4Addr, addr: &str, session: &str, token: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let auth = format!("Bearer {token}");
    let headers =
        [("Authorization", auth.as_str()), ("Mcp-Session-Id", session), ("Mcp-Protocol-Version", "2025-06-18")];
    http_from(source, addr, "POST", "/mcp", &body, &headers).0
}

fn retry_after(answer: &str) -> u64 {
    let line = answer.lines().find(|l| l.to_ascii_lowercase().starts_with("retry-after:")).expect(answer);
    line.split_once(':').unwrap().1.trim().parse().unwrap()
}

/// An HTTP gateway in front of one small server, with the `toolsearch` section `settings`.
fn gateway(name: &str, settings: serde_json::Value) -> HttpGateway {
    let dir = common::scratch().join(name);
    let server = common::repo().join("tests/mcp/hostile_server.py").display().to_string();
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"count": {"command": python(), "args": [server, "count"]}}, "toolsearch": settings}),
    );
    HttpGateway::start(&config, &dir.join("state"), &["--json"])
}

#[test]
fn refused_tokens_lock_their_address_out_without_telling_a_right_guess_from_a_wrong_one() {
    let gateway = gateway(
        "gateway-strikes",
        json!({"tokens": {VALID: {"name": "alice", "scopes": []}, OPS: ["ops"]},
               "limits": {"http": {"refused_tokens_burst": 3, "refused_tokens_per_minute": 20}}}),
    );
    let addr = gateway.addr.as_str();

    // The guesser's address holds a live session of the valid token, opened before.
    let (status, answer) = open(GUESSER, addr, VALID, &[]);
    assert_eq!(status, 200, "{answer}");
    let session = session_of(&answer);

    for guess in ["guess-0000000000000001", "guess-0000000000000002", "guess-0000000000000003"] {
        let (status, answer) = open(GUESSER, addr, guess, &[]);
        assert_eq!(status, 401, "a refused token within the burst is told so: {answer}");
    }
    let (status, answer) = open(GUESSER, addr, "guess-0000000000000004", &[]);
    assert_eq!(status, 429, "past the burst: {answer}");
    assert!((1..=3).contains(&retry_after(&answer)), "{answer}");
    assert!(answer.contains("refused_tokens_per_minute"), "{answer}");
    // The right token gets the same answer as a wrong one: it is not compared.
    let (status, answer) = open(GUESSER, addr, VALID, &[]);
    assert_eq!(status, 429, "a right guess must look like a wrong one: {answer}");
    // A forged X-Forwarded-For from a peer nobody trusts changes nothing.
    let (status, _) = open(GUESSER, addr, VALID, &[("X-Forwarded-For", "198.51.100.7")]);
    assert_eq!(status, 429);
    // The session the valid token opened still answers it; a guess on it is 429, not 404.
    assert_eq!(list_on(GUESSER, addr, &session, VALID), 200, "its own session keeps working");
    assert_eq!(list_on(GUESSER, addr, &session, "guess-0000000000000005"), 429);
    // Another address has its own budget: told 401 for a wrong token, let in with the right one.
    assert_eq!(open(NEIGHBOUR, addr, "guess-0000000000000006", &[]).0, 401);
    assert_eq!(open(NEIGHBOUR, addr, VALID, &[]).0, 200);

    // `/metrics` takes tokens too, so it counts against the same budget: three guesses, then
    // even the operator's token is not compared from there.
    let get = |source, token: &str| {
        http_from(source, addr, "GET", "/metrics", "", &[("Authorization", &format!("Bearer {token}"))]).0
    };
    let ops_guesser = Ipv4Addr::new(127, 0, 0, 4);
    for guess in ["ops-guess-000000000001", "ops-guess-000000000002"] {
        assert_eq!(get(ops_guesser, guess), 401);
    }
    assert_eq!(get(ops_guesser, OPS), 200, "within the burst the operator's token is compared");
    assert_eq!(get(ops_guesser, "ops-guess-000000000003"), 401);
    assert_eq!(get(ops_guesser, OPS), 401, "past it, not even the right token is compared");

    // The operator sees the refusals counted: 3 + 1 + 3 refused, 5 throttled, from another address.
    let scraped = scrape(&format!("http://{addr}/metrics"), Some(OPS));
    assert_eq!(sample(&scraped, "toolsearch_http_refused_tokens_total", &[]), Some(7.0), "{scraped}");
    assert_eq!(sample(&scraped, "toolsearch_http_throttled_tokens_total", &[]), Some(5.0), "{scraped}");

    // A strike is forgiven every 3 s (20 a minute): the guesser's valid token gets in again.
    let deadline = std::time::Instant::now() + Duration::from_secs(6);
    while open(GUESSER, addr, VALID, &[]).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "the address was never forgiven");
        std::thread::sleep(Duration::from_millis(250));
    }
    let log = gateway.status.lock().unwrap().join("\n");
    for secret in [VALID, OPS, "guess-0000000000000004"] {
        assert!(!log.contains(secret), "a token reached the log: {log}");
    }
}

#[test]
fn a_trusted_proxy_that_is_no_address_is_refused_naming_the_file_and_the_entry() {
    let dir = common::scratch().join("gateway-strikes-bad");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"count": {"command": python(), "args": ["-c", "pass"]}},
                "toolsearch": {"trusted_proxies": ["127.0.0.1", "10.0.0.0/33"]}}),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--check", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("gateway.json") && err.contains("toolsearch.trusted_proxies[1]"), "{err}");
    assert!(err.contains("\"10.0.0.0/33\"") && err.contains("0 to 32"), "{err}");
}

#[test]
fn a_client_retrying_a_stale_token_does_not_lock_its_address_out() {
    let gateway = gateway(
        "gateway-strikes-stale",
        json!({"tokens": {VALID: []}, "limits": {"http": {"refused_tokens_burst": 3, "refused_tokens_per_minute": 1}}}),
    );
    let addr = gateway.addr.as_str();
    let source = Ipv4Addr::new(127, 0, 0, 5);
    // A client whose token was rotated away retries it, again and again: one strike.
    for _ in 0..12 {
        let (status, answer) = open(source, addr, "rotated-away-00000000001", &[]);
        assert_eq!(status, 401, "a retried stale token is told so each time: {answer}");
    }
    assert_eq!(open(source, addr, VALID, &[]).0, 200, "a neighbour on the address still gets in");
    // Each new token is a guess: two more empty the burst of 3.
    assert_eq!(open(source, addr, "guess-00000000000000a1", &[]).0, 401);
    assert_eq!(open(source, addr, "guess-00000000000000a2", &[]).0, 401);
    assert_eq!(open(source, addr, "guess-00000000000000a3", &[]).0, 429);
    // Once locked, nothing is compared: the stale token and the valid one wait too.
    assert_eq!(open(source, addr, "rotated-away-00000000001", &[]).0, 429);
    assert_eq!(open(source, addr, VALID, &[]).0, 429);
}
