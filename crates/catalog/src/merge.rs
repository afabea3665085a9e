//! Several catalogues as one: one file per MCP server, a base manifest plus imported tools, or
//! tools registered at run time.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::CatalogError;
use crate::facade::check_unique_names;
use crate::load::{load_path_as, Format};
use crate::model::Catalog;
use crate::path::CategoryPath;

impl Catalog {
    /// Adds `other` (loaded from `file`) to this catalogue, keeping the invariants: tool ids
    /// stay unique, a group or category declared in both must be declared alike (a category
    /// that one side only implied takes the other side's declaration), and nodes stay sorted.
    /// On error `self` is unchanged. Linear in the size of both catalogues.
    pub fn merge(&mut self, other: Catalog, file: &Path) -> Result<(), CatalogError> {
        let ids: HashSet<&str> = self.tools.iter().map(|t| t.id.as_str()).collect();
        if let Some(tool) = other.tools.iter().find(|t| ids.contains(t.id.as_str())) {
            return Err(CatalogError::file(file, format!("tool id {:?} is already in the catalogue", tool.id)));
        }
        for group in &other.groups {
            if self.groups.iter().any(|g| g.id == group.id && g != group) {
                return Err(CatalogError::file(
                    file,
                    format!("group {:?} is already declared, with other settings", group.id),
                ));
            }
        }
        let mut node_at: HashMap<CategoryPath, usize> =
            self.nodes.iter().enumerate().map(|(i, n)| (n.path.clone(), i)).collect();
        for node in &other.nodes {
            if let Some(mine) = node_at.get(&node.path).map(|&i| &self.nodes[i]) {
                if !mine.implicit && !node.implicit && mine != node {
                    return Err(CatalogError::file(
                        file,
                        format!("category {:?} is already declared, differently", node.path.join("/")),
                    ));
                }
            }
        }
        check_unique_names(self.nodes.iter().chain(&other.nodes), file)?;
        for group in other.groups {
            if !self.groups.iter().any(|g| g.id == group.id) {
                self.groups.push(group);
            }
        }
        for node in other.nodes {
            match node_at.get(&node.path) {
                Some(&i) if self.nodes[i].implicit && !node.implicit => self.nodes[i] = node,
                Some(_) => {}
                None => {
                    node_at.insert(node.path.clone(), self.nodes.len());
                    self.nodes.push(node);
                }
            }
        }
        self.nodes.sort_by(|a, b| a.path.cmp(&b.path));
        self.tools.extend(other.tools);
        self.warnings.extend(other.warnings);
        Ok(())
    }
}

/// Reads and validates several catalogue files (each in its own format, detected unless
/// `format` is given) and merges them in order. A tool id defined in two files is an error
/// naming both.
pub fn load_paths(files: &[PathBuf], format: Option<Format>) -> Result<Catalog, CatalogError> {
    load_paths_as(files, format, |_| None)
}

/// [`load_paths`] where `namespace` says, per file, which server it is (see
/// [`load_path_as`](crate::load_path_as)).
pub fn load_paths_as<'a>(
    files: &'a [PathBuf],
    format: Option<Format>,
    namespace: impl Fn(&Path) -> Option<&'a str>,
) -> Result<Catalog, CatalogError> {
    let mut merged = Catalog::default();
    let mut origin: HashMap<String, &Path> = HashMap::new();
    for file in files {
        let catalog = load_path_as(file, format, namespace(file))?;
        if let Some((id, first)) = catalog.tools.iter().find_map(|t| origin.get(&t.id).map(|f| (&t.id, f))) {
            return Err(CatalogError::file(file, format!("tool id {id:?} is also defined in {}", first.display())));
        }
        origin.extend(catalog.tools.iter().map(|t| (t.id.clone(), file.as_path())));
        merged.merge(catalog, file)?;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_str;

    fn parse(text: &str) -> Catalog {
        parse_str(Path::new("t.json"), text, None).unwrap()
    }

    #[test]
    fn merging_keeps_ids_unique_and_prefers_declared_categories() {
        let mut base = parse(r#"{"tools": [{"id": "a", "name": "a", "path": "X/Y"}]}"#);
        let other = parse(
            r#"{"nodes": [{"path": "X", "summary": "Declared X."}],
                "tools": [{"id": "b", "name": "b", "path": "X/Z"}]}"#,
        );
        base.merge(other, Path::new("b.json")).unwrap();
        assert_eq!(base.tools.len(), 2);
        let x = base.node(&["X".to_owned()]).unwrap();
        assert_eq!(x.summary, "Declared X.");
        assert!(!x.implicit);
        let paths: Vec<String> = base.nodes.iter().map(|n| n.path.join("/")).collect();
        assert_eq!(paths, ["X", "X/Y", "X/Z"], "sorted, each once");

        let before = base.clone();
        let clash = parse(r#"{"tools": [{"id": "a", "name": "again"}]}"#);
        let e = base.merge(clash, Path::new("c.json")).unwrap_err();
        assert!(e.to_string().starts_with("c.json") && e.to_string().contains("\"a\""), "{e}");
        assert_eq!(base, before, "a failed merge changes nothing");

        let redeclared =
            parse(r#"{"nodes": [{"path": "X", "summary": "Another X."}], "tools": [{"id": "c", "name": "c"}]}"#);
        let e = base.merge(redeclared, Path::new("d.json")).unwrap_err();
        assert!(e.to_string().contains("category \"X\""), "{e}");
    }
}
