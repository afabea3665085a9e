//! The names catalogue tools are called by, and the clashes found while choosing them.
//!
//! A tool is called by its `name` (sanitised for every API). Names must be unique within a
//! tool set, yet catalogues merged from several servers or groups repeat them (`status`,
//! `search`): every tool of a clashing name, and any tool whose name is taken by a discovery
//! tool or facade, is called by its sanitised id instead, and the clash is reported.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use toolsearch_catalog::Catalog;

use crate::definition::sanitize_name;

/// A problem found in the catalogue or configuration that the tool set worked around.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Diagnostic {
    /// Several tools (possibly from different groups) share a name, or a tool's name is taken
    /// by a discovery tool or facade.
    DuplicateName {
        /// The shared name.
        name: String,
        /// The tools involved: id, group, and the name each is called by now.
        tools: Vec<NamedTool>,
        /// Whether a discovery tool or facade holds the name.
        reserved: bool,
    },
}

/// One tool in a [`Diagnostic`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedTool {
    /// Catalogue id.
    pub id: String,
    /// Availability group, if any.
    pub group: Option<String>,
    /// The name it is called by in this tool set.
    pub called: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Diagnostic::DuplicateName { name, tools, reserved } => {
                let list: Vec<String> = tools
                    .iter()
                    .map(|t| match &t.group {
                        Some(g) => format!("{} (group {g}) as {}", t.id, t.called),
                        None => format!("{} as {}", t.id, t.called),
                    })
                    .collect();
                let taken = if *reserved { " and by a discovery tool or facade" } else { "" };
                write!(f, "tool name {name:?} is used by {} tools{taken}; shown as: {}", tools.len(), list.join(", "))
            }
        }
    }
}

/// Tool id <-> name, for one catalogue generation.
#[derive(Debug, Default)]
pub(crate) struct Names {
    by_id: HashMap<String, String>,
    by_name: HashMap<String, String>,
}

impl Names {
    /// Names for every tool of `catalog` that `include` accepts, avoiding `reserved`; the
    /// others neither get a name nor take one.
    pub(crate) fn assign(
        catalog: &Catalog,
        reserved: &HashSet<String>,
        included: impl Iterator<Item = usize>,
    ) -> (Names, Vec<Diagnostic>) {
        let mut by_base: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for i in included {
            by_base.entry(sanitize_name(&catalog.tools[i].name)).or_default().push(i);
        }
        let mut names = Names::default();
        let mut used: HashSet<String> = reserved.clone();
        let mut clashing = Vec::new();
        for (base, tools) in &by_base {
            if tools.len() == 1 && !reserved.contains(base) {
                used.insert(base.clone());
                names.insert(&catalog.tools[tools[0]].id, base.clone());
            } else {
                clashing.push((base, tools));
            }
        }
        let mut diagnostics = Vec::new();
        for (base, tools) in clashing {
            let mut named = Vec::new();
            for &i in tools {
                let tool = &catalog.tools[i];
                let mut candidate = sanitize_name(&tool.id);
                if used.contains(&candidate) {
                    let stem: String = candidate.chars().take(60).collect();
                    candidate = (2..).map(|n| format!("{stem}_{n}")).find(|c| !used.contains(c)).expect("a free name");
                }
                used.insert(candidate.clone());
                names.insert(&tool.id, candidate.clone());
                named.push(NamedTool { id: tool.id.clone(), group: tool.group.clone(), called: candidate });
            }
            diagnostics.push(Diagnostic::DuplicateName {
                name: base.clone(),
                tools: named,
                reserved: reserved.contains(base),
            });
        }
        (names, diagnostics)
    }

    fn insert(&mut self, id: &str, name: String) {
        self.by_name.insert(name.clone(), id.to_owned());
        self.by_id.insert(id.to_owned(), name);
    }

    /// The name tool `id` is called by.
    pub(crate) fn name(&self, id: &str) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    /// The tool called `name`.
    pub(crate) fn id(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolsearch_catalog::Tool;

    fn tool(id: &str, name: &str, group: Option<&str>) -> Tool {
        Tool { id: id.into(), name: name.into(), group: group.map(Into::into), ..Tool::default() }
    }

    #[test]
    fn clashing_names_fall_back_to_ids_and_are_reported() {
        let catalog = Catalog {
            tools: vec![
                tool("github.status", "status", Some("github")),
                tool("gitlab.status", "status", Some("gitlab")),
                tool("misc.search", "search_nodes", None),
                tool("x.unique", "unique", None),
                tool("github_status", "github_status", None),
            ],
            ..Catalog::default()
        };
        let reserved: HashSet<String> = ["search_nodes".to_owned()].into();
        let (names, diagnostics) = Names::assign(&catalog, &reserved, 0..catalog.tools.len());
        assert_eq!(names.name("x.unique"), Some("unique"));
        assert_eq!(names.name("github_status"), Some("github_status"));
        assert_eq!(names.name("github.status"), Some("github_status_2"), "the id form was taken by another tool");
        assert_eq!(names.name("gitlab.status"), Some("gitlab_status"));
        assert_eq!(names.name("misc.search"), Some("misc_search"));
        assert_eq!(names.id("gitlab_status"), Some("gitlab.status"));
        assert_eq!(diagnostics.len(), 2);
        let text = diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(text.contains("\"status\" is used by 2 tools") && text.contains("group gitlab"), "{text}");
        assert!(text.contains("discovery tool or facade"), "{text}");
    }

    #[test]
    fn tools_left_out_take_no_name() {
        let catalog = Catalog {
            tools: vec![tool("weather.status", "status", None), tool("secret.status", "status", None)],
            ..Catalog::default()
        };
        let shown = (0..catalog.tools.len()).filter(|&i| catalog.tools[i].id != "secret.status");
        let (names, diagnostics) = Names::assign(&catalog, &HashSet::new(), shown);
        assert_eq!(names.name("weather.status"), Some("status"), "a hidden namesake changes nothing");
        assert_eq!(names.name("secret.status"), None);
        assert!(diagnostics.is_empty());
    }
}
