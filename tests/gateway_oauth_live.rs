//! `auth.oauth` edited in the config applies to the next request without a restart, proven
//! against an issuer nobody here wrote (`oauth2-mock-server`): a changed identity provider ends
//! the sessions and streams its callers opened (what their tokens grant may have changed), its
//! RFC 9728 metadata (at its resource's path) and challenges follow the new settings, a reload
//! that leaves it alone ends nothing of its callers, and one that removes it refuses its tokens
//! from then on. The static tokens' sessions go on throughout. A reachable listener is never
//! left open by it. A rotated introspection secret is proven against oidc-provider's endpoint.

#[path = "common/mod.rs"]
mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::gateway::{free_port, http_get, http_open, http_post, listen_session_free, reference_server, HttpGateway};
use common::oauth::{header, initialize};
use common::oauth_mock::MockIssuers;
use common::write_config;
use serde_json::{json, Value};

const STATIC: &str = "tok-static";

/// The config: the everything server, the static `tokens`, and `oauth` (none: no identity
/// provider), `origins` allowed.
fn config(dir: &Path, tokens: Value, oauth: Option<&Value>, origins: &[&str]) -> PathBuf {
    let mut settings = json!({"tokens": tokens, "allowed_origins": origins});
    if let Some(oauth) = oauth {
        settings["auth"] = json!({"oauth": oauth});
    }
    write_config(
        dir,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
                "toolsearch": settings}),
    )
}

/// The scratch directory `name`, a free port, its loopback address, and the `/mcp` resource URL
/// there.
fn listener(name: &str) -> (PathBuf, u16, String, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let resource = format!("http://{addr}/mcp");
    (common::scratch().join(name), port, addr, resource)
}

/// The static token's grant.
fn static_token() -> Value {
    json!({STATIC: {"name": "ops", "scopes": []}})
}

/// An access token for alice with `scope`, for `resource`, from `mock`'s token endpoint.
fn grant(mock: &MockIssuers, scope: &str, resource: &str) -> String {
    let (status, answer) = mock.grant("alice", scope, resource);
    assert_eq!(status, 200, "{answer}");
    answer["access_token"].as_str().unwrap().to_owned()
}

/// Opens a session at `addr` with bearer `token`: its id.
fn open(addr: &str, token: &str) -> String {
    let (status, headers, body) = initialize(addr, Some(token));
    assert_eq!(status, 200, "{body}");
    let id = header(&headers, "mcp-session-id").to_owned();
    assert!(!id.is_empty(), "a session id: {headers:?}");
    let (status, _) = on(addr, token, &id, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert!(status == 202 || status == 200, "{status}");
    id
}

/// `body` POSTed on session `session` with bearer `token`: the status and the answer.
fn on(addr: &str, token: &str, session: &str, body: &str) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    http_post(addr, body, &[("Authorization", bearer.as_str()), ("Mcp-Session-Id", session)])
}

/// The status of a `ping` on `session`.
fn ping(addr: &str, token: &str, session: &str) -> u16 {
    on(addr, token, session, r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).0
}

/// Whether the connection ends (the server closes it) within `within`.
fn ends_within(s: &mut std::net::TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).is_ok()
}

