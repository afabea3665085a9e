//! [`Json`]: a JSON value kept as its compact text.
//!
//! Schemas and source metadata are read rarely (to expand or call one tool) but a catalogue
//! holds one per tool, and a parsed `serde_json::Value` tree costs about nine times its text in
//! memory (every object is a B-tree node sized for eleven entries). Kept as text, a 100k-tool
//! catalogue loads in ~150 MB instead of ~390 MB; a caller that needs the tree parses it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON value stored as its compact text, written as `serde_json::Value` writes it (keys
/// sorted, no whitespace), so equal values have equal text and serialise to the same bytes as
/// the `Value` would.
///
/// `null` takes no allocation: a catalogue's lean copy of every tool (the one an index keeps in
/// memory) leaves the schemas out as `null`, and a million boxed `null`s cost 32 MB.
#[derive(Clone)]
pub struct Json(Option<Box<RawValue>>);

/// `null` as a raw value, borrowed from static text (so it is never allocated).
fn null_raw() -> &'static RawValue {
    static NULL: std::sync::OnceLock<&'static RawValue> = std::sync::OnceLock::new();
    NULL.get_or_init(|| serde_json::from_str("null").expect("null is JSON"))
}

impl Json {
    /// `null`, unallocated.
    pub const NULL: Json = Json(None);

    /// The value's canonical text.
    pub fn new(value: &Value) -> Json {
        // Serialising a `Value` cannot fail (its keys are strings) and yields valid JSON.
        if value.is_null() {
            return Json(None);
        }
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        Json(RawValue::from_string(text).ok())
    }

    /// The parsed value.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.text()).unwrap_or(Value::Null)
    }

    /// The compact text.
    pub fn text(&self) -> &str {
        self.0.as_deref().unwrap_or(null_raw()).get()
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        self.text() == "null"
    }

    /// The member `key` of an object value, parsed (`None` for another kind of value).
    pub fn get(&self, key: &str) -> Option<Value> {
        match self.value() {
            Value::Object(mut map) => map.remove(key),
            _ => None,
        }
    }
}

impl Default for Json {
    /// `null`.
    fn default() -> Json {
        Json(None)
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Json {
        Json::new(&value)
    }
}

impl From<&Value> for Json {
    fn from(value: &Value) -> Json {
        Json::new(value)
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.text() == other.text()
    }
}

impl PartialEq<Value> for Json {
    fn eq(&self, other: &Value) -> bool {
        self.value() == *other
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for Json {
    /// The text as it is (to JSON; other formats see the value).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.as_deref().unwrap_or(null_raw()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    /// Any JSON value, made canonical.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        Value::deserialize(deserializer).map(|v| Json::new(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_canonical_and_serialises_like_the_value() {
        let v: Value = serde_json::from_str(r#"{ "b": [1, {"y": 2, "x": null}], "a": "s" }"#).unwrap();
        let j = Json::new(&v);
        assert_eq!(j.text(), r#"{"a":"s","b":[1,{"x":null,"y":2}]}"#);
        assert_eq!(serde_json::to_string(&j).unwrap(), serde_json::to_string(&v).unwrap());
        let back: Json = serde_json::from_str(r#"{"a": "s", "b": [1, {"x": null, "y": 2}]}"#).unwrap();
        assert_eq!(back, j);
        assert_eq!(j.value(), v);
        assert_eq!(j.get("a"), Some(json!("s")));
        assert!(Json::default().is_null() && !j.is_null());
        let null = Json::new(&Value::Null);
        assert!(null.is_null() && null == Json::default() && null.value() == Value::Null);
        assert_eq!(serde_json::to_string(&null).unwrap(), "null");
        let back: Json = serde_json::from_str("null").unwrap();
        assert_eq!(back.text(), "null");
    }
}
