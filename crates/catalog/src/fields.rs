//! Where a raw record came from ([`Origin`]: a JSON pointer or a line), and the checks of its
//! fields: texts within their bounds, lists cleaned and bounded, schemas and metadata within
//! their limits, paths by the path rule. Each error names the file, the record and the field.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use crate::error::CatalogError;
use crate::json::Json;
use crate::limits::*;
use crate::path::{CategoryPath, PathSpec};
use crate::schema::{escape, shape};

/// Where a raw record came from, to locate errors about it.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// A JSON pointer to the record (native manifests and other single-document formats).
    Pointer(String),
    /// A line of a JSON Lines file.
    Line(usize),
}

impl Origin {
    pub(crate) fn error(&self, file: &Path, field: &str, message: impl Into<String>) -> CatalogError {
        match self {
            Origin::Pointer(p) => {
                let at = if field.is_empty() { p.clone() } else { format!("{p}/{field}") };
                let field = (!field.is_empty()).then_some(field.split('/').next().unwrap_or(field));
                CatalogError::at(file, at, field, message)
            }
            Origin::Line(l) => {
                let field = (!field.is_empty()).then_some(field);
                CatalogError::line(file, *l, 0, field, message)
            }
        }
    }

    /// Deserialises the record `value` found here. A field of the wrong type is named by its
    /// path: `tags[0]` on a line, `/tools/3/tags/0` in a document.
    pub(crate) fn record<T: DeserializeOwned>(&self, file: &Path, value: &Value) -> Result<T, CatalogError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let field = match self {
                Origin::Pointer(_) => e.path().iter().map(pointer_part).collect::<Vec<_>>().join("/"),
                Origin::Line(_) => e.path().to_string(),
            };
            self.error(file, if field == "." { "" } else { &field }, e.inner().to_string())
        })
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Origin::Pointer(p) => p.clone(),
            Origin::Line(l) => format!("line {l}"),
        }
    }

    /// Where a warning about `field` of this record is: `FILE at POINTER` or `FILE:LINE`.
    pub(crate) fn place(&self, file: &Path, field: &str) -> String {
        match self {
            Origin::Pointer(p) => format!("{} at {p}/{field}", file.display()),
            Origin::Line(l) => format!("{}:{l} ({field})", file.display()),
        }
    }
}

/// One step of a path into a record, as a JSON pointer writes it.
fn pointer_part(step: &Segment) -> String {
    match step {
        Segment::Seq { index } => index.to_string(),
        Segment::Map { key } => escape(key),
        Segment::Enum { variant } => escape(variant),
        Segment::Unknown => "?".into(),
    }
}

/// A schema that is a schema at all (an object or a boolean) and within the size limit; what
/// it says is checked by [`SchemaValidator`], which never refuses it.
pub(crate) fn checked_schema(file: &Path, origin: &Origin, field: &str, schema: Json) -> Result<Json, CatalogError> {
    if let Err(msg) = shape(&schema.value()) {
        return Err(origin.error(file, field, format!("invalid JSON Schema: {msg}")));
    }
    let size = schema.text().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(origin.error(file, field, format!("schema is {size} bytes, over the limit of {MAX_SCHEMA_BYTES}")));
    }
    Ok(schema)
}

pub(crate) fn checked_path(
    file: &Path,
    origin: &Origin,
    field: &str,
    spec: &PathSpec,
) -> Result<CategoryPath, CatalogError> {
    spec.parse().map_err(|e| origin.error(file, field, e.to_string()))
}

pub(crate) fn required_text(
    file: &Path,
    origin: &Origin,
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<String, CatalogError> {
    match optional_text(file, origin, field, value, max)? {
        Some(v) => Ok(v),
        None => Err(origin.error(file, field, "is missing or empty")),
    }
}

pub(crate) fn optional_text(
    file: &Path,
    origin: &Origin,
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, CatalogError> {
    let Some(v) = value else { return Ok(None) };
    let v = v.trim();
    if v.len() > max {
        return Err(origin.error(file, field, format!("is {} bytes, over the limit of {max}", v.len())));
    }
    Ok((!v.is_empty()).then(|| v.to_owned()))
}

/// A trimmed, de-duplicated list of at most `max_items` items of at most `max_bytes` each.
pub(crate) fn bounded_list(
    file: &Path,
    origin: &Origin,
    field: &str,
    items: Vec<String>,
    max_items: usize,
    max_bytes: usize,
) -> Result<Vec<String>, CatalogError> {
    if items.len() > max_items {
        return Err(origin.error(file, field, format!("has {} items, over the limit of {max_items}", items.len())));
    }
    if let Some((i, it)) = items.iter().enumerate().find(|(_, it)| it.len() > max_bytes) {
        return Err(origin.error(
            file,
            &format!("{field}/{i}"),
            format!("is {} bytes, over the limit of {max_bytes}", it.len()),
        ));
    }
    Ok(clean_list(items))
}

/// `meta` is kept verbatim but bounded: it is stored in the index and read on every open.
pub(crate) fn checked_meta(file: &Path, origin: &Origin, meta: Option<Json>) -> Result<Option<Json>, CatalogError> {
    let Some(meta) = meta else { return Ok(None) };
    let size = meta.text().len();
    if size > MAX_META_BYTES {
        return Err(origin.error(file, "meta", format!("is {size} bytes, over the limit of {MAX_META_BYTES}")));
    }
    Ok(Some(meta))
}

fn clean_list(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for it in items {
        let it = it.trim().to_owned();
        if !it.is_empty() && !out.contains(&it) {
            out.push(it);
        }
    }
    out
}
