//! The gateway as an OAuth 2.1 protected resource (issue #61, "Identity for clients"): a real
//! identity provider's tokens (panva's oidc-provider, `tests/common/oauth.rs`) carry a team's
//! identity and scopes, forged and misaimed tokens are refused with a reason, and a provider
//! that hangs or talks nonsense delays nobody else.

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::gateway::{client_steps, free_port, reference_server, HttpGateway};
use common::oauth::{assert_invalid_token, base64url, header, initialize as init, request, Idp};
use common::write_config;
use serde_json::{json, Value};

fn memory(dir: &std::path::Path) -> Value {
    json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}})
}

#[test]
fn identity_provider_tokens_see_and_call_only_what_their_claims_allow() {
    let dir = common::scratch().join("gateway-oauth-scopes");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (a, b) = (Idp::start(&resource, 300), Idp::start(&resource, 300));
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"memory": memory(&dir),
                           "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
            "toolsearch": {
                "requires": {"memory": ["memory"]},
                "tokens": {"static-token": {"name": "ops", "scopes": ["memory"]}},
                "auth": {"oauth": {"resource": resource, "issuers": [
                    {"issuer": a.issuer, "introspection": {"client_id": "gateway", "client_secret": "${GW_SECRET}"}},
                    {"issuer": b.issuer, "scopes": {"claim": "groups", "map": {"eng": ["memory"]}}}
                ]}}
            }
        }),
    );
    let addr = format!("127.0.0.1:{port}");
    let gateway = HttpGateway::start_on(&addr, &config, &dir.join("state"), &[], &[("GW_SECRET", "gateway-secret")]);
    let entity =
        json!({"entities": [{"name": "ada", "entityType": "person", "observations": ["wrote the first program"]}]});
    let steps = json!([
        ["call", "memory.read_graph", {}],
        ["call", "memory.create_entities", entity],
        ["call", "everything.echo", {"message": "hi"}]
    ]);
    let ok = |r: &Value| !r["is_error"].as_bool().unwrap();

    // Issuer A, its `scope` claim as the scopes: "read-only memory" reads the graph, and is
    // refused the write, naming the scope that limits it.
    let reader = client_steps(&gateway.url(), &a.token("reader", "read-only memory"), &steps);
    assert!(ok(&reader[0]) && ok(&reader[2]), "{reader:?}");
    assert!(!ok(&reader[1]) && reader[1]["text"].as_str().unwrap().contains("read-only"), "{reader:?}");

    // Issuer B maps its `groups` claim: "eng" grants "memory", without "read-only".
    let eng = client_steps(&gateway.url(), &b.token("eng-bot", ""), &steps);
    assert!(ok(&eng[0]) && ok(&eng[1]), "{eng:?}");
    // B's tokens carry a `scope` claim too, which B's rule does not read: no memory.
    let b_reader = client_steps(&gateway.url(), &b.token("reader", "read-only memory"), &steps);
    assert!(!ok(&b_reader[0]) && ok(&b_reader[2]), "{b_reader:?}");

    // An opaque token of A, verified by RFC 7662 introspection: "read-only" alone, so the
    // memory server's tools do not exist for it, and everything's echo runs.
    let opaque = a.token("opaque", "read-only");
    assert!(!opaque.contains('.'), "an opaque token: {opaque}");
    let o = client_steps(&gateway.url(), &opaque, &steps);
    assert!(!ok(&o[0]) && o[0]["text"].as_str().unwrap().contains("TOOL_NOT_FOUND"), "{o:?}");
    assert!(ok(&o[2]), "{o:?}");

    // The static tokens keep working beside the identity providers.
    let ops = client_steps(&gateway.url(), "static-token", &json!([["call", "memory.read_graph", {}]]));
    assert!(ok(&ops[0]) && ops[0]["text"].as_str().unwrap().contains("ada"), "{ops:?}");

    // The audit trail names each principal by subject and issuer, never by its token.
    let trail = || -> String {
        let Ok(dir) = std::fs::read_dir(dir.join("state/audit")) else { return String::new() };
        dir.flatten().map(|f| std::fs::read_to_string(f.path()).unwrap_or_default()).collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = format!("eng-bot@{}", b.issuer);
    while !trail().contains(&want) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = trail();
    assert!(text.contains(&want) && text.contains(&format!("reader@{}", a.issuer)), "{text}");
    assert!(!text.contains(&opaque), "a token reached the trail");
    drop(gateway);
}

