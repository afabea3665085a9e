//! `toolsearch.limits.rate` and `toolsearch.limits.rate_when_store_down`: the fleet's rate
//! rules, read out of the `limits` section before the rest of it (whose bounds are a plain
//! struct) and set on the rate limits (`toolsearch_mcp::rate`).

use serde_json::Value;
use toolsearch_mcp::plain_error;
use toolsearch_mcp::rate::{RateLimits, RateRule, WhenDown};

/// Takes the rate rules out of the `toolsearch` section `section` into `into`; an error names
/// the field at fault (`limits.rate[1].per_minute: ...`).
pub(crate) fn take_rules(section: Option<&mut Value>, into: &mut RateLimits) -> Result<(), String> {
    let Some(limits) = section.and_then(|s| s.get_mut("limits")).and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if let Some(rules) = limits.remove("rate") {
        let rules: Vec<RateRule> = serde_path_to_error::deserialize(rules).map_err(|e| {
            format!("toolsearch.limits.rate{}: {}", path(&e.path().to_string()), plain_error(e.inner()))
        })?;
        into.rules = rules;
    }
    if let Some(when) = limits.remove("rate_when_store_down") {
        into.when_store_down = serde_json::from_value::<WhenDown>(when)
            .map_err(|e| format!("toolsearch.limits.rate_when_store_down: {e} (use \"open\" or \"closed\")"))?;
    }
    Ok(())
}

fn path(p: &str) -> String {
    match p {
        "." => String::new(),
        p if p.starts_with('[') => p.to_owned(),
        p => format!(".{p}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_are_read_out_of_limits_and_a_bad_one_is_named() {
        let mut section = json!({"limits": {"rate": [{"principal": "*", "tool": "*", "per_minute": 600},
                                                     {"tool": "gh.create_issue", "per_minute": 10}],
                                            "rate_when_store_down": "closed", "max_result_bytes": 10}});
        let mut limits = RateLimits::default();
        take_rules(Some(&mut section), &mut limits).unwrap();
        assert_eq!(limits.rules.len(), 2);
        assert_eq!(limits.rules[1].principal, "*");
        assert_eq!(limits.when_store_down, WhenDown::Closed);
        assert_eq!(section, json!({"limits": {"max_result_bytes": 10}}), "the rest is left for the bounds");
        let mut bad = json!({"limits": {"rate": [{"per_minute": 5}, {"per_minute": "ten"}]}});
        let e = take_rules(Some(&mut bad), &mut RateLimits::default()).unwrap_err();
        assert!(e.starts_with("toolsearch.limits.rate[1].per_minute:"), "{e}");
    }
}
