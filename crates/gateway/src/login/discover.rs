//! From an upstream's URL to the authorization server that guards it: the `401` challenge's
//! `resource_metadata` (else the RFC 9728 well-known URLs), the protected-resource metadata's
//! `resource` and `authorization_servers`, then that server's metadata (`issuer` checked by
//! [`toolsearch_mcp::oauth::fetch::server_metadata`]), or the endpoints an entry gives by hand
//! for an authorization server that publishes no metadata. Every URL must be HTTPS except on
//! loopback.

use serde_json::Value;
use toolsearch_mcp::oauth::fetch::{self, secure_url};

use super::UpstreamOAuth;

/// What a login needs to know of a server's authorization server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    /// RFC 8628's device authorization endpoint, where the server has one.
    pub(crate) device_endpoint: Option<String>,
    /// The RFC 8707 resource to ask tokens for.
    pub(crate) resource: String,
    /// The scopes to ask for ("" for none).
    pub(crate) scope: String,
    /// Whether the redirect carries RFC 9207 `iss`.
    pub(crate) iss_in_redirect: bool,
    /// Whether the server takes a Client ID Metadata Document's URL as a `client_id`.
    pub(crate) metadata_documents: bool,
}

/// The `WWW-Authenticate` parameter `name` of a `Bearer` challenge.
fn challenge_param(challenge: &str, name: &str) -> Option<String> {
    let at = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &challenge[at..];
    Some(rest[..rest.find('"')?].to_owned())
}

/// Discovers the authorization server of the server at `url`. Endpoints given by hand
/// (`token_endpoint`) stand for its metadata, which is then not read; the issuer is then the
/// one `authorization_server` or the server's protected-resource metadata names, else the
/// token endpoint's origin.
pub(crate) async fn discover(
    client: &reqwest::Client,
    url: &str,
    settings: &UpstreamOAuth,
) -> Result<Discovered, String> {
    secure_url(url)?;
    let mut scope = settings.scopes.as_ref().map(|s| s.join(" "));
    let (issuer, resource) = match (&settings.authorization_server, &settings.token_endpoint) {
        (Some(issuer), _) => (issuer.clone(), url.to_owned()),
        (None, None) => protected_resource(client, url, &mut scope).await?,
        // A server that says nothing of its authorization server is asked for tokens for its
        // own URL.
        (None, Some(token)) => match protected_resource(client, url, &mut scope).await {
            Ok(found) => found,
            Err(_) => (secure_url(token)?.origin().ascii_serialization(), url.to_owned()),
        },
    };
    if let Some(token_endpoint) = &settings.token_endpoint {
        return Ok(Discovered {
            issuer,
            authorization_endpoint: settings.authorization_endpoint.clone(),
            token_endpoint: token_endpoint.clone(),
            registration_endpoint: None,
            device_endpoint: settings.device_authorization_endpoint.clone(),
            resource,
            scope: scope.unwrap_or_default(),
            iss_in_redirect: false,
            metadata_documents: false,
        });
    }
    let meta = fetch::server_metadata(client, &issuer).await?;
    let endpoint = |k: &str| -> Result<Option<String>, String> {
        match meta.get(k).and_then(Value::as_str) {
            Some(e) => secure_url(e).map(|_| Some(e.to_owned())).map_err(|e| format!("{issuer}'s {k}: {e}")),
            None => Ok(None),
        }
    };
    let token_endpoint =
        endpoint("token_endpoint")?.ok_or_else(|| format!("{issuer}'s metadata has no token_endpoint"))?;
    let offers =
        |s: &str| meta.get("scopes_supported").and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v == s));
    let mut scope = scope.unwrap_or_default();
    // A login is meant to last: ask for a refresh token where the server offers one that way.
    if settings.grant == super::GrantKind::AuthorizationCode
        && offers("offline_access")
        && !scope.split(' ').any(|s| s == "offline_access")
    {
        scope = format!("{scope} offline_access").trim().to_owned();
    }
    Ok(Discovered {
        authorization_endpoint: endpoint("authorization_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint")?,
        device_endpoint: endpoint("device_authorization_endpoint")?,
        token_endpoint,
        iss_in_redirect: meta.get("authorization_response_iss_parameter_supported") == Some(&Value::Bool(true)),
        metadata_documents: meta.get("client_id_metadata_document_supported") == Some(&Value::Bool(true)),
        issuer,
        resource,
        scope,
    })
}

/// The issuer and RFC 8707 resource the protected-resource metadata of the server at `url`
/// names: the `401` challenge's `resource_metadata`, else the well-known URLs, path-suffixed
/// first. `scope`, if not set, is taken from the challenge or the metadata.
async fn protected_resource(
    client: &reqwest::Client,
    url: &str,
    scope: &mut Option<String>,
) -> Result<(String, String), String> {
    let server = secure_url(url)?;
    let mut resource = url.to_owned();
    let probe = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send();
    let challenge = match tokio::time::timeout(fetch::FETCH_TIMEOUT, probe).await {
        Ok(Ok(r)) => r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).map(str::to_owned),
        Ok(Err(e)) => return Err(format!("{url} could not be reached: {}", e.without_url())),
        Err(_) => return Err(format!("{url} did not answer within {} s", fetch::FETCH_TIMEOUT.as_secs())),
    };
    if scope.is_none() {
        *scope = challenge.as_deref().and_then(|c| challenge_param(c, "scope"));
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let mut candidates: Vec<String> =
        challenge.as_deref().and_then(|c| challenge_param(c, "resource_metadata")).into_iter().collect();
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource{path}"));
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let mut last = String::new();
    let mut found = None;
    for candidate in candidates {
        match fetch::fetch_json(client, &candidate).await {
            Ok(doc) => {
                found = Some(doc);
                break;
            }
            Err(e) => last = e,
        }
    }
    let doc = found.ok_or_else(|| {
        format!("{url} publishes no protected-resource metadata ({last}); set oauth.authorization_server")
    })?;
    if let Some(r) = doc.get("resource").and_then(Value::as_str) {
        // The metadata must be about this server (RFC 9728 section 3.3).
        let named = secure_url(r)?;
        if named.origin() != server.origin() || !server.path().starts_with(named.path().trim_end_matches('/')) {
            return Err(format!("the protected-resource metadata of {url} is for {r}: refused"));
        }
        resource = r.to_owned();
    }
    if scope.is_none() {
        *scope = doc
            .get("scopes_supported")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "));
    }
    let issuer = doc
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the protected-resource metadata of {url} names no authorization server"))?;
    Ok((issuer.to_owned(), resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_by_name() {
        let c = r#"Bearer error="invalid_token", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="a b""#;
        assert_eq!(
            challenge_param(c, "resource_metadata").unwrap(),
            "https://mcp.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(challenge_param(c, "scope").unwrap(), "a b");
        assert_eq!(challenge_param(c, "realm"), None);
    }
}
