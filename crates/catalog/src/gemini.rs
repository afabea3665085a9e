//! Gemini function declarations: `{"tools": [{"functionDeclarations": [{name, description,
//! parameters}]}, {"googleSearch": {}}]}` (a whole `generateContent` request holds them so),
//! the bare list of such tool objects or one of them, or the Python SDK's snake_case dump
//! (`function_declarations`, `parameters_json_schema`).
//!
//! A declaration's `parameters` and `response` are Gemini's OpenAPI 3.0 subset: types in
//! capitals (`OBJECT`, `STRING`), `nullable`. They are read as the JSON Schema they mean, so
//! that calls are checked against them; `parametersJsonSchema` / `responseJsonSchema` are JSON
//! Schema already. Tool objects without declarations (`googleSearch`, `codeExecution`,
//! `urlContext`, ...) are provider-defined: left out with a warning.

use serde_json::{Map, Value};

/// The keys a tool object holds its declarations under (REST, Python SDK).
const DECLARATIONS: &[&str] = &["functionDeclarations", "function_declarations"];

/// The tool objects of a Gemini document, each with its pointer, when it is one: a list (bare
/// or under `tools`) in which some object holds function declarations, or one such object.
pub(crate) fn tool_objects(v: &Value) -> Option<Vec<(&Value, String)>> {
    if declarations_of(v).is_some() {
        return Some(vec![(v, String::new())]);
    }
    let (tools, at) = match v {
        Value::Array(a) => (a, ""),
        Value::Object(o) => (o.get("tools")?.as_array()?, "/tools"),
        _ => return None,
    };
    // Asked of every document a build reads: the pointers are made only for a Gemini one.
    if !tools.iter().any(|t| declarations_of(t).is_some()) {
        return None;
    }
    Some(tools.iter().enumerate().map(|(i, t)| (t, format!("{at}/{i}"))).collect())
}

/// The fields of a function declaration (REST and the Python SDK's dump).
const DECLARATION_FIELDS: &[&str] = &[
    "name",
    "description",
    "parameters",
    "parametersJsonSchema",
    "parameters_json_schema",
    "response",
    "responseJsonSchema",
    "response_json_schema",
    "behavior",
];

/// Whether `tools`, a bare list, is one of Gemini function declarations: each has a name and
/// only a declaration's fields, and some say they are Gemini's, by a field no OpenAI function
/// has (`parametersJsonSchema`, `response`, `behavior`, ...; the SDK's dump has them all, unset
/// ones null) or by types in capitals (`"type": "OBJECT"`). A list saying neither is OpenAI's
/// older `functions`, whose schemas are JSON Schema already.
pub(crate) fn is_declaration_list(tools: &[Value]) -> bool {
    let declaration = |t: &Value| {
        t.as_object().is_some_and(|o| {
            o.get("name").is_some_and(Value::is_string) && o.keys().all(|k| DECLARATION_FIELDS.contains(&k.as_str()))
        })
    };
    let gemini_only = |t: &Value| {
        let capitals = t["parameters"]["type"].as_str().is_some_and(|t| t.bytes().all(|b| b.is_ascii_uppercase()));
        capitals
            || t.as_object()
                .is_some_and(|o| o.keys().any(|k| !["name", "description", "parameters"].contains(&k.as_str())))
    };
    !tools.is_empty() && tools.iter().all(declaration) && tools.iter().any(gemini_only)
}

/// A tool object's declarations and the key they are under.
pub(crate) fn declarations_of(tool: &Value) -> Option<(&Vec<Value>, &'static str)> {
    DECLARATIONS.iter().find_map(|k| tool.get(*k).and_then(Value::as_array).map(|a| (a, *k)))
}

/// What a tool object provides besides declarations (`googleSearch`, `codeExecution`, ...):
/// its other keys with a value, each left out with a warning.
pub(crate) fn provided(tool: &Value) -> Vec<&str> {
    let Some(o) = tool.as_object() else { return Vec::new() };
    o.iter().filter(|(k, v)| !v.is_null() && !DECLARATIONS.contains(&k.as_str())).map(|(k, _)| k.as_str()).collect()
}

/// A declaration as an OpenAI function (`name`, `description`, `parameters`, `output_schema`
/// and any other field as is), its schemas as JSON Schema.
pub(crate) fn as_function(declaration: &Value) -> Value {
    let Some(o) = declaration.as_object() else { return declaration.clone() };
    let set = |keys: [&str; 2]| keys.iter().any(|k| o.get(*k).is_some_and(|v| !v.is_null()));
    let json_parameters = set(["parametersJsonSchema", "parameters_json_schema"]);
    let json_response = set(["responseJsonSchema", "response_json_schema"]);
    let mut f = Map::new();
    for (k, v) in o {
        let (key, value) = match k.as_str() {
            "parametersJsonSchema" | "parameters_json_schema" => ("parameters", v.clone()),
            "parameters" if !json_parameters => ("parameters", json_schema(v)),
            "responseJsonSchema" | "response_json_schema" => ("output_schema", v.clone()),
            "response" if !json_response => ("output_schema", json_schema(v)),
            "parameters" | "response" => continue,
            other => (other, v.clone()),
        };
        if !value.is_null() {
            f.insert(key.to_owned(), value);
        }
    }
    Value::Object(f)
}

