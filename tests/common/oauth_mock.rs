//! A second, independent token issuer: `oauth2-mock-server` from npm (`tests/oauth/mock.mjs`,
//! installed under target/oauth-mock by `scripts/test-deps`). Its tokens, good and bad, are
//! minted by code nobody here wrote, and it serves its own discovery document and keys.

use std::process::{Child, Command};

use serde_json::Value;

use super::oauth::request;
use super::repo;

/// Two running issuers (`trusted`, `stranger`) and the tokens the script minted; killed when
/// dropped.
pub struct MockIssuers {
    child: Child,
    /// The issuer a test's gateway trusts, `http://127.0.0.1:PORT`.
    pub issuer: String,
    /// An issuer nobody told the gateway of.
    pub stranger: String,
    /// By name: `good`, `expired`, `not_yet_valid`, `wrong_audience`, `no_subject`,
    /// `stranger_issuer`, `unknown_key`, `impostor_key` (see the script).
    pub tokens: Value,
}

impl MockIssuers {
    /// Starts both issuers; the script's tokens are for `audience`.
    pub fn start(audience: &str) -> MockIssuers {
        let modules = repo().join("target/oauth-mock/node_modules");
        assert!(modules.join("oauth2-mock-server").exists(), "{} is missing: run scripts/test-deps", modules.display());
        let mut node = Command::new("node");
        node.arg(repo().join("tests/oauth/mock.mjs")).arg(audience).env("MOCK_MODULES", modules);
        let (child, ready) = super::oauth::spawn_ready(node, "oauth-mock.log", "oauth2-mock-server");
        MockIssuers {
            child,
            issuer: ready["issuer"].as_str().unwrap().to_owned(),
            stranger: ready["stranger"].as_str().unwrap().to_owned(),
            tokens: ready["tokens"].clone(),
        }
    }

    /// A token from the trusted issuer's own token endpoint (a password grant for `user`,
    /// `scope`, and RFC 8707's `resource`): the status and the answer.
    pub fn grant(&self, user: &str, scope: &str, resource: &str) -> (u16, Value) {
        let form = format!(
            "grant_type=password&client_id=cli&username={user}&password=pw&scope={}&resource={}",
            super::oauth::encode(scope),
            super::oauth::encode(resource)
        );
        let (status, body) = request(
            self.issuer.trim_start_matches("http://"),
            "POST",
            "/token",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            &form,
        );
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }
}

impl Drop for MockIssuers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
