//! [`FacadeSettings`]: how a category node folds into one tool for the disclosure runtime,
//! parsed and checked when the catalogue loads, so no caller ever sees unusable settings.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CatalogError;
use crate::model::Node;
use crate::path::display_path;

/// Longest tool name every model API accepts.
pub const MAX_NAME_CHARS: usize = 64;

/// How many tools a `query` facade reveals when its settings name no `limit`.
pub const DEFAULT_QUERY_LIMIT: usize = 5;

/// Which inner tools unfolding a node facade reveals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "select")]
pub enum FacadeSelect {
    /// Every inner tool.
    #[default]
    All,
    /// Those of one child category, chosen by a `category` argument.
    Category,
    /// The `limit` best matches of a `query` argument.
    Query {
        /// How many tools to reveal (1 to 50).
        limit: usize,
    },
}

/// A node's `facade` settings, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FacadeSettings {
    /// The tool name the model calls (already a valid tool name).
    pub name: String,
    /// The one-line description the model sees before unfolding (never empty).
    pub description: String,
    /// Whether calling it replaces it with its contents.
    pub remove_on_invoke: bool,
    /// Whether, while unfolded, every tool but its own is hidden.
    pub exclusive: bool,
    /// Which inner tools a call reveals.
    #[serde(flatten)]
    pub select: FacadeSelect,
    /// Whether unfolding adds a `fold_<name>` tool.
    pub foldable: bool,
}

/// The settings as written in a manifest.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    name: Option<String>,
    description: Option<String>,
    remove_on_invoke: Option<bool>,
    exclusive: Option<bool>,
    select: Option<String>,
    limit: Option<usize>,
    foldable: Option<bool>,
}

/// A problem with one setting: the field (`facade.select`) and what is wrong.
pub(crate) type SettingError = (String, String);

impl FacadeSettings {
    /// Reads the `facade` value of the node at `path` with summary `summary`: `true` or `{}`
    /// for the defaults, `false` or absent for none. Settings: `name` (default: the path, e.g.
    /// `coding_git`), `description` (default: the summary), `remove_on_invoke` (true),
    /// `exclusive` (false), `select` (`all`, `category` or `query`), `limit` (query facades,
    /// default 5, at most 50), `foldable` (default: `exclusive`).
    pub(crate) fn parse(path: &[String], summary: &str, raw: &Value) -> Result<Option<FacadeSettings>, SettingError> {
        let bad = |field: &str, message: String| (field.to_owned(), message);
        let written: Written = match raw {
            Value::Bool(true) | Value::Null => Written::default(),
            Value::Bool(false) => return Ok(None),
            other => serde_json::from_value(other.clone()).map_err(|e| bad("facade", e.to_string()))?,
        };
        let select = match written.select.as_deref().map(str::trim) {
            None | Some("all") => FacadeSelect::All,
            Some("category") => FacadeSelect::Category,
            Some("query") => FacadeSelect::Query { limit: written.limit.unwrap_or(DEFAULT_QUERY_LIMIT) },
            Some(other) => return Err(bad("facade.select", format!("{other:?} is not one of all, category, query"))),
        };
        if written.limit.is_some() && !matches!(select, FacadeSelect::Query { .. }) {
            return Err(bad("facade.limit", "only a `query` facade takes a limit".into()));
        }
        if let FacadeSelect::Query { limit: 0 | 51.. } = select {
            return Err(bad("facade.limit", "must be between 1 and 50".into()));
        }
        let name = written.name.as_deref().map_or_else(|| sanitize_name(&path.join("_").to_lowercase()), sanitize_name);
        for n in [name.clone(), fold_name(&name)] {
            if is_discovery_name(&n) {
                return Err(bad("facade.name", format!("{n:?} is the name of a discovery tool; choose another name")));
            }
        }
        let description = written.description.unwrap_or_else(|| summary.to_owned()).trim().to_owned();
        if description.is_empty() {
            return Err(bad("facade.description", "the node has no summary; give the facade a description".into()));
        }
        let exclusive = written.exclusive.unwrap_or(false);
        Ok(Some(FacadeSettings {
            name,
            description,
            remove_on_invoke: written.remove_on_invoke.unwrap_or(true),
            exclusive,
            select,
            foldable: written.foldable.unwrap_or(exclusive),
        }))
    }
}

/// Checks that no two nodes (at different paths) give their facades the same name; the error
/// names both nodes. A path listed twice (the same node from two merged files) is one node.
pub(crate) fn check_unique_names<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    file: &Path,
) -> Result<(), CatalogError> {
    let mut by_name: HashMap<&str, String> = HashMap::new();
    for node in nodes {
        let Some(f) = &node.facade else { continue };
        let path = display_path(&node.path);
        if let Some(other) = by_name.insert(&f.name, path.clone()).filter(|other| *other != path) {
            return Err(CatalogError::file(
                file,
                format!(
                    "facade {path}: facade.name: {:?} is also the facade name of node {other:?}; facade names must be unique",
                    f.name
                ),
            ));
        }
    }
    Ok(())
}

/// `text` as a tool name every API accepts: characters outside `[A-Za-z0-9_-]` become `_`,
/// runs of `_` collapse, and the result is cut to [`MAX_NAME_CHARS`]. Empty input gives `tool`.
pub fn sanitize_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let trimmed: String = out.trim_matches('_').chars().take(MAX_NAME_CHARS).collect();
    if trimmed.is_empty() {
        "tool".to_owned()
    } else {
        trimmed
    }
}

/// The name of the tool that folds facade `name` back.
pub fn fold_name(name: &str) -> String {
    sanitize_name(&format!("fold_{name}"))
}

/// Whether `name` is, or may be, the name of a discovery tool (`search_tool_by_category`,
/// `search_nodes`, `list`, `expand_tool`, `call_tool`, `discover_<domain>_tools`), which a
/// facade must never shadow.
pub fn is_discovery_name(name: &str) -> bool {
    matches!(name, "search_tool_by_category" | "search_nodes" | "list" | "expand_tool" | "call_tool")
        || (name.starts_with("discover_") && name.ends_with("_tools"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Option<FacadeSettings>, SettingError> {
        FacadeSettings::parse(&["Coding".into(), "Git".into()], "Version control.", &v)
    }

    #[test]
    fn settings_are_read_with_defaults() {
        let f = parse(json!({})).unwrap().unwrap();
        assert_eq!(f.name, "coding_git");
        assert!(f.remove_on_invoke && !f.exclusive && !f.foldable);
        assert_eq!(f.select, FacadeSelect::All);
        let f = parse(json!({"select": "query", "limit": 3, "exclusive": true, "name": "git"})).unwrap().unwrap();
        assert_eq!((f.name.as_str(), f.select, f.foldable), ("git", FacadeSelect::Query { limit: 3 }, true));
        assert!(parse(json!(false)).unwrap().is_none());
    }

    #[test]
    fn bad_settings_name_the_field() {
        assert_eq!(parse(json!({"select": "some"})).unwrap_err().0, "facade.select");
        assert!(parse(json!({"exclusiv": true})).unwrap_err().1.contains("unknown field"));
        assert_eq!(parse(json!({"limit": 3})).unwrap_err().0, "facade.limit");
        assert_eq!(parse(json!({"name": "list"})).unwrap_err().0, "facade.name");
        assert_eq!(parse(json!({"select": "query", "limit": 51})).unwrap_err().0, "facade.limit");
    }
}
