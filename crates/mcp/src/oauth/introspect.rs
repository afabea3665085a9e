//! RFC 7662 introspection of opaque access tokens: asked of each issuer configured for it, in
//! order, with the gateway's client credentials; an active answer is kept (by the token's
//! SHA-256, never the token) until the token expires or [`KEEP_AT_MOST`] passes, in a cache of
//! at most [`CACHE_CAP`] entries. At most [`AT_ONCE`] introspections are in flight, so a flood
//! of made-up tokens waits its turn instead of flooding the identity provider.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::fetch::{FETCH_TIMEOUT, MAX_DOCUMENT};
use super::{Refusal, Verified, Verifier};

/// Longest an active answer is trusted without asking again.
const KEEP_AT_MOST: Duration = Duration::from_secs(300);
/// Most answers kept.
const CACHE_CAP: usize = 4096;
/// Most introspection requests in flight.
pub(crate) const AT_ONCE: usize = 4;

/// The kept answers, by token digest.
#[derive(Default)]
pub(crate) struct Introspected(std::sync::Mutex<HashMap<[u8; 32], (Verified, Instant)>>);

impl Verifier {
    /// Verifies the opaque `token` by introspection (see the module doc).
    pub(crate) async fn introspect(&self, token: &str) -> Result<Verified, Refusal> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(v) = self.introspected.get(&digest) {
            return Ok(v);
        }
        let mut asked = false;
        for (issuer, keys) in &self.issuers {
            let Some(settings) = &issuer.introspection else { continue };
            asked = true;
            let endpoint = match &settings.endpoint {
                Some(e) => e.clone(),
                None => match keys.endpoints().await.map(|e| e.introspection) {
                    Ok(Some(e)) => e,
                    Ok(None) => continue,
                    Err(_) => continue,
                },
            };
            if super::config::secure_url(&endpoint).is_err() {
                continue;
            }
            let _turn = self.introspecting.acquire().await.map_err(|_| Refusal::invalid("shutting down"))?;
            let request = self
                .client
                .post(&endpoint)
                .basic_auth(&settings.client_id, Some(&settings.client_secret))
                .form(&[("token", token), ("token_type_hint", "access_token")])
                .send();
            let answer = match tokio::time::timeout(FETCH_TIMEOUT, request).await {
                Ok(Ok(r)) if r.status().is_success() => {
                    let body = r.bytes().await.ok().filter(|b| b.len() <= MAX_DOCUMENT);
                    body.and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
                }
                _ => None,
            };
            let Some(mut claims) = answer else {
                return Err(Refusal::Unavailable(format!(
                    "the introspection endpoint of {} did not answer",
                    issuer.issuer
                )));
            };
            if claims.get("active") != Some(&Value::Bool(true)) {
                continue;
            }
            // An introspection answer is the issuer's word: its `iss`, when given, must agree.
            match claims.get("iss").and_then(Value::as_str) {
                Some(iss) if iss != issuer.issuer => continue,
                _ => {}
            }
            claims.insert("iss".into(), Value::String(issuer.issuer.clone()));
            // A client-credentials token has no user: its client is its subject.
            if claims.get("sub").and_then(Value::as_str).is_none_or(str::is_empty) {
                if let Some(client) = claims.get("client_id").cloned() {
                    claims.insert("sub".into(), client);
                }
            }
            let audience = self.settings.audience(issuer);
            let auds = super::claims::claim_values(&claims, "aud");
            if !auds.iter().any(|a| a == audience) {
                return Err(Refusal::invalid(format!("the token is for another audience, not {audience}")));
            }
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let exp = claims.get("exp").and_then(Value::as_u64);
            if exp.is_some_and(|e| e + self.settings.leeway_secs < now) {
                return Err(Refusal::invalid("the token has expired"));
            }
            let verified = self.verified(issuer, claims)?;
            let keep = exp.map_or(KEEP_AT_MOST, |e| Duration::from_secs(e.saturating_sub(now)).min(KEEP_AT_MOST));
            self.introspected.put(digest, verified.clone(), keep);
            return Ok(verified);
        }
        Err(Refusal::invalid(match asked {
            true => "the token is not active at any trusted issuer",
            false => "the token is not a JWT, and no issuer is configured for introspection",
        }))
    }
}

impl Introspected {
    fn get(&self, digest: &[u8; 32]) -> Option<Verified> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(digest).filter(|(_, until)| Instant::now() < *until).map(|(v, _)| v.clone())
    }

    fn put(&self, digest: [u8; 32], verified: Verified, keep: Duration) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= CACHE_CAP {
            let now = Instant::now();
            kept.retain(|_, (_, until)| now < *until);
            if kept.len() >= CACHE_CAP {
                kept.clear();
            }
        }
        kept.insert(digest, (verified, Instant::now() + keep));
    }
}