#[test]
fn the_python_sdk_client_logs_in_through_the_gateways_metadata_and_gets_what_its_scopes_allow() {
    let dir = common::scratch().join("gateway-oauth-sdk");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let idp = Idp::start(&resource, 300);
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"memory": memory(&dir),
                           "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}},
            "toolsearch": {"requires": {"memory": ["memory"]},
                           "auth": {"oauth": {"resource": resource, "issuers": [{"issuer": idp.issuer}],
                                              "scopes_supported": ["memory", "read-only"]}}}
        }),
    );
    let addr = format!("127.0.0.1:{port}");
    let gateway = HttpGateway::start_on(&addr, &config, &dir.join("state"), &[], &[]);
    let entity = json!({"entities": [{"name": "ada", "entityType": "person", "observations": []}]});
    let steps = json!([
        ["call", "memory.read_graph", {}],
        ["call", "memory.create_entities", entity],
        ["call", "everything.echo", {"message": "hi"}]
    ]);
    let out = std::process::Command::new(common::python())
        .arg(common::repo().join("tests/oauth/sdk_client.py"))
        .args([&gateway.url(), "alice", &steps.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = &seen["results"];
    let ok = |r: &Value| !r["is_error"].as_bool().unwrap();
    // The SDK found the issuer through the gateway's challenge and metadata, registered, and
    // asked for a code with PKCE for this resource.
    assert_eq!(seen["dance"]["registered"], true, "{seen}");
    let asked = seen["dance"]["authorization_urls"][0].as_str().unwrap();
    assert!(asked.starts_with(&format!("{}/auth?", idp.issuer)), "{asked}");
    assert!(asked.contains("code_challenge_method=S256") && asked.contains("resource="), "{asked}");
    // The metadata told the SDK to ask for "memory read-only"; so alice reads the graph and may not write it.
    assert!(ok(&results[0]) && ok(&results[2]), "{results}");
    assert!(!ok(&results[1]) && results[1]["text"].as_str().unwrap().contains("read-only"), "{results}");
    drop(gateway);
}

#[test]
fn forged_expired_and_misaimed_tokens_are_refused_with_a_reason() {
    let dir = common::scratch().join("gateway-oauth-refusals");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let idp = Idp::start(&resource, 300);
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"memory": memory(&dir)},
            "toolsearch": {"auth": {"oauth": {"resource": resource, "required_scopes": ["read-only"],
                                              "issuers": [{"issuer": idp.issuer}]}}}
        }),
    );
    let addr = format!("127.0.0.1:{port}");
    let gateway = HttpGateway::start_on(&addr, &config, &dir.join("state"), &[], &[]);
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");

    // Without a token: 401, and the challenge leads to the metadata, which leads to the issuer.
    let (status, headers, _) = init(&addr, None);
    let challenge = header(&headers, "www-authenticate");
    assert_eq!(status, 401);
    assert!(challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")), "{challenge}");
    assert!(challenge.contains("scope=\"read-only\""), "{challenge}");
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let (status, body) = request(&addr, "GET", path, &[], "");
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (status, &doc["resource"], &doc["authorization_servers"]),
            (200, &json!(resource), &json!([idp.issuer]))
        );
    }

    let forged = idp.forged(&resource);
    let (status, _, _) = init(&addr, forged["good"].as_str());
    assert_eq!(status, 200, "the forging itself is sound: a token with the right claims and key passes");
    let cases = [
        ("expired", "the token has expired"),
        ("not_yet_valid", "not valid yet"),
        ("wrong_audience", "another audience"),
        ("wrong_issuer", "not one this gateway trusts"),
        ("no_subject", "no sub claim"),
        ("unknown_key", "a key its issuer does not publish"),
        ("impostor_key", "signature does not verify"),
        ("alg_none", "alg none"),
        ("hs256_with_public_key", "HS256"),
    ];
    for (name, why) in cases {
        assert_invalid_token(&addr, name, forged[name].as_str().unwrap(), why);
    }

    // A real token of the provider, for another resource: refused for its audience.
    let (_, other) = idp.grant("reader", "read-only", "http://127.0.0.1:1/another");
    let (status, _, body) = init(&addr, other["access_token"].as_str());
    assert!(status == 401 && body.contains("another audience"), "{status} {body}");
    // A valid token without the required scope: 403 insufficient_scope, naming it.
    let (status, headers, _) = init(&addr, Some(&idp.token("eng-bot", "")));
    let challenge = header(&headers, "www-authenticate");
    assert_eq!(status, 403);
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"read-only\""),
        "{challenge}"
    );
    let (status, _, _) = init(&addr, Some(&idp.token("reader", "read-only")));
    assert_eq!(status, 200);

    // Past the refused-token burst (30 distinct tokens: a retried one is no new guess) this
    // address's tokens are throttled, but a provider's token is still checked (guessing cannot
    // pass a signature): a good one gets in, a forged one gets 429 like any other guess.
    let mut refused = 0;
    while init(&addr, Some(&format!("not-a-token-at-all-{refused:06}"))).0 == 401 {
        refused += 1;
        assert!(refused <= 30, "never throttled");
    }
    assert_eq!(init(&addr, Some(&idp.token("reader", "read-only"))).0, 200, "a provider's token while throttled");
    assert_eq!(init(&addr, forged["expired"].as_str()).0, 429);
    drop(gateway);
}

