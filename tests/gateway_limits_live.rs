//! The HTTP limits edited in the config (`toolsearch.limits.http`) apply to the next request
//! without a restart: the largest body, a caller's sessions, and the throttle on refused
//! tokens (turned off, it lifts a lock at once); and how long a session may idle, to the
//! sessions already open. None of them is named as needing a restart.

#[path = "common/mod.rs"]
mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::gateway::{http_from, reference_server, sample, scrape, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

/// Writes the config in `dir`: the everything server, token tok-a, and `http` as
/// `limits.http`. Its path.
fn config(dir: &std::path::Path, http: Value) -> std::path::PathBuf {
    write_config(
        dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": {"tokens": {"tok-a": [], "ops-tok": ["ops"]}, "limits": {"http": http}}}),
    )
}

#[test]
fn http_limits_edited_in_the_config_apply_to_the_next_request() {
    let dir = common::scratch().join("gateway-limits-live");
    let write = |http: Value| config(&dir, http);
    let path = write(json!({"max_body_bytes": 2048, "max_sessions_per_token": 1, "refused_tokens_burst": 2,
                            "refused_tokens_per_minute": 1}));
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    let addr = gateway.addr.as_str();
    // An `initialize` of `pad` bytes more than its bare form, by `token`: the HTTP status.
    let initialize = |token: &str, pad: usize| {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "x".repeat(pad + 1), "version": "1"}}})
        .to_string();
        let auth = format!("Bearer {token}");
        http_from(Ipv4Addr::LOCALHOST, addr, "POST", "/mcp", &init, &[("Authorization", &auth)]).0
    };
    assert_eq!(initialize("tok-a", 4096), 413, "a body over max_body_bytes");
    assert_eq!(initialize("tok-a", 0), 200);
    assert_eq!(initialize("tok-a", 0), 429, "a second session past max_sessions_per_token");
    assert_eq!([initialize("wrong-1", 0), initialize("wrong-2", 0), initialize("tok-a", 0)], [401, 401, 429]);

    write(json!({"max_body_bytes": 1 << 20, "max_sessions_per_token": 4, "refused_tokens_burst": 2,
                 "refused_tokens_per_minute": 0, "session_idle_secs": 600}));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    assert_eq!(initialize("wrong-3", 0), 401, "the throttle turned off lifts the address's lock");
    assert_eq!(initialize("tok-a", 4096), 200, "a raised max_body_bytes lets the body in");
    assert_eq!(initialize("tok-a", 0), 200, "a raised max_sessions_per_token lets a third session open");

    let status = gateway.status.lock().unwrap().clone();
    assert!(!status.iter().any(|l| l.contains("config_restart_needed")), "{status:?}");
    assert!(!status.iter().any(|l| l.contains("tokens_changed")), "{status:?}");
}

/// One request to `/mcp` at `addr` by tok-a, on `session` if given: the status and the answer.
pub(crate) fn ask(addr: &str, session: Option<&str>, body: &str) -> (u16, String) {
    let mut headers = vec![("Authorization", "Bearer tok-a")];
    headers.extend(session.map(|s| ("Mcp-Session-Id", s)));
    http_from(Ipv4Addr::LOCALHOST, addr, "POST", "/mcp", body, &headers)
}

/// Opens a session at `addr` by tok-a: its id.
pub(crate) fn open(addr: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, text) = ask(addr, None, &init.to_string());
    assert_eq!(status, 200, "{text}");
    let id =
        text.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|v| v.trim().to_owned()));
    let id = id.expect("a session id");
    let (status, _) = ask(addr, Some(&id), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert!(status == 202 || status == 200, "{status}");
    id
}

/// A `tools/list` on `session`: the HTTP status (404 once the session is closed).
fn list(addr: &str, session: &str) -> u16 {
    ask(addr, Some(session), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).0
}

#[test]
fn session_idle_secs_edited_applies_to_the_sessions_already_open() {
    let dir = common::scratch().join("gateway-idle-live");
    let write = |idle: u64| config(&dir, json!({"session_idle_secs": idle}));
    let gateway = HttpGateway::start(&write(600), &dir.join("state"), &["--json"]);
    let addr = gateway.addr.as_str();
    let reloads =
        || gateway.status.lock().unwrap().iter().filter(|l| l.contains("\"event\":\"config_reloaded\"")).count();

    // Lowered: a session opened under the old limit closes under the new one.
    let before = open(addr);
    write(1);
    gateway.wait_for_statuses("\"event\":\"config_reloaded\"", 1, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(list(addr, &before), 404, "a lowered session_idle_secs closes a session opened before");
    let scraped = scrape(&format!("http://{addr}/metrics"), Some("ops-tok"));
    assert_eq!(sample(&scraped, "toolsearch_http_sessions_idle_closed_total", &[]), Some(1.0), "{scraped}");

    // An open GET stream keeps its session, however long it is quiet.
    let streamed = open(addr);
    let get = [("Authorization", "Bearer tok-a"), ("Mcp-Session-Id", streamed.as_str())];
    let (head, stream) = common::gateway::http_open(addr, "GET", "", &get, Duration::from_secs(5));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(list(addr, &streamed), 200, "a session with an open stream is not idle");
    drop(stream);

    // Raised: a session opened under the lower limit (kept busy until the change is read)
    // outlives it.
    let kept = open(addr);
    write(600);
    while reloads() < 2 {
        assert_eq!(list(addr, &kept), 200);
        std::thread::sleep(Duration::from_millis(250));
    }
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(list(addr, &kept), 200, "a raised session_idle_secs keeps a session opened under the lower one");

    let status = gateway.status.lock().unwrap().clone();
    assert!(!status.iter().any(|l| l.contains("config_restart_needed")), "{status:?}");
}
