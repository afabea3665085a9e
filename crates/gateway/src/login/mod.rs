//! Logging the gateway in to upstream MCP servers that require OAuth 2.1, as the MCP
//! authorization specification describes: the gateway as an OAuth *client*.
//!
//! - `discover.rs` follows the server's `401` and its `WWW-Authenticate` `resource_metadata`
//!   to RFC 9728 protected-resource metadata (or the well-known fallbacks), then to the
//!   authorization server's RFC 8414 / OpenID metadata, whose `issuer` must be the one named.
//! - `flow.rs` is `toolsearch gateway login SERVER`: a pre-registered client or RFC 7591
//!   dynamic registration (kept per authorization server), the authorization-code grant with
//!   PKCE S256 and an RFC 8707 `resource`, on a loopback redirect (127.0.0.1 only) whose
//!   `state` and RFC 9207 `iss` are checked.
//! - `device.rs` is `login --device` (RFC 8628), for a host without a browser.
//! - `tokens.rs` holds a server's grant while the gateway runs: the access token is refreshed
//!   before it expires and once on a `401`, honouring refresh-token rotation; a grant of the
//!   client-credentials kind is fetched without anyone logging in.
//! - `document.rs` is the gateway's Client ID Metadata Document: with
//!   `toolsearch.auth.client_metadata_url` set, its URL is the gateway's `client_id` at every
//!   authorization server that supports such documents, before dynamic registration.
//! - `per_user.rs` is `"per_user": true`: a caller without its own grant is sent the
//!   authorization address (a URL elicitation), and the redirect comes back to the gateway's
//!   own endpoint, which keeps the caller's grant apart from everyone else's.
//! - `store.rs` keeps grants and registrations in `STATE/oauth/` (0700, files 0600, written
//!   whole or not at all), under a lock so that a login, a logout and a refresh never cross.
//!
//! Key design decision: a grant lives in the state directory, not in the process, so that a
//! login made by the command reaches a running gateway within seconds (it reads the file again
//! when it changes), and nothing of it ever reaches a client, the trail or a log line: errors
//! name the server, the endpoint and the authorization server's own error code only. A
//! server that needs a login and has none is down with `UPSTREAM_LOGIN_REQUIRED`, naming the
//! command its operator must run.

mod device;
mod discover;
pub mod document;
mod flow;
pub(crate) mod per_user;
pub(crate) mod store;
pub(crate) mod tokens;

use serde::Deserialize;

pub(crate) use flow::random_b64;
pub use flow::{login, logout, logout_callers, How};
pub use per_user::callback_page;
pub(crate) use tokens::UpstreamGrant;

/// The stable code of a server that needs its operator to log in.
pub const LOGIN_REQUIRED: &str = "UPSTREAM_LOGIN_REQUIRED";

/// A server entry's `oauth` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOAuth {
    /// A client id registered with the authorization server beforehand (default: register
    /// dynamically, RFC 7591).
    #[serde(default)]
    pub client_id: Option<String>,
    /// Its secret: a value (`${VAR}` expanded) or `{"command": [...]}` whose output it is.
    #[serde(default)]
    pub client_secret: Option<SecretForm>,
    /// The scopes to ask for (default: what the server's metadata lists).
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// The authorization server, for a server that publishes no protected-resource metadata.
    #[serde(default)]
    pub authorization_server: Option<String>,
    /// Where a person logs in, for an authorization server that publishes no metadata (given
    /// with `token_endpoint`; Gemini CLI's `authorizationUrl`).
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are asked for, for an authorization server that publishes no metadata
    /// (Gemini CLI's `tokenUrl`): given, its metadata is not read, and `client_id` is needed.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Where a device login (`gateway login --device`, RFC 8628) starts, for an authorization
    /// server that publishes no metadata (given with `token_endpoint`).
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
    /// `authorization_code` (the default: a person logs in with `gateway login`) or
    /// `client_credentials` (the gateway gets tokens with its own client credentials).
    #[serde(default)]
    pub grant: GrantKind,
    /// Whether every caller the gateway tells apart logs in with its own grant
    /// (`crate::login::per_user`); the gateway's own login (`gateway login`) then only lists
    /// the server's tools.
    #[serde(default)]
    pub per_user: bool,
    /// The gateway's redirect endpoint for per-user logins (`toolsearch.auth.callback_url`),
    /// set from the gateway's settings when the config is read.
    #[serde(skip)]
    pub(crate) callback_url: Option<String>,
    /// The gateway's Client ID Metadata Document URL (`toolsearch.auth.client_metadata_url`),
    /// set from the gateway's settings when the config is read.
    #[serde(skip)]
    pub(crate) metadata_document: Option<String>,
}

impl UpstreamOAuth {
    /// The client registered beforehand (`client_id`, with its secret resolved), if the entry
    /// names one.
    pub(crate) async fn configured_client(&self, server: &str) -> Result<Option<(String, Option<String>)>, String> {
        let Some(id) = &self.client_id else { return Ok(None) };
        let secret = match &self.client_secret {
            Some(s) => Some(s.resolve(server).await?),
            None => None,
        };
        Ok(Some((id.clone(), secret)))
    }

    /// The client a login runs as without a configured one, where `found`'s authorization
    /// server takes Client ID Metadata Documents and the gateway publishes one: its URL, no
    /// secret.
    pub(crate) fn document_client(&self, found: &discover::Discovered) -> Option<(String, Option<String>)> {
        self.metadata_document.clone().filter(|_| found.metadata_documents).map(|url| (url, None))
    }
}

/// Which grant a server's tokens come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantKind {
    /// A person logs in once; the refresh token keeps it going.
    #[default]
    AuthorizationCode,
    /// The gateway's own client credentials, no person.
    ClientCredentials,
}

/// A client secret as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "must be a string, or an object with `command`")]
pub enum SecretForm {
    /// The secret itself (`${VAR}` expanded when the config is read).
    Value(String),
    /// A command that prints it.
    Command(crate::credentials::HeaderCommand),
}

impl SecretForm {
    /// The secret, running its command if it has one. Errors say which server's secret and
    /// how its command failed, never what it printed.
    pub(crate) async fn resolve(&self, server: &str) -> Result<String, String> {
        match self {
            SecretForm::Value(v) => Ok(v.clone()),
            SecretForm::Command(c) => crate::credentials::run_command(&format!("{server}'s oauth.client_secret"), c)
                .await
                .map(|v| format!("{}{v}", c.prefix)),
        }
    }
}
