//! The gateway as an OAuth client of its upstreams (issue #61, "Logging in to servers"): an
//! MCP server built with the official Python SDK's server auth (`tests/oauth/protected_server.py`)
//! guards its tools with tokens of a real authorization server (oidc-provider from npm);
//! `toolsearch gateway login` gets a grant through that server's own login pages, a running
//! gateway takes it up, refreshes it unattended, and forgets it on `logout`.

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::gateway::{client_steps, free_port, wait_for_port, HttpGateway, Killed};
use common::oauth::{assert_refreshed, log_in, log_in_with, protected, spoil_access_token, Idp};
use common::write_config;
use serde_json::{json, Value};

fn whoami(gateway: &HttpGateway) -> Value {
    let out = client_steps(&gateway.url(), "-", &json!([["call", "vault.whoami", {}]]));
    json!({"is_error": out[0]["is_error"], "text": out[0]["text"]})
}

#[test]
fn a_login_reaches_a_protected_server_and_is_refreshed_unattended_until_logout() {
    let dir = common::scratch().join("gateway-login");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let ttl = 4; // seconds: five lifetimes pass within the test
    let idp = Idp::start(&resource, ttl);
    let (_server, url) = protected(&idp, port);
    // Another server, so the gateway has tools to serve before the login.
    let everything = json!({"command": "node", "args": [common::gateway::reference_server("everything"), "stdio"]});
    let config =
        write_config(&dir, &json!({"mcpServers": {"vault": {"url": url, "oauth": {}}, "everything": everything}}));
    let state = dir.join("state");
    let gateway = HttpGateway::start(&config, &state, &[]);

    // Before any login, the server waits for one, and says which command to run.
    let line = gateway.wait_for_status("UPSTREAM_LOGIN_REQUIRED", Duration::from_secs(20));
    assert!(line.contains("toolsearch gateway login vault"), "{line}");

    // A redirect whose state is not the login's is refused, and nothing is kept.
    let (ok, printed, page) = log_in(&config, &state, "vault", "mallory", Some("state"));
    assert!(!ok && printed.contains("state is not this login's"), "{printed} {page}");
    assert_eq!(page["status"], 400, "{page}");
    // So is one whose `iss` is not the authorization server's (RFC 9207, a mix-up attack).
    let (ok, printed, _) = log_in(&config, &state, "vault", "mallory", Some("iss"));
    assert!(!ok && printed.contains("iss is not") && printed.contains("RFC 9207"), "{printed}");
    assert!(!state.join("oauth/vault.grant.json").exists());
    let (status, body) = common::gateway::http_get(&gateway.addr, "/readyz", &[]);
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, &ready["upstreams"]["vault"]["state"]), (200, &json!("needs_login")), "{body}");

    // The login: the server's metadata leads to oidc-provider, which registers the gateway and
    // signs alice in; the grant is kept 0600, and no token is printed.
    let (ok, printed, page) = log_in(&config, &state, "vault", "alice", None);
    assert!(ok, "{printed} {page}");
    assert!(page["text"].as_str().unwrap().contains("logged in"), "{page}");
    let grant_file = state.join("oauth/vault.grant.json");
    let grant: Value = serde_json::from_slice(&std::fs::read(&grant_file).unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&grant_file).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(grant["refresh_token"].is_string(), "a refresh token is asked for: {grant}");
    assert!(!printed.contains(grant["access_token"].as_str().unwrap()), "{printed}");

    // The running gateway takes the login up within seconds, with no restart.
    gateway.wait_for_status("vault is up", Duration::from_secs(15));
    let first = whoami(&gateway);
    assert_eq!(first["is_error"], false, "{first}");
    let said: Value = serde_json::from_str(first["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["subject"], "alice", "{first}");

    // Over five token lifetimes, every call succeeds: tokens are refreshed before they
    // expire (and rotated refresh tokens kept).
    let until = Instant::now() + Duration::from_secs(5 * ttl + 2);
    let mut calls = 0;
    while Instant::now() < until {
        let r = whoami(&gateway);
        assert_eq!(r["is_error"], false, "call {calls}: {r}");
        calls += 1;
        std::thread::sleep(Duration::from_millis(700));
    }
    let now: Value = serde_json::from_slice(&std::fs::read(&grant_file).unwrap()).unwrap();
    assert_ne!(now["access_token"], grant["access_token"], "the grant was refreshed");

    // A second login while one runs is refused at once.
    let mut first_login = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "login", "vault", "--no-browser", "--config", config.to_str().unwrap()])
        .args(["--state", state.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(first_login.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let second = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "login", "vault", "--no-browser", "--config", config.to_str().unwrap()])
        .args(["--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = first_login.kill();
    let _ = first_login.wait();
    assert!(!second.status.success() && String::from_utf8_lossy(&second.stderr).contains("already running"));

    // A refresh the server refuses (a revoked or made-up refresh token): the server needs a
    // login again, said as UPSTREAM_LOGIN_REQUIRED, never as a token or a crash.
    let mut broken: Value = serde_json::from_slice(&std::fs::read(&grant_file).unwrap()).unwrap();
    broken["refresh_token"] = json!("revoked-refresh-token");
    broken["expires_at"] = json!(1);
    std::fs::write(&grant_file, broken.to_string()).unwrap();
    let r = whoami(&gateway);
    assert_eq!(r["is_error"], true, "{r}");
    let text = r["text"].as_str().unwrap();
    assert!(text.contains("UPSTREAM_LOGIN_REQUIRED") && !text.contains("revoked-refresh-token"), "{text}");
    let (ok, printed, _) = log_in(&config, &state, "vault", "alice", None);
    assert!(ok, "{printed}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while whoami(&gateway)["is_error"] != false {
        assert!(Instant::now() < deadline, "a new login was not taken up");
        std::thread::sleep(Duration::from_millis(300));
    }

    // Logout: the grant is gone, and calls answer UPSTREAM_LOGIN_REQUIRED within seconds.
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "logout", "vault", "--config", config.to_str().unwrap()])
        .args(["--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success() && !grant_file.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = whoami(&gateway);
        if r["is_error"] == true {
            assert!(r["text"].as_str().unwrap().contains("UPSTREAM_LOGIN_REQUIRED"), "{r}");
            break;
        }
        assert!(Instant::now() < deadline, "still served after logout: {r}");
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(gateway);
}

#[test]
fn a_refused_registration_a_lying_and_a_plain_http_authorization_server_are_clear_errors() {
    let dir = common::scratch().join("gateway-login-refused");
    let port = free_port();
    let idp = Idp::start_env(&format!("http://127.0.0.1:{port}/mcp"), 60, &[("IDP_REGISTRATION", "closed")]);
    let (_server, url) = protected(&idp, port);
    let config = write_config(&dir, &json!({"mcpServers": {"vault": {"url": url, "oauth": {}}}}));
    let (ok, printed, _) = log_in(&config, &dir.join("state"), "vault", "alice", None);
    assert!(!ok && printed.contains("refused to register the gateway"), "{printed}");
    assert!(!dir.join("state/oauth/clients.json").exists());

    // An authorization server whose metadata names another issuer (a mix-up): refused.
    let liar_port = free_port();
    let liar = Command::new(common::python())
        .arg(common::repo().join("tests/oauth/bad_idp.py"))
        .args([&liar_port.to_string(), "wrong-issuer"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _liar = Killed(liar);
    wait_for_port(liar_port);
    let liar_url = format!("http://127.0.0.1:{liar_port}");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {"url": url, "oauth": {"authorization_server": liar_url}}}}),
    );
    let (ok, printed, _) = log_in(&config, &dir.join("state"), "vault", "alice", None);
    assert!(!ok && printed.contains("names issuer") && printed.contains("refused"), "{printed}");

    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {"url": url, "oauth": {"authorization_server": "http://idp.example"}}}}),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "login", "vault", "--no-browser", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("oauth.authorization_server") && stderr.contains("must be https"),
        "{stderr}"
    );
}

