//! Category scopes: resolving a requested path, and the tools and child nodes under a path.

use std::collections::HashMap;

use toolsearch_catalog::{display_path, Catalog, CategoryPath, PathSpec};

/// What a request restricts the catalogue to: a category path (empty = everything) and tags
/// (a tool must carry all of them; compared case-insensitively).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Filter {
    /// Category path prefix.
    pub path: CategoryPath,
    /// Required tags.
    pub tags: Vec<String>,
}

impl Filter {
    /// Everything under `path`, no tag condition.
    pub fn path(path: &[String]) -> Filter {
        Filter { path: path.to_vec(), tags: Vec::new() }
    }
}

/// Lookup tables over the category graph, built once per engine.
pub(crate) struct PathTable {
    node_by_path: HashMap<CategoryPath, u32>,
    node_by_display: HashMap<String, Vec<u32>>,
    /// Tool ordinals at or below each path (the root included), sorted.
    under: HashMap<CategoryPath, Vec<u32>>,
    /// Tool ordinals directly at each path, sorted.
    direct: HashMap<CategoryPath, Vec<u32>>,
    /// Child node ordinals of each path.
    children: HashMap<CategoryPath, Vec<u32>>,
    /// For each tool, the nodes it sits in directly (the last node of each of its paths).
    leaf_nodes: Vec<Vec<u32>>,
    /// For each tool, its first leaf node and the number of tools under that node.
    category: Vec<Option<(u32, u32)>>,
    /// Tool ordinals carrying each (lower-cased) tag, sorted.
    tagged: HashMap<String, Vec<u32>>,
}

impl PathTable {
    pub(crate) fn new(catalog: &Catalog) -> PathTable {
        let mut t = PathTable {
            node_by_path: HashMap::new(),
            node_by_display: HashMap::new(),
            under: HashMap::new(),
            direct: HashMap::new(),
            children: HashMap::new(),
            leaf_nodes: Vec::with_capacity(catalog.tools.len()),
            category: Vec::with_capacity(catalog.tools.len()),
            tagged: HashMap::new(),
        };
        for (i, n) in catalog.nodes.iter().enumerate() {
            t.node_by_path.insert(n.path.clone(), i as u32);
            t.node_by_display.entry(display_path(&n.path).to_lowercase()).or_default().push(i as u32);
            t.children.entry(n.path[..n.path.len() - 1].to_vec()).or_default().push(i as u32);
        }
        for (i, tool) in catalog.tools.iter().enumerate() {
            let ord = i as u32;
            t.under.entry(Vec::new()).or_default().push(ord);
            for p in &tool.paths {
                t.direct.entry(p.clone()).or_default().push(ord);
                for d in 1..=p.len() {
                    t.under.entry(p[..d].to_vec()).or_default().push(ord);
                }
            }
        }
        for (i, tool) in catalog.tools.iter().enumerate() {
            for tag in &tool.tags {
                let list = t.tagged.entry(tag.to_lowercase()).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
        for tool in &catalog.tools {
            let leaves = tool.paths.iter().filter_map(|p| t.node_by_path.get(p).copied()).collect();
            t.leaf_nodes.push(leaves);
        }
        for list in t.under.values_mut().chain(t.direct.values_mut()) {
            list.sort_unstable();
            list.dedup();
        }
        let category: Vec<Option<(u32, u32)>> = t
            .leaf_nodes
            .iter()
            .map(|leaves| leaves.first().map(|&n| (n, t.tools_under(&catalog.nodes[n as usize].path).len() as u32)))
            .collect();
        t.category = category;
        t
    }

    /// The path a request names, if it exists. Exact segments first, then the joined form
    /// (case-insensitively when that is unambiguous).
    pub(crate) fn resolve(&self, spec: &PathSpec, catalog: &Catalog) -> Option<CategoryPath> {
        let segments = spec.segments();
        if segments.is_empty() || self.node_by_path.contains_key(&segments) {
            return Some(segments);
        }
        let joined = match spec {
            PathSpec::Joined(s) => s.trim().trim_matches('/').to_lowercase(),
            PathSpec::Segments(v) => v.join("/").to_lowercase(),
        };
        match self.node_by_display.get(&joined).map(Vec::as_slice) {
            Some([only]) => Some(catalog.nodes[*only as usize].path.clone()),
            _ => None,
        }
    }

    /// Tools at or below `path`, sorted.
    pub(crate) fn tools_under(&self, path: &[String]) -> &[u32] {
        self.under.get(path).map_or(&[], Vec::as_slice)
    }

    /// The tools a filter allows, sorted; `None` when it allows every tool.
    pub(crate) fn allowed(&self, filter: &Filter) -> Option<Vec<u32>> {
        let mut allowed: Option<Vec<u32>> = (!filter.path.is_empty()).then(|| self.tools_under(&filter.path).to_vec());
        for tag in &filter.tags {
            let with_tag = self.tagged.get(&tag.trim().to_lowercase()).map_or(&[][..], Vec::as_slice);
            allowed = Some(match allowed {
                None => with_tag.to_vec(),
                Some(a) => intersect(&a, with_tag),
            });
        }
        allowed
    }

    /// Tools directly at `path`, sorted.
    pub(crate) fn tools_at(&self, path: &[String]) -> &[u32] {
        self.direct.get(path).map_or(&[], Vec::as_slice)
    }

    /// Tool `ord`'s category for sibling evidence: its first leaf node and that node's size.
    pub(crate) fn category(&self, ord: u32) -> Option<(u32, u32)> {
        self.category.get(ord as usize).copied().flatten()
    }

    /// Child nodes of `path`.
    pub(crate) fn children(&self, path: &[String]) -> &[u32] {
        self.children.get(path).map_or(&[], Vec::as_slice)
    }
}

/// The intersection of two sorted lists.
pub(crate) fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::intersect;

    #[test]
    fn intersect_keeps_common_sorted_items() {
        assert_eq!(intersect(&[1, 3, 5, 7], &[2, 3, 7, 9]), vec![3, 7]);
        assert!(intersect(&[], &[1]).is_empty());
    }
}
