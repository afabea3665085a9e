//! Category paths, their string form, and the one rule for their syntax.
//!
//! The rule, enforced when a catalogue is loaded and when a request names a path:
//! - a path is a sequence of at most [`MAX_PATH_DEPTH`] segments; the empty path is the root;
//! - a segment is non-empty after trimming, at most [`MAX_SEGMENT_BYTES`] bytes, and holds no
//!   control character; it may hold `/` (`["Finance", "BIN/IIN Lookup"]`);
//! - the joined form separates segments with single `/`s, and writes a `/` inside a segment as
//!   `\/` and a `\` as `\\` (`"Finance/BIN\/IIN Lookup"`); one leading and one trailing
//!   separator are allowed (`"/Storage/"` is `Storage`), an empty segment (`"A//B"`, `"///"`)
//!   is not.
//!
//! So every path has exactly one display form ([`display_path`]), and every display form names
//! one path: a segment that holds `/` is reachable, and never looks like two.

use serde::{Deserialize, Serialize};

use crate::limits::{MAX_PATH_DEPTH, MAX_SEGMENT_BYTES};

/// A category path: segment names from the root, e.g. `["Coding", "Refactoring"]`.
/// The empty path is the root of the catalogue.
pub type CategoryPath = Vec<String>;

/// Why a written path breaks the path rule (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// More segments than [`MAX_PATH_DEPTH`].
    #[error("path is {0} levels deep, over the limit of {MAX_PATH_DEPTH}")]
    TooDeep(usize),
    /// A segment that is empty after trimming (`"A//B"`).
    #[error("a path segment is empty (write segments separated by single `/`)")]
    EmptySegment,
    /// A segment over [`MAX_SEGMENT_BYTES`] bytes.
    #[error("a path segment is over {MAX_SEGMENT_BYTES} bytes")]
    SegmentTooLong,
    /// A segment holding a control character.
    #[error("path segment {0:?} contains a control character")]
    ControlCharacter(String),
    /// A `\` followed by neither `/` nor `\` in a joined path.
    #[error("a `\\` in a path must be followed by `/` or `\\`")]
    BadEscape,
}

/// A path as written in input: either `"Coding/Refactoring"` or `["Coding", "Refactoring"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, expecting = "must be a path: a string (`A/B`) or a list of segments")]
pub enum PathSpec {
    /// Segments joined by `/`.
    Joined(String),
    /// Explicit segments.
    Segments(Vec<String>),
}

impl PathSpec {
    /// The segments, checked against the path rule (see the module documentation).
    pub fn parse(&self) -> Result<CategoryPath, PathError> {
        let segments: Vec<String> = match self {
            PathSpec::Joined(s) => {
                let s = s.trim();
                if s.is_empty() || s == "/" {
                    return Ok(Vec::new());
                }
                let s = s.strip_prefix('/').unwrap_or(s);
                let s = if s.ends_with('/') && !s.ends_with("\\/") { &s[..s.len() - 1] } else { s };
                split_joined(s)?
            }
            PathSpec::Segments(v) => v.clone(),
        };
        if segments.len() > MAX_PATH_DEPTH {
            return Err(PathError::TooDeep(segments.len()));
        }
        let mut out = Vec::with_capacity(segments.len());
        for seg in &segments {
            let seg = seg.trim();
            if seg.is_empty() {
                return Err(PathError::EmptySegment);
            }
            if seg.len() > MAX_SEGMENT_BYTES {
                return Err(PathError::SegmentTooLong);
            }
            if seg.chars().any(char::is_control) {
                return Err(PathError::ControlCharacter(seg.to_owned()));
            }
            out.push(seg.to_owned());
        }
        Ok(out)
    }

    /// The segments as written, trimmed, without checking the rule (for messages about a path
    /// that may be invalid).
    pub fn segments(&self) -> CategoryPath {
        match self {
            PathSpec::Joined(s) => split_joined(s.trim().trim_matches('/'))
                .unwrap_or_default()
                .into_iter()
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect(),
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

/// The display form of a path: segments joined by `/`, a `/` inside a segment written `\/`
/// and a `\` written `\\` (the root is the empty string).
pub fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for (i, seg) in path.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        for c in seg.chars() {
            if c == '/' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

/// Splits a joined path on unescaped `/`, undoing `\/` and `\\`.
fn split_joined(s: &str) -> Result<Vec<String>, PathError> {
    let mut out = vec![String::new()];
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('/' | '\\')) => out.last_mut().expect("one segment").push(e),
                _ => return Err(PathError::BadEscape),
            },
            '/' => out.push(String::new()),
            other => out.last_mut().expect("one segment").push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(s: &str) -> Result<CategoryPath, PathError> {
        PathSpec::Joined(s.into()).parse()
    }

    #[test]
    fn one_rule_for_path_syntax() {
        assert_eq!(joined("A/B").unwrap(), ["A", "B"]);
        assert_eq!(joined(" /A / B/ ").unwrap(), ["A", "B"]);
        assert!(joined("").unwrap().is_empty());
        assert!(joined("/").unwrap().is_empty());
        assert_eq!(joined("A//B").unwrap_err(), PathError::EmptySegment);
        assert!(joined(&"/".repeat(10_000)).is_err(), "a run of slashes is not the root");
        assert!(joined(&"A/".repeat(17)).unwrap_err().to_string().contains("levels deep"));
        assert!(matches!(joined("A/B\u{1b}[2J").unwrap_err(), PathError::ControlCharacter(_)));
        // A segment may hold `/`: its display form escapes it, and that form names it again.
        let one = PathSpec::Segments(vec!["Finance".into(), "BIN/IIN Lookup".into()]).parse().unwrap();
        assert_eq!(display_path(&one), "Finance/BIN\\/IIN Lookup");
        assert_eq!(joined(&display_path(&one)).unwrap(), one);
        assert_ne!(joined("Finance/BIN/IIN Lookup").unwrap(), one, "unescaped, it is three segments");
        assert_eq!(joined("a\\\\b/c").unwrap(), ["a\\b", "c"]);
        assert_eq!(joined("a\\b").unwrap_err(), PathError::BadEscape);
        assert!(PathSpec::Segments(vec!["A".into(), " ".into()]).parse().is_err());
        assert_eq!(PathSpec::Segments(vec!["A".into(), "B".into()]).parse().unwrap(), ["A", "B"]);
    }
}
