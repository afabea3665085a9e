//! What changed between two pinned definitions: their canonical JSON (what a pin's digest is
//! taken of), a diff a person can read (description lines, schema properties, annotations,
//! any other field), and whether a change widens what a limited caller may do.

use serde_json::Value;

/// What a tool's annotations let a limited caller do: `(read_only, not_destructive)`, as
/// `toolsearch_mcp`'s effects read them (pessimistic defaults).
fn permits(definition: &Value) -> (bool, bool) {
    let hint = |name: &str| definition.get("annotations").and_then(|a| a.get(name)).and_then(Value::as_bool);
    let read_only = hint("readOnlyHint") == Some(true);
    (read_only, read_only || hint("destructiveHint") == Some(false))
}

/// Whether `new` annotations let a `read-only` or `no-destructive` caller do more than `old`
/// did: such a change is never taken on trust, not even with `trust: "auto"`.
pub(crate) fn widens(old: &Value, new: &Value) -> bool {
    let (a, b) = (permits(old), permits(new));
    (b.0 && !a.0) || (b.1 && !a.1)
}

/// JSON with object keys sorted at every level (what the digest is taken of).
pub(crate) fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k]))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// What changed between two definitions: the description line by line, and each other field
/// that differs (schema properties added, removed or changed by name).
pub(crate) fn diff(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    for key in ["title", "description", "text"] {
        let (a, b) = (text(old, key), text(new, key));
        if a != b {
            let (al, bl): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
            for l in al.iter().filter(|l| !bl.contains(l)) {
                out.push(format!("- {key}: {l}"));
            }
            for l in bl.iter().filter(|l| !al.contains(l)) {
                out.push(format!("+ {key}: {l}"));
            }
        }
    }
    let (a, b) = (old.get("annotations").unwrap_or(&Value::Null), new.get("annotations").unwrap_or(&Value::Null));
    if canonical(a) != canonical(b) {
        let fields = |v: &Value| v.as_object().cloned().unwrap_or_default();
        let (fa, fb) = (fields(a), fields(b));
        for (name, value) in &fb {
            if fa.get(name) != Some(value) {
                out.push(format!("~ annotations.{name}: {value}"));
            }
        }
        for name in fa.keys().filter(|n| !fb.contains_key(*n)) {
            out.push(format!("- annotations.{name}"));
        }
    }
    for key in ["inputSchema", "outputSchema"] {
        let (a, b) = (old.get(key).cloned().unwrap_or(Value::Null), new.get(key).cloned().unwrap_or(Value::Null));
        if canonical(&a) == canonical(&b) {
            continue;
        }
        let props = |v: &Value| v.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let (pa, pb) = (props(&a), props(&b));
        let mut named = false;
        for (name, schema) in &pb {
            match pa.get(name) {
                None => out.push(format!("+ {key}.properties.{name}")),
                Some(s) if canonical(s) != canonical(schema) => {
                    out.push(format!("~ {key}.properties.{name}: {schema}"))
                }
                _ => continue,
            }
            named = true;
        }
        for name in pa.keys().filter(|n| !pb.contains_key(*n)) {
            out.push(format!("- {key}.properties.{name}"));
            named = true;
        }
        if !named {
            out.push(format!("~ {key}"));
        }
    }
    // Any other field that differs (a prompt's arguments, a template's fields), by name.
    let (fa, fb) = (old.as_object().cloned().unwrap_or_default(), new.as_object().cloned().unwrap_or_default());
    let shown = ["title", "description", "text", "annotations", "inputSchema", "outputSchema"];
    for key in fa.keys().chain(fb.keys().filter(|k| !fa.contains_key(*k))) {
        if !shown.contains(&key.as_str()) && fa.get(key) != fb.get(key) {
            out.push(format!("~ {key}: {}", fb.get(key).unwrap_or(&Value::Null)));
        }
    }
    out
}
