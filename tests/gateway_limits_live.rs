//! The HTTP limits edited in the config (`toolsearch.limits.http`) apply to the next request
//! without a restart: the largest body, a caller's sessions, and the throttle on refused
//! tokens (turned off, it lifts a lock at once). Only `session_idle_secs`, which a session
//! takes as it opens, is named as needing a restart.

#[path = "common/mod.rs"]
mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::gateway::{http_from, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

#[test]
fn http_limits_edited_in_the_config_apply_to_the_next_request() {
    let dir = common::scratch().join("gateway-limits-live");
    let write = |http: Value| {
        write_config(
            &dir,
            &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                    "toolsearch": {"tokens": {"tok-a": []}, "limits": {"http": http}}}),
        )
    };
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
    let restart: Vec<Value> = status
        .iter()
        .filter(|l| l.contains("config_restart_needed"))
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["settings"].clone())
        .collect();
    assert_eq!(restart, [json!(["limits.http.session_idle_secs"])], "{status:?}");
    assert!(!status.iter().any(|l| l.contains("tokens_changed")), "{status:?}");
}
