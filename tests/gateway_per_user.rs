//! Per-user grants (issue #61): a server whose entry says `"oauth": {"per_user": true}` is
//! called, for each caller the gateway tells apart, with that caller's own grant. A caller
//! without one is asked, through a URL-mode elicitation of the official Python SDK client, to
//! open the authorization address; its browser comes back to the gateway's own redirect
//! endpoint. The upstream (the Python SDK's server auth, tokens of oidc-provider) sees each
//! caller as itself (a static token's holder, or a principal of the team's identity provider),
//! never as the operator or another caller.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::gateway::{client_mode_steps, free_port, HttpGateway};
use common::oauth::{log_in, protected, protected_over, Idp};
use common::write_config;
use serde_json::{json, Value};

/// The subjects `vault.whoami` answered in `results` (`None` for an error), and the login
/// addresses the client was sent.
fn subjects(results: &[Value]) -> (Vec<Option<String>>, Vec<Value>) {
    let mut said = Vec::new();
    let mut asked = Vec::new();
    for r in results {
        let text = r["text"].as_str().unwrap_or_default();
        if let Ok(list) = serde_json::from_str::<Vec<Value>>(text) {
            asked.extend(list.into_iter().filter(|a| a[0] == "url"));
        } else if let Ok(v) = serde_json::from_str::<Value>(text) {
            said.push(v["subject"].as_str().map(str::to_owned));
        } else if r["is_error"] == true {
            said.push(None);
        }
    }
    (said, asked)
}

/// A gateway on a free port in front of `vault`, the protected server over `transport` (`mcp`
/// or `sse`) with `per_user` grants, whose callers are alice, eve and dan (static tokens) and
/// the principals of the identity provider that also guards the server; the gateway's own
/// login done. The provider, the server, the gateway, the config file and the state directory.
struct PerUser {
    idp: Idp,
    _server: common::gateway::Killed,
    gateway: HttpGateway,
    config: std::path::PathBuf,
    state: std::path::PathBuf,
}

fn per_user_gateway(dir: &std::path::Path, transport: &str) -> PerUser {
    let (port, gateway_port) = (free_port(), free_port());
    // One identity provider for both sides: it guards the upstream, and it is the team's,
    // whose principals call the gateway (bob below) beside static tokens (alice, eve, dan).
    let resource = format!("http://127.0.0.1:{gateway_port}/mcp");
    let idp = Idp::start(&resource, 60);
    let (server, url) = protected_over(&idp, port, transport);
    let callback = format!("http://127.0.0.1:{gateway_port}/oauth/callback");
    let kind = if transport == "sse" { "sse" } else { "http" };
    let config = write_config(
        dir,
        &json!({"mcpServers": {"vault": {"url": url, "type": kind, "oauth": {"per_user": true}}},
                "toolsearch": {"tokens": {"alice-token": {"name": "alice", "scopes": []},
                                          "eve-token": {"name": "eve", "scopes": []},
                                          "dan-token": {"name": "dan", "scopes": []}},
                               "auth": {"callback_url": callback,
                                        "oauth": {"resource": resource, "issuers": [{"issuer": idp.issuer}]}}}}),
    );
    let state = dir.join("state");
    // The gateway's own login lists the server's tools; it never calls for a caller.
    let (ok, printed, _) = log_in(&config, &state, "vault", "operator", None);
    assert!(ok, "{printed}");
    let gateway = HttpGateway::start_on(&format!("127.0.0.1:{gateway_port}"), &config, &state, &[], &[]);
    gateway.wait_for_status("vault is up", Duration::from_secs(20));
    PerUser { idp, _server: server, gateway, config, state }
}

