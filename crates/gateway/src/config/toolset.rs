//! The gateway's `toolset` section read as changes to the gateway's own defaults: a partial
//! object changes only what it names, at any depth. So `{"discovery": {"limit": 5}}` keeps
//! `call_tool` on (the gateway's default, unlike `serve`'s), where reading it as a whole
//! [`ToolSetConfig`] would put back every default of the type, `call_tool: false` among them.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use toolsearch_disclosure::ToolSetConfig;
use toolsearch_mcp::plain_error;

/// The gateway's tool set when its config names none: `serve`'s, with `call_tool` offered
/// (clients that ignore `list_changed`, and session-free ones, call by id).
pub(crate) fn gateway_default() -> ToolSetConfig {
    let mut toolset = ToolSetConfig::default();
    toolset.discovery.call_tool = true;
    toolset
}

/// Reads a `toolset` object over [`gateway_default`]: objects merge key by key, anything
/// else (a number, a list) replaces what it names. An error names the field inside
/// `toolset` (`discovery.limit: invalid type ...`).
pub(crate) fn over_defaults<'de, D: Deserializer<'de>>(d: D) -> Result<ToolSetConfig, D::Error> {
    let given = Value::deserialize(d)?;
    if !given.is_object() {
        return Err(D::Error::custom("expected an object"));
    }
    let mut merged = serde_json::to_value(gateway_default()).map_err(D::Error::custom)?;
    merge(&mut merged, given);
    serde_path_to_error::deserialize(merged).map_err(|e| match e.path().to_string().as_str() {
        "." => D::Error::custom(plain_error(e.inner())),
        path => D::Error::custom(format!("{path}: {}", plain_error(e.inner()))),
    })
}

/// `patch` written over `base`: objects key by key, everything else replaced.
fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (k, v) in patch {
                match base.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        base.insert(k, v);
                    }
                }
            }
        }
        (base, patch) => *base = patch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Section {
        #[serde(deserialize_with = "over_defaults")]
        toolset: ToolSetConfig,
    }

    fn read(text: &str) -> Result<ToolSetConfig, String> {
        serde_json::from_str::<Section>(text).map(|s| s.toolset).map_err(|e| e.to_string())
    }

    #[test]
    fn a_partial_toolset_changes_only_what_it_names() {
        let t = read(r#"{"toolset": {"pinned": ["memory.search_nodes"], "discovery": {"limit": 3}}}"#).unwrap();
        assert!(t.discovery.call_tool, "call_tool stays on");
        assert_eq!(t.discovery.limit, 3);
        assert_eq!(t.pinned, ["memory.search_nodes"]);
        let default = gateway_default();
        assert_eq!(
            (t.discovery.detail, t.node_facades, t.max_depth),
            (default.discovery.detail, true, default.max_depth)
        );
        // Turned off only when said.
        assert!(!read(r#"{"toolset": {"discovery": {"call_tool": false}}}"#).unwrap().discovery.call_tool);
        assert!(read(r#"{"toolset": {}}"#).unwrap().discovery.call_tool);
    }

    #[test]
    fn a_bad_field_is_named_with_its_path_inside_the_toolset() {
        let e = read(r#"{"toolset": {"discovery": {"limit": "five"}}}"#).unwrap_err();
        assert!(e.contains("discovery.limit"), "{e}");
        let e = read(r#"{"toolset": {"discovery": {"nope": 1}}}"#).unwrap_err();
        assert!(e.contains("nope"), "{e}");
        assert!(read(r#"{"toolset": [1]}"#).unwrap_err().contains("expected an object"));
    }
}
