//! #60 T4b over Streamable HTTP: an upstream of an older revision that asks a question on the
//! response stream of the gateway's request (the official TypeScript SDK does, for a question
//! asked inside a tool) has it put to the client whose call that is at once, while another
//! caller's call is open on the same server. (Over stdio the question waits for the other call
//! to finish: `gateway_revisions::a_question_waits_for_another_callers_call_instead_of_being_declined`.)

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::gateway::{client_mode_steps, everything_over, free_port, step_json, HttpGateway};
use common::write_config;
use serde_json::json;

#[test]
fn an_http_upstreams_question_goes_to_its_callers_client_at_once_while_another_call_is_open() {
    let dir = common::scratch().join("gateway-asks-http");
    let port = free_port();
    let _everything = everything_over("streamableHttp", port);
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"everything": {"url": format!("http://127.0.0.1:{port}/mcp")}},
            "toolsearch": {"tokens": {"token-demo": ["demo"], "token-other": ["demo"]}}
        }),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let url = gateway.url();
    // Another caller's call stays open on the same server for 10 s.
    let long = json!([["call", "everything.trigger-long-running-operation", {"duration": 10, "steps": 5}], ["asked"]]);
    let busy = std::thread::spawn(move || client_mode_steps("legacy", &url, "token-other", &long));
    std::thread::sleep(Duration::from_millis(1500));
    let start = Instant::now();
    let asked = json!([["call", "everything.trigger-elicitation-request", {}], ["asked"]]);
    let out = client_mode_steps("legacy", &gateway.url(), "token-demo", &asked);
    let took = start.elapsed();
    assert!(out[0]["text"].as_str().unwrap().contains("Name: Ada Lovelace"), "{}", out[0]);
    assert_eq!(step_json(&out[1])[0][0], "elicitation", "{}", out[1]);
    // Not held until the other call ended (about 8.5 s from here).
    assert!(took < Duration::from_secs(5), "the question waited {took:?}");
    let other = busy.join().unwrap();
    assert!(!other[0]["is_error"].as_bool().unwrap(), "{other:?}");
    assert_eq!(step_json(&other[1]), json!([]), "the other caller was asked nothing: {other:?}");
}
