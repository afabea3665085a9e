//! Who a request's bearer token names: one of the config's static tokens, or, with
//! `auth.oauth`, a principal of a trusted identity provider ([`crate::oauth`]).
//!
//! Static tokens are never looked up by value: the presented token is hashed (SHA-256) and
//! compared with every configured token's digest in constant time, so neither a map's lookup
//! nor an early exit tells how close a guess was. Either way the caller is known by a digest
//! (its token's, or its principal's issuer and subject), and sessions and caps are bound to
//! that digest.
//!
//! The static tokens can be replaced while the endpoint runs (a reloaded config's,
//! [`Authenticator::replace`]): the next request meets the new ones, and the digests whose
//! grant went or changed are named so that what they opened can be ended.

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

/// The static tokens (as digests) and the OAuth verifier of one endpoint.
pub(crate) struct Authenticator {
    tokens: RwLock<Arc<Vec<(TokenDigest, Grant)>>>,
    oauth: Option<Arc<Verifier>>,
    /// How many replacements took something from a caller.
    generation: AtomicU64,
}

/// The digest that callers are bound to when no token is required (anyone on loopback).
pub(crate) const ANYONE: TokenDigest = [0u8; 32];

impl Authenticator {
    pub(crate) fn new(tokens: impl IntoIterator<Item = (String, Grant)>, oauth: Option<Arc<Verifier>>) -> Self {
        Authenticator { tokens: RwLock::new(Arc::new(digests(tokens))), oauth, generation: AtomicU64::new(0) }
    }

    fn tokens(&self) -> Arc<Vec<(TokenDigest, Grant)>> {
        self.tokens.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether callers must present a token (and so are told apart).
    pub(crate) fn required(&self) -> bool {
        !self.tokens().is_empty() || self.oauth.is_some()
    }

    /// Whether `caller` is one of the static tokens (or anyone, when none is required): a
    /// caller a replacement can take something from.
    pub(crate) fn replaceable(&self, caller: &TokenDigest) -> bool {
        let tokens = self.tokens();
        match tokens.is_empty() && self.oauth.is_none() {
            true => same(caller, &ANYONE),
            false => tokens.iter().any(|(d, _)| same(d, caller)),
        }
    }

    /// Whether an identity provider's tokens are accepted too.
    pub(crate) fn has_oauth(&self) -> bool {
        self.oauth.is_some()
    }

    /// Replaces the static tokens with `tokens`, for the next request on; the callers that lost
    /// what they held: each token gone or granted otherwise, and [`ANYONE`] when a token
    /// becomes required. A caller of the identity provider keeps what it holds.
    pub(crate) fn replace(&self, tokens: impl IntoIterator<Item = (String, Grant)>) -> HashSet<TokenDigest> {
        let new = digests(tokens);
        let open_before = !self.required();
        let old =
            std::mem::replace(&mut *self.tokens.write().unwrap_or_else(|p| p.into_inner()), Arc::new(new.clone()));
        let mut lost: HashSet<TokenDigest> =
            old.iter().filter(|(d, g)| !new.iter().any(|(n, h)| same(d, n) && g == h)).map(|(d, _)| *d).collect();
        if open_before && self.required() {
            lost.insert(ANYONE);
        }
        if !lost.is_empty() {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        lost
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
        let Some(verifier) = &self.oauth else { return Err(self.refuse(None)) };
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
        let challenge = match &self.oauth {
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
        let lost = auth.replace([("kept".to_owned(), grant("k", &["a"])), ("gone".to_owned(), grant("g", &[]))]);
        assert_eq!(lost, HashSet::from([ANYONE]));
        assert!(auth.required() && auth.generation() > before);
        let lost = auth.replace([("kept".to_owned(), grant("k", &["a"])), ("new".to_owned(), grant("n", &[]))]);
        assert_eq!(lost, HashSet::from([digest("gone")]));
        assert!(auth.static_grant("gone").is_none() && auth.static_grant("new").is_some());
        // Same token, other scopes (or another name): its callers lose what they held.
        let lost = auth.replace([("kept".to_owned(), grant("k", &["b"])), ("new".to_owned(), grant("n", &[]))]);
        assert_eq!(lost, HashSet::from([digest("kept")]));
        assert_eq!(auth.static_grant("kept").unwrap().1.scopes, ["b"]);
        // Nothing taken: the generation stays.
        let at = auth.generation();
        assert!(auth
            .replace([("kept".to_owned(), grant("k", &["b"])), ("new".to_owned(), grant("n", &[]))])
            .is_empty());
        assert_eq!(auth.generation(), at);
    }
}
