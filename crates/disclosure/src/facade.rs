//! Facades: one tool standing for a group of inner tools, unfolded when the model calls it.
//!
//! A facade is built in code ([`Facade::new`] over tool ids and other facades) or from a
//! catalogue node whose manifest entry carries `facade` settings ([`Facade::for_node`]). The
//! model sees only the facade's short description; calling it reveals the inner tools, and
//! the facade's `usage_notes` are appended verbatim to that unfold message and nowhere else.

use serde::Deserialize;
use serde_json::{json, Value};
use toolsearch_catalog::{display_path, Catalog, CategoryPath, Node};

use crate::definition::{object_schema, sanitize_name, ToolDef};
use crate::error::DisclosureError;

/// How many tools a `query` facade reveals when its settings name no `limit`.
pub const DEFAULT_QUERY_LIMIT: usize = 5;

/// Which inner tools a call reveals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Select {
    /// Every inner tool.
    All,
    /// Those of one child category, named by a `category` argument from a fixed enum the
    /// facade advertises (node facades only).
    Category,
    /// The `limit` best matches of a free `query` argument, ranked by the engine inside the
    /// facade's category (or among its listed tools).
    Query {
        /// How many tools to reveal.
        limit: usize,
    },
}

/// One inner item of a hand-built facade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A catalogue tool, by id.
    Tool(String),
    /// Another facade, by its tool name (nesting).
    Facade(String),
}

/// What a facade stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    /// A catalogue category: its tools, its child categories' tools, and its child categories
    /// that are facades themselves (nested).
    Node(CategoryPath),
    /// An explicit list.
    Items(Vec<Item>),
}

/// A facade and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facade {
    /// The tool name the model calls.
    pub name: String,
    /// The one-line description the model sees before unfolding.
    pub description: String,
    /// The purpose the unfold message restates, so the revealed tools keep their context.
    pub purpose: String,
    /// Guidance appended verbatim to the unfold message, and shown nowhere else.
    pub usage_notes: Option<String>,
    /// What it stands for.
    pub inner: Inner,
    /// Whether calling it replaces it with its contents (default) or keeps it for another call.
    pub remove_on_invoke: bool,
    /// Whether, while unfolded, every tool but its own is hidden.
    pub exclusive: bool,
    /// Which inner tools a call reveals.
    pub select: Select,
    /// Whether unfolding also adds a `fold_<name>` tool that folds it back (default: only
    /// for exclusive facades, which would otherwise hide everything else until the interaction
    /// ends).
    pub foldable: bool,
}

/// `facade` settings in a manifest node.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    name: Option<String>,
    description: Option<String>,
    remove_on_invoke: Option<bool>,
    exclusive: Option<bool>,
    select: Option<String>,
    limit: Option<usize>,
    foldable: Option<bool>,
}

impl Facade {
    /// A facade over `items`, revealing all of them, removed when invoked.
    pub fn new(name: &str, description: &str, items: Vec<Item>) -> Facade {
        Facade {
            name: sanitize_name(name),
            description: description.trim().to_owned(),
            purpose: description.trim().to_owned(),
            usage_notes: None,
            inner: Inner::Items(items),
            remove_on_invoke: true,
            exclusive: false,
            select: Select::All,
            foldable: false,
        }
    }

    /// Sets `remove_on_invoke`.
    pub fn remove_on_invoke(mut self, on: bool) -> Facade {
        self.remove_on_invoke = on;
        self
    }

    /// Sets `exclusive` (and makes the facade foldable, as an exclusive facade must be).
    pub fn exclusive(mut self, on: bool) -> Facade {
        self.exclusive = on;
        self.foldable |= on;
        self
    }

    /// Sets how inner tools are selected.
    pub fn select(mut self, select: Select) -> Facade {
        self.select = select;
        self
    }

    /// Sets the usage notes revealed on unfold.
    pub fn usage_notes(mut self, notes: &str) -> Facade {
        self.usage_notes = Some(notes.to_owned());
        self
    }

    /// Sets whether a `fold_<name>` tool is offered while unfolded.
    pub fn foldable(mut self, on: bool) -> Facade {
        self.foldable = on;
        self
    }

    /// The facade a manifest node declares in its `facade` settings, if any. Settings:
    /// `name` (default: the path, e.g. `coding_git`), `description` (default: the node's
    /// summary), `remove_on_invoke` (true), `exclusive` (false), `select` (`all`, `category`
    /// or `query`), `limit` (query facades, default 5), `foldable` (default: `exclusive`).
    pub fn for_node(node: &Node) -> Result<Option<Facade>, DisclosureError> {
        let Some(raw) = &node.facade else { return Ok(None) };
        let path = display_path(&node.path);
        let bad = |field: &str, message: String| DisclosureError::Facade {
            facade: path.clone(),
            field: field.to_owned(),
            message,
        };
        let settings: Settings = match raw {
            Value::Bool(true) | Value::Null => Settings::default(),
            Value::Bool(false) => return Ok(None),
            other => serde_json::from_value(other.clone()).map_err(|e| bad("facade", e.to_string()))?,
        };
        let select = match settings.select.as_deref().map(str::trim) {
            None | Some("all") => Select::All,
            Some("category") => Select::Category,
            Some("query") => Select::Query { limit: settings.limit.unwrap_or(DEFAULT_QUERY_LIMIT) },
            Some(other) => return Err(bad("facade.select", format!("{other:?} is not one of all, category, query"))),
        };
        if settings.limit.is_some() && !matches!(select, Select::Query { .. }) {
            return Err(bad("facade.limit", "only a `query` facade takes a limit".into()));
        }
        if let Select::Query { limit: 0 | 51.. } = select {
            return Err(bad("facade.limit", "must be between 1 and 50".into()));
        }
        let name =
            settings.name.as_deref().map_or_else(|| sanitize_name(&node.path.join("_").to_lowercase()), sanitize_name);
        let description = settings.description.unwrap_or_else(|| node.summary.clone());
        if description.trim().is_empty() {
            return Err(bad("facade.description", "the node has no summary; give the facade a description".into()));
        }
        let exclusive = settings.exclusive.unwrap_or(false);
        Ok(Some(Facade {
            name,
            purpose: node.summary.clone(),
            description,
            usage_notes: node.usage_notes.clone(),
            inner: Inner::Node(node.path.clone()),
            remove_on_invoke: settings.remove_on_invoke.unwrap_or(true),
            exclusive,
            select,
            foldable: settings.foldable.unwrap_or(exclusive),
        }))
    }

