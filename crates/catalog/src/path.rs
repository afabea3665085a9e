//! Category paths and their string form.

use serde::{Deserialize, Serialize};

/// A category path: segment names from the root, e.g. `["Coding", "Refactoring"]`.
/// The empty path is the root of the catalogue.
pub type CategoryPath = Vec<String>;

/// A path as written in input: either `"Coding/Refactoring"` or `["Coding", "Refactoring"]`.
/// The array form is the exact one; use it when a segment itself contains `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PathSpec {
    /// Segments joined by `/`.
    Joined(String),
    /// Explicit segments.
    Segments(Vec<String>),
}

impl PathSpec {
    /// The segments, splitting the joined form on `/` and trimming each segment.
    pub fn segments(&self) -> CategoryPath {
        match self {
            PathSpec::Joined(s) => s.split('/').map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect(),
            PathSpec::Segments(v) => v.iter().map(|p| p.trim().to_owned()).collect(),
        }
    }
}

/// The display form of a path: segments joined by `/` (the root is the empty string).
pub fn display_path(path: &[String]) -> String {
    path.join("/")
}
