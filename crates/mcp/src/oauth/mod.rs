//! The HTTP endpoint as an OAuth 2.1 protected resource: clients bring their team's identity
//! provider's access tokens instead of (or beside) the static tokens of the config.
//!
//! A presented token that is not a static one is verified here (`Verifier::verify`): a JWT
//! by its issuer's published keys (`jwt.rs`, `keys.rs`), an opaque token by RFC 7662
//! introspection (`introspect.rs`). The caller it names is its *principal*, issuer and
//! subject: sessions, session caps and `input_required` rounds are bound to it, and logs and
//! the audit trail name it. Its scopes come from the issuer's claim rule (`claims.rs`). The
//! RFC 9728 metadata and the `WWW-Authenticate` challenges that lead a client to the
//! authorization server are made here too (`metadata.rs`).
//!
//! Key design decision: nothing from a token is trusted before its signature (or its
//! issuer's introspection answer) says so, except the two things needed to find the key, the
//! header's `alg` (checked against an asymmetric-only allow-list first) and the unverified
//! `iss` (used only to pick among configured issuers, then verified). A token is never passed
//! on to an upstream, and never logged: only its principal is.

mod claims;
pub mod config;
pub mod fetch;
mod introspect;
mod jwt;
mod keys;
mod metadata;

use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use config::{IntrospectionSettings, IssuerSettings, OAuthSettings, ScopeRule};
use keys::IssuerKeys;
pub(crate) use metadata::WELL_KNOWN;

/// A token that verified: who it names and what it grants.
#[derive(Debug, Clone)]
pub(crate) struct Verified {
    /// The principal's name for logs and the audit trail (`subject@issuer`).
    pub(crate) name: String,
    /// The principal's digest: SHA-256 of issuer and subject.
    pub(crate) digest: [u8; 32],
    /// The gateway scopes the issuer's rule gives.
    pub(crate) scopes: Vec<String>,
}

/// Why a token is not accepted; each says so in words that carry nothing of the token.
#[derive(Debug, Clone)]
pub(crate) enum Refusal {
    /// 401 `invalid_token`.
    Invalid(String),
    /// 403 `insufficient_scope`: the token lacks these required scopes.
    Insufficient(Vec<String>),
    /// 503: the issuer's keys or introspection could not be reached; try again later.
    Unavailable(String),
}

impl Refusal {
    pub(crate) fn invalid(why: impl Into<String>) -> Refusal {
        Refusal::Invalid(why.into())
    }
}

/// Verifies tokens for one `auth.oauth` section.
pub(crate) struct Verifier {
    settings: OAuthSettings,
    issuers: Vec<(IssuerSettings, IssuerKeys)>,
    client: reqwest::Client,
    introspected: introspect::Introspected,
    introspecting: tokio::sync::Semaphore,
}

impl Verifier {
    /// A verifier for `settings` (already [`OAuthSettings::check`]ed); nothing is fetched yet.
    pub(crate) fn new(settings: OAuthSettings) -> Result<Arc<Verifier>, String> {
        settings.check()?;
        let client = fetch::client()?;
        let issuers = settings
            .issuers
            .iter()
            .map(|s| (s.clone(), IssuerKeys::new(&s.issuer, s.jwks_uri.clone(), client.clone())))
            .collect();
        Ok(Arc::new(Verifier {
            settings,
            issuers,
            client,
            introspected: introspect::Introspected::default(),
            introspecting: tokio::sync::Semaphore::new(introspect::AT_ONCE),
        }))
    }

    /// The settings it verifies by.
    pub(crate) fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// Who `token` names and what it grants, or why it is refused.
    pub(crate) async fn verify(&self, token: &str) -> Result<Verified, Refusal> {
        match jwt::looks_like_jwt(token) {
            true => self.verify_jwt(token).await,
            false => self.introspect(token).await,
        }
    }

    /// Fetches every issuer's metadata and keys now, so that the first client does not wait
    /// for them; a failure is left for a client's request to report.
    pub(crate) async fn warm(&self) {
        for (_, keys) in &self.issuers {
            let _ = keys.key(Some("\u{0}warm")).await;
        }
    }

    /// The caller that verified `claims` from `issuer` names, once the required scopes are
    /// checked.
    fn verified(&self, issuer: &IssuerSettings, claims: Map<String, Value>) -> Result<Verified, Refusal> {
        let subject = claims.get("sub").and_then(Value::as_str).unwrap_or_default();
        if subject.is_empty() {
            return Err(Refusal::invalid("the token has no sub claim"));
        }
        let granted = claims::claim_values(&claims, "scope");
        let missing: Vec<String> =
            self.settings.required_scopes.iter().filter(|s| !granted.contains(s)).cloned().collect();
        if !missing.is_empty() {
            return Err(Refusal::Insufficient(missing));
        }
        let mut hasher = Sha256::new();
        for part in ["oauth", &issuer.issuer, subject] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        Ok(Verified {
            name: claims::principal_name(&issuer.issuer, subject),
            digest: hasher.finalize().into(),
            scopes: issuer.scopes.scopes(&claims),
        })
    }
}
