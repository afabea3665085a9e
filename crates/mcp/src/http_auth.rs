//! Who a request's bearer token names: one of the config's static tokens, or, with
//! `auth.oauth`, a principal of a trusted identity provider ([`crate::oauth`]).
//!
//! Static tokens are never looked up by value: the presented token is hashed (SHA-256) and
//! compared with every configured token's digest in constant time, so neither a map's lookup
//! nor an early exit tells how close a guess was. Either way the caller is known by a digest
//! (its token's, or its principal's issuer and subject), and sessions and caps are bound to
//! that digest.
//!
//! The static tokens and the verifier can be replaced while the endpoint runs (a reloaded
//! config's, [`Authenticator::replace`]): the next request meets the new ones, and the digests
//! whose grant went or changed are named so that what they opened can be ended. A verifier
//! replaced (its settings changed, or it went) takes their standing from all of its callers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use toolsearch_query::Principal;

use crate::config::Grant;
use crate::oauth::{Refusal, Verifier};
use crate::session::Caller;

/// A caller's digest: its token's SHA-256, or its principal's.
pub(crate) type TokenDigest = [u8; 32];

/// What a replacement ([`Authenticator::replace`]) took from callers.
#[derive(Debug, PartialEq)]
pub(crate) struct Lost {
    /// The static tokens gone or granted otherwise ([`ANYONE`] when a token became required).
    pub(crate) statics: HashSet<TokenDigest>,
    /// Whether the identity provider's callers lost their standing: its verifier was replaced
    /// or removed.
    pub(crate) provider: bool,
}

/// The static tokens (as digests) and the OAuth verifier of one endpoint.
pub(crate) struct Authenticator {
    tokens: RwLock<Arc<Vec<(TokenDigest, Grant)>>>,
    oauth: RwLock<Option<Arc<Verifier>>>,
    /// How many replacements took something from a caller.
    generation: AtomicU64,
}

/// The digest that callers are bound to when no token is required (anyone on loopback).
pub(crate) const ANYONE: TokenDigest = [0u8; 32];

impl Authenticator {
    pub(crate) fn new(tokens: impl IntoIterator<Item = (String, Grant)>, oauth: Option<Arc<Verifier>>) -> Self {
        Authenticator {
            tokens: RwLock::new(Arc::new(digests(tokens))),
            oauth: RwLock::new(oauth),
            generation: AtomicU64::new(0),
        }
    }

