//! A tool's details: the fields only expanding or calling one tool needs (description,
//! schemas, usage notes, examples, source metadata), held in one box apart from the fields
//! every answer reads, and the serde form of [`Tool`] that keeps them inline.
//!
//! An index keeps a lean copy of every tool in memory and reads the details from its records
//! when a tool is expanded. Held inline, the empty details took 120 of a lean tool's 312
//! bytes, written on every open for a million tools; boxed, a tool without details holds one
//! null pointer. A tool's JSON is unchanged: the details are read and written inline, in the
//! order they always had (content hashes depend on it).

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::json::Json;
use crate::model::Tool;
use crate::path::CategoryPath;

/// What a tool says beyond what its pointers show: read to expand or call it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolDetails {
    /// Full description.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub args_schema: Json,
    /// JSON Schema of the result, if declared.
    pub result_schema: Option<Json>,
    /// Guidance revealed with the full schema.
    pub usage_notes: Option<String>,
    /// Sample requests that should find this tool.
    pub examples: Vec<String>,
    /// Free-form metadata from the source, kept verbatim and never indexed.
    pub meta: Option<Json>,
}

/// Details no tool has: what an empty [`Details`] reads as.
static NO_DETAILS: ToolDetails = ToolDetails {
    description: String::new(),
    args_schema: Json::NULL,
    result_schema: None,
    usage_notes: None,
    examples: Vec::new(),
    meta: None,
};

/// A tool's [`ToolDetails`], boxed, or nothing when it has none (a lean tool's): reads as
/// empty details, and is boxed the first time it is written through.
///
/// Two are equal when their details are, boxed or not.
#[derive(Debug, Clone, Default)]
pub struct Details(Option<Box<ToolDetails>>);

impl Details {
    /// Whether details are held (false for a lean tool, even one written through since).
    pub fn is_held(&self) -> bool {
        self.0.is_some()
    }

    /// The details, unboxed (empty ones when none are held).
    pub fn into_inner(self) -> ToolDetails {
        self.0.map(|b| *b).unwrap_or_default()
    }
}

impl Deref for Details {
    type Target = ToolDetails;

    fn deref(&self) -> &ToolDetails {
        self.0.as_deref().unwrap_or(&NO_DETAILS)
    }
}

impl DerefMut for Details {
    /// The details, boxed first if none are held.
    fn deref_mut(&mut self) -> &mut ToolDetails {
        self.0.get_or_insert_with(Box::default)
    }
}

impl PartialEq for Details {
    fn eq(&self, other: &Details) -> bool {
        **self == **other
    }
}

impl From<ToolDetails> for Details {
    /// Held when any field is set; empty details take no box.
    fn from(details: ToolDetails) -> Details {
        Details((details != NO_DETAILS).then(|| Box::new(details)))
    }
}

/// A [`Tool`] as JSON has it, fields in their order: what a tool deserialises from.
#[derive(Deserialize)]
struct ToolWire {
    id: String,
    name: String,
    paths: Vec<CategoryPath>,
    summary: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    args_schema: Json,
    #[serde(default)]
    result_schema: Option<Json>,
    #[serde(default)]
    usage_notes: Option<String>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    meta: Option<Json>,
}

/// [`ToolWire`] borrowed from a [`Tool`]: what a tool serialises as.
#[derive(Serialize)]
struct ToolWireRef<'a> {
    id: &'a str,
    name: &'a str,
    paths: &'a [CategoryPath],
    summary: &'a str,
    description: &'a str,
    tags: &'a [String],
    args_schema: &'a Json,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_schema: Option<&'a Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_notes: Option<&'a str>,
    examples: &'a [String],
    requires: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Json>,
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = &*self.details;
        ToolWireRef {
            id: &self.id,
            name: &self.name,
            paths: &self.paths,
            summary: &self.summary,
            description: &d.description,
            tags: &self.tags,
            args_schema: &d.args_schema,
            result_schema: d.result_schema.as_ref(),
            usage_notes: d.usage_notes.as_deref(),
            examples: &d.examples,
            requires: &self.requires,
            group: self.group.as_deref(),
            version: self.version.as_deref(),
            meta: d.meta.as_ref(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tool, D::Error> {
        let w = ToolWire::deserialize(deserializer)?;
        let details = ToolDetails {
            description: w.description,
            args_schema: w.args_schema,
            result_schema: w.result_schema,
            usage_notes: w.usage_notes,
            examples: w.examples,
            meta: w.meta,
        };
        Ok(Tool {
            id: w.id,
            name: w.name,
            paths: w.paths,
            summary: w.summary,
            tags: w.tags,
            requires: w.requires,
            group: w.group,
            version: w.version,
            details: details.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_reads_and_writes_its_details_inline_in_their_old_order() {
        let text = r#"{"id":"a","name":"b","paths":[["x"]],"summary":"s","description":"d","tags":["t"],"args_schema":{"type":"object"},"result_schema":{"type":"string"},"usage_notes":"n","examples":["e"],"requires":["r"],"group":"g","version":"1","meta":{"k":1}}"#;
        let tool: Tool = serde_json::from_str(text).unwrap();
        assert!(tool.details.is_held());
        assert_eq!(tool.details.description, "d");
        assert_eq!(tool.details.args_schema, json!({"type": "object"}));
        assert_eq!(tool.details.usage_notes.as_deref(), Some("n"));
        assert_eq!(tool.details.examples, ["e"]);
        assert_eq!(serde_json::to_string(&tool).unwrap(), text);
        let bare = r#"{"id":"a","name":"b","paths":[[]],"summary":"s","description":"","tags":[],"args_schema":null,"examples":[],"requires":[]}"#;
        let tool: Tool = serde_json::from_str(bare).unwrap();
        assert!(!tool.details.is_held(), "empty details take no box");
        assert_eq!(serde_json::to_string(&tool).unwrap(), bare);
        assert!(serde_json::from_str::<Tool>(r#"{"id":"a","name":"b","paths":[],"summary":"s"}"#).is_err());
    }

    #[test]
    fn empty_details_read_as_empty_box_when_written_and_equal_either_way() {
        let mut lean = Tool::default();
        assert_eq!(lean.details.description, "");
        assert!(lean.details.args_schema.is_null() && lean.details.meta.is_none());
        let held = Tool { details: Details(Some(Box::default())), ..Tool::default() };
        assert_eq!(lean, held, "no details and empty details are equal");
        lean.details.description = "d".into();
        assert!(lean.details.is_held());
        assert_ne!(lean, held);
    }

    #[test]
    fn a_tool_without_details_holds_one_null_pointer_for_them() {
        assert_eq!(std::mem::size_of::<Details>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Tool>(), 8 * std::mem::size_of::<String>() + std::mem::size_of::<usize>());
    }
}
