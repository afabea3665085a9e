//! Schema checks at load time, so that no schema the index accepts fails later, when a tool is
//! called. First a structural check of the keywords the engine relies on, with a pointer to the
//! offending keyword (a schema that is not an object, `properties` that is not a map,
//! `required` naming an undeclared property, an unknown `type`); then the schema is compiled
//! with the same validator `call_tool` uses (bad `pattern` regexes, wrongly typed keywords,
//! dangling or remote `$ref`s are refused here).

use serde_json::Value;

const TYPES: &[&str] = &["object", "array", "string", "number", "integer", "boolean", "null"];

/// Checks `schema` and returns `(relative pointer, message)` for the first problem found.
pub(crate) fn check_schema(schema: &Value) -> Result<(), (String, String)> {
    check(schema, String::new(), 0)?;
    compile(schema)
}

/// Compiles `schema` as `call_tool` will; a schema that does not compile is refused with the
/// pointer of the keyword at fault when the validator names one.
fn compile(schema: &Value) -> Result<(), (String, String)> {
    match jsonschema::validator_for(schema) {
        Ok(_) => Ok(()),
        Err(e) => {
            let at = e.instance_path().to_string();
            Err((at, format!("does not compile: {e}")))
        }
    }
}

fn check(schema: &Value, at: String, depth: usize) -> Result<(), (String, String)> {
    if depth > 64 {
        return Err((at, "schema nests deeper than 64 levels".into()));
    }
    let obj = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(o) => o,
        other => return Err((at, format!("a JSON Schema must be an object or a boolean, found {}", kind(other)))),
    };
    if let Some(t) = obj.get("type") {
        let ok = match t {
            Value::String(s) => TYPES.contains(&s.as_str()),
            Value::Array(a) => a.iter().all(|v| v.as_str().is_some_and(|s| TYPES.contains(&s))),
            _ => false,
        };
        if !ok {
            return Err((
                format!("{at}/type"),
                format!("`type` must be one of {TYPES:?} or an array of them, found {t}"),
            ));
        }
    }
    if let Some(p) = obj.get("properties") {
        let Value::Object(props) = p else {
            return Err((format!("{at}/properties"), format!("`properties` must be an object, found {}", kind(p))));
        };
        for (name, sub) in props {
            check(sub, format!("{at}/properties/{}", escape(name)), depth + 1)?;
        }
    }
    if let Some(r) = obj.get("required") {
        let Value::Array(items) = r else {
            return Err((
                format!("{at}/required"),
                format!("`required` must be an array of strings, found {}", kind(r)),
            ));
        };
        if items.iter().any(|v| !v.is_string()) {
            return Err((format!("{at}/required"), "`required` must be an array of strings".into()));
        }
        if let Some(Value::Object(props)) = obj.get("properties") {
            let open = !matches!(obj.get("additionalProperties"), None | Some(Value::Bool(false)));
            let undeclared = items.iter().filter_map(Value::as_str).position(|r| !props.contains_key(r));
            if let (false, Some(i)) = (open, undeclared) {
                return Err((
                    format!("{at}/required/{i}"),
                    format!("`required` names {:?}, which `properties` does not declare", items[i]),
                ));
            }
        }
    }
    if let Some(items) = obj.get("items") {
        if !items.is_array() {
            check(items, format!("{at}/items"), depth + 1)?;
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(v) = obj.get(key) {
            let Value::Array(subs) = v else {
                return Err((format!("{at}/{key}"), format!("`{key}` must be an array of schemas")));
            };
            for (i, sub) in subs.iter().enumerate() {
                check(sub, format!("{at}/{key}/{i}"), depth + 1)?;
            }
        }
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Escapes a key for use in a JSON pointer (RFC 6901).
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_a_typical_object_schema() {
        let s = json!({"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer","null"]}},"required":["q"]});
        assert!(check_schema(&s).is_ok());
    }

    #[test]
    fn points_at_a_bad_nested_type() {
        let s = json!({"type":"object","properties":{"a/b":{"type":"strin"}}});
        let (at, msg) = check_schema(&s).unwrap_err();
        assert_eq!(at, "/properties/a~1b/type");
        assert!(msg.contains("strin"));
    }

    #[test]
    fn refuses_schemas_that_cannot_compile_with_a_pointer() {
        let cases = [
            (json!({"type":"object","properties":{"q":{"type":"string","pattern":"(unclosed"}}}), "pattern"),
            (json!({"type":"object","properties":{"n":{"type":"number","minimum":"abc"}}}), "minimum"),
            (json!({"type":"object","properties":{"x":{"$ref":"#/definitions/missing"}}}), "ref"),
            (json!({"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}), "ref"),
        ];
        for (schema, what) in cases {
            let (at, msg) = check_schema(&schema).expect_err(what);
            assert!(msg.contains("does not compile"), "{what}: {at} {msg}");
        }
        let (at, msg) = check_schema(&json!({"type":"object","properties":{"a":{}},"required":["a","b"]})).unwrap_err();
        assert_eq!(at, "/required/1");
        assert!(msg.contains("\"b\""), "{msg}");
        // Without `properties` (or with open additional properties) `required` may name anything.
        assert!(check_schema(&json!({"type":"object","required":["b"]})).is_ok());
    }

    #[test]
    fn rejects_non_object_schema() {
        assert!(check_schema(&json!("object")).is_err());
        assert!(check_schema(&json!({"properties": []})).is_err());
        assert!(check_schema(&json!({"required": "q"})).is_err());
    }
}
