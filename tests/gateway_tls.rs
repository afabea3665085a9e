//! HTTPS upstreams: the gateway speaks TLS (rustls) to a server of the official Python SDK
//! served over HTTPS, trusting the platform's roots, or `SSL_CERT_FILE`'s when set; a
//! certificate it does not trust keeps the server down, and says so only to the operator.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::gateway::{client_steps, free_port, reference_server, HttpGateway, Killed};
use common::write_config;
use serde_json::json;

#[test]
fn an_https_upstream_is_reached_when_its_certificate_is_trusted_and_only_then() {
    let dir = common::scratch().join("gateway-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let cert = dir.join("cert.pem");
    let server = Command::new(common::python())
        .arg(common::repo().join("tests/mcp/tls_server.py"))
        .args([&port.to_string(), cert.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Killed(server);
    common::gateway::wait_for_port(port);
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"secure": {"url": format!("https://127.0.0.1:{port}/mcp")}, "everything": everything}}),
    );
    let trusted =
        HttpGateway::start_env(&config, &dir.join("state"), &[], &[("SSL_CERT_FILE", cert.to_str().unwrap())]);
    let out = client_steps(&trusted.url(), "-", &json!([["call", "secure.cipher_report", {}]]));
    assert_eq!(out[0]["text"], "served over TLS", "{out:?}");
    drop(trusted);

    // The platform's roots do not know this certificate: down, the reason for the operator.
    let untrusted = HttpGateway::start(&config, &dir.join("state2"), &[]);
    let line = untrusted.wait_for_status("MCP server \"secure\" is unavailable", Duration::from_secs(20));
    assert!(line.to_ascii_lowercase().contains("certificate") || line.contains("could not be reached"), "{line}");
}
