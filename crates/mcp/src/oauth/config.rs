//! What `toolsearch.auth.oauth` says: the resource the gateway is, the issuers it trusts, and
//! how each issuer's claims become the gateway's scopes. Checked when the config is read, so a
//! mistake names its field before anything starts.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The gateway as an OAuth 2.1 protected resource (`toolsearch.auth.oauth`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    /// The gateway's public URL as clients name it (`https://gateway.example/mcp`): the
    /// `resource` of its RFC 9728 metadata and every issuer's default audience.
    pub resource: String,
    /// The authorization servers whose tokens are accepted.
    pub issuers: Vec<IssuerSettings>,
    /// OAuth scopes every token must carry in its `scope` claim (default none); a token without
    /// them gets 403 `insufficient_scope` naming them.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// The scopes the RFC 9728 metadata tells clients to ask for (`scopes_supported`; MCP
    /// clients request exactly these). Default: `required_scopes` and the values the `scope`
    /// claim rules map; none, and the field is left out.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds (default 60).
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
}

fn default_leeway() -> u64 {
    60
}

/// One trusted authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerSettings {
    /// Its issuer identifier, exactly as tokens' `iss` and its metadata's `issuer` say it.
    pub issuer: String,
    /// The `aud` a token must name (default: [`OAuthSettings::resource`]).
    #[serde(default)]
    pub audience: Option<String>,
    /// How its claims become scopes (default: the `scope` claim, each value a scope).
    #[serde(default)]
    pub scopes: ScopeRule,
    /// Where its signing keys are, when its metadata does not say (default: the `jwks_uri` of
    /// its RFC 8414 or OpenID metadata).
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// RFC 7662 introspection of opaque tokens, with the gateway's client credentials there
    /// (absent: only JWTs are accepted from this issuer).
    #[serde(default)]
    pub introspection: Option<IntrospectionSettings>,
}

/// The gateway's credentials at an issuer's introspection endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionSettings {
    /// The endpoint (default: the `introspection_endpoint` of the issuer's metadata).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The gateway's client id there.
    pub client_id: String,
    /// Its secret (`${VAR}` is expanded when the gateway config is read).
    pub client_secret: String,
}

/// Which claim carries a caller's scopes, and, optionally, what each of its values grants.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeRule {
    /// The claim, a dotted path for nested ones (`realm_access.roles`); a space-separated
    /// string or an array of strings (default `scope`).
    #[serde(default = "default_claim")]
    pub claim: String,
    /// What each value grants. Absent: each value is a scope of its own; present: a value it
    /// does not name grants nothing.
    #[serde(default)]
    pub map: Option<BTreeMap<String, Vec<String>>>,
}

fn default_claim() -> String {
    "scope".to_owned()
}

impl Default for ScopeRule {
    fn default() -> Self {
        ScopeRule { claim: default_claim(), map: None }
    }
}

impl OAuthSettings {
    /// Checks what serde cannot: URLs that parse, HTTPS except on loopback, at least one
    /// issuer, none twice. The error names the field.
    pub fn check(&self) -> Result<(), String> {
        secure_url(&self.resource).map_err(|e| format!("resource: {e}"))?;
        if self.issuers.is_empty() {
            return Err("issuers: name at least one authorization server".into());
        }
        for (i, issuer) in self.issuers.iter().enumerate() {
            let at = |field: &str, e: String| format!("issuers[{i}].{field}: {e}");
            secure_url(&issuer.issuer).map_err(|e| at("issuer", e))?;
            if let Some(uri) = &issuer.jwks_uri {
                secure_url(uri).map_err(|e| at("jwks_uri", e))?;
            }
            if let Some(endpoint) = issuer.introspection.as_ref().and_then(|s| s.endpoint.as_ref()) {
                secure_url(endpoint).map_err(|e| at("introspection.endpoint", e))?;
            }
            if issuer.scopes.claim.is_empty() {
                return Err(at("scopes.claim", "empty".into()));
            }
            if self.issuers[..i].iter().any(|o| o.issuer == issuer.issuer) {
                return Err(at("issuer", format!("{} is named twice", issuer.issuer)));
            }
        }
        Ok(())
    }

    /// The audience tokens from `issuer` must name.
    pub(crate) fn audience<'a>(&'a self, issuer: &'a IssuerSettings) -> &'a str {
        issuer.audience.as_deref().unwrap_or(&self.resource)
    }
}

/// `url` parsed, if it is `https`, or `http` on a loopback host (a test's or a sidecar's).
pub fn secure_url(url: &str) -> Result<reqwest::Url, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        _ => Err(format!("{url} must be https (plain http only on loopback)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_refused_except_on_loopback() {
        assert!(secure_url("https://idp.example").is_ok());
        assert!(secure_url("http://127.0.0.1:8080/x").is_ok());
        assert!(secure_url("http://localhost:1").is_ok());
        assert!(secure_url("http://[::1]:1").is_ok());
        assert!(secure_url("http://idp.example").unwrap_err().contains("must be https"));
        assert!(secure_url("http://127.0.0.1.evil.example").is_err());
        assert!(secure_url("ftp://idp.example").is_err());
        assert!(secure_url("not a url").unwrap_err().contains("is not a URL"));
    }

    #[test]
    fn a_config_names_its_bad_field() {
        let parse = |s: &str| serde_json::from_str::<OAuthSettings>(s).unwrap();
        let two = parse(
            r#"{"resource": "https://gw.example/mcp", "issuers": [{"issuer": "https://a.example"}, {"issuer": "https://a.example"}]}"#,
        );
        assert!(two.check().unwrap_err().starts_with("issuers[1].issuer"));
        let plain = parse(r#"{"resource": "https://gw.example/mcp", "issuers": [{"issuer": "http://a.example"}]}"#);
        assert!(plain.check().unwrap_err().starts_with("issuers[0].issuer"));
        let none = parse(r#"{"resource": "https://gw.example/mcp", "issuers": []}"#);
        assert!(none.check().unwrap_err().starts_with("issuers:"));
        let ok = parse(
            r#"{"resource": "https://gw.example/mcp", "issuers": [{"issuer": "https://a.example", "scopes": {"claim": "groups", "map": {"eng": ["github"]}}}]}"#,
        );
        assert!(ok.check().is_ok());
        assert_eq!(ok.audience(&ok.issuers[0]), "https://gw.example/mcp");
        assert!(serde_json::from_str::<OAuthSettings>(r#"{"resource": "x", "issuers": [], "typo": 1}"#).is_err());
    }
}
