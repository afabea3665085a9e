//! Facades: one tool standing for a group of inner tools, unfolded when the model calls it.
//!
//! A facade is built in code ([`Facade::new`] over tool ids and other facades) or from a
//! catalogue node whose manifest entry carries `facade` settings ([`Facade::for_node`]). The
//! model sees only the facade's short description; calling it reveals the inner tools, and
//! the facade's `usage_notes` are appended verbatim to that unfold message and nowhere else.

use serde_json::json;
use toolsearch_catalog::{CategoryPath, Node};

use crate::definition::{object_schema, sanitize_name, ToolDef};

/// Which inner tools a call reveals (the catalogue's `FacadeSelect`).
pub use toolsearch_catalog::FacadeSelect as Select;
pub use toolsearch_catalog::{is_discovery_name, DEFAULT_QUERY_LIMIT};

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

    /// The facade a manifest node declares in its `facade` settings (checked when the
    /// catalogue loaded), if any.
    pub fn for_node(node: &Node) -> Option<Facade> {
        let f = node.facade.as_ref()?;
        Some(Facade {
            name: f.name.clone(),
            purpose: node.summary.clone(),
            description: f.description.clone(),
            usage_notes: node.usage_notes.clone(),
            inner: Inner::Node(node.path.clone()),
            remove_on_invoke: f.remove_on_invoke,
            exclusive: f.exclusive,
            select: f.select,
            foldable: f.foldable,
        })
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

pub(crate) use toolsearch_catalog::fold_name;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn node(facade: Value) -> Node {
        let manifest = json!({"nodes": [{"path": "Coding/Git", "summary": "Version control.", "usage_notes": "Branch first.", "facade": facade}],
            "tools": [{"id": "t", "name": "t", "path": "Coding/Git"}]});
        let catalog =
            toolsearch_catalog::parse_str(std::path::Path::new("t.json"), &manifest.to_string(), None).unwrap();
        catalog.nodes.into_iter().find(|n| n.facade.is_some()).unwrap()
    }

    #[test]
    fn usage_notes_stay_out_of_the_definition() {
        let f = Facade::for_node(&node(json!({"select": "category"}))).unwrap();
        let def = f.definition(&["GitHub".into(), "GitLab".into()]);
        assert!(!serde_json::to_string(&def).unwrap().contains("Branch first"));
        assert_eq!(def.input_schema["properties"]["category"]["enum"], json!(["GitHub", "GitLab"]));
    }
}