    fn tokens(&self) -> Arc<Vec<(TokenDigest, Grant)>> {
        self.tokens.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The identity provider's verifier, as it is now.
    pub(crate) fn verifier(&self) -> Option<Arc<Verifier>> {
        self.oauth.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether callers must present a token (and so are told apart).
    pub(crate) fn required(&self) -> bool {
        !self.tokens().is_empty() || self.has_oauth()
    }

    /// Whether `caller` is one of the static tokens (or anyone, when none is required): a
    /// caller a replacement can take something from.
    pub(crate) fn replaceable(&self, caller: &TokenDigest) -> bool {
        let tokens = self.tokens();
        match tokens.is_empty() && !self.has_oauth() {
            true => same(caller, &ANYONE),
            false => tokens.iter().any(|(d, _)| same(d, caller)),
        }
    }

    /// Whether an identity provider's tokens are accepted too.
    pub(crate) fn has_oauth(&self) -> bool {
        self.oauth.read().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Replaces the static tokens with `tokens` and the verifier with `oauth`, for the next
    /// request on; what that took: each token gone or granted otherwise, and [`ANYONE`] when a
    /// token becomes required; and, when `oauth` is not the verifier there was (its settings
    /// changed, or it went), every caller of the identity provider.
    pub(crate) fn replace(
        &self,
        tokens: impl IntoIterator<Item = (String, Grant)>,
        oauth: Option<Arc<Verifier>>,
    ) -> Lost {
        let new = digests(tokens);
        let open_before = !self.required();
        let old =
            std::mem::replace(&mut *self.tokens.write().unwrap_or_else(|p| p.into_inner()), Arc::new(new.clone()));
        let was = std::mem::replace(&mut *self.oauth.write().unwrap_or_else(|p| p.into_inner()), oauth.clone());
        let mut statics: HashSet<TokenDigest> =
            old.iter().filter(|(d, g)| !new.iter().any(|(n, h)| same(d, n) && g == h)).map(|(d, _)| *d).collect();
        if open_before && self.required() {
            statics.insert(ANYONE);
        }
        let provider = was.is_some_and(|w| !oauth.is_some_and(|o| Arc::ptr_eq(&w, &o)));
        if !statics.is_empty() || provider {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        Lost { statics, provider }
    }

    /// Changes with every replacement that took something from a caller: what a request
    /// authenticated before one opens is not kept.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The caller `authorization` names and its digest; `None` when no token is required
    /// (anyone on loopback); the answer to send instead when it is missing or refused.
    /// `statics`: whether the token is compared with the static tokens at all (not while its
    /// address is throttled, `crate::strikes`); the identity provider is asked either way.
    pub(crate) async fn authenticate(
        &self,
        authorization: Option<&str>,
        statics: bool,
    ) -> Result<Option<(TokenDigest, Caller)>, Response> {
        if !self.required() {
            return Ok(None);
        }
        let Some(token) = bearer(authorization) else { return Err(self.refuse(None)) };
        let found = if statics { self.static_grant(token) } else { None };
        if let Some((digest, grant)) = found {
            let caller =
                Caller { principal: Principal::with_scopes(grant.scopes), name: grant.name, identity: hex(&digest) };
            return Ok(Some((digest, caller)));
        }
        let Some(verifier) = self.verifier() else { return Err(self.refuse(None)) };
        match verifier.verify(token).await {
            Ok(v) => {
                let caller =
                    Caller { principal: Principal::with_scopes(v.scopes), name: v.name, identity: hex(&v.digest) };
                Ok(Some((v.digest, caller)))
            }
            Err(refusal) => Err(self.refuse(Some(&refusal))),
        }
    }

    /// The configured static token `token` is, with its digest.
    pub(crate) fn static_grant(&self, token: &str) -> Option<(TokenDigest, Grant)> {
        let presented = digest(token);
        let mut found = None;
        for (known, grant) in self.tokens().iter() {
            if same(known, &presented) {
                found = Some(grant.clone());
            }
        }
        found.map(|g| (presented, g))
    }

    /// 401 (no token, or a refused one), 403 (missing required scopes) or 503 (the identity
    /// provider could not be reached), with the challenge that leads a client to log in.
    fn refuse(&self, refusal: Option<&Refusal>) -> Response {
        let challenge = match self.verifier() {
            Some(v) => v.challenge(refusal),
            None => "Bearer".to_owned(),
        };
        let (status, text) = match refusal {
            None => (StatusCode::UNAUTHORIZED, "a valid bearer token is required".to_owned()),
            Some(Refusal::Invalid(why)) => (StatusCode::UNAUTHORIZED, format!("invalid token: {why}")),
            Some(Refusal::Insufficient(missing)) => {
                (StatusCode::FORBIDDEN, format!("insufficient scope: the token must carry {}", missing.join(" ")))
            }
            Some(Refusal::Unavailable(why)) => {
                (StatusCode::SERVICE_UNAVAILABLE, format!("cannot verify the token now: {why}"))
            }
        };
        let mut answer = (status, text).into_response();
        let value = HeaderValue::from_str(&challenge).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        answer.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
        }
        answer
    }
}

/// The token of an `Authorization: Bearer` header (the scheme in any case).
pub(crate) fn bearer(authorization: Option<&str>) -> Option<&str> {
    authorization
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty())
}

fn digests(tokens: impl IntoIterator<Item = (String, Grant)>) -> Vec<(TokenDigest, Grant)> {
    tokens.into_iter().map(|(t, grant)| (digest(&t), grant)).collect()
}

/// A static token's digest (SHA-256), as callers are known by.
pub(crate) fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

fn hex(digest: &TokenDigest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equal digests, compared in time that does not depend on where they differ.
pub(crate) fn same(a: &TokenDigest, b: &TokenDigest) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_tokens_match_exactly() {
        let grant = Grant::new("s3cret", vec!["a".to_owned()]);
        let auth = Authenticator::new([("s3cret".to_owned(), grant)], None);
        for ok in ["Bearer s3cret", "bearer s3cret", "BEARER  s3cret "] {
            let token = bearer(Some(ok)).unwrap();
            assert!(
                matches!(auth.static_grant(token), Some((_, g)) if g.scopes == ["a"] && g.name.starts_with("token-")),
                "{ok}"
            );
        }
        for bad in ["Bearer s3cre", "Bearer s3cret2"] {
            assert!(auth.static_grant(bearer(Some(bad)).unwrap()).is_none(), "{bad}");
        }
        for bad in ["Basic s3cret", "s3cret", "Bearer ", ""] {
            assert!(bearer(Some(bad)).is_none(), "{bad}");
        }
        assert!(bearer(None).is_none());
    }

    #[test]
    fn a_replacement_names_the_tokens_gone_or_granted_otherwise() {
        let grant = |name: &str, scopes: &[&str]| Grant {
            name: name.to_owned(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        };
        let auth = Authenticator::new([], None);
        assert!(!auth.required());
        let before = auth.generation();
        // Tokens where there were none: anyone who called without one loses it.
        let lost = auth.replace([("kept".to_owned(), grant("k", &["a"])), ("gone".to_owned(), grant("g", &[]))], None);
        assert_eq!(lost.statics, HashSet::from([ANYONE]));
        assert!(auth.required() && auth.generation() > before);
        let lost = auth.replace([("kept".to_owned(), grant("k", &["a"])), ("new".to_owned(), grant("n", &[]))], None);
        assert_eq!(lost.statics, HashSet::from([digest("gone")]));
        assert!(auth.static_grant("gone").is_none() && auth.static_grant("new").is_some());
        // Same token, other scopes (or another name): its callers lose what they held.
        let lost = auth.replace([("kept".to_owned(), grant("k", &["b"])), ("new".to_owned(), grant("n", &[]))], None);
        assert_eq!(lost.statics, HashSet::from([digest("kept")]));
        assert_eq!(auth.static_grant("kept").unwrap().1.scopes, ["b"]);
        // Nothing taken: the generation stays.
        let at = auth.generation();
        let lost = auth.replace([("kept".to_owned(), grant("k", &["b"])), ("new".to_owned(), grant("n", &[]))], None);
        assert!(lost.statics.is_empty() && !lost.provider);
        assert_eq!(auth.generation(), at);
    }

    #[test]
    fn a_verifier_replaced_or_removed_takes_every_identity_provider_callers_standing() {
        let settings: crate::oauth::OAuthSettings = serde_json::from_value(serde_json::json!({
            "resource": "https://gateway.example/mcp", "issuers": [{"issuer": "https://idp.example"}]
        }))
        .unwrap();
        let first = Verifier::new(settings.clone()).unwrap();
        let auth = Authenticator::new([], Some(first.clone()));
        assert!(auth.required() && auth.has_oauth());
        // The same verifier kept: nothing taken.
        let at = auth.generation();
        assert_eq!(auth.replace([], Some(first.clone())), Lost { statics: HashSet::new(), provider: false });
        assert_eq!(auth.generation(), at);
        // Another verifier (a reloaded config's, even with the same settings): every caller of
        // the one before loses what it held.
        let second = Verifier::new(settings).unwrap();
        assert!(auth.replace([], Some(second.clone())).provider);
        assert!(auth.generation() > at && Arc::ptr_eq(&auth.verifier().unwrap(), &second));
        // Removed, leaving no token at all: the provider's callers lose, and anyone may call.
        let at = auth.generation();
        assert!(auth.replace([], None).provider);
        assert!(!auth.required() && auth.verifier().is_none() && auth.generation() > at);
        // Added where anyone could call: anyone loses that.
        let lost = auth.replace([], Some(first));
        assert_eq!(lost, Lost { statics: HashSet::from([ANYONE]), provider: false });
    }
}
