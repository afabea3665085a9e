//! Which JSON Schema dialect a schema is written in: its `$schema` when it names one, else the
//! forms it uses.

use serde_json::Value;

/// A JSON Schema dialect the validator understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Dialect {
    /// draft-03 (validated as draft-04 after its own forms are rewritten).
    #[serde(rename = "draft-03")]
    Draft3,
    /// draft-04.
    #[serde(rename = "draft-04")]
    Draft4,
    /// draft-06.
    #[serde(rename = "draft-06")]
    Draft6,
    /// draft-07.
    #[serde(rename = "draft-07")]
    Draft7,
    /// 2019-09.
    #[serde(rename = "2019-09")]
    Draft201909,
    /// 2020-12, also what a schema without `$schema` is validated as (older forms rewritten).
    #[serde(rename = "2020-12")]
    Draft202012,
}

impl Dialect {
    /// The dialect named by a `$schema` URI, matched loosely (`http` or `https`, with or
    /// without the trailing `#`); `None` for a URI that names none of them.
    pub fn from_uri(uri: &str) -> Option<Dialect> {
        let uri = uri.trim().trim_end_matches('#');
        let known = [
            ("draft-03", Dialect::Draft3),
            ("draft-04", Dialect::Draft4),
            ("draft-06", Dialect::Draft6),
            ("draft-07", Dialect::Draft7),
            ("2019-09", Dialect::Draft201909),
            ("2020-12", Dialect::Draft202012),
        ];
        let host = uri.strip_prefix("https://").or_else(|| uri.strip_prefix("http://"))?;
        if !host.starts_with("json-schema.org/") {
            return None;
        }
        known.iter().find(|(tag, _)| host.contains(tag)).map(|&(_, d)| d)
    }

    /// The dialect's name as people write it (`draft-04`, `2020-12`).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Draft3 => "draft-03",
            Dialect::Draft4 => "draft-04",
            Dialect::Draft6 => "draft-06",
            Dialect::Draft7 => "draft-07",
            Dialect::Draft201909 => "2019-09",
            Dialect::Draft202012 => "2020-12",
        }
    }

    pub(crate) fn engine_draft(self) -> jsonschema::Draft {
        match self {
            Dialect::Draft3 | Dialect::Draft4 => jsonschema::Draft::Draft4,
            Dialect::Draft6 => jsonschema::Draft::Draft6,
            Dialect::Draft7 => jsonschema::Draft::Draft7,
            Dialect::Draft201909 => jsonschema::Draft::Draft201909,
            Dialect::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }
}

/// How a schema declares its dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Declared {
    /// `$schema` names a dialect.
    Named(Dialect),
    /// No `$schema` (or one naming no known dialect): the forms decide.
    Unnamed,
}

/// What the root's `$schema` says.
pub(crate) fn declared(schema: &Value) -> Declared {
    match schema.get("$schema").and_then(Value::as_str).and_then(Dialect::from_uri) {
        Some(d) => Declared::Named(d),
        None => Declared::Unnamed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_matched_loosely() {
        assert_eq!(Dialect::from_uri("http://json-schema.org/draft-04/schema#"), Some(Dialect::Draft4));
        assert_eq!(Dialect::from_uri("https://json-schema.org/draft-07/schema"), Some(Dialect::Draft7));
        assert_eq!(Dialect::from_uri("https://json-schema.org/draft/2020-12/schema"), Some(Dialect::Draft202012));
        assert_eq!(Dialect::from_uri("https://json-schema.org/draft/2019-09/schema"), Some(Dialect::Draft201909));
        assert_eq!(Dialect::from_uri("http://json-schema.org/draft-03/schema#"), Some(Dialect::Draft3));
        assert_eq!(Dialect::from_uri("https://example.com/my-schema"), None);
    }
}