#[test]
fn a_host_without_a_browser_logs_in_with_the_device_flow() {
    let dir = common::scratch().join("gateway-login-device");
    let port = free_port();
    let idp = Idp::start(&format!("http://127.0.0.1:{port}/mcp"), 60);
    let (_server, url) = protected(&idp, port);
    let config = write_config(&dir, &json!({"mcpServers": {"vault": {"url": url, "oauth": {}}}}));
    let state = dir.join("state");
    // The login prints an address and a code; the person approves on "another device" (the
    // browser here), and the login, polling, completes.
    let (ok, printed, page) = log_in_with(&config, &state, "vault", "bob", None, "--device");
    assert!(ok, "{printed} {page}");
    assert!(printed.contains("enter the code"), "{printed}");
    let gateway = HttpGateway::start(&config, &state, &[]);
    let r = whoami(&gateway);
    assert_eq!(r["is_error"], false, "{r}");
    let said: Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["subject"], "bob", "{r}");
}

#[test]
fn where_the_authorization_server_takes_metadata_documents_the_gateway_names_itself_by_its_own() {
    let dir = common::scratch().join("gateway-login-cimd");
    std::fs::create_dir_all(&dir).unwrap();
    // The gateway's plain-HTTP listener behind an HTTPS front (as a TLS-terminating proxy
    // would put it), whose authority the authorization server trusts.
    let (gateway_port, front_port) = (free_port(), free_port());
    let ca = dir.join("front-ca.pem");
    let _ = std::fs::remove_file(&ca);
    let front = Command::new(common::python())
        .arg(common::repo().join("tests/oauth/tls_front.py"))
        .args([&front_port.to_string(), &gateway_port.to_string(), ca.to_str().unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _front = Killed(front);
    wait_for_port(front_port);
    let port = free_port();
    let cimd = [("IDP_CIMD", "1"), ("NODE_EXTRA_CA_CERTS", ca.to_str().unwrap())];
    let idp = Idp::start_env(&format!("http://127.0.0.1:{port}/mcp"), 60, &cimd);
    let (_server, url) = protected(&idp, port);
    let document_url = format!("https://127.0.0.1:{front_port}/oauth/client-metadata.json");
    let everything = json!({"command": "node", "args": [common::gateway::reference_server("everything"), "stdio"]});
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {"url": url, "oauth": {}}, "everything": everything},
                "toolsearch": {"auth": {"client_metadata_url": document_url}}}),
    );
    let state = dir.join("state");
    let gateway = HttpGateway::start_on(&format!("127.0.0.1:{gateway_port}"), &config, &state, &[], &[]);

    // The gateway serves its document, with no token, as `gateway client-metadata` prints it.
    let (status, body) = common::gateway::http_get(&gateway.addr, "/oauth/client-metadata.json", &[]);
    let served: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status} {body}: {e}"));
    assert_eq!((status, &served["client_id"]), (200, &json!(document_url)), "{body}");
    assert_eq!(served["token_endpoint_auth_method"], "none", "a public client: no secret to keep");
    let printed = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "client-metadata", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&printed.stdout).unwrap(), served);

    // The login names the gateway by its document's URL: the authorization server fetches the
    // document (through the front) and nothing is registered.
    let (ok, printed, page) = log_in(&config, &state, "vault", "carol", None);
    assert!(ok, "{printed} {page}");
    let grant: Value = serde_json::from_slice(&std::fs::read(state.join("oauth/vault.grant.json")).unwrap()).unwrap();
    assert_eq!(grant["client_id"], json!(document_url), "{grant}");
    assert!(grant["client_secret"].is_null(), "{grant}");
    assert!(!state.join("oauth/clients.json").exists(), "no dynamic registration");
    gateway.wait_for_status("vault is up", Duration::from_secs(15));
    let r = whoami(&gateway);
    let said: Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap_or_else(|_| panic!("{r}"));
    assert_eq!(said["subject"], "carol", "{r}");
    drop(gateway);

    // An authorization server that does not take documents: the same config registers (RFC 7591).
    let other_port = free_port();
    let plain = Idp::start(&format!("http://127.0.0.1:{other_port}/mcp"), 60);
    let (_other, other_url) = protected(&plain, other_port);
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"vault": {"url": other_url, "oauth": {}}},
                "toolsearch": {"auth": {"client_metadata_url": document_url}}}),
    );
    let (ok, printed, _) = log_in(&config, &dir.join("state-dcr"), "vault", "dave", None);
    assert!(ok, "{printed}");
    let grant: Value =
        serde_json::from_slice(&std::fs::read(dir.join("state-dcr/oauth/vault.grant.json")).unwrap()).unwrap();
    assert_ne!(grant["client_id"], json!(document_url), "{grant}");
    assert!(dir.join("state-dcr/oauth/clients.json").exists());

    // A document URL an authorization server could not fetch as an identity: refused at load.
    for (bad, says) in [
        ("http://gateway.example/client.json", "must be https"),
        ("https://gateway.example", "must have a path"),
        ("https://gateway.example/mcp", "serves /mcp itself"),
    ] {
        let config = write_config(
            &dir,
            &json!({"mcpServers": {"vault": {"url": other_url, "oauth": {}}},
                    "toolsearch": {"auth": {"client_metadata_url": bad}}}),
        );
        let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["gateway", "client-metadata", "--config", config.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("toolsearch.auth.client_metadata_url") && stderr.contains(says),
            "{bad}: {stderr}"
        );
    }
}

