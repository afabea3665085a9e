//! Category paths, their string form, and the one rule for their syntax.
//!
//! The rule, enforced when a catalogue is loaded and when a request names a path:
//! - a path is a sequence of at most [`MAX_PATH_DEPTH`] segments; the empty path is the root;
//! - a segment is non-empty after trimming, at most [`MAX_SEGMENT_BYTES`] bytes, and holds no
//!   `/` and no control character;
//! - the joined form separates segments with single `/`s; one leading and one trailing `/`
//!   are allowed (`"/Storage/"` is `Storage`), an empty segment (`"A//B"`, `"///"`) is not.
//!
//! So every path has exactly one display form, and every display form names one path.

use serde::{Deserialize, Serialize};

use crate::limits::{MAX_PATH_DEPTH, MAX_SEGMENT_BYTES};

/// A category path: segment names from the root, e.g. `["Coding", "Refactoring"]`.
/// The empty path is the root of the catalogue.
pub type CategoryPath = Vec<String>;

/// A path as written in input: either `"Coding/Refactoring"` or `["Coding", "Refactoring"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PathSpec {
    /// Segments joined by `/`.
    Joined(String),
    /// Explicit segments.
    Segments(Vec<String>),
}

impl PathSpec {
    /// The segments, checked against the path rule (see the module documentation).
    pub fn parse(&self) -> Result<CategoryPath, String> {
        let segments: Vec<&str> = match self {
            PathSpec::Joined(s) => {
                let s = s.trim();
                if s.is_empty() || s == "/" {
                    return Ok(Vec::new());
                }
                let s = s.strip_prefix('/').unwrap_or(s);
                let s = s.strip_suffix('/').unwrap_or(s);
                s.split('/').collect()
            }
            PathSpec::Segments(v) => {
                if let Some(seg) = v.iter().find(|seg| seg.contains('/')) {
                    return Err(format!("path segment {seg:?} contains `/`, which separates segments"));
                }
                v.iter().map(String::as_str).collect()
            }
        };
        if segments.len() > MAX_PATH_DEPTH {
            return Err(format!("path is {} levels deep, over the limit of {MAX_PATH_DEPTH}", segments.len()));
        }
        let mut out = Vec::with_capacity(segments.len());
        for seg in segments {
            let seg = seg.trim();
            if seg.is_empty() {
                return Err("a path segment is empty (write segments separated by single `/`)".into());
            }
            if seg.len() > MAX_SEGMENT_BYTES {
                return Err(format!("a path segment is over {MAX_SEGMENT_BYTES} bytes"));
            }
            if seg.chars().any(char::is_control) {
                return Err(format!("path segment {seg:?} contains a control character"));
            }
            out.push(seg.to_owned());
        }
        Ok(out)
    }

    /// The segments as written, trimmed, without checking the rule (for messages about a path
    /// that may be invalid).
    pub fn segments(&self) -> CategoryPath {
        match self {
            PathSpec::Joined(s) => s.split('/').map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect(),
            PathSpec::Segments(v) => v.iter().map(|p| p.trim().to_owned()).collect(),
        }
    }

    /// The path as the caller wrote it, in joined form (for messages).
    pub fn as_written(&self) -> String {
        match self {
            PathSpec::Joined(s) => s.clone(),
            PathSpec::Segments(v) => v.join("/"),
        }
    }
}

/// The display form of a path: segments joined by `/` (the root is the empty string).
pub fn display_path(path: &[String]) -> String {
    path.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(s: &str) -> Result<CategoryPath, String> {
        PathSpec::Joined(s.into()).parse()
    }

    #[test]
    fn one_rule_for_path_syntax() {
        assert_eq!(joined("A/B").unwrap(), ["A", "B"]);
        assert_eq!(joined(" /A / B/ ").unwrap(), ["A", "B"]);
        assert!(joined("").unwrap().is_empty());
        assert!(joined("/").unwrap().is_empty());
        assert!(joined("A//B").unwrap_err().contains("empty"));
        assert!(joined(&"/".repeat(10_000)).is_err(), "a run of slashes is not the root");
        assert!(joined(&"A/".repeat(17)).unwrap_err().contains("levels deep"));
        assert!(joined("A/B\u{1b}[2J").unwrap_err().contains("control"));
        let one = PathSpec::Segments(vec!["A/B".into()]).parse().unwrap_err();
        assert!(one.contains("contains `/`"), "{one}");
        assert!(PathSpec::Segments(vec!["A".into(), " ".into()]).parse().is_err());
        assert_eq!(PathSpec::Segments(vec!["A".into(), "B".into()]).parse().unwrap(), ["A", "B"]);
    }
}
