//! The catalogue's lookups made while the lean table is decoded: category nodes by path
//! ([`NodePaths`]) and tools by tag and by whether they require scopes ([`ToolFacets`]).
//!
//! Both are made from what the decode has in cache anyway (the categories, then each tool's
//! tags and scopes as its bytes are read), so an engine does not walk a million tools again
//! to make them: at a million tools a second pass over the decoded tools cost 0.16-0.22 s of
//! an open (two cache misses a tool), and a second path table 30-50 ms.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use toolsearch_catalog::{Node, Tool};

/// Category node ordinals by path: 4 bytes a node, each key read from the nodes when a bucket
/// is probed, never copied. hashbrown's randomly seeded foldhash.
#[derive(Default)]
pub struct NodePaths {
    hasher: DefaultHashBuilder,
    table: HashTable<u32>,
}

impl NodePaths {
    /// The lookup over `nodes`: the first node (in catalogue order) holds a path that repeats.
    pub fn new(nodes: &[Node]) -> NodePaths {
        let path_of = |o: u32| nodes[o as usize].path.as_slice();
        let hasher = DefaultHashBuilder::default();
        let mut table = HashTable::with_capacity(nodes.len());
        for (ord, node) in (0u32..).zip(nodes) {
            let hash = hasher.hash_one(&node.path);
            if table.find(hash, |&o| path_of(o) == node.path).is_none() {
                table.insert_unique(hash, ord, |&o| hasher.hash_one(path_of(o)));
            }
        }
        NodePaths { hasher, table }
    }

    /// The ordinal of the node at `path` among `nodes` (the nodes this lookup was made over).
    pub fn find(&self, nodes: &[Node], path: &[String]) -> Option<u32> {
        self.find_with(path, |o| &nodes[o as usize].path)
    }

    /// [`NodePaths::find`] with the nodes' paths given by ordinal.
    pub(crate) fn find_with<'a>(&self, path: &[String], path_of: impl Fn(u32) -> &'a [String]) -> Option<u32> {
        self.table.find(self.hasher.hash_one(path), |&o| path_of(o) == path).copied()
    }
}

/// Tool ordinals by lower-cased tag, and the tools that require scopes, each list sorted.
#[derive(Debug, Default)]
pub struct ToolFacets {
    tagged: HashMap<String, Vec<u32>>,
    restricted: Vec<u32>,
}

/// Whether lower-casing changes `s`.
fn folds(s: &str) -> bool {
    if s.is_ascii() {
        return s.bytes().any(|b| b.is_ascii_uppercase());
    }
    s.chars().any(|c| {
        let mut lower = c.to_lowercase();
        lower.next() != Some(c) || lower.next().is_some()
    })
}

impl ToolFacets {
    /// The facets of `tools`, by ordinal.
    pub fn of(tools: &[Tool]) -> ToolFacets {
        let mut facets = ToolFacets::default();
        for (ord, t) in tools.iter().enumerate() {
            facets.add(ord as u32, &t.tags, &t.requires);
        }
        facets
    }

    /// Adds tool `ord` (larger than any added before) with its `tags` and `requires`.
    pub(crate) fn add(&mut self, ord: u32, tags: &[String], requires: &[String]) {
        for tag in tags {
            // Most tags are lower case already: looked up as they are, not copied.
            let lower = folds(tag).then(|| tag.to_lowercase());
            let list = self.tagged.entry_ref(lower.as_deref().unwrap_or(tag)).or_default();
            if list.last() != Some(&ord) {
                list.push(ord);
            }
        }
        if !requires.is_empty() {
            self.restricted.push(ord);
        }
    }

    /// Appends `later`'s tools, all of them after this one's.
    pub(crate) fn append(&mut self, later: ToolFacets) {
        for (tag, list) in later.tagged {
            match self.tagged.get_mut(&tag) {
                Some(mine) => mine.extend(list),
                None => {
                    self.tagged.insert(tag, list);
                }
            }
        }
        self.restricted.extend(later.restricted);
    }

    /// The tools carrying `tag` (lower-cased by the caller), sorted.
    pub fn tagged(&self, tag: &str) -> &[u32] {
        self.tagged.get(tag).map_or(&[], Vec::as_slice)
    }

    /// Every tag (lower case) with the tools carrying it, sorted, in no set order.
    pub fn tags(&self) -> impl Iterator<Item = (&str, &[u32])> {
        self.tagged.iter().map(|(tag, list)| (tag.as_str(), list.as_slice()))
    }

    /// The tools that require scopes, sorted.
    pub fn restricted(&self) -> &[u32] {
        &self.restricted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('/').map(str::to_owned).collect()
    }

    #[test]
    fn a_repeated_path_finds_its_first_node() {
        let nodes: Vec<Node> = ["a", "a/b", "a"].iter().map(|p| Node { path: path(p), ..Node::default() }).collect();
        let lookup = NodePaths::new(&nodes);
        assert_eq!(lookup.find(&nodes, &path("a")), Some(0));
        assert_eq!(lookup.find(&nodes, &path("a/b")), Some(1));
        assert_eq!(lookup.find(&nodes, &path("b")), None);
    }

    #[test]
    fn facets_fold_tags_and_append_in_order() {
        let tool = |tags: &[&str], requires: &[&str]| Tool {
            tags: tags.iter().map(|t| t.to_string()).collect(),
            requires: requires.iter().map(|t| t.to_string()).collect(),
            ..Tool::default()
        };
        let tools = [tool(&["Net", "net"], &[]), tool(&["ǅx"], &["admin"]), tool(&["net"], &["a", "b"])];
        let whole = ToolFacets::of(&tools);
        assert_eq!(whole.tagged("net"), [0, 2], "a tag twice on one tool lists it once");
        assert_eq!(whole.tagged("ǆx"), [1], "a title-case tag is folded");
        assert!(whole.tagged("Net").is_empty(), "keys are lower case");
        assert_eq!(whole.restricted(), [1, 2]);
        let mut first = ToolFacets::default();
        first.add(0, &tools[0].tags, &tools[0].requires);
        let mut rest = ToolFacets::default();
        rest.add(1, &tools[1].tags, &tools[1].requires);
        rest.add(2, &tools[2].tags, &tools[2].requires);
        first.append(rest);
        assert_eq!(
            (first.tagged("net"), first.tagged("ǆx"), first.restricted()),
            ([0, 2].as_slice(), [1].as_slice(), [1, 2].as_slice())
        );
    }
}
