//! Verifying a JWT access token: its header's algorithm against the allow-list, its issuer
//! against the trusted ones, its signature against that issuer's published keys, and its
//! `iss`, `aud`, `exp`, `nbf` and `sub` claims, with the configured clock skew.

use base64::Engine;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, decode_header, Algorithm, Validation};
use serde_json::{Map, Value};

use super::keys::KeyError;
use super::{Refusal, Verified, Verifier};

/// The algorithms accepted: asymmetric signatures only. `none` cannot be named (the header
/// does not parse), and HMAC is refused whatever key it claims, so a public key cannot be
/// used as an HMAC secret.
const ALLOWED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Whether `token` has a JWT's shape (three base64url parts), so that it is verified as one
/// rather than introspected.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3
        && parts[..2].iter().all(|p| !p.is_empty())
        && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// One base64url part of the token, as a JSON object (unverified).
fn part(token: &str, index: usize) -> Option<Map<String, Value>> {
    let raw = token.split('.').nth(index)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(raw.trim_end_matches('=')).ok()?;
    serde_json::from_slice::<Value>(&bytes).ok()?.as_object().cloned()
}

impl Verifier {
    /// Verifies the JWT `token` (see the module doc).
    pub(crate) async fn verify_jwt(&self, token: &str) -> Result<Verified, Refusal> {
        let named_alg = part(token, 0).and_then(|h| h.get("alg").and_then(Value::as_str).map(str::to_owned));
        if named_alg.as_deref().is_some_and(|a| a.eq_ignore_ascii_case("none")) {
            return Err(Refusal::invalid("unsigned tokens (alg none) are refused"));
        }
        let header =
            decode_header(token).map_err(|_| Refusal::invalid("the token is not a JWT this gateway can read"))?;
        if !ALLOWED.contains(&header.alg) {
            return Err(Refusal::invalid(format!(
                "tokens signed with {:?} are refused: only RS*, PS*, ES256, ES384 and EdDSA signatures are accepted",
                header.alg
            )));
        }
        let claims = part(token, 1).ok_or_else(|| Refusal::invalid("the token's claims are not a JSON object"))?;
        let iss = claims.get("iss").and_then(Value::as_str).unwrap_or_default();
        let Some((issuer, keys)) = self.issuers.iter().find(|(s, _)| s.issuer == iss) else {
            return Err(Refusal::invalid("the token's issuer is not one this gateway trusts"));
        };
        let key = keys.key(header.kid.as_deref()).await.map_err(|e| match e {
            KeyError::UnknownKey => Refusal::invalid("the token is signed by a key its issuer does not publish"),
            KeyError::Metadata(m) | KeyError::Keys(m) => {
                Refusal::Unavailable(format!("the signing keys of {} could not be read: {m}", issuer.issuer))
            }
        })?;
        if key.alg.is_some_and(|a| a != header.alg) {
            return Err(Refusal::invalid("the token's alg is not the one its key is published for"));
        }
        let audience = self.settings.audience(issuer);
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.settings.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[&issuer.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = decode::<Map<String, Value>>(token, &key.decoding, &validation).map_err(|e| {
            Refusal::invalid(match e.kind() {
                ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
                ErrorKind::InvalidAudience => format!("the token is for another audience, not {audience}"),
                ErrorKind::InvalidIssuer => "the token's issuer is not one this gateway trusts".to_owned(),
                ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
                ErrorKind::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
                ErrorKind::InvalidAlgorithm => "the token's alg does not fit its key".to_owned(),
                _ => "the token could not be verified".to_owned(),
            })
        })?;
        self.verified(issuer, data.claims)
    }
}
