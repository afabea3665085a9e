//! From a verified token's claims to the gateway's view of the caller: its scopes (by the
//! issuer's [`ScopeRule`]) and its principal, issuer and subject.

use serde_json::{Map, Value};

use super::config::ScopeRule;

/// The values of the claim at `path` (dotted for nested objects): a space-separated string's
/// words, or an array's strings. Anything else has none.
pub(crate) fn claim_values(claims: &Map<String, Value>, path: &str) -> Vec<String> {
    let mut at = None;
    let mut map = Some(claims);
    for part in path.split('.') {
        at = map.and_then(|m| m.get(part));
        map = at.and_then(Value::as_object);
    }
    match at {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

impl ScopeRule {
    /// The gateway scopes `claims` grant: the claim's values, or what the map gives each
    /// (sorted, once each).
    pub(crate) fn scopes(&self, claims: &Map<String, Value>) -> Vec<String> {
        let values = claim_values(claims, &self.claim);
        let mut scopes: Vec<String> = match &self.map {
            None => values,
            Some(map) => values.iter().filter_map(|v| map.get(v)).flatten().cloned().collect(),
        };
        scopes.sort();
        scopes.dedup();
        scopes
    }
}

/// Longest subject or issuer kept in a caller's name; a longer one is cut (the identity digest
/// keeps all of it).
const NAME_CAP: usize = 200;

/// The name logs and the audit trail give the principal `subject` of `issuer`:
/// `subject@issuer`, control characters dropped, each part cut to a bound.
pub(crate) fn principal_name(issuer: &str, subject: &str) -> String {
    let clean = |s: &str| s.chars().filter(|c| !c.is_control()).take(NAME_CAP).collect::<String>();
    format!("{}@{}", clean(subject), clean(issuer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_scope_claim_is_split_on_spaces_and_arrays_are_taken_whole() {
        let rule = ScopeRule::default();
        assert_eq!(rule.scopes(&claims(json!({"scope": "b a  b"}))), ["a", "b"]);
        assert_eq!(
            ScopeRule { claim: "scp".into(), map: None }.scopes(&claims(json!({"scp": ["x", "y", 3]}))),
            ["x", "y"]
        );
        assert!(rule.scopes(&claims(json!({"scope": 7}))).is_empty());
        assert!(rule.scopes(&claims(json!({}))).is_empty());
    }

    #[test]
    fn a_map_grants_only_what_it_names_and_nested_claims_are_reached_by_dots() {
        let map = [("eng".to_owned(), vec!["github".to_owned(), "read-only".to_owned()])].into();
        let rule = ScopeRule { claim: "realm_access.roles".into(), map: Some(map) };
        let c = claims(json!({"realm_access": {"roles": ["eng", "admin"]}, "scope": "everything"}));
        assert_eq!(rule.scopes(&c), ["github", "read-only"]);
        assert!(rule.scopes(&claims(json!({"realm_access": "eng"}))).is_empty());
    }

    #[test]
    fn a_principal_name_carries_no_control_characters() {
        assert_eq!(
            principal_name("https://idp.example", "ada\n{\"forged\":1}"),
            "ada{\"forged\":1}@https://idp.example"
        );
        assert_eq!(principal_name("i", &"x".repeat(500)).len(), 202);
    }
}
