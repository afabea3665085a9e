//! Bearer tokens edited in the config apply to the next request without a restart, proven
//! with the official Python MCP client: a token removed is refused at once and what it opened
//! ends, a token granted other scopes loses its session (its client's next one holds what the
//! token holds now), a token added is let in, and an unchanged token's session goes on. A set
//! of tokens the listener may not take is refused and the running one kept. Allowed origins and
//! trusted proxies apply to the next request too.

#[path = "common/mod.rs"]
mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::gateway::{
    ask_session_free, client_steps, echo_session_free, listen_session_free, message, reference_server, HttpGateway,
};
use common::write_config;
use serde_json::{json, Value};

fn config(dir: &Path, tokens: Value) -> PathBuf {
    write_config(
        dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": {"requires": {"everything": ["ops"]}, "tokens": tokens}}),
    )
}

/// A session-free `call_tool` of `everything.echo` by `token`: the HTTP status and the text
/// of its answer.
fn echo(addr: &str, token: &str) -> (u16, String) {
    let (status, text) = echo_session_free(addr, token);
    match status {
        200 => (status, message(&text)["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()),
        _ => (status, text),
    }
}

/// A session-free `subscriptions/listen` stream of `token`, on a connection that closes when
/// the stream ends: the HTTP status and the connection.
fn listen(addr: &str, token: &str) -> (u16, std::net::TcpStream) {
    listen_session_free(addr, token, &[("Connection", "close")])
}

/// Whether the connection ends (the server closes it) within `within`.
fn ends_within(s: &mut std::net::TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).is_ok()
}

#[test]
fn tokens_edited_in_the_config_apply_to_the_next_request_and_end_what_a_removed_token_opened() {
    let dir = common::scratch().join("gateway-tokens-live");
    let go = dir.join("go");
    let _ = std::fs::remove_file(&go);
    let grant = |name: &str, scope: &str| json!({"name": name, "scopes": [scope]});
    let path = config(
        &dir,
        json!({"tok-alice": grant("alice", "ops"), "tok-bob": grant("bob", "ops"), "tok-dave": grant("dave", "ops")}),
    );
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    // A session of the official client per token, held open across the edit.
    let clients: Vec<_> = ["tok-alice", "tok-bob", "tok-dave"]
        .into_iter()
        .map(|token| {
            let opened = dir.join(format!("open-{token}"));
            let _ = std::fs::remove_file(&opened);
            let steps = json!([["call", "everything.echo", {"message": "before"}], ["touch", opened],
                               ["wait_for_file", go], ["try_call", "everything.echo", {"message": "after"}]]);
            let url = gateway.url();
            (opened, std::thread::spawn(move || client_steps(&url, token, &steps)))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !clients.iter().all(|(opened, _)| opened.exists()) {
        assert!(Instant::now() < deadline, "the clients did not open their sessions");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, mut bobs_stream) = listen(&gateway.addr, "tok-bob");
    assert_eq!(status, 200);
    let (status, mut daves_stream) = listen(&gateway.addr, "tok-dave");
    assert_eq!(status, 200);
    assert!(!ends_within(&mut bobs_stream, Duration::from_millis(500)), "a stream stays open until its token goes");

    // Bob's token goes, Alice's loses the scope, Carol's comes, Dave's stays.
    config(
        &dir,
        json!({"tok-alice": grant("alice", "other"), "tok-carol": grant("carol", "ops"), "tok-dave": grant("dave", "ops")}),
    );
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    let changed: Value = serde_json::from_str(&gateway.wait_for_status("tokens_changed", Duration::ZERO)).unwrap();
    assert_eq!(
        (&changed["added"], &changed["removed"], &changed["changed"], &changed["sessions_ended"]),
        (&json!(["carol"]), &json!(["bob"]), &json!(["alice"]), &json!(2)),
        "{changed}"
    );
    assert!(ends_within(&mut bobs_stream, Duration::from_secs(10)), "the removed token's stream ends");
    assert!(!ends_within(&mut daves_stream, Duration::from_millis(500)), "an unchanged token's stream goes on");

    std::fs::write(&go, "").unwrap();
    let results: Vec<Vec<Value>> = clients.into_iter().map(|(_, c)| c.join().unwrap()).collect();
    for (who, steps) in ["alice", "bob", "dave"].iter().zip(&results) {
        assert_eq!(steps[0]["text"], "Echo: before", "{who}: {steps:?}");
    }
    let after = |i: usize| (results[i][3]["is_error"].as_bool().unwrap(), results[i][3]["text"].as_str().unwrap());
    // Alice's and Bob's sessions ended (Bob's token is refused before its session is looked up).
    assert!(after(0).0 && after(0).1.contains("Session terminated"), "{:?}", results[0]);
    assert!(after(1).0 && !after(1).1.contains("Echo"), "{:?}", results[1]);
    assert_eq!(after(2), (false, "Echo: after"), "Dave's session goes on");

    // The next request of each meets the new tokens.
    assert_eq!(echo(&gateway.addr, "tok-bob").0, 401);
    let (status, text) = echo(&gateway.addr, "tok-alice");
    assert!(status == 200 && !text.contains("Echo"), "Alice no longer holds `ops`: {text}");
    assert_eq!(echo(&gateway.addr, "tok-carol"), (200, "Echo: hi".to_owned()));
    let fresh = client_steps(&gateway.url(), "tok-alice", &json!([["try_call", "everything.echo", {"message": "x"}]]));
    assert!(!fresh[0]["text"].as_str().unwrap().contains("Echo"), "a new session holds the new scopes: {fresh:?}");

    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed"), "{status}");
    assert!(!status.contains("tok-"), "no token reaches the status: {status}");
}

/// On an address others can reach, a reload that would leave no token, or a weak one, is
/// refused as a start would be, naming the setting; the running ones are kept.
#[test]
fn tokens_a_reachable_listener_may_not_take_are_refused_and_the_running_ones_kept() {
    let dir = common::scratch().join("gateway-tokens-refused");
    let strong = "5f0c2a9e7d3b41c8a6e2f9b0d4c7a1e3";
    let path = config(&dir, json!({strong: {"name": "ops-bot", "scopes": ["ops"]}}));
    let port = common::gateway::free_port();
    let gateway = HttpGateway::start_on(&format!("0.0.0.0:{port}"), &path, &dir.join("state"), &["--json"], &[]);
    let addr = format!("127.0.0.1:{port}");
    assert_eq!(echo(&addr, strong), (200, "Echo: hi".to_owned()));
    let mut errors = 0;
    for (tokens, says) in [(json!({}), "without bearer tokens"), (json!({"hunter2hunter2": ["ops"]}), "easy to guess")]
    {
        config(&dir, tokens);
        errors += 1;
        gateway.wait_for_statuses("\"event\":\"config_error\"", errors, Duration::from_secs(60));
        let status = gateway.status.lock().unwrap().clone();
        let line = status.iter().filter(|l| l.contains("config_error")).nth(errors - 1).unwrap();
        assert!(
            line.contains("toolsearch.tokens") && line.contains(says) && line.contains("running ones are kept"),
            "{line}"
        );
        assert!(!line.contains("hunter2"), "the token's value is not shown: {line}");
        assert_eq!(echo(&addr, strong), (200, "Echo: hi".to_owned()), "the running token still works");
        assert_eq!(echo(&addr, "hunter2hunter2").0, 401);
    }
}

/// `allowed_origins` and `trusted_proxies` edited in the config apply to the next request, as
/// tokens do: a page's origin refused before is let in (with CORS), and refused tokens that
/// came through a proxy count against the proxy until it is trusted, then against each client.
#[test]
fn allowed_origins_and_trusted_proxies_edited_in_the_config_apply_to_the_next_request() {
    use common::gateway::http_from;
    use std::net::Ipv4Addr;
    let dir = common::scratch().join("gateway-access-live");
    let write = |origins: Value, proxies: Value| {
        write_config(
            &dir,
            &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                    "toolsearch": {"tokens": {"tok-a": []}, "allowed_origins": origins, "trusted_proxies": proxies,
                                   "limits": {"http": {"refused_tokens_burst": 2, "refused_tokens_per_minute": 1}}}}),
        )
    };
    let path = write(json!([]), json!([]));
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    let addr = gateway.addr.as_str();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let page = "http://app.example";
    let from_page = || {
        http_from(
            Ipv4Addr::LOCALHOST,
            addr,
            "POST",
            "/mcp",
            &init,
            &[("Authorization", "Bearer tok-a"), ("Origin", page)],
        )
    };
    let proxy = Ipv4Addr::new(127, 0, 0, 2);
    let via_proxy = |client: &str, token: &str| {
        let auth = format!("Bearer {token}");
        http_from(proxy, addr, "POST", "/mcp", &init, &[("Authorization", &auth), ("X-Forwarded-For", client)]).0
    };
    assert_eq!(from_page().0, 403, "an origin not listed is refused");
    // Not trusted yet: two clients' refused tokens count against the proxy, which is locked out.
    assert_eq!([via_proxy("198.51.100.1", "wrong-1"), via_proxy("198.51.100.1", "wrong-2")], [401, 401]);
    assert_eq!(via_proxy("198.51.100.2", "tok-a"), 429, "the proxy's budget is spent");

    write(json!([page]), json!(["127.0.0.2"]));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    let (status, answer) = from_page();
    assert_eq!(status, 200, "{answer}");
    assert!(answer.to_ascii_lowercase().contains("access-control-allow-origin: http://app.example"), "{answer}");
    // Trusted now: each client behind the proxy has its own budget.
    assert_eq!(via_proxy("198.51.100.2", "tok-a"), 200);
    assert_eq!([via_proxy("198.51.100.1", "wrong-3"), via_proxy("198.51.100.1", "wrong-4")], [401, 401]);
    assert_eq!(via_proxy("198.51.100.1", "wrong-5"), 429);
    assert_eq!(via_proxy("198.51.100.3", "tok-a"), 200, "another client is not locked out with it");
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed") && !status.contains("tokens_changed"), "{status}");
}

/// A session-free call waiting for input (`input_required`) whose token is then granted other
/// scopes is not finished under the old ones: the retry with its answer is told the caller's
/// scopes changed, and the answer reaches no upstream.
#[test]
fn a_call_waiting_for_input_is_not_finished_after_its_tokens_scopes_change() {
    let dir = common::scratch().join("gateway-tokens-live-round");
    let grant = |scopes: Value| json!({"tok-alice": {"name": "alice", "scopes": scopes}});
    let path = config(&dir, grant(json!(["ops"])));
    let gateway = HttpGateway::start(&path, &dir.join("state"), &["--json"]);
    let asked = ask_session_free(&gateway.addr, "tok-alice", json!({}));
    let state = asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{asked}")).to_owned();
    let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();

    config(&dir, grant(json!(["ops", "other"])));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(60));
    let answer = json!({key: {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}});
    let retry = ask_session_free(&gateway.addr, "tok-alice", json!({"requestState": state, "inputResponses": answer}));
    let said = retry.to_string();
    assert!(said.contains("scopes changed") && !said.contains("Ada Lovelace"), "{retry}");
    // A new call under the new scopes is asked afresh.
    let again = ask_session_free(&gateway.addr, "tok-alice", json!({}));
    assert!(again["result"]["requestState"].is_string(), "{again}");
}

