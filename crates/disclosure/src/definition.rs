//! Tool definitions as a model sees them, and the names they are called by.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use toolsearch_catalog::MAX_NAME_CHARS;

/// One tool definition: a name the model calls, a description, and a JSON Schema for the input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The name the model calls (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
}

pub use toolsearch_catalog::sanitize_name;

/// An input schema for an object with these properties, `required` listing the mandatory ones.
pub(crate) fn object_schema(properties: Value, required: &[&str]) -> Value {
    serde_json::json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// `schema` as a tool input schema: object schemas pass unchanged; anything else (a catalogue
/// tool without arguments has `{}`) becomes an empty object schema.
pub(crate) fn input_schema(schema: &Value) -> Value {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => schema.clone(),
        _ if schema.get("properties").is_some() => {
            let mut s = schema.clone();
            s["type"] = Value::from("object");
            s
        }
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_for_every_api() {
        assert_eq!(sanitize_name("github.create_issue"), "github_create_issue");
        assert_eq!(sanitize_name("  Send e-mail!! "), "Send_e-mail");
        assert_eq!(sanitize_name("..."), "tool");
        assert_eq!(sanitize_name(&"x".repeat(100)).len(), MAX_NAME_CHARS);
        assert_eq!(sanitize_name("héllo wörld"), "h_llo_w_rld");
    }

    #[test]
    fn non_object_schemas_become_empty_objects() {
        assert_eq!(input_schema(&serde_json::json!({}))["type"], "object");
        let s = serde_json::json!({"properties": {"a": {"type": "string"}}});
        assert_eq!(input_schema(&s)["properties"]["a"]["type"], "string");
        assert_eq!(input_schema(&s)["type"], "object");
    }
}
