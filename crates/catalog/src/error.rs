//! Catalogue errors: each names the file, where in it, and the field at fault.

use std::fmt;
use std::path::PathBuf;

/// Where in an input file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (unreadable, empty, unknown format).
    File,
    /// A line and column (JSON syntax errors, JSON Lines records).
    Line {
        /// 1-based line number.
        line: usize,
        /// 1-based column, 0 when unknown.
        column: usize,
    },
    /// A JSON pointer (RFC 6901) to the offending value, e.g. `/tools/3/args_schema`.
    Pointer(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Line { line, column: 0 } => write!(f, ":{line}"),
            Location::Line { line, column } => write!(f, ":{line}:{column}"),
            Location::Pointer(p) if p.is_empty() => Ok(()), // the whole document
            Location::Pointer(p) => write!(f, " at {p}"),
        }
    }
}

/// A catalogue that cannot be loaded, with everything needed to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{location}: {}{message}", file.display(), field.as_deref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct CatalogError {
    /// The file being read (`<input>` for in-memory text).
    pub file: PathBuf,
    /// Where in the file.
    pub location: Location,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong, in words a user can act on.
    pub message: String,
}

impl CatalogError {
    /// An error about the file as a whole.
    pub fn file(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        CatalogError { file: file.into(), location: Location::File, field: None, message: message.into() }
    }

    /// An error at a JSON pointer, about one field.
    pub fn at(
        file: impl Into<PathBuf>,
        pointer: impl Into<String>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        CatalogError {
            file: file.into(),
            location: Location::Pointer(pointer.into()),
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    /// An error on a line (JSON Lines records, syntax errors).
    pub fn line(
        file: impl Into<PathBuf>,
        line: usize,
        column: usize,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        CatalogError {
            file: file.into(),
            location: Location::Line { line, column },
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    /// Turns a serde_json syntax or type error into a located error.
    pub(crate) fn from_json(file: &std::path::Path, err: &serde_json::Error) -> Self {
        let message = too_deep(strip_position(&err.to_string()));
        CatalogError::line(file, err.line(), err.column(), None, message)
    }
}

/// serde_json's message for JSON nested past what it reads (128 levels), said plainly; any
/// other message as it is.
pub fn too_deep(message: String) -> String {
    match message.strip_prefix("recursion limit exceeded") {
        Some(rest) => format!("nested more than 128 levels deep, the most read (flatten what nests here){rest}"),
        None => message,
    }
}

/// serde_json appends " at line L column C"; we report the position separately.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}