/// A JWT-shaped token claiming `issuer`, signed by nobody: enough to make the gateway look for
/// the issuer's keys.
fn claiming(issuer: &str, kid: &str) -> String {
    let b64 = |v: Value| base64url(v.to_string().as_bytes());
    let claims = json!({"iss": issuer, "sub": "x", "aud": "a", "exp": 4_000_000_000u64});
    format!("{}.{}.c2lnbmF0dXJl", b64(json!({"alg": "RS256", "kid": kid})), b64(claims))
}

#[test]
fn a_provider_that_hangs_or_talks_nonsense_delays_nobody_else() {
    let dir = common::scratch().join("gateway-oauth-bad-idp");
    let bad = |mode: &str| {
        let port = free_port();
        let mut child = std::process::Command::new(common::python())
            .arg(common::repo().join("tests/oauth/bad_idp.py"))
            .args([&port.to_string(), mode])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        (common::gateway::Killed(child), format!("http://127.0.0.1:{port}"))
    };
    let (_hang, hang) = bad("hang");
    let (_garbage, garbage) = bad("garbage");
    let (_liar, liar) = bad("wrong-issuer");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"memory": memory(&dir)},
            "toolsearch": {"tokens": {"static-token": []},
                           "auth": {"oauth": {"resource": "http://127.0.0.1:1/mcp",
                                              "issuers": [{"issuer": hang}, {"issuer": garbage}, {"issuer": liar}]}}}
        }),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let addr = gateway.addr.clone();

    // A token of the hanging provider waits for its keys, at most 5 s, and gets 503 ...
    let waiting = {
        let (addr, token) = (addr.clone(), claiming(&hang, "k1"));
        std::thread::spawn(move || {
            let started = Instant::now();
            let (status, headers, body) = init(&addr, Some(&token));
            (status, header(&headers, "retry-after").to_owned(), body, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // ... while a static token's requests are served at once.
    for _ in 0..5 {
        let started = Instant::now();
        let (status, _, _) = init(&addr, Some("static-token"));
        assert_eq!(status, 200);
        assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    }
    let (status, retry, body, took) = waiting.join().unwrap();
    assert_eq!((status, retry.as_str()), (503, "10"), "{body}");
    assert!(body.contains("did not answer within 5 s") && took < Duration::from_secs(8), "{body} {took:?}");

    let (status, _, body) = init(&addr, Some(&claiming(&garbage, "k1")));
    assert!(status == 503 && body.contains("did not send JSON"), "{status} {body}");
    let (status, _, body) = init(&addr, Some(&claiming(&liar, "k1")));
    assert!(status == 503 && body.contains("names issuer") && body.contains("refused"), "{status} {body}");

    // Made-up key ids do not turn into fetches: at most one per 10 s, however many arrive.
    for i in 0..20 {
        let (status, _, _) = init(&addr, Some(&claiming(&garbage, &format!("kid-{i}"))));
        assert_eq!(status, 503);
    }
    let (_, count) = request(garbage.trim_start_matches("http://"), "GET", "/count", &[], "");
    let fetches = serde_json::from_str::<Value>(&count).unwrap()["jwks"].as_u64().unwrap();
    assert!(fetches <= 3, "{fetches} fetches of the key set for 22 requests");
    drop(gateway);
}

#[test]
fn an_issuer_over_plain_http_is_refused_before_anything_starts() {
    let dir = common::scratch().join("gateway-oauth-plain");
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"memory": memory(&dir)},
            "toolsearch": {"auth": {"oauth": {"resource": "https://gw.example/mcp",
                                              "issuers": [{"issuer": "http://idp.example"}]}}}
        }),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--config", config.to_str().unwrap(), "--http", "127.0.0.1:0"])
        .args(["--state", dir.join("state").to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("toolsearch.auth.oauth.issuers[0].issuer") && stderr.contains("must be https"), "{stderr}");
}