    /// The definition the model sees. `categories` is the enum of a `category` facade.
    pub(crate) fn definition(&self, categories: &[String]) -> ToolDef {
        let (input_schema, how) = match &self.select {
            Select::All => (object_schema(json!({}), &[]), "Call it to reveal its tools.".to_owned()),
            Select::Category => (
                object_schema(
                    json!({"category": {"type": "string", "enum": categories, "description": "Which group of tools to reveal."}}),
                    &["category"],
                ),
                "Call it with a category to reveal that category's tools.".to_owned(),
            ),
            Select::Query { limit } => (
                object_schema(
                    json!({"query": {"type": "string", "description": "What you need to do, in a few words."}}),
                    &["query"],
                ),
                format!("Call it with what you need to do to reveal the {limit} best matching tools."),
            ),
        };
        ToolDef { name: self.name.clone(), description: format!("{} {how}", self.description), input_schema }
    }

    /// The definition of its `fold_<name>` tool.
    pub(crate) fn fold_definition(&self) -> ToolDef {
        ToolDef {
            name: fold_name(&self.name),
            description: format!("Fold the tools revealed by {} back into it when you are done with them.", self.name),
            input_schema: object_schema(json!({}), &[]),
        }
    }
}

/// Whether `name` is, or may be, the name of a discovery tool (`search_tool_by_category`,
/// `search_nodes`, `list`, `expand_tool`, `call_tool`, `discover_<domain>_tools`), which a
/// facade must never shadow.
pub fn is_discovery_name(name: &str) -> bool {
    matches!(name, "search_tool_by_category" | "search_nodes" | "list" | "expand_tool" | "call_tool")
        || (name.starts_with("discover_") && name.ends_with("_tools"))
}

/// Checks the facade settings of every node of `catalog` at index time: each must be usable,
/// no facade (nor its `fold_` tool) may take a discovery tool's name, and no two facades may
/// share a name. Errors name the nodes.
pub fn check_node_facades(catalog: &Catalog) -> Result<(), DisclosureError> {
    let mut by_name: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for node in &catalog.nodes {
        let Some(f) = Facade::for_node(node)? else { continue };
        let path = display_path(&node.path);
        for name in [f.name.clone(), fold_name(&f.name)] {
            if is_discovery_name(&name) {
                return Err(DisclosureError::Facade {
                    facade: path,
                    field: "facade.name".into(),
                    message: format!("{name:?} is the name of a discovery tool; choose another name"),
                });
            }
        }
        if let Some(other) = by_name.insert(f.name.clone(), path.clone()) {
            return Err(DisclosureError::Facade {
                facade: path,
                field: "facade.name".into(),
                message: format!("{:?} is also the facade name of node {other:?}; facade names must be unique", f.name),
            });
        }
    }
    Ok(())
}

/// The name of the tool that folds facade `name` back.
pub(crate) fn fold_name(name: &str) -> String {
    sanitize_name(&format!("fold_{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(facade: Value) -> Node {
        Node {
            path: vec!["Coding".into(), "Git".into()],
            summary: "Version control.".into(),
            usage_notes: Some("Branch first.".into()),
            facade: Some(facade),
            ..Node::default()
        }
    }

    #[test]
    fn manifest_settings_are_read_with_defaults() {
        let f = Facade::for_node(&node(json!({}))).unwrap().unwrap();
        assert_eq!(f.name, "coding_git");
        assert!(f.remove_on_invoke && !f.exclusive && !f.foldable);
        assert_eq!(f.select, Select::All);
        let f = Facade::for_node(&node(json!({"select": "query", "limit": 3, "exclusive": true, "name": "git"})))
            .unwrap()
            .unwrap();
        assert_eq!((f.name.as_str(), f.select.clone(), f.foldable), ("git", Select::Query { limit: 3 }, true));
        assert!(Facade::for_node(&node(json!(false))).unwrap().is_none());
    }

    #[test]
    fn bad_settings_name_the_node_and_field() {
        let e = Facade::for_node(&node(json!({"select": "some"}))).unwrap_err().to_string();
        assert!(e.contains("Coding/Git") && e.contains("facade.select"), "{e}");
        let e = Facade::for_node(&node(json!({"exclusiv": true}))).unwrap_err().to_string();
        assert!(e.contains("unknown field"), "{e}");
        let e = Facade::for_node(&node(json!({"limit": 3}))).unwrap_err().to_string();
        assert!(e.contains("facade.limit"), "{e}");
    }

    #[test]
    fn usage_notes_stay_out_of_the_definition() {
        let f = Facade::for_node(&node(json!({"select": "category"}))).unwrap().unwrap();
        let def = f.definition(&["GitHub".into(), "GitLab".into()]);
        assert!(!serde_json::to_string(&def).unwrap().contains("Branch first"));
        assert_eq!(def.input_schema["properties"]["category"]["enum"], json!(["GitHub", "GitLab"]));
    }
}