/// A gateway served over stdio takes no tokens: an edit of `tokens` in its config changes
/// nothing for its one client, and is reported as no change of tokens. The edit comes as the
/// gateway says it is ready, and is reloaded: the watch compares with the file as it was read
/// at the start, not as it was when the watch began (an edit made while the gateway started
/// was lost until the next one).
#[test]
fn a_stdio_gateway_reports_no_change_of_the_tokens_it_does_not_take() {
    use std::io::BufRead;
    let dir = common::scratch().join("gateway-tokens-stdio");
    let path = config(&dir, json!({"tok-a-0123456789abcdef": ["ops"]}));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["--json", "gateway", "--config", path.to_str().unwrap(), "--state"])
        .arg(dir.join("state"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        std::io::BufReader::new(stderr).lines().map_while(Result::ok).try_for_each(|l| tx.send(l))
    });
    let mut seen = Vec::new();
    let mut wait_for = |event: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !seen.iter().any(|l: &String| l.contains(event)) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).unwrap_or_else(|_| panic!("no {event}: {seen:?}"));
            seen.push(line);
        }
        seen.join("\n")
    };
    wait_for("\"event\":\"ready\"");
    config(&dir, json!({"tok-b-0123456789abcdef": ["ops"]}));
    let status = wait_for("\"event\":\"config_reloaded\"");
    let _ = child.kill();
    let _ = child.wait();
    assert!(!status.contains("tokens_changed"), "{status}");
}
