//! The gateway's OAuth Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document,
//! the MCP 2025-11-25 way for a client to name itself without registering): an HTTPS URL is
//! the gateway's `client_id` at every authorization server that says
//! `client_id_metadata_document_supported`, and that URL serves the JSON made here.
//!
//! The document names a public, native client (no secret; PKCE does the work) whose redirect
//! is the loopback one `gateway login` listens on: RFC 8252 lets a native client's loopback
//! redirect take any port, so one document serves every login.

use serde_json::{json, Value};

/// The loopback redirect the document lists (a login listens on a port of its own).
pub(crate) const LOOPBACK_REDIRECT: &str = "http://127.0.0.1/callback";

/// Checks that `url` can name a client: `https`, with a path, no fragment, no user info, no
/// `.` or `..` segment (what authorization servers require of it).
pub fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if parsed.scheme() != "https" {
        return Err(format!("{url} must be https: authorization servers fetch it as the client's identity"));
    }
    if parsed.fragment().is_some() || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!("{url} must have no fragment and no user info"));
    }
    let path = url.split_once("://").map_or("", |(_, rest)| rest.find('/').map_or("", |at| &rest[at..]));
    let path = path.split(['?', '#']).next().unwrap_or_default();
    if path.len() <= 1 || path.split('/').any(|s| s == "." || s == "..") {
        return Err(format!("{url} must have a path, without `.` or `..` segments (e.g. /oauth/client-metadata.json)"));
    }
    if taken(path) {
        return Err(format!(
            "{url}: the gateway's HTTP listener serves {path} itself, or cannot (plain segments only): choose another path"
        ));
    }
    Ok(())
}

/// Checks the gateway's redirect address for per-user logins: `https` (`http` on loopback
/// only), with a path that is not one the gateway serves itself.
pub fn check_callback(url: &str) -> Result<(), String> {
    let parsed = toolsearch_mcp::oauth::fetch::secure_url(url)?;
    let path = parsed.path();
    if path.len() <= 1 || taken(path) || parsed.fragment().is_some() || parsed.query().is_some() {
        return Err(format!("{url} must have a path of its own, no query and no fragment (e.g. /oauth/callback)"));
    }
    Ok(())
}

/// Whether the gateway's HTTP listener serves `path` itself, or cannot serve it as written
/// (anything beyond letters, digits, `-._~` and `/` segments).
fn taken(path: &str) -> bool {
    let plain = path
        .split('/')
        .skip(1)
        .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)));
    !plain
        || ["/mcp", "/healthz", "/readyz", "/metrics", "/.well-known/oauth-protected-resource"]
            .iter()
            .any(|t| path == *t || path.starts_with(&format!("{t}/")))
}

/// The document served at `url`, naming `url` as its `client_id`; its redirects are the
/// loopback one of `gateway login` and, with per-user logins, the gateway's `callback`.
pub fn document(url: &str, callback: Option<&str>) -> Value {
    let redirects: Vec<&str> = std::iter::once(LOOPBACK_REDIRECT).chain(callback).collect();
    json!({
        "client_id": url,
        "client_name": "toolsearch gateway",
        "redirect_uris": redirects,
        "grant_types": ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    })
}

/// The path of `url`, where the gateway's HTTP listener serves the document.
pub fn path(url: &str) -> Option<String> {
    reqwest::Url::parse(url).ok().map(|u| u.path().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_https_url_with_a_path_names_a_client() {
        assert!(check_url("https://gateway.example/oauth/client-metadata.json").is_ok());
        for bad in [
            "http://gateway.example/oauth/client.json",
            "https://gateway.example",
            "https://gateway.example/",
            "https://gateway.example/a/../b.json",
            "https://gateway.example/c.json#x",
            "https://user@gateway.example/c.json",
            "https://gateway.example/mcp",
            "https://gateway.example/readyz",
            "https://gateway.example/oauth/{id}",
            "https://gateway.example/oauth//x",
            "not a url",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_document_names_itself_a_public_native_client() {
        let d = document("https://g.example/c.json", None);
        assert_eq!(d["client_id"], "https://g.example/c.json");
        assert_eq!(d["token_endpoint_auth_method"], "none");
        assert!(d.get("client_secret").is_none());
        assert_eq!(path("https://g.example/c.json").unwrap(), "/c.json");
        let d = document("https://g.example/c.json", Some("https://g.example/oauth/callback"));
        assert_eq!(d["redirect_uris"][1], "https://g.example/oauth/callback");
        assert!(check_callback("https://g.example/oauth/callback").is_ok());
        assert!(check_callback("http://127.0.0.1:8080/oauth/callback").is_ok());
        for bad in ["http://g.example/oauth/callback", "https://g.example/", "https://g.example/mcp/cb"] {
            assert!(check_callback(bad).is_err(), "{bad}");
        }
    }
}