#[test]
fn each_caller_of_a_per_user_server_logs_in_for_itself_through_a_url_elicitation() {
    let dir = common::scratch().join("gateway-per-user");
    let PerUser { idp, _server, gateway, config, state } = per_user_gateway(&dir, "mcp");

    // Alice's first call asks her to log in (a URL elicitation her client follows); the call
    // then runs as alice, and her second call asks nothing.
    let steps = json!([["login_as", "alice"], ["call", "vault.whoami", {}], ["call", "vault.whoami", {}], ["asked"]]);
    let alice = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&alice);
    assert_eq!(said, vec![Some("alice".to_owned()), Some("alice".to_owned())], "{alice:?}");
    assert_eq!(asked.len(), 1, "{alice:?}");
    assert!(asked[0][1].as_str().unwrap().contains("vault"), "{asked:?}");

    // Bob, a principal of the team's identity provider (a JWT for the gateway), is asked for
    // his own login, and the server sees bob.
    let steps = json!([["login_as", "bob"], ["call", "vault.whoami", {}], ["asked"]]);
    let bob = client_mode_steps("legacy", &gateway.url(), &idp.token("reader", "read-only"), &steps);
    let (said, asked) = subjects(&bob);
    assert_eq!((said, asked.len()), (vec![Some("bob".to_owned())], 1), "{bob:?}");

    // Eve declines: her call is refused as needing her login; nobody's grant stands in.
    let steps = json!([["login_as", "decline"], ["call", "vault.whoami", {}]]);
    let eve = client_mode_steps("legacy", &gateway.url(), "eve-token", &steps);
    let text = eve[1]["text"].as_str().unwrap_or_default();
    assert!(
        eve[1]["is_error"] == true && text.contains("UPSTREAM_LOGIN_REQUIRED") && text.contains("declined"),
        "{eve:?}"
    );

    // A session-free client (2026-07-28) is asked in an `input_required` round of its call.
    let steps = json!([["login_as", "dan"], ["call", "vault.whoami", {}], ["asked"]]);
    let dan = client_mode_steps("2026-07-28", &gateway.url(), "dan-token", &steps);
    let (said, asked) = subjects(&dan);
    assert_eq!((said, asked.len()), (vec![Some("dan".to_owned())], 1), "{dan:?}");

    // A new session of alice's asks nothing: her grant is kept (0600), apart from bob's.
    let steps = json!([["call", "vault.whoami", {}], ["asked"]]);
    let again = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&again);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 0), "{again:?}");
    let grants: Vec<String> = std::fs::read_dir(state.join("oauth"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".grant.json").map(str::to_owned))
        .collect();
    assert_eq!(grants.iter().filter(|g| g.starts_with("vault@")).count(), 3, "alice's, bob's and dan's: {grants:?}");
    use std::os::unix::fs::PermissionsExt;
    for g in &grants {
        let mode = std::fs::metadata(state.join(format!("oauth/{g}.grant.json"))).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{g}");
    }

    // Alice's grant stops working (its refresh token revoked, the access token expired): her
    // next call is refused before it runs, she is asked to log in again, and the call goes on.
    use sha2::Digest;
    let alice_hex: String = sha2::Sha256::digest(b"alice-token").iter().map(|b| format!("{b:02x}")).collect();
    let alice_file = state.join(format!("oauth/vault@{}.grant.json", &alice_hex[..32]));
    let mut broken: Value = serde_json::from_slice(&std::fs::read(&alice_file).unwrap()).unwrap();
    broken["refresh_token"] = json!("revoked-refresh-token");
    broken["expires_at"] = json!(1);
    std::fs::write(&alice_file, broken.to_string()).unwrap();
    let steps = json!([["login_as", "alice"], ["call", "vault.whoami", {}], ["asked"]]);
    let renewed = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&renewed);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 1), "{renewed:?}");
    let now: Value = serde_json::from_slice(&std::fs::read(&alice_file).unwrap()).unwrap();
    assert_ne!(now["refresh_token"], "revoked-refresh-token");

    // `gateway logout vault --callers` forgets every caller's own grant: alice is asked again.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "logout", "vault", "--callers", "--config", config.to_str().unwrap()])
        .args(["--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.contains("forgot 3 callers' grants"), "{said}");
    assert!(!alice_file.exists());
    let steps = json!([["login_as", "alice"], ["call", "vault.whoami", {}], ["asked"]]);
    let after = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&after);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 1), "{after:?}");

    // A redirect no login waits for (forged, or an old tab) is refused, and keeps nothing.
    let (status, body) = common::gateway::http_get(&gateway.addr, "/oauth/callback?state=forged&code=stolen-code", &[]);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("No login is waiting"), "{body}");
}