/// An authorization server that publishes no metadata (oidc-provider with its well-known
/// documents hidden) is a clear error to find, and is logged in to through the endpoints given
/// by hand, as Gemini CLI's `authorizationUrl` and `tokenUrl` write them, with a client
/// registered there beforehand.
#[test]
fn an_authorization_server_without_metadata_is_logged_in_to_through_endpoints_given_by_hand() {
    let dir = common::scratch().join("gateway-login-by-hand");
    let port = free_port();
    let idp = Idp::start_env(&format!("http://127.0.0.1:{port}/mcp"), 60, &[("IDP_NO_METADATA", "1")]);
    let (_server, url) = protected(&idp, port);
    let state = dir.join("state");
    let config = write_config(&dir, &json!({"mcpServers": {"vault": {"url": url, "oauth": {}}}}));
    let (ok, printed, _) = log_in(&config, &state, "vault", "carol", None);
    assert!(!ok && printed.contains("no authorization-server metadata for"), "{printed}");

    let gemini = dir.join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let settings = gemini.join("settings.json");
    let oauth = |scopes: &[&str]| {
        let (auth, token) = (format!("{}/auth", idp.issuer), format!("{}/token", idp.issuer));
        json!({"enabled": true, "clientId": "native-cli", "authorizationUrl": auth, "tokenUrl": token, "scopes": scopes})
    };
    let write = |oauth: Value| {
        std::fs::write(&settings, json!({"mcpServers": {"vault": {"httpUrl": url, "oauth": oauth}}}).to_string())
    };
    // Without offline_access no refresh token is issued: the operator is told the login lasts
    // only as long as its access token.
    write(oauth(&["memory"])).unwrap();
    let (ok, printed, page) = log_in(&settings, &state, "vault", "carol", None);
    assert!(ok, "{printed} {page}");
    let short = "no refresh token was issued: the login to vault lasts until its access token expires (in 1 min); \
                 then run `toolsearch gateway login vault` again (or add \"offline_access\" to oauth.scopes";
    assert!(printed.contains(short), "{printed}");
    write(oauth(&["memory", "offline_access"])).unwrap();
    let (ok, printed, page) = log_in(&settings, &state, "vault", "carol", None);
    assert!(ok, "{printed} {page}");
    assert!(!printed.contains("no refresh token"), "{printed}");
    let gateway = HttpGateway::start(&settings, &state, &[]);
    let r = whoami(&gateway);
    assert_eq!(r["is_error"], false, "{r}");
    let said: Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["subject"], "carol", "{r}");
    // An access token the server refuses is refreshed at the token endpoint given by hand.
    spoil_access_token(&state, "vault");
    assert_eq!(whoami(&gateway)["is_error"], false);
    assert_refreshed(&state, "vault");
    drop(gateway);

    // A device login through endpoints given by hand (the gateway's own names): without its
    // endpoint, the login names the field to give.
    let token_url = format!("{}/token", idp.issuer);
    let own = |oauth: Value| write_config(&dir, &json!({"mcpServers": {"vault": {"url": url, "oauth": oauth}}}));
    let by_hand =
        json!({"client_id": "native-cli", "token_endpoint": token_url, "scopes": ["memory", "offline_access"]});
    let (ok, printed, _) = log_in_with(&own(by_hand.clone()), &state, "vault", "dave", None, "--device");
    assert!(
        !ok && printed.contains("a device login starts at oauth.device_authorization_endpoint: give it"),
        "{printed}"
    );
    let mut device = by_hand;
    device["device_authorization_endpoint"] = json!(format!("{}/device/auth", idp.issuer));
    let config = own(device.clone());
    let (ok, printed, page) = log_in_with(&config, &state, "vault", "dave", None, "--device");
    assert!(ok && printed.contains("enter the code"), "{printed} {page}");
    let gateway = HttpGateway::start(&config, &state, &[]);
    let said: Value = serde_json::from_str(whoami(&gateway)["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["subject"], "dave", "{said}");
    drop(gateway);
    device.as_object_mut().unwrap().remove("token_endpoint");
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "login", "vault", "--device", "--config", own(device).to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let half = "mcpServers.vault.oauth.device_authorization_endpoint: give oauth.token_endpoint with it";
    assert!(!out.status.success() && stderr.contains(half), "{stderr}");

    // Endpoints by halves, without a client registered there, or over plain http: named, in
    // Gemini CLI's names as the file writes them.
    let bad = |oauth: Value, says: &[&str]| {
        let entry = json!({"mcpServers": {"vault": {"httpUrl": url, "oauth": oauth}}});
        std::fs::write(&settings, entry.to_string()).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["gateway", "login", "vault", "--no-browser", "--config", settings.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && says.iter().all(|s| stderr.contains(s)), "{stderr}");
    };
    bad(
        json!({"clientId": "native-cli", "authorizationUrl": format!("{}/auth", idp.issuer)}),
        &["mcpServers.vault.oauth.authorizationUrl: give oauth.tokenUrl with it"],
    );
    bad(json!({"tokenUrl": token_url}), &["mcpServers.vault.oauth.tokenUrl: give oauth.clientId with it"]);
    bad(
        json!({"clientId": "c", "tokenUrl": "http://idp.example/token"}),
        &["mcpServers.vault.oauth.tokenUrl: ", "must be https"],
    );
}
