//! What leads a client from the gateway to its authorization server: the RFC 9728
//! protected-resource metadata, where it is served, and the `WWW-Authenticate` challenge of a
//! refused request (RFC 6750, with RFC 9728's `resource_metadata`).

use serde_json::{json, Value};

use super::{Refusal, Verifier};

/// The well-known path of protected-resource metadata.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

impl Verifier {
    /// The RFC 9728 metadata document.
    pub(crate) fn metadata(&self) -> Value {
        let scopes = self.settings.scopes_supported.clone().unwrap_or_else(|| {
            let mut scopes: Vec<String> = self.settings.required_scopes.clone();
            for (issuer, _) in &self.issuers {
                if let (true, Some(map)) = (issuer.scopes.claim == "scope", &issuer.scopes.map) {
                    scopes.extend(map.keys().cloned());
                }
            }
            scopes.sort();
            scopes.dedup();
            scopes
        });
        let servers: Vec<&str> = self.issuers.iter().map(|(s, _)| s.issuer.as_str()).collect();
        let mut doc = json!({
            "resource": self.settings.resource,
            "authorization_servers": servers,
            "bearer_methods_supported": ["header"],
            "resource_name": "toolsearch gateway",
        });
        // An empty list would tell a client to ask for no scope at all.
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        doc
    }

    /// The paths the metadata is served at: the well-known path, and it suffixed with the
    /// resource's path (`/.well-known/oauth-protected-resource/mcp` for `.../mcp`), the form
    /// the `resource_metadata` URL names.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let path = self.resource_path();
        let mut paths = vec![WELL_KNOWN.to_owned()];
        if !path.is_empty() {
            paths.push(format!("{WELL_KNOWN}{path}"));
        }
        paths
    }

    fn resource_path(&self) -> String {
        reqwest::Url::parse(&self.settings.resource)
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default()
    }

    /// The URL of the metadata, as challenges name it.
    pub(crate) fn metadata_url(&self) -> String {
        let origin =
            reqwest::Url::parse(&self.settings.resource).map(|u| u.origin().ascii_serialization()).unwrap_or_default();
        format!("{origin}{WELL_KNOWN}{}", self.resource_path())
    }

    /// The `WWW-Authenticate` value for a request without a token (`None`) or refused for
    /// `refusal`.
    pub(crate) fn challenge(&self, refusal: Option<&Refusal>) -> String {
        let url = self.metadata_url();
        let required = self.settings.required_scopes.join(" ");
        let scope = |s: &str| match s.is_empty() {
            true => String::new(),
            false => format!(", scope=\"{}\"", quoted(s)),
        };
        match refusal {
            None => format!("Bearer resource_metadata=\"{url}\"{}", scope(&required)),
            Some(Refusal::Invalid(why)) | Some(Refusal::Unavailable(why)) => format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{url}\"",
                quoted(why)
            ),
            Some(Refusal::Insufficient(missing)) => {
                format!("Bearer error=\"insufficient_scope\"{}, resource_metadata=\"{url}\"", scope(&missing.join(" ")))
            }
        }
    }
}

/// `s` safe inside a quoted header parameter: printable ASCII without `"` or `\`.
fn quoted(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii() && !c.is_ascii_control() && *c != '"' && *c != '\\').collect()
}