/// A login whose call the client gave up on (cancelled) still waits for the person: finishing
/// it keeps the caller's grant, and the caller's next call runs as itself without asking.
#[test]
fn a_login_finished_after_its_call_was_given_up_keeps_the_grant() {
    let dir = common::scratch().join("gateway-per-user-later");
    let vault = per_user_gateway(&dir, "mcp");
    let gateway = &vault.gateway;
    let steps = json!([["login_as", "later"], ["call_abandoned", "vault.whoami", {}, 3], ["visit", "alice"]]);
    let first = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    assert_eq!(first[1]["text"], "true", "the call was given up: {first:?}");
    let page: Value = serde_json::from_str(first[2]["text"].as_str().unwrap()).unwrap();
    assert!(page["text"].as_str().is_some_and(|t| t.contains("You are logged in")), "{page}");
    let steps = json!([["call", "vault.whoami", {}], ["asked"]]);
    let again = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&again);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 0), "{again:?}");
}

/// A per-user server that speaks only HTTP+SSE (MCP 2024-11-05) is reached, for each caller,
/// on that caller's own event stream with its own grant, as over Streamable HTTP.
#[test]
fn a_per_user_server_over_http_sse_sees_each_caller_as_itself() {
    let dir = common::scratch().join("gateway-per-user-sse");
    // Held whole: the provider and the server live as long as it does.
    let vault = per_user_gateway(&dir, "sse");
    let gateway = &vault.gateway;
    let steps = json!([["login_as", "alice"], ["call", "vault.whoami", {}], ["call", "vault.whoami", {}], ["asked"]]);
    let alice = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&alice);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned()); 2], 1), "{alice:?}");
    let steps = json!([["login_as", "dan"], ["call", "vault.whoami", {}], ["asked"]]);
    let dan = client_mode_steps("legacy", &gateway.url(), "dan-token", &steps);
    let (said, asked) = subjects(&dan);
    assert_eq!((said, asked.len()), (vec![Some("dan".to_owned())], 1), "{dan:?}");
    let steps = json!([["login_as", "decline"], ["call", "vault.whoami", {}]]);
    let eve = client_mode_steps("legacy", &gateway.url(), "eve-token", &steps);
    let text = eve[1]["text"].as_str().unwrap_or_default();
    assert!(eve[1]["is_error"] == true && text.contains("UPSTREAM_LOGIN_REQUIRED"), "{eve:?}");
}