/// The `n`th reload, read: the status lines with `oauth_changed` so far.
fn reloaded(gateway: &HttpGateway, n: usize) -> Vec<Value> {
    gateway.wait_for_statuses("\"event\":\"config_reloaded\"", n, Duration::from_secs(60));
    let status = gateway.status.lock().unwrap();
    status.iter().filter(|l| l.contains("oauth_changed")).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn auth_oauth_edited_in_the_config_applies_to_the_next_request_and_ends_what_its_callers_opened() {
    let (dir, _, addr, resource) = listener("gateway-oauth-live");
    let mock = MockIssuers::start(&resource);
    let oauth = |required: &str| json!({"resource": resource, "required_scopes": [required], "issuers": [{"issuer": mock.issuer}]});
    let token = |scope: &str| grant(&mock, scope, &resource);
    let metadata = || {
        let (status, body) = http_get(&addr, "/.well-known/oauth-protected-resource/mcp", &[]);
        (status, serde_json::from_str::<Value>(&body).unwrap_or(Value::Null))
    };
    let path = config(&dir, static_token(), Some(&oauth("read-only")), &[]);
    let gateway = HttpGateway::start_on(&addr, &path, &dir.join("state"), &["--json"], &[]);

    // Alice's session, its GET stream and a session-free listen stream; a static token's session.
    let read_only = token("read-only");
    let alices = open(&addr, &read_only);
    let bearer = format!("Bearer {read_only}");
    let (head, mut alices_stream) = http_open(
        &addr,
        "GET",
        "",
        &[("Authorization", bearer.as_str()), ("Mcp-Session-Id", alices.as_str()), ("Connection", "close")],
        Duration::from_secs(5),
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (status, mut alices_listen) = listen_session_free(&addr, &read_only, &[("Connection", "close")]);
    assert_eq!(status, 200);
    let ops = open(&addr, STATIC);
    assert_eq!(metadata().1["scopes_supported"], json!(["read-only"]));
    assert!(!ends_within(&mut alices_stream, Duration::from_millis(500)), "a stream stays open until the change");

    // The provider's settings change: what its callers opened ends, the static token's goes on.
    config(&dir, static_token(), Some(&oauth("read-write")), &[]);
    let changed = reloaded(&gateway, 1);
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0]["sessions_ended"], 1, "{changed:?}");
    assert!(ends_within(&mut alices_stream, Duration::from_secs(10)), "the session's stream ends");
    assert!(ends_within(&mut alices_listen, Duration::from_secs(10)), "the session-free stream ends");
    assert_eq!(ping(&addr, &read_only, &alices), 403, "the old token lacks the new required scope");
    let read_write = token("read-write");
    assert_eq!(ping(&addr, &read_write, &alices), 404, "the session is gone, for the same principal too");
    assert_eq!(ping(&addr, STATIC, &ops), 200);
    // The next request meets the new settings: the challenge and the metadata say them.
    let (status, headers, _) = initialize(&addr, Some(&read_only));
    assert_eq!(status, 403);
    assert!(header(&headers, "www-authenticate").contains("scope=\"read-write\""), "{headers:?}");
    let alices = open(&addr, &read_write);
    let (status, document) = metadata();
    assert_eq!((status, &document["scopes_supported"]), (200, &json!(["read-write"])));

    // A reload that leaves `auth.oauth` as it was ends nothing of its callers.
    config(&dir, static_token(), Some(&oauth("read-write")), &["https://app.example"]);
    assert_eq!(reloaded(&gateway, 2).len(), 1, "no second oauth_changed");
    assert_eq!(ping(&addr, &read_write, &alices), 200);

    // Removed: its tokens are refused with a plain challenge, its metadata is gone.
    config(&dir, static_token(), None, &["https://app.example"]);
    let changed = reloaded(&gateway, 3);
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[1]["sessions_ended"], 1, "{changed:?}");
    let (status, headers, _) = initialize(&addr, Some(&read_write));
    assert_eq!((status, header(&headers, "www-authenticate")), (401, "Bearer"));
    assert_eq!(metadata().0, 404);
    assert_eq!(ping(&addr, STATIC, &ops), 200);

    // Back again: its tokens are let in.
    config(&dir, static_token(), Some(&oauth("read-write")), &["https://app.example"]);
    assert_eq!(reloaded(&gateway, 4).len(), 3);
    open(&addr, &read_write);
    assert_eq!(metadata().0, 200);

    // Another resource: the metadata moves to its path, and tokens for the old one are refused
    // for their audience.
    let team = format!("http://{addr}/team/mcp");
    let mut moved = oauth("read-write");
    moved["resource"] = json!(team);
    config(&dir, static_token(), Some(&moved), &["https://app.example"]);
    assert_eq!(reloaded(&gateway, 5).len(), 4);
    let (status, body) = http_get(&addr, "/.well-known/oauth-protected-resource/team/mcp", &[]);
    assert!(status == 200 && body.contains(&team), "{body}");
    assert_eq!(metadata().0, 404);
    let (status, _, body) = initialize(&addr, Some(&read_write));
    assert!(status == 401 && body.contains("another audience"), "{body}");
    open(&addr, &grant(&mock, "read-write", &team));

    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed") && !status.contains("config_error"), "{status}");
    assert!(!status.contains(&read_only) && !status.contains(&read_write), "no token reaches the status");
    drop(gateway);
}

