//! The gateway's token checks against a second issuer implementation nobody here wrote
//! (`oauth2-mock-server` from npm, `tests/common/oauth_mock.rs`), beside the oidc-provider
//! tests of `gateway_oauth.rs`: its token endpoint's tokens carry identity and scopes through a
//! real MCP client's calls, and the bad tokens it mints are refused for the reason they are bad.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{client_steps, free_port, reference_server, HttpGateway};
use common::oauth::{assert_invalid_token, header, initialize};
use common::oauth_mock::MockIssuers;
use common::write_config;
use serde_json::{json, Value};

#[test]
fn another_issuer_implementations_tokens_pass_or_fail_on_their_claims() {
    let dir = common::scratch().join("gateway-oauth-mock");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let mock = MockIssuers::start(&resource);
    let memory = json!({"command": "node", "args": [reference_server("memory")],
                        "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(
        &dir,
        &json!({
            "mcpServers": {"memory": memory},
            "toolsearch": {"auth": {"oauth": {"resource": resource, "required_scopes": ["read-only"],
                                              "issuers": [{"issuer": mock.issuer}]}}}
        }),
    );
    let addr = format!("127.0.0.1:{port}");
    let gateway = HttpGateway::start_on(&addr, &config, &dir.join("state"), &[], &[]);

    // A token from the issuer's own token endpoint, for this resource, through the official
    // Python MCP client: "read-only memory" reads the graph and is refused the write.
    let (status, answer) = mock.grant("alice", "read-only memory", &resource);
    assert_eq!(status, 200, "{answer}");
    let token = answer["access_token"].as_str().unwrap();
    let entity = json!({"entities": [{"name": "ada", "entityType": "person", "observations": ["x"]}]});
    let steps = json!([["call", "memory.read_graph", {}], ["call", "memory.create_entities", entity]]);
    let results = client_steps(&gateway.url(), token, &steps);
    let ok = |r: &Value| !r["is_error"].as_bool().unwrap();
    assert!(ok(&results[0]), "{results:?}");
    assert!(!ok(&results[1]) && results[1]["text"].as_str().unwrap().contains("read-only"), "{results:?}");

    // The same endpoint's token for another resource: refused for its audience.
    let (_, other) = mock.grant("alice", "read-only memory", "http://127.0.0.1:1/another");
    let (status, _, body) = initialize(&addr, other["access_token"].as_str());
    assert!(status == 401 && body.contains("another audience"), "{status} {body}");
    // Without the required scope: 403, naming it.
    let (_, bare) = mock.grant("alice", "memory", &resource);
    let (status, headers, _) = initialize(&addr, bare["access_token"].as_str());
    let challenge = header(&headers, "www-authenticate");
    assert_eq!(status, 403, "{challenge}");
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"read-only\""),
        "{challenge}"
    );

    // The tokens the library minted: the good one passes (so each refusal below is for its one flaw).
    let (status, _, body) = initialize(&addr, mock.tokens["good"].as_str());
    assert_eq!(status, 200, "{body}");
    let cases = [
        ("expired", "the token has expired"),
        ("not_yet_valid", "not valid yet"),
        ("wrong_audience", "another audience"),
        ("no_subject", "no sub claim"),
        ("stranger_issuer", "not one this gateway trusts"),
        ("unknown_key", "a key its issuer does not publish"),
        ("impostor_key", "signature does not verify"),
    ];
    for (name, why) in cases {
        assert_invalid_token(&addr, name, mock.tokens[name].as_str().unwrap(), why);
    }
    drop(gateway);
}