#[test]
fn a_per_user_server_without_a_redirect_address_or_with_client_credentials_is_refused_at_load() {
    let dir = common::scratch().join("gateway-per-user-config");
    let url = "https://mcp.example/mcp";
    for (oauth, auth, says) in [
        (json!({"per_user": true}), json!({}), "oauth.per_user"),
        (json!({"per_user": true}), json!({"callback_url": "http://gateway.example/oauth/callback"}), "must be https"),
        (json!({"per_user": true}), json!({"callback_url": "https://gateway.example/mcp"}), "a path of its own"),
        (
            json!({"per_user": true, "grant": "client_credentials", "client_id": "c"}),
            json!({"callback_url": "https://gateway.example/oauth/callback"}),
            "client_credentials has no user",
        ),
    ] {
        let config = write_config(
            &dir,
            &json!({"mcpServers": {"vault": {"url": url, "oauth": oauth}}, "toolsearch": {"auth": auth}}),
        );
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["gateway", "held", "--config", config.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{says}: {stderr}");
    }
}

#[test]
fn in_a_fleet_a_login_redirect_landing_on_another_replica_reaches_the_one_waiting_for_it() {
    let dir = common::scratch().join("gateway-per-user-fleet");
    let pg = common::postgres::Postgres::start("per-user");
    let port = free_port();
    let idp = Idp::start(&format!("http://127.0.0.1:{port}/mcp"), 60);
    let (_server, url) = protected(&idp, port);
    let (port_a, port_b) = (free_port(), free_port());
    // The redirect address is replica b's, as a load balancer might route it; alice calls a.
    let callback = format!("http://127.0.0.1:{port_b}/oauth/callback");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {"url": url, "oauth": {"per_user": true}}},
                "toolsearch": {"tokens": {"alice-token": {"name": "alice", "scopes": []}},
                               "auth": {"callback_url": callback},
                               "state": {"store": pg.url(), "key": "a fleet secret"}}}),
    );
    let (ok, printed, _) = log_in(&config, &dir.join("state-a"), "vault", "operator", None);
    assert!(ok, "{printed}");
    let a = HttpGateway::start_on(&format!("127.0.0.1:{port_a}"), &config, &dir.join("state-a"), &[], &[]);
    let b = HttpGateway::start_on(&format!("127.0.0.1:{port_b}"), &config, &dir.join("state-b"), &[], &[]);
    for r in [&a, &b] {
        r.wait_for_status("vault is up", Duration::from_secs(20));
    }
    let steps = json!([["login_as", "alice"], ["call", "vault.whoami", {}], ["asked"]]);
    let alice = client_mode_steps("legacy", &a.url(), "alice-token", &steps);
    let (said, asked) = subjects(&alice);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 1), "{alice:?}");
    // Replica b answered the browser with a's page (it forwarded the redirect, sealed by a).
    let text = alice.last().unwrap()["text"].as_str().unwrap();
    assert!(text.contains("You are logged in") && text.contains(&port_b.to_string()), "{text}");

    // Her grant reaches b through the store (sealed): her call there asks nothing.
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(b"alice-token").iter().map(|b| format!("{b:02x}")).collect();
    let on_b = dir.join(format!("state-b/oauth/vault@{}.grant.json", &hex[..32]));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !on_b.exists() {
        assert!(std::time::Instant::now() < deadline, "alice's grant did not reach replica b");
        std::thread::sleep(Duration::from_millis(200));
    }
    let steps = json!([["call", "vault.whoami", {}], ["asked"]]);
    let there = client_mode_steps("legacy", &b.url(), "alice-token", &steps);
    let (said, asked) = subjects(&there);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 0), "{there:?}");

    // `logout --callers` on a's host reaches b: its copy of alice's grant is gone within seconds.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "logout", "vault", "--callers", "--config", config.to_str().unwrap()])
        .args(["--state", dir.join("state-a").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while on_b.exists() {
        assert!(std::time::Instant::now() < deadline, "replica b kept alice's grant after the logout");
        std::thread::sleep(Duration::from_millis(200));
    }

    // A state sealed under another key is not forwarded anywhere: b answers it itself.
    let forged = format!("x~{}~{}", "aHR0cDovLzEyNy4wLjAuMTo5L21jcA", "0".repeat(64));
    let (status, body) = common::gateway::http_get(&b.addr, &format!("/oauth/callback?state={forged}&code=c"), &[]);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("No login is waiting"), "{body}");
}

