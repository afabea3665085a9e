//! Raw input records, as written in a native manifest or a JSON Lines file, before
//! normalisation. Field names accept the aliases other formats use (`parameters`,
//! `input_schema`, `path`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::json::Json;
use crate::path::PathSpec;

/// A tool as written in input.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawTool {
    pub id: Option<String>,
    pub name: Option<String>,
    pub path: Option<PathSpec>,
    pub paths: Option<Vec<PathSpec>>,
    pub summary: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(alias = "parameters", alias = "input_schema")]
    pub args_schema: Option<Json>,
    #[serde(alias = "output_schema")]
    pub result_schema: Option<Json>,
    pub usage_notes: Option<String>,
    #[serde(default)]
    pub examples: Vec<String>,
    #[serde(default)]
    pub requires: Vec<String>,
    pub group: Option<String>,
    pub version: Option<String>,
    pub meta: Option<Json>,
    /// The name the input gave `args_schema` (`parameters`, `inputSchema`, ...), for messages.
    #[serde(skip)]
    pub args_field: Option<&'static str>,
    /// The name the input gave `result_schema`, for messages.
    #[serde(skip)]
    pub result_field: Option<&'static str>,
}

impl RawTool {
    /// Notes which names of the schema fields `record` (the tool as written) used, so that a
    /// message about a schema names the key the user wrote.
    pub(crate) fn note_schema_names(&mut self, record: &Value) {
        let written = |names: &[&'static str]| names.iter().copied().find(|k| record.get(k).is_some());
        self.args_field = written(&["args_schema", "parameters", "input_schema"]);
        self.result_field = written(&["result_schema", "output_schema"]);
    }
}

/// Fields a native manifest tool may carry (aliases included).
pub(crate) const TOOL_FIELDS: &[&str] = &[
    "id",
    "name",
    "path",
    "paths",
    "summary",
    "description",
    "tags",
    "args_schema",
    "parameters",
    "input_schema",
    "result_schema",
    "output_schema",
    "usage_notes",
    "examples",
    "requires",
    "group",
    "version",
    "meta",
];

/// A category node as written in input.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawNode {
    pub path: Option<PathSpec>,
    pub summary: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub usage_notes: Option<String>,
    pub facade: Option<Value>,
}

/// Fields a native manifest node may carry.
pub(crate) const NODE_FIELDS: &[&str] = &["path", "summary", "description", "tags", "usage_notes", "facade"];

/// A group as written in input.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawGroup {
    pub id: Option<String>,
    pub visibility: Option<String>,
    pub check: Option<String>,
    pub ttl_secs: Option<u64>,
    pub suggestion: Option<String>,
    pub pending: Option<RawPending>,
}

/// A group's `pending` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPending {
    pub prefix: Option<String>,
    #[serde(default)]
    pub requires: Vec<String>,
}

/// Fields a native manifest group may carry.
pub(crate) const GROUP_FIELDS: &[&str] = &["id", "visibility", "check", "ttl_secs", "suggestion", "pending"];

/// Top-level fields of a native manifest.
pub(crate) const MANIFEST_FIELDS: &[&str] = &["name", "description", "version", "nodes", "tools", "groups"];

/// The first key of `obj` that is not in `known`, if any.
pub(crate) fn unknown_field<'a>(obj: &'a Map<String, Value>, known: &[&str]) -> Option<&'a str> {
    obj.keys().map(String::as_str).find(|k| !known.contains(k))
}
