//! Reading a catalogue from a file or a string, with format detection.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::CatalogError;
use crate::import::{self, Foreign};
use crate::limits::MAX_FILE_BYTES;
use crate::manifest::{unknown_field, GROUP_FIELDS, MANIFEST_FIELDS, NODE_FIELDS, TOOL_FIELDS};
use crate::model::Catalog;
use crate::normalize::{normalize, Origin, RawCatalog};
use crate::{jsonl, schema_check::escape};

/// An input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The native JSON manifest: `{nodes, tools, groups}`.
    Manifest,
    /// JSON Lines, one tool a line.
    Jsonl,
    /// MCP `tools/list` results: one server's, or a map of server name to result.
    Mcp,
    /// An OpenAI `tools` array (`{"type": "function", "function": {...}}`).
    OpenAi,
    /// Anthropic tool definitions (`{name, description, input_schema}`).
    Anthropic,
}

impl Format {
    /// Parses a format name as the CLI takes it (`manifest`, `jsonl`).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "manifest" | "json" => Some(Format::Manifest),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "mcp" => Some(Format::Mcp),
            "openai" => Some(Format::OpenAi),
            "anthropic" => Some(Format::Anthropic),
            _ => None,
        }
    }

    /// Picks JSON Lines or a JSON document from the file extension, then from the content. A
    /// JSON document's exact format (manifest, MCP, OpenAI, Anthropic) is decided from its
    /// shape by [`parse_str`] when no format is given.
    pub fn detect(file: &Path, text: &str) -> Format {
        match file.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("jsonl" | "ndjson") => Format::Jsonl,
            Some("json") => Format::Manifest,
            _ => {
                // A manifest is one document; JSON Lines has an object on each of several lines.
                let mut lines = text.lines().filter(|l| !l.trim().is_empty());
                let first = lines.next().unwrap_or("");
                let second = lines.next();
                let first_is_record =
                    first.trim_start().starts_with('{') && serde_json::from_str::<Value>(first).is_ok();
                if first_is_record && second.is_some() {
                    Format::Jsonl
                } else {
                    Format::Manifest
                }
            }
        }
    }
}

/// Reads and validates the catalogue in `file`; `format` of `None` detects it.
pub fn load_path(file: &Path, format: Option<Format>) -> Result<Catalog, CatalogError> {
    let meta = std::fs::metadata(file).map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(CatalogError::file(file, "is a directory, expected a catalogue file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(CatalogError::file(file, format!("is {} bytes, over the limit of {MAX_FILE_BYTES}", meta.len())));
    }
    let mut text = String::new();
    std::fs::File::open(file)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
    parse_str(file, &text, format)
}

/// Validates the catalogue in `text`, reporting errors against `file`.
pub fn parse_str(file: &Path, text: &str, format: Option<Format>) -> Result<Catalog, CatalogError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(CatalogError::file(file, "is empty"));
    }
    let raw = match format.unwrap_or_else(|| Format::detect(file, text)) {
        Format::Jsonl => jsonl::parse(file, text)?,
        document => {
            let value: Value = serde_json::from_str(text).map_err(|e| CatalogError::from_json(file, &e))?;
            let foreign = match (format, document) {
                (None, _) => import::detect(&value),
                (_, Format::Mcp) => Some(Foreign::Mcp),
                (_, Format::OpenAi) => Some(Foreign::OpenAi),
                (_, Format::Anthropic) => Some(Foreign::Anthropic),
                _ => None,
            };
            match foreign {
                Some(f) => import::import(file, &value, f)?,
                None => parse_manifest(file, value)?,
            }
        }
    };
    normalize(file, raw)
}

fn parse_manifest(file: &Path, value: Value) -> Result<RawCatalog, CatalogError> {
    let Value::Object(top) = value else {
        return Err(CatalogError::at(
            file,
            "",
            None,
            "a manifest must be a JSON object with `tools` (and optionally `nodes`, `groups`)",
        ));
    };
    if let Some(k) = unknown_field(&top, MANIFEST_FIELDS) {
        return Err(CatalogError::at(
            file,
            format!("/{}", escape(k)),
            Some(k),
            format!("unknown field; expected one of {MANIFEST_FIELDS:?}"),
        ));
    }
    let raw = RawCatalog {
        tools: records(file, &top, "tools", TOOL_FIELDS)?,
        nodes: records(file, &top, "nodes", NODE_FIELDS)?,
        groups: records(file, &top, "groups", GROUP_FIELDS)?,
    };
    if raw.tools.is_empty() {
        return Err(CatalogError::at(file, "/tools", Some("tools"), "a manifest needs at least one tool"));
    }
    Ok(raw)
}

/// Deserialises the array `top[key]` into records, each located by its JSON pointer.
fn records<T: DeserializeOwned>(
    file: &Path,
    top: &Map<String, Value>,
    key: &str,
    fields: &[&str],
) -> Result<Vec<(Origin, T)>, CatalogError> {
    let Some(v) = top.get(key) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err(CatalogError::at(file, format!("/{key}"), Some(key), "must be an array"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("/{key}/{i}");
        let Value::Object(obj) = item else {
            return Err(CatalogError::at(file, at, None, "must be an object"));
        };
        if let Some(k) = unknown_field(obj, fields) {
            return Err(CatalogError::at(
                file,
                format!("{at}/{}", escape(k)),
                Some(k),
                format!("unknown field; expected one of {fields:?}"),
            ));
        }
        let rec: T =
            serde_json::from_value(item.clone()).map_err(|e| CatalogError::at(file, &at, None, e.to_string()))?;
        out.push((Origin::Pointer(at), rec));
    }
    Ok(out)
}
