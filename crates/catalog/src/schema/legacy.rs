//! Rewrites the forms of older drafts and of OpenAPI 3.0 into the equivalent forms of the
//! dialect a schema is validated under, keeping their meaning: a draft-04
//! `{"minimum": 0, "exclusiveMinimum": true}` becomes `{"exclusiveMinimum": 0}` and still
//! rejects 0. The schema shown to models and sent upstream is never changed; only the copy the
//! validator compiles is.

use serde_json::{Map, Value};

use super::dialect::{Declared, Dialect};

/// The deepest nesting of subschemas that is rewritten and validated.
pub(crate) const MAX_DEPTH: usize = 64;

/// Which rewrites apply, decided by the declared dialect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rewrites {
    /// draft-03: `required: true` on a property, `divisibleBy`, `extends`.
    draft3: bool,
    /// draft-04's boolean `exclusiveMinimum`/`exclusiveMaximum` as the later numeric form.
    bool_exclusive: bool,
    /// draft-04 to 2019-09's array `items` and `additionalItems` as `prefixItems` and `items`.
    tuple_items: bool,
    /// draft-04 to -07's `dependencies` as `dependentRequired` and `dependentSchemas`.
    dependencies: bool,
}

impl Rewrites {
    /// The rewrites for a declaration, and the dialect the result is validated under. A schema
    /// that names no dialect may mix the forms of every draft; it is validated as 2020-12 with
    /// all of them rewritten, so modern keywords keep their meaning beside the old ones.
    pub(crate) fn for_declared(declared: &Declared) -> (Rewrites, Dialect) {
        let all = Rewrites { draft3: true, bool_exclusive: true, tuple_items: true, dependencies: true };
        let none = Rewrites { draft3: false, bool_exclusive: false, tuple_items: false, dependencies: false };
        match declared {
            Declared::Unnamed => (all, Dialect::Draft202012),
            Declared::Named(d @ Dialect::Draft3) => (Rewrites { draft3: true, ..none }, *d),
            Declared::Named(d @ Dialect::Draft4) => (none, *d),
            Declared::Named(d @ (Dialect::Draft6 | Dialect::Draft7)) => (Rewrites { bool_exclusive: true, ..none }, *d),
            Declared::Named(d @ Dialect::Draft201909) => {
                (Rewrites { bool_exclusive: true, dependencies: true, ..none }, *d)
            }
            Declared::Named(d @ Dialect::Draft202012) => (Rewrites { draft3: false, ..all }, *d),
        }
    }
}

/// Rewrites `schema` in place; `Err` with the pointer where it nests deeper than [`MAX_DEPTH`].
pub(crate) fn rewrite(schema: &mut Value, r: Rewrites) -> Result<(), String> {
    walk(schema, r, String::new(), 0)
}

const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "definitions", "$defs", "dependentSchemas"];
const SCHEMA_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

fn walk(v: &mut Value, r: Rewrites, at: String, depth: usize) -> Result<(), String> {
    let Value::Object(o) = v else { return Ok(()) };
    if depth > MAX_DEPTH {
        return Err(at);
    }
    own_keywords(o, r);
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(m)) = o.get_mut(*key) {
            for (name, sub) in m.iter_mut() {
                walk(sub, r, format!("{at}/{key}/{}", super::escape(name)), depth + 1)?;
            }
        }
    }
    if let Some(Value::Object(m)) = o.get_mut("dependencies") {
        for (name, sub) in m.iter_mut() {
            walk(sub, r, format!("{at}/dependencies/{}", super::escape(name)), depth + 1)?;
        }
    }
    for key in SCHEMA_ONE.iter().chain(["items"].iter()) {
        if let Some(sub) = o.get_mut(*key) {
            if let Value::Array(list) = sub {
                for (i, s) in list.iter_mut().enumerate() {
                    walk(s, r, format!("{at}/{key}/{i}"), depth + 1)?;
                }
            } else {
                walk(sub, r, format!("{at}/{key}"), depth + 1)?;
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(list)) = o.get_mut(*key) {
            for (i, s) in list.iter_mut().enumerate() {
                walk(s, r, format!("{at}/{key}/{i}"), depth + 1)?;
            }
        }
    }
    Ok(())
}