/// Gemini's OpenAPI schema subset as JSON Schema: `type` in lower case (`TYPE_UNSPECIFIED`
/// dropped), `nullable: true` as a `"null"` type, snake_case keywords of the Python SDK in
/// camelCase, its `ref`/`defs` as `$ref`/`$defs` (`#/defs/Pet` as `#/$defs/Pet`), nulls (unset
/// fields of an SDK dump) dropped; through `properties`, `items`, `anyOf` and `defs`.
pub fn json_schema(schema: &Value) -> Value {
    let Some(o) = schema.as_object() else { return schema.clone() };
    let nullable = o.get("nullable").and_then(Value::as_bool) == Some(true);
    let mut out = Map::new();
    for (k, v) in o {
        if v.is_null() || k == "nullable" {
            continue;
        }
        let key = match camel(k).as_str() {
            "ref" => "$ref".to_owned(),
            "defs" => "$defs".to_owned(),
            other => other.to_owned(),
        };
        let value = match key.as_str() {
            "$ref" => match v.as_str().and_then(|r| r.strip_prefix("#/defs/")) {
                Some(name) => Value::String(format!("#/$defs/{name}")),
                None => v.clone(),
            },
            "type" => match v.as_str().map(str::to_ascii_lowercase) {
                Some(t) if t == "type_unspecified" => continue,
                Some(t) => Value::String(t),
                None => v.clone(),
            },
            "properties" | "$defs" => match v.as_object() {
                Some(p) => Value::Object(p.iter().map(|(name, s)| (name.clone(), json_schema(s))).collect()),
                None => v.clone(),
            },
            "items" => json_schema(v),
            "anyOf" => match v.as_array() {
                Some(a) => Value::Array(a.iter().map(json_schema).collect()),
                None => v.clone(),
            },
            _ => v.clone(),
        };
        out.insert(key, value);
    }
    if nullable {
        match out.get("type").cloned() {
            Some(Value::String(t)) if t != "null" => {
                out.insert("type".into(), Value::Array(vec![Value::String(t), "null".into()]));
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// A snake_case keyword of the Python SDK's dump (`any_of`, `max_items`) in camelCase.
fn camel(key: &str) -> String {
    if !key.contains('_') {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openapi_schemas_read_as_the_json_schema_they_mean() {
        let gemini = json!({"type": "OBJECT", "properties": {
            "city": {"type": "STRING", "nullable": true, "description": "A city."},
            "days": {"type": "ARRAY", "items": {"type": "INTEGER"}, "max_items": 7, "min_items": null},
            "unit": {"any_of": [{"type": "STRING", "enum": ["c", "f"]}, {"type": "TYPE_UNSPECIFIED"}]}},
            "required": ["city"], "property_ordering": ["city", "days"]});
        assert_eq!(
            json_schema(&gemini),
            json!({"type": "object", "properties": {
                "city": {"type": ["string", "null"], "description": "A city."},
                "days": {"type": "array", "items": {"type": "integer"}, "maxItems": 7},
                "unit": {"anyOf": [{"type": "string", "enum": ["c", "f"]}, {}]}},
                "required": ["city"], "propertyOrdering": ["city", "days"]})
        );
        // Property names are the author's, never rewritten.
        let named = json!({"type": "OBJECT", "properties": {"max_items": {"type": "STRING"}}});
        assert_eq!(json_schema(&named)["properties"]["max_items"], json!({"type": "string"}));
    }

    #[test]
    fn the_sdks_ref_and_defs_read_as_json_schemas_own() {
        let gemini = json!({"type": "OBJECT", "properties": {"pet": {"ref": "#/defs/Pet"}, "ref": {"type": "STRING"}},
            "defs": {"Pet": {"type": "OBJECT", "properties": {"name": {"type": "STRING"}}, "nullable": true}}});
        assert_eq!(
            json_schema(&gemini),
            json!({"type": "object", "properties": {"pet": {"$ref": "#/$defs/Pet"}, "ref": {"type": "string"}},
                "$defs": {"Pet": {"type": ["object", "null"], "properties": {"name": {"type": "string"}}}}})
        );
    }

    #[test]
    fn a_bare_list_is_gemini_s_when_a_field_or_a_capital_type_says_so() {
        let plain = json!([{"name": "f", "description": "F.", "parameters": {"type": "object"}}]);
        assert!(!is_declaration_list(plain.as_array().unwrap()), "OpenAI's older functions");
        for marked in [
            json!([{"name": "f", "parameters": {"type": "object"}, "response": null, "behavior": null}]),
            json!([{"name": "f", "parametersJsonSchema": {"type": "object"}}, {"name": "g"}]),
            json!([{"name": "f", "parameters": {"type": "OBJECT"}}]),
        ] {
            assert!(is_declaration_list(marked.as_array().unwrap()), "{marked}");
        }
        let native = json!([{"id": "f", "name": "f", "response": {}}]);
        assert!(!is_declaration_list(native.as_array().unwrap()), "a field no declaration has");
    }

    #[test]
    fn a_declaration_reads_as_a_function_its_json_schema_preferred() {
        let d = json!({"name": "f", "description": "F.", "parameters": {"type": "OBJECT"},
                       "parametersJsonSchema": {"type": "object", "additionalProperties": false},
                       "response": {"type": "STRING"}, "behavior": "NON_BLOCKING", "scheduling": null});
        assert_eq!(
            as_function(&d),
            json!({"name": "f", "description": "F.", "parameters": {"type": "object", "additionalProperties": false},
                   "output_schema": {"type": "string"}, "behavior": "NON_BLOCKING"})
        );
    }
}