/// `auth.callback_url` and `auth.client_metadata_url` edited while the gateway runs apply to the
/// next request, without a restart: the login redirect answers at its new path (its old one is
/// not found), a caller's login goes through it, and the Client ID Metadata Document appears at
/// its path naming the new redirect, then goes when the setting goes.
#[test]
fn a_moved_login_redirect_and_a_client_metadata_document_apply_without_a_restart() {
    let dir = common::scratch().join("gateway-per-user-pages");
    let PerUser { idp: _idp, _server, gateway, config, state: _ } = per_user_gateway(&dir, "mcp");
    let addr = gateway.addr.clone();
    let forged = |path: &str| common::gateway::http_get(&addr, &format!("{path}?state=forged&code=c"), &[]);
    assert_eq!(forged("/oauth/callback").0, 400);
    assert_eq!(common::gateway::http_get(&addr, "/oauth/client.json", &[]).0, 404);

    let edit = |auth: &dyn Fn(&mut Value)| {
        let mut edited: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
        auth(&mut edited["toolsearch"]["auth"]);
        write_config(&dir, &edited);
    };
    // Beside it, a server whose login has a client of its own and no per-user grants: neither
    // URL is any of its business.
    let mut edited: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    let own = json!({"url": edited["mcpServers"]["vault"]["url"], "oauth": {"client_id": "own-client"}});
    edited["mcpServers"]["own"] = own;
    write_config(&dir, &edited);
    gateway.wait_for_statuses("config_reloaded", 1, Duration::from_secs(60));
    let moved = format!("http://{addr}/auth/return");
    edit(&|auth| {
        auth["callback_url"] = json!(moved);
        auth["client_metadata_url"] = json!("https://gateway.example/oauth/client.json");
    });
    gateway.wait_for_statuses("config_reloaded", 2, Duration::from_secs(60));
    // The per-user server's login settings changed with the redirect: it alone is restarted.
    gateway.wait_for_statuses("vault is up", 2, Duration::from_secs(20));
    let reloaded = |n: usize| -> Value {
        let lines = gateway.status.lock().unwrap().clone();
        let line = lines.iter().filter(|l| l.contains("config_reloaded")).nth(n - 1).unwrap().clone();
        serde_json::from_str(&line[line.find('{').unwrap()..]).unwrap()
    };
    assert_eq!(reloaded(2)["changed"], json!(["vault"]), "{}", reloaded(2));
    let (status, body) = forged("/auth/return");
    assert!(status == 400 && body.contains("No login is waiting"), "{status} {body}");
    assert_eq!(forged("/oauth/callback").0, 404);
    // Still behind the loopback listener's Host check (DNS rebinding), as every route is.
    let rebound = common::gateway::http_get(&addr, "/auth/return?state=forged", &[("Host", "evil.example")]);
    assert_eq!(rebound.0, 403, "{rebound:?}");
    let (status, body) = common::gateway::http_get(&addr, "/oauth/client.json", &[]);
    assert_eq!(status, 200, "{body}");
    let document: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(document["client_id"], "https://gateway.example/oauth/client.json");
    assert!(document["redirect_uris"].as_array().unwrap().contains(&json!(moved)), "{document}");

    // Alice's login sends her browser to the new redirect, and her call runs as her.
    let steps = json!([["login_as", "alice"], ["call", "vault.whoami", {}], ["asked"]]);
    let alice = client_mode_steps("legacy", &gateway.url(), "alice-token", &steps);
    let (said, asked) = subjects(&alice);
    assert_eq!((said, asked.len()), (vec![Some("alice".to_owned())], 1), "{alice:?}");
    // The browser ended on the new redirect, which logged her in.
    let pages: Vec<Value> = serde_json::from_str(alice.last().unwrap()["text"].as_str().unwrap()).unwrap();
    let page = &pages.iter().find(|a| a[0] == "page").unwrap()[1];
    let landed = page["url"].as_str().unwrap_or_default();
    assert!(landed.starts_with(&moved) && page["text"].as_str().unwrap().contains("logged in"), "{page}");

    // The document goes with its setting; no restart was asked for.
    edit(&|auth| {
        auth.as_object_mut().unwrap().remove("client_metadata_url");
    });
    gateway.wait_for_statuses("config_reloaded", 3, Duration::from_secs(60));
    assert_eq!(reloaded(3)["changed"], json!(["vault"]), "{}", reloaded(3));
    assert_eq!(common::gateway::http_get(&addr, "/oauth/client.json", &[]).0, 404);
    assert_eq!(forged("/auth/return").0, 400);
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed") && !status.contains("config_error"), "{status}");
}
