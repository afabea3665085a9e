//! Which of a server's tools pass through: `tools.allow` / `tools.deny` glob lists.

use serde::Deserialize;
pub(crate) use toolsearch_catalog::glob;

/// `tools.allow` / `tools.deny` of a server: glob lists (`*` any run, `?` one character) on
/// the upstream's tool names. A tool passes if `allow` is empty or one of its globs matches,
/// and no `deny` glob does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolFilter {
    /// Globs of tools let through (empty: all).
    pub allow: Vec<String>,
    /// Globs of tools left out.
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether the tool `name` passes.
    pub fn passes(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| glob(g, name))) && !self.deny.iter().any(|g| glob(g, name))
    }
}

#[cfg(test)]
mod tests {
    use super::{glob, ToolFilter};

    #[test]
    fn globs_and_tool_filters() {
        assert!(glob("delete_*", "delete_entities") && glob("*", "") && glob("get-?um", "get-sum"));
        assert!(!glob("delete_*", "read_graph") && !glob("a?c", "ac") && glob("*_graph*", "read_graph_now"));
        let f = ToolFilter { allow: vec!["read_*".into(), "search*".into()], deny: vec!["*_all".into()] };
        assert!(f.passes("read_graph") && f.passes("search_nodes"));
        assert!(!f.passes("delete_entities") && !f.passes("read_all"));
        assert!(ToolFilter::default().passes("anything"));
    }
}
