//! JSON Lines of tools, one object a line: the `../shared/bench` format
//! (`id, name, description, parameters, path, tags, meta`). Unknown fields are ignored, so
//! producers may add their own; blank lines are skipped.

use std::path::Path;

use serde_json::Value;

use crate::error::CatalogError;
use crate::manifest::RawTool;
use crate::normalize::{Origin, RawCatalog};

pub(crate) fn parse(file: &Path, text: &str) -> Result<RawCatalog, CatalogError> {
    let mut raw = RawCatalog::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            let mut err = CatalogError::from_json(file, &e);
            err.location = crate::Location::Line { line: n, column: e.column() };
            err
        })?;
        if !value.is_object() {
            return Err(CatalogError::line(file, n, 0, None, "each line must be a JSON object describing one tool"));
        }
        let tool: RawTool =
            serde_json::from_value(value).map_err(|e| CatalogError::line(file, n, 0, None, e.to_string()))?;
        raw.tools.push((Origin::Line(n), tool));
    }
    if raw.tools.is_empty() {
        return Err(CatalogError::file(file, "no tools: the file has no JSON object lines"));
    }
    Ok(raw)
}
