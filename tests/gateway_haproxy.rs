//! docs/gateway.md's HAProxy recipe, as the page prints it, with Debian's HAProxy in front of
//! two gateway replicas: both pass its health check (a check the replicas refused would mark
//! them DOWN, and every request would get 503), and a client session goes through it.

#[path = "common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::gateway::{client_steps, free_port, reference_server, step_json, wait_for_port, HttpGateway};
use common::write_config;
use serde_json::json;

/// The `backend gateways` block of docs/gateway.md, as printed.
fn docs_backend() -> String {
    let page = std::fs::read_to_string(common::repo().join("docs/gateway.md")).unwrap();
    let block = page.split("```\n").find(|b| b.starts_with("backend gateways")).expect("the recipe's backend block");
    block.to_owned()
}

/// HAProxy's view of each server of `backend`: (name, status, last check); nothing while its
/// stats socket is not there yet (HAProxy may open it after the frontend's port).
fn servers(socket: &std::path::Path) -> Vec<(String, String, String)> {
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(socket) else { return Vec::new() };
    s.write_all(b"show stat\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().trim_start_matches("# ").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (px, sv, status, check) = (col("pxname"), col("svname"), col("status"), col("check_status"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() > check && f[px] == "gateways" && f[sv] != "BACKEND")
        .map(|f| (f[sv].to_owned(), f[status].to_owned(), f[check].to_owned()))
        .collect()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_docs_haproxy_recipe_checks_both_replicas_up_and_carries_a_session() {
    let dir = common::scratch().join("gateway-haproxy");
    let state = dir.join("state");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}}}),
    );
    let built = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--build", "--config", config.to_str().unwrap(), "--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let a = HttpGateway::start(&config, &state, &["--replica"]);
    let b = HttpGateway::start(&config, &state, &["--replica"]);
    let backend = docs_backend().replace("127.0.0.1:8801", &a.addr).replace("127.0.0.1:8802", &b.addr);
    assert!(backend.contains(&a.addr) && backend.contains(&b.addr), "{backend}");
    let front = free_port();
    let socket = dir.join("haproxy.sock");
    let cfg = format!(
        "global\n    stats socket {} mode 600 level admin\ndefaults\n    mode http\n    timeout connect 5s\n    \
         timeout client 60s\n    timeout server 60s\nfrontend mcp\n    bind 127.0.0.1:{front}\n    \
         default_backend gateways\n{backend}",
        socket.display()
    );
    std::fs::write(dir.join("haproxy.cfg"), &cfg).unwrap();
    let _haproxy = Killed(
        Command::new("haproxy")
            .args(["-f", dir.join("haproxy.cfg").to_str().unwrap(), "-db"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy runs (scripts/test-deps installs it)"),
    );
    wait_for_port(front);
    // The first check runs within its interval (2 s): both pass it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let seen = loop {
        let seen = servers(&socket);
        if seen.len() == 2 && seen.iter().all(|(_, _, check)| !check.is_empty() && !check.starts_with("INI")) {
            break seen;
        }
        assert!(Instant::now() < deadline, "no check result yet: {seen:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(seen.iter().all(|(_, status, check)| status == "UP" && check == "L7OK"), "{seen:?}\n{cfg}");
    let out = client_steps(
        &format!("http://127.0.0.1:{front}/mcp"),
        "-",
        &json!([["search_tool_by_category", {"query": "echo a message back"}], ["call", "everything.echo", {"message": "through haproxy"}]]),
    );
    let found = step_json(&out[0]);
    assert_eq!(found["results"][0]["tool_id"], "everything.echo", "{found}");
    assert!(out[1]["text"].as_str().unwrap().contains("through haproxy"), "{}", out[1]);
}
