//! A client machine gone without a word (no FIN, no RST: its packets simply stop) frees the
//! session its open `GET` stream held, within `limits.http.peer_timeout_secs` plus the lesser
//! of it and the stream's 15 s keep-alive, not after the kernel's 15 minutes of retransmits.
//!
//! Proven in a network namespace of the test's own (`unshare --user --net`): there, taking the
//! loopback interface down drops every packet between the client and the gateway, as a
//! vanished peer does, while both processes run on. The test runs itself again inside one.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use crate::gateway_limits_live::{ask, open};
use common::gateway::{http_open, reference_server, sample, scrape, HttpGateway};
use common::write_config;
use serde_json::json;

/// Set in the environment of the run inside the namespace.
const INSIDE: &str = "TOOLSEARCH_TEST_IN_NETNS";

/// This test's full name, for running it alone inside the namespace.
const NAME: &str = "gateway_silent_peer::a_client_gone_without_a_word_frees_its_session";

#[test]
fn a_client_gone_without_a_word_frees_its_session() {
    if std::env::var_os(INSIDE).is_none() {
        let out = Command::new("unshare")
            .args(["--user", "--map-root-user", "--net", "--"])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(INSIDE, "1")
            .output()
            .expect("unshare (util-linux) runs");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed"), "inside the namespace:\n{text}");
        text.lines().filter(|l| l.contains("held the silent")).for_each(|l| eprintln!("{l}"));
        return;
    }
    loopback("up");
    let dir = common::scratch().join("gateway-silent-peer");
    let path = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": {"tokens": {"tok-a": [], "ops-tok": ["ops"]},
                               "limits": {"http": {"session_idle_secs": 1, "peer_timeout_secs": 3}}}}),
    );
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    let addr = gateway.addr.as_str();
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let session = open(addr);
    let get = [("Authorization", "Bearer tok-a"), ("Mcp-Session-Id", session.as_str())];
    let (head, stream) = http_open(addr, "GET", "", &get, Duration::from_secs(5));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(established_from(port), 1, "the stream's connection, and no other");

    // The peer goes silent: the gateway's keep-alive probes (after 3 quiet seconds) go
    // unacknowledged, and TCP_USER_TIMEOUT gives up on the connection.
    loopback("down");
    let start = Instant::now();
    while established_from(port) > 0 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(250));
    }
    let dropped = start.elapsed();
    eprintln!("the gateway held the silent connection for {dropped:?}");
    // The idle sweep runs once a second: past session_idle_secs, the session is closed.
    std::thread::sleep(Duration::from_secs(3));
    loopback("up");
    assert!(dropped < Duration::from_secs(30), "the gateway still held the silent connection after {dropped:?}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let answer = ask(addr, Some(&session), &list);
    assert_eq!(answer.0, 404, "the silent client's session is closed: {answer:?}");
    let scraped = scrape(&format!("http://{addr}/metrics"), Some("ops-tok"));
    assert_eq!(sample(&scraped, "toolsearch_http_sessions_idle_closed_total", &[]), Some(1.0), "{scraped}");
    drop(stream);
}

/// Sets the namespace's loopback interface `state` (`up` or `down`).
fn loopback(state: &str) {
    let done = Command::new("ip").args(["link", "set", "lo", state]).status().expect("ip (iproute2) runs");
    assert!(done.success(), "ip link set lo {state}");
}

/// The established TCP connections whose local port is `port` (the gateway's side of them),
/// from the namespace's `/proc/net/tcp`.
fn established_from(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.len() > 3 && fields[1].ends_with(&local) && fields[3] == "01"
        })
        .count()
}