/// The rewrites of one schema object's own keywords (not its subschemas').
fn own_keywords(o: &mut Map<String, Value>, r: Rewrites) {
    any_type(o);
    nullable(o);
    if r.draft3 {
        draft3(o);
    }
    if r.bool_exclusive {
        for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
            if let Some(Value::Bool(exclusive)) = o.get(flag).cloned() {
                o.remove(flag);
                if exclusive {
                    if let Some(limit) = o.remove(bound) {
                        o.insert(flag.into(), limit);
                    }
                }
            }
        }
    }
    if r.tuple_items {
        if let Some(Value::Array(_)) = o.get("items") {
            let tuple = o.remove("items").expect("present");
            o.insert("prefixItems".into(), tuple);
            if let Some(rest) = o.remove("additionalItems") {
                o.insert("items".into(), rest);
            }
        } else {
            // Beside a schema-valued (or absent) `items`, `additionalItems` has no effect.
            o.remove("additionalItems");
        }
    }
    if r.dependencies {
        if let Some(Value::Object(deps)) = o.get("dependencies").cloned() {
            o.remove("dependencies");
            for (name, dep) in deps {
                let key = if dep.is_array() { "dependentRequired" } else { "dependentSchemas" };
                let slot = o.entry(key).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = slot {
                    m.entry(name).or_insert(dep);
                }
            }
        }
    }
}

/// draft-03's `"type": "any"` (alone or in a list) is no constraint at all.
fn any_type(o: &mut Map<String, Value>) {
    let any = match o.get("type") {
        Some(Value::String(t)) => t == "any",
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some("any")),
        _ => false,
    };
    if any {
        o.remove("type");
    }
}

/// OpenAPI 3.0's `nullable: true`: the schema also accepts null.
fn nullable(o: &mut Map<String, Value>) {
    let Some(Value::Bool(yes)) = o.get("nullable").cloned() else { return };
    o.remove("nullable");
    if !yes {
        return;
    }
    match o.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            o.insert("type".into(), Value::Array(vec![Value::String(t), Value::String("null".into())]));
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| t.as_str() == Some("null")) => {
            ts.push(Value::String("null".into()))
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = o.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    if let Some(c) = o.remove("const") {
        o.insert("enum".into(), Value::Array(vec![c, Value::Null]));
    }
}

/// draft-03's forms: `required: true` on a property (a list on the parent since draft-04),
/// `divisibleBy` (`multipleOf`), `extends` (`allOf`).
fn draft3(o: &mut Map<String, Value>) {
    let mut required: Vec<String> = Vec::new();
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        for (name, p) in props.iter_mut() {
            if let Some(Value::Bool(req)) = p.get("required").cloned() {
                if let Value::Object(po) = p {
                    po.remove("required");
                }
                if req {
                    required.push(name.clone());
                }
            }
        }
    }
    if !required.is_empty() {
        let slot = o.entry("required").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = slot {
            for name in required {
                if !list.iter().any(|v| v.as_str() == Some(&name)) {
                    list.push(Value::String(name));
                }
            }
        }
    }
    if let Some(Value::Bool(_)) = o.get("required") {
        // A boolean `required` on a schema that is not a property's: draft-03 gave it no meaning.
        o.remove("required");
    }
    if let Some(d) = o.remove("divisibleBy") {
        o.entry("multipleOf").or_insert(d);
    }
    if let Some(e) = o.remove("extends") {
        let list = match e {
            Value::Array(list) => list,
            one => vec![one],
        };
        match o.get_mut("allOf") {
            Some(Value::Array(all)) => all.extend(list),
            _ => {
                o.insert("allOf".into(), Value::Array(list));
            }
        }
    }
}