/// On an address others can reach with no static token, a reload that removes `auth.oauth`
/// would leave it open: it is refused as a start would be, and the provider is kept.
#[test]
fn removing_the_only_identity_on_a_reachable_listener_is_refused_and_the_provider_kept() {
    let (dir, port, addr, resource) = listener("gateway-oauth-live-refused");
    let mock = MockIssuers::start(&resource);
    let oauth = json!({"resource": resource, "issuers": [{"issuer": mock.issuer}]});
    let path = config(&dir, json!({}), Some(&oauth), &[]);
    let gateway = HttpGateway::start_on(&format!("0.0.0.0:{port}"), &path, &dir.join("state"), &["--json"], &[]);
    let token = grant(&mock, "memory", &resource);
    let session = open(&addr, &token);

    config(&dir, json!({}), None, &[]);
    let error = gateway.wait_for_status("config_error", Duration::from_secs(60));
    assert!(error.contains("toolsearch.tokens") && error.contains("the running ones are kept"), "{error}");
    assert_eq!(ping(&addr, &token, &session), 200, "the provider and its caller's session are kept");
    let (status, headers, _) = initialize(&addr, None);
    assert!(status == 401 && header(&headers, "www-authenticate").contains("resource_metadata="), "{headers:?}");
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("oauth_changed") && !status.contains(&token), "{status}");
}

/// A rotated introspection `client_secret` applies to the next request, against oidc-provider's
/// RFC 7662 endpoint: an opaque token is not taken while the gateway presents a stale secret
/// (the endpoint refuses it: 503, never a guess), is taken once the config gives the right one,
/// without a restart, and is not taken again when the secret goes stale: no introspection
/// answered under the old settings outlives them, and no secret reaches the status.
#[test]
fn a_rotated_introspection_secret_applies_to_the_next_request() {
    let (dir, _, addr, resource) = listener("gateway-oauth-live-secret");
    let idp = common::oauth::Idp::start(&resource, 300);
    let oauth = |secret: &str| {
        json!({"resource": resource,
               "issuers": [{"issuer": idp.issuer, "introspection": {"client_id": "gateway", "client_secret": secret}}]})
    };
    let path = config(&dir, static_token(), Some(&oauth("stale-secret")), &[]);
    let gateway = HttpGateway::start_on(&addr, &path, &dir.join("state"), &["--json"], &[]);
    let opaque = idp.token("opaque", "read-only");
    assert!(!opaque.contains('.'), "an opaque token: {opaque}");
    let (status, _, body) = initialize(&addr, Some(&opaque));
    assert!(status == 503 && body.contains("introspection"), "{status} {body}");

    config(&dir, static_token(), Some(&oauth("gateway-secret")), &[]);
    assert_eq!(reloaded(&gateway, 1).len(), 1);
    let session = open(&addr, &opaque);
    assert_eq!(ping(&addr, &opaque, &session), 200);

    config(&dir, static_token(), Some(&oauth("another-stale-secret")), &[]);
    assert_eq!(reloaded(&gateway, 2).len(), 2);
    let (status, _, body) = initialize(&addr, Some(&opaque));
    assert!(status == 503 && body.contains("introspection"), "{status} {body}");
    assert_eq!(ping(&addr, &opaque, &session), 503, "its token cannot be checked, even on its session");

    // The right secret again: the token is taken, and its old session ended with the settings
    // it was opened under.
    config(&dir, static_token(), Some(&oauth("gateway-secret")), &[]);
    assert_eq!(reloaded(&gateway, 3).len(), 3);
    assert_eq!(ping(&addr, &opaque, &session), 404);
    open(&addr, &opaque);

    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed") && !status.contains("config_error"), "{status}");
    for secret in ["stale-secret", "gateway-secret", &opaque] {
        assert!(!status.contains(secret), "{secret} reached the status");
    }
}
