//! JSON Schemas as real tools write them: every dialect MCP, OpenAI and OpenAPI tools use.
//!
//! A tool's schema is kept exactly as its author wrote it (that is what models read and what
//! upstream servers expect); a rewritten copy is compiled for validation. The dialect comes
//! from `$schema` when it names one (draft-03 to 2020-12); a schema without one may mix forms
//! of every draft and is validated as 2020-12 with the older forms rewritten to their modern
//! equivalents (`legacy.rs`), so old and new keywords both keep their meaning. OpenAPI 3.0's
//! `nullable` and draft-03's `"type": "any"` are understood in every dialect. Unknown keywords
//! and formats are annotations; patterns are ECMA-262 (lookarounds included).
//!
//! What still cannot be compiled (a remote `$ref`, which is never fetched; a pattern no engine
//! compiles; a keyword with a malformed value) does not refuse the tool: its
//! [`Validation`] is [`Validation::Off`], its calls are passed on unchecked, and the loader
//! warns, naming the tool and the JSON pointer. Only a schema that is neither an object nor a
//! boolean is not a schema at all.

mod dialect;
mod legacy;

use serde_json::Value;

pub use dialect::Dialect;

/// Whether calls to a tool are validated against its argument schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validation {
    /// Validated, under this dialect.
    On(Dialect),
    /// Not validated: the schema could not be compiled. Calls are passed on unchecked and the
    /// upstream decides.
    Off {
        /// JSON pointer into the schema (empty: the schema as a whole).
        at: String,
        /// Why, in words.
        reason: String,
    },
}

impl Validation {
    /// One line for people and for `expand_tool`: `on (draft-04)` or `off: REASON`.
    pub fn describe(&self) -> String {
        match self {
            Validation::On(d) => format!("on ({})", d.name()),
            Validation::Off { at, reason } if at.is_empty() => format!("off: {reason}"),
            Validation::Off { at, reason } => format!("off: {reason} (at {at})"),
        }
    }

    /// True when calls are checked.
    pub fn is_on(&self) -> bool {
        matches!(self, Validation::On(_))
    }
}

/// A compiled argument (or result) schema: checks instances when its [`Validation`] is on,
/// accepts everything when it is off.
pub struct SchemaValidator {
    compiled: Option<jsonschema::Validator>,
    validation: Validation,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator").field("validation", &self.validation).finish()
    }
}

impl SchemaValidator {
    /// Compiles `schema` in its dialect. Never fails: what cannot be compiled is
    /// [`Validation::Off`] with the reason.
    pub fn new(schema: &Value) -> SchemaValidator {
        let off =
            |at: String, reason: String| SchemaValidator { compiled: None, validation: Validation::Off { at, reason } };
        if let Err(what) = shape(schema) {
            return off(String::new(), what);
        }
        let (rewrites, dialect) = legacy::Rewrites::for_declared(&dialect::declared(schema));
        let mut copy = schema.clone();
        if let Err(at) = legacy::rewrite(&mut copy, rewrites) {
            return off(at, format!("the schema nests deeper than {} levels", legacy::MAX_DEPTH));
        }
        if let Value::Object(o) = &mut copy {
            // The dialect is set explicitly below; a `$schema` naming no known dialect must not
            // send the compiler looking for a meta-schema.
            o.remove("$schema");
        }
        match jsonschema::options().with_draft(dialect.engine_draft()).should_ignore_unknown_formats(true).build(&copy)
        {
            Ok(v) => SchemaValidator { compiled: Some(v), validation: Validation::On(dialect) },
            Err(e) => {
                let message = e.to_string();
                let mut at = e.instance_path().to_string();
                if at.is_empty() {
                    // Reference errors carry no location: the `$ref` the message names has one.
                    at = ref_named_in(schema, &message, String::new(), 0).unwrap_or_default();
                }
                off(at, reason(&message))
            }
        }
    }

    /// Whether (and how) instances are checked.
    pub fn validation(&self) -> &Validation {
        &self.validation
    }

    /// At most `max` problems of `instance`, each `POINTER: message` (`/` for the root); empty
    /// when it is valid or validation is off.
    pub fn problems(&self, instance: &Value, max: usize) -> Vec<String> {
        let Some(v) = &self.compiled else { return Vec::new() };
        v.iter_errors(instance)
            .take(max)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!("{}: {e}", if at.is_empty() { "/" } else { at.as_str() })
            })
            .collect()
    }
}

/// The pointer of the first `$ref` whose target `message` names.
fn ref_named_in(v: &Value, message: &str, at: String, depth: usize) -> Option<String> {
    if depth > legacy::MAX_DEPTH {
        return None;
    }
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                let target = r.trim_start_matches('#');
                if !target.is_empty() && message.contains(target) {
                    return Some(format!("{at}/$ref"));
                }
            }
            o.iter().find_map(|(k, sub)| ref_named_in(sub, message, format!("{at}/{}", escape(k)), depth + 1))
        }
        Value::Array(a) => {
            a.iter().enumerate().find_map(|(i, sub)| ref_named_in(sub, message, format!("{at}/{i}"), depth + 1))
        }
        _ => None,
    }
}

/// Refuses what is not a JSON Schema at all: anything but an object or a boolean.
pub(crate) fn shape(schema: &Value) -> Result<(), String> {
    match schema {
        Value::Bool(_) | Value::Object(_) => Ok(()),
        other => Err(format!("a JSON Schema must be an object or a boolean, found {}", kind(other))),
    }
}

/// The compiler's message, bounded and on one line.
fn reason(message: &str) -> String {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = line.chars().take(300).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    format!("the schema does not compile: {cut}")
}

pub(crate) fn kind(v: &Value) -> &'static str {
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
mod tests;
