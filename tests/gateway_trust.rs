//! The gateway's trust boundary, attacked from the upstream side and the client side (issue
//! #47): a stdio child gets none of the gateway's secrets, a tool whose annotations or a prompt
//! whose text changes is held, progress reaches only the caller of its own request (and all
//! of it), nothing an operator configured reaches a client, a dead HTTP upstream is down at
//! once, reload ends the servers it replaces before starting new ones, one token cannot hold
//! every session, every endpoint checks `Host`, and token names are keyed. Driven by the
//! official Python MCP client, against real gateway processes, the npm reference server and
//! hostile upstreams (tests/mcp/hostile_server.py). docs/gateway-security.md "Security" maps each
//! guarantee to its test here.

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::gateway::{
    client_steps, free_port, http_get, http_post, notes_over_http, reference_server, sample, scrape, HttpGateway,
};
use common::{python, write_config};
use serde_json::{json, Value};

fn hostile(mode: &str) -> Vec<String> {
    vec![common::repo().join("tests/mcp/hostile_server.py").display().to_string(), mode.to_owned()]
}

fn text(step: &Value) -> &str {
    step["text"].as_str().unwrap_or_default()
}

/// Waits until `check` holds of `/readyz`'s JSON.
fn wait_ready(gateway: &HttpGateway, what: &str, within: Duration, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (_, body) = http_get(&gateway.addr, "/readyz", &[("Authorization", "Bearer opsy")]);
        let r: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if check(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "{what}: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn held(r: &Value) -> Vec<String> {
    r["held"].as_array().map_or(vec![], |h| h.iter().map(|h| h["tool"].as_str().unwrap().to_owned()).collect())
}

/// Whether `/readyz` says upstream `name` is up.
fn is_up(r: &Value, name: &str) -> bool {
    r["upstreams"][name]["state"] == "up"
}

/// Row 1: a zero-scope caller reads a stdio child's environment and finds no secret of the
/// gateway's in it; what a server's config names (`env`, `inherit_env`) is there.
#[test]
fn stdio_children_start_with_a_minimal_environment_and_none_of_the_gateways_secrets() {
    let dir = common::scratch().join("trust-env");
    let everything = |extra: Value| {
        let mut s = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
        s.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        s
    };
    let config = write_config(
        &dir,
        &json!({"mcpServers": {
            "plain": everything(json!({})),
            "shared": everything(json!({"inherit_env": ["TS_TRUST_SHARED"], "env": {"TS_TRUST_OWN": "own-value"}}))
        }, "toolsearch": {"tokens": {"${TS_TRUST_ADMIN}": {"name": "admin", "scopes": ["admin"]}, "zero": []}}}),
    );
    let env =
        [("TS_TRUST_ADMIN", "admin-secret-4711"), ("TS_TRUST_SHARED", "shared-ok"), ("AWS_SECRET_ACCESS_KEY", "aws-9")];
    let gateway = HttpGateway::start_env(&config, &dir.join("state"), &["--json"], &env);
    let steps =
        client_steps(&gateway.url(), "zero", &json!([["call", "plain.get-env", {}], ["call", "shared.get-env", {}]]));
    let (plain, shared) = (text(&steps[0]), text(&steps[1]));
    assert!(plain.contains("PATH"), "the child has what it needs to run: {plain}");
    for secret in ["admin-secret-4711", "TS_TRUST_ADMIN", "aws-9", "shared-ok"] {
        assert!(!plain.contains(secret), "{secret} leaked to a child: {plain}");
    }
    assert!(shared.contains("shared-ok") && shared.contains("own-value"), "{shared}");
    assert!(!shared.contains("admin-secret-4711") && !shared.contains("aws-9"), "{shared}");
}

/// Rows 2 and 8: a destructive tool that later claims `readOnlyHint` is held (even with
/// `trust: "auto"`, which takes other changes), so a `read-only` token never calls it; a
/// prompt whose text changes is held (not listed, not served), and the injection in it is
/// flagged.
#[test]
fn changed_annotations_and_prompts_are_held_and_a_widening_change_is_never_trusted() {
    let dir = common::scratch().join("trust-rug");
    let rug = |state: &str, extra: Value| {
        let mut args = hostile("rug");
        args.push(dir.join(state).display().to_string());
        let mut s = json!({"command": python(), "args": args});
        s.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        s
    };
    let _ = std::fs::remove_file(dir.join("rug.flipped"));
    let _ = std::fs::remove_file(dir.join("auto.flipped"));
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"rug": rug("rug.flipped", json!({})), "auto": rug("auto.flipped", json!({"trust": "auto"}))},
                "toolsearch": {"tokens": {"reader": ["read-only"], "writer": [], "opsy": ["ops"]}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let before = client_steps(
        &gateway.url(),
        "reader",
        &json!([["call", "rug.wipe", {}], ["prompts"], ["get_prompt", "rug.greet", {"who": "Ada"}]]),
    );
    assert!(text(&before[0]).contains("NOT_AUTHORIZED"), "{before:?}");
    assert!(text(&before[1]).contains("rug.greet"), "{before:?}");
    assert!(text(&before[2]).contains("Say hello to Ada"), "{before:?}");

    let flips = client_steps(&gateway.url(), "writer", &json!([["call", "rug.flip", {}], ["call", "auto.flip", {}]]));
    assert_eq!((text(&flips[0]), text(&flips[1])), ("flipped", "flipped"), "{flips:?}");
    let r = wait_ready(&gateway, "the flipped tools and prompt held", Duration::from_secs(60), |r| {
        let h = held(r);
        ["rug.wipe", "auto.wipe", "rug:prompt:greet"].iter().all(|t| h.contains(&t.to_string()))
    });
    let wipe = r["held"].as_array().unwrap().iter().find(|h| h["tool"] == "rug.wipe").unwrap();
    assert_eq!(wipe["reason"], "changed");
    assert!(wipe["diff"].to_string().contains("annotations.readOnlyHint"), "{wipe}");
    let greet = r["held"].as_array().unwrap().iter().find(|h| h["tool"] == "rug:prompt:greet").unwrap();
    let diff = greet["diff"].to_string();
    assert!(diff.contains("+ description:") && diff.contains("+ text: user: Say hello to example."), "{greet}");
    assert!(!held(&r).contains(&"auto:prompt:greet".to_owned()), "trust: auto takes a change that widens nothing: {r}");
    let flagged = r["flagged"].to_string();
    assert!(flagged.contains("auto:prompt:greet") && flagged.contains("ignore previous instructions"), "{r}");

    let after = client_steps(
        &gateway.url(),
        "reader",
        &json!([
            ["call", "rug.wipe", {}],
            ["call", "auto.wipe", {}],
            ["prompts"],
            ["get_prompt", "rug.greet", {"who": "Ada"}],
            ["search_tool_by_category", {"query": "greet a person by name"}]
        ]),
    );
    for step in &after[..2] {
        assert!(text(step).contains("TOOL_NOT_FOUND"), "a held tool is not callable: {after:?}");
    }
    assert!(!text(&after[2]).contains("rug.greet") && text(&after[2]).contains("auto.greet"), "{after:?}");
    assert!(after[3]["is_error"].as_bool().unwrap(), "a held prompt is not served: {after:?}");
    assert!(!text(&after[4]).contains("rug.greet"), "{after:?}");
}

/// Rows 3 and 11: while a hidden upstream sprays progress for every small token, a zero-scope
/// client's call to another upstream gets exactly its own progress, in order, all of it, and
/// none of the spray; the spray is counted as dropped.
#[test]
fn progress_reaches_only_the_caller_of_its_own_request_and_none_of_it_is_lost() {
    let dir = common::scratch().join("trust-progress");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {
            "spray": {"command": python(), "args": hostile("spray")},
            "count": {"command": python(), "args": hostile("count")}
        }, "toolsearch": {"requires": {"spray": ["hidden"]}, "tokens": {"zero": [], "opsy": ["ops"]}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let calls: Vec<Value> = (0..4).map(|_| json!(["call_progress", "count.count", {"n": 50}])).collect();
    let steps = client_steps(&gateway.url(), "zero", &json!(calls));
    for step in &steps {
        let seen: Value = serde_json::from_str(text(step)).unwrap();
        assert_eq!(seen["text"], "counted to 50", "{seen}");
        let progress: Vec<&str> =
            seen["progress"].as_array().unwrap().iter().map(|m| m.as_str().unwrap_or("")).collect();
        let want: Vec<String> = (1..=50).map(|i| format!("step {i}")).collect();
        assert_eq!(progress, want, "exactly its own progress, in order, none lost and none injected");
    }
    let scraped = scrape(&format!("http://{}/metrics", gateway.addr), Some("opsy"));
    let dropped = sample(&scraped, "toolsearch_upstream_progress_dropped", &[("upstream", "spray")]).unwrap_or(0.0);
    assert!(dropped > 0.0, "the spray is dropped and counted: {scraped}");
}

/// Rows 4, 5 and 13: an HTTP upstream that takes its key in the query string goes away: within
/// a ping interval it is down (and `/readyz` says so), and no client ever sees its URL, its
/// key or a Rust type, only the server's name and a reason code; the operator's log keeps the
/// detail with the key masked.
#[test]
fn a_dead_http_upstream_is_down_within_a_ping_and_its_url_never_reaches_a_client() {
    let dir = common::scratch().join("trust-http-down");
    let port = free_port();
    let notes = notes_over_http(port);
    let url = format!("http://127.0.0.1:{port}/mcp?api_key=SECRET-KEY-4711");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"remote": {"url": url}}, "toolsearch": {"tokens": {"zero": [], "opsy": ["ops"]}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    wait_ready(&gateway, "remote up", Duration::from_secs(30), |r| is_up(r, "remote"));
    drop(notes);
    let killed = Instant::now();
    let first = client_steps(&gateway.url(), "zero", &json!([["call", "remote.recall", {"key": "k"}]]));
    let r = wait_ready(&gateway, "remote down", Duration::from_secs(20), |r| !is_up(r, "remote"));
    let down_after = killed.elapsed();
    assert!(down_after < Duration::from_secs(12), "down within a ping interval and its timeout: {down_after:?} {r}");
    let later = client_steps(&gateway.url(), "zero", &json!([["call", "remote.recall", {"key": "k"}]]));
    for step in first.iter().chain(&later) {
        let t = text(step);
        assert!(step["is_error"].as_bool().unwrap(), "{t}");
        assert!(t.contains("remote") && (t.contains("UPSTREAM_UNREACHABLE") || t.contains("UNAVAILABLE")), "{t}");
        for leak in ["SECRET-KEY-4711", "api_key", "127.0.0.1", "http://", "::", "reqwest", "Transport"] {
            assert!(!t.contains(leak), "{leak} reached a client: {t}");
        }
    }
    let log = gateway.status.lock().unwrap().join("\n");
    assert!(!log.contains("SECRET-KEY-4711"), "the operator's log masks the key: {log}");
    assert!(log.contains("upstream_down"), "{log}");
}

fn alive(pid: &str) -> bool {
    Command::new("kill").args(["-0", pid]).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Row 6: a reload stops the servers it removes and those it changes, process group and all,
/// before it starts the new ones: a changed server never runs twice.
#[test]
fn reload_ends_removed_and_changed_servers_before_starting_new_ones() {
    let dir = common::scratch().join("trust-reload");
    std::fs::create_dir_all(&dir).unwrap();
    let pids = dir.join("pids");
    let overlap = dir.join("overlap");
    let _ = std::fs::remove_file(&pids);
    let _ = std::fs::remove_file(&overlap);
    // A shell that notes whether an earlier instance still runs, then becomes the server.
    let script = format!(
        "for p in $(cat {pids} 2>/dev/null); do kill -0 $p 2>/dev/null && echo $p >> {overlap}; done; \
         echo $$ >> {pids}; exec {python} {server} count $0",
        pids = pids.display(),
        overlap = overlap.display(),
        python = python().display(),
        server = common::repo().join("tests/mcp/hostile_server.py").display(),
    );
    let server = |marker: &str| json!({"command": "sh", "args": ["-c", script, marker]});
    let write = |servers: Value| write_config(&dir, &json!({"mcpServers": servers}));
    let config = write(json!({"kept": {"command": python(), "args": hostile("spray")}, "changing": server("one")}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let first = std::fs::read_to_string(&pids).unwrap();
    let first = first.trim().to_owned();
    assert!(alive(&first));
    std::thread::sleep(Duration::from_millis(1100)); // a new modification time
    write(json!({"kept": {"command": python(), "args": hostile("spray")}, "changing": server("two")}));
    gateway.wait_for_status("\"event\":\"config_reloaded\"", Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&pids).unwrap().lines().count() < 2 {
        assert!(Instant::now() < deadline, "the changed server did not start again");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!alive(&first), "the old instance is gone");
    assert!(!overlap.exists(), "the old instance still ran when the new one started");
    let second = std::fs::read_to_string(&pids).unwrap().lines().nth(1).unwrap().trim().to_owned();
    std::thread::sleep(Duration::from_millis(1100));
    write(json!({"kept": {"command": python(), "args": hostile("spray")}}));
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(&second) {
        assert!(Instant::now() < deadline, "a removed server keeps running");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Rows 9, 10 and 16: one token holds at most its share of sessions (another still gets in);
/// `/readyz` and `/metrics` check `Host` as `/mcp` does; malformed bodies get 400 / -32600.
#[test]
fn sessions_are_capped_per_token_every_endpoint_checks_host_and_bad_bodies_get_400() {
    let dir = common::scratch().join("trust-http-limits");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"count": {"command": python(), "args": hostile("count")}},
                "toolsearch": {"tokens": {"a": [], "b": [], "opsy": ["ops"]},
                               "limits": {"http": {"max_sessions_per_token": 2}}}}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &["--json"]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string();
    let open = |token: &str| http_post(&gateway.addr, &init, &[("Authorization", &format!("Bearer {token}"))]).0;
    assert_eq!([open("a"), open("a")], [200, 200]);
    assert_eq!(open("a"), 429, "a third session of one token is refused");
    assert_eq!(open("b"), 200, "another token still gets in");

    let rebound = format!("evil.example:{}", gateway.addr.rsplit(':').next().unwrap());
    for path in ["/readyz", "/metrics", "/healthz"] {
        let (status, body) = http_get(&gateway.addr, path, &[("Host", &rebound), ("Authorization", "Bearer opsy")]);
        assert_eq!(status, 403, "{path}: {body}");
        assert!(!body.contains("count"), "{body}");
    }
    assert_eq!(http_get(&gateway.addr, "/readyz", &[("Authorization", "Bearer opsy")]).0, 200);

    let bad = [
        json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": [1, 2]}),
    ];
    for body in bad {
        let (status, answer) = http_post(&gateway.addr, &body.to_string(), &[("Authorization", "Bearer a")]);
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.contains("-32600"), "{answer}");
    }
}

/// Rows 12 and 15: a 1 MB description is cut, with a notice, before it reaches a model; a token
/// the config leaves unnamed is named by a digest keyed with the state directory's secret (not
/// the token's bare SHA-256), the same across restarts.
#[test]
fn a_huge_description_is_cut_and_token_names_are_keyed_by_the_state_dir() {
    let dir = common::scratch().join("trust-names");
    let state: PathBuf = dir.join("state");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"huge": {"command": python(), "args": hostile("huge")}},
                "toolsearch": {"tokens": {"unnamed-token-4711": []}}}),
    );
    let name_seen = |gateway: &HttpGateway| -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let line = gateway.status.lock().unwrap().iter().rev().find(|l| l.contains("\"token\":\"token-")).cloned();
            if let Some(l) = line {
                let v: Value = serde_json::from_str(&l).unwrap();
                return v["token"].as_str().unwrap().to_owned();
            }
            assert!(Instant::now() < deadline, "no request line names the token");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let first = {
        let gateway = HttpGateway::start(&config, &state, &["--json"]);
        let steps =
            client_steps(&gateway.url(), "unnamed-token-4711", &json!([["expand_tool", {"tool_id": "huge.big"}]]));
        let t = text(&steps[0]);
        assert!(t.len() < 20_000, "{} bytes", t.len());
        assert!(t.contains("cut by the gateway"), "{}", &t[t.len().saturating_sub(300)..]);
        name_seen(&gateway)
    };
    use sha2::{Digest, Sha256};
    let bare = Sha256::digest(b"unnamed-token-4711");
    let unsalted = format!("token-{:02x}{:02x}{:02x}{:02x}", bare[0], bare[1], bare[2], bare[3]);
    assert_ne!(first, unsalted, "the name is not the token's bare digest");
    let key = std::fs::metadata(state.join(toolsearch::mcp::TOKEN_KEY_FILE)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    client_steps(&gateway.url(), "unnamed-token-4711", &json!([["list", {}]]));
    assert_eq!(name_seen(&gateway), first, "the same name after a restart");
}

/// Row 16: `--check` shows what clients would get: the tools its filter lets through, those it
/// leaves out, and its prompts; and it ends what it started.
#[test]
fn check_shows_what_the_filter_leaves_out_and_the_prompts() {
    let dir = common::scratch().join("trust-check");
    let mut args = hostile("rug");
    args.push(dir.join("never-flipped").display().to_string());
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"rug": {"command": python(), "args": args, "tools": {"deny": ["flip"]}}}}),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["--json", "gateway", "--check", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rug = &report["servers"][0];
    assert_eq!(rug["tools"], json!(["wipe"]), "{report}");
    assert_eq!(rug["filtered_out"], json!(["flip"]), "{report}");
    assert_eq!(rug["prompts"], json!(["greet"]), "{report}");
}
