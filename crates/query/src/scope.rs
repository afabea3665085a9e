//! Category scopes: resolving a requested path, and the tools and child nodes under a path.

use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use rayon::prelude::*;
use toolsearch_catalog::{display_path, Catalog, CategoryPath, Node};
use toolsearch_index::{IndexReader, NodePaths, ToolFacets, NO_NODE};

use crate::lists::{self, Lists};
use crate::scoped::{scope_cache, ScopeCache};

pub use crate::filter::Filter;
pub(crate) use crate::filter::{difference, intersect};

/// Lookup tables over the category graph, built once per engine (when an index opens).
///
/// Lists are kept by node ordinal, and the path lookups hold ordinals only, 4 bytes an entry,
/// their keys read from the catalogue when a bucket is probed: no category path is copied
/// (at a million tools and 320,000 categories, path-keyed maps cost a second of every open
/// and a few hundred bytes a tool). hashbrown's seeded foldhash, not SipHash. Nodes are
/// found by path through the index's lookup ([`NodePaths`]), made as its table is decoded.
pub(crate) struct PathTable {
    hasher: DefaultHashBuilder,
    /// Node ordinals by lower-cased display path (several nodes may share one); made when
    /// first needed (a path given in another case), not on every open.
    by_display: OnceLock<HashTable<u32>>,
    /// Per node: the tool ordinals at or below it, sorted.
    pub(crate) under: Lists,
    /// Per node: the tool ordinals directly at it, sorted.
    pub(crate) direct: Lists,
    /// Per node: its child nodes' ordinals.
    pub(crate) children: Vec<Vec<u32>>,
    /// Per node: its parent's ordinal (`None` at the top, or when no node is its parent).
    parent: Vec<Option<u32>>,
    /// The top-level nodes' ordinals.
    pub(crate) top: Vec<u32>,
    /// The same lists for paths no category node has, which a normalised catalogue never
    /// holds (every ancestor of a tool's path is a node), but a catalogue made by hand may.
    stray: Stray,
    /// Every tool ordinal, sorted.
    all: Vec<u32>,
    /// What each recent scope set may see ([`Paths::scoped`]).
    pub(crate) scoped: ScopeCache,
    /// The scopes some tool requires, sorted (a caller's other scopes show it no other tool).
    pub(crate) required: Vec<String>,
    /// Set once the scope sets no host named are worked out ahead ([`Paths::scoped_unnamed`]).
    pub(crate) unnamed: OnceLock<()>,
}

/// Lists keyed by paths that have no node.
#[derive(Default)]
struct Stray {
    under: HashMap<CategoryPath, Vec<u32>>,
    direct: HashMap<CategoryPath, Vec<u32>>,
    children: HashMap<CategoryPath, Vec<u32>>,
}

/// The scopes some tool of `catalog` requires, sorted.
fn required_scopes(catalog: &Catalog) -> Vec<String> {
    let mut all: Vec<String> = catalog.tools.iter().flat_map(|t| t.requires.iter().cloned()).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Appends `ord` to sorted `list` unless it is already last (ordinals arrive in order).
fn add(list: &mut Vec<u32>, ord: u32) {
    if list.last() != Some(&ord) {
        list.push(ord);
    }
}

impl PathTable {
    /// The table of `catalog`, whose nodes `node_paths` finds by path and whose tools are at
    /// the nodes `tool_nodes` gives ([`IndexReader::tool_nodes`](toolsearch_index::IndexReader::tool_nodes);
    /// tools past its end, or at [`NO_NODE`], are looked up by path).
    pub(crate) fn new(catalog: &Catalog, tool_nodes: &[u32], node_paths: &NodePaths) -> PathTable {
        let nodes = &catalog.nodes;
        let mut t = PathTable {
            by_display: OnceLock::new(),
            under: Lists::default(),
            direct: Lists::default(),
            children: vec![Vec::new(); nodes.len()],
            parent: Vec::new(),
            top: Vec::new(),
            stray: Stray::default(),
            all: (0..catalog.tools.len() as u32).collect(),
            hasher: DefaultHashBuilder::default(),
            scoped: scope_cache(),
            required: required_scopes(catalog),
            unnamed: OnceLock::new(),
        };
        t.parent = nodes
            .par_iter()
            .map(|n| match n.path.len() {
                0 | 1 => None,
                d => node_paths.find(nodes, &n.path[..d - 1]),
            })
            .collect();
        for (i, n) in nodes.iter().enumerate() {
            match (n.path.len(), t.parent[i]) {
                (0, _) => {}
                (1, _) => t.top.push(i as u32),
                (_, Some(p)) => t.children[p as usize].push(i as u32),
                (d, None) => t.stray.children.entry_ref(&n.path[..d - 1]).or_default().push(i as u32),
            }
        }
        // Whether each node's ancestors are all nodes (as in every normalised catalogue):
        // then a tool at it is listed up its parent links, without its path being read.
        let mut linked = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let mut at = Some(i as u32);
            let mut depth = n.path.len();
            while let Some(x) = at.filter(|_| depth > 1) {
                at = t.parent[x as usize];
                depth -= 1;
            }
            linked[i] = at.is_some() || depth <= 1;
        }
        t.lists(catalog, tool_nodes, node_paths, &linked);
        t
    }

    /// Fills the lists of tools under and at each node (and at paths without a node).
    fn lists(&mut self, catalog: &Catalog, tool_nodes: &[u32], node_paths: &NodePaths, linked: &[bool]) {
        let (nodes, parent) = (&catalog.nodes, &self.parent);
        let mut stray = std::mem::take(&mut self.stray);
        // Calls `f(node, directly)` once for each node tool `i` is at (directly) or under:
        // up the parent links when the node at its one path is linked to the top, else by
        // path (a catalogue made by hand), adding it to the stray lists of paths without a
        // node when `stray` is given.
        let visit = |i: usize, stray: Option<&mut Stray>, f: &mut dyn FnMut(u32, bool)| match tool_nodes
            .get(i)
            .copied()
            .filter(|&n| n != NO_NODE && linked[n as usize])
        {
            Some(n) => {
                f(n, true);
                let mut at = Some(n);
                while let Some(x) = at {
                    f(x, false);
                    at = parent[x as usize];
                }
            }
            None => {
                let (ord, mut pairs, mut stray) = (i as u32, Vec::new(), stray);
                for p in &catalog.tools[i].paths {
                    // A tool at the root (`[]`, as every tool of an OpenAI or Anthropic
                    // catalogue is) is listed at `/`.
                    if let (true, Some(s)) = (p.is_empty(), stray.as_deref_mut()) {
                        add(s.direct.entry_ref(&p[..]).or_default(), ord);
                    }
                    ancestors(node_paths, nodes, parent, p, |prefix, node| match node {
                        Some(n) => {
                            if prefix.len() == p.len() {
                                pairs.push((n, true));
                            }
                            pairs.push((n, false));
                        }
                        None => {
                            if let Some(s) = stray.as_deref_mut() {
                                if prefix.len() == p.len() {
                                    add(s.direct.entry_ref(prefix).or_default(), ord);
                                }
                                add(s.under.entry_ref(prefix).or_default(), ord);
                            }
                        }
                    });
                }
                pairs.sort_unstable();
                pairs.dedup();
                for (n, directly) in pairs {
                    f(n, directly);
                }
            }
        };
        let (under, direct, strays) = lists::file(catalog.tools.len(), nodes.len(), visit);
        // Each part's stray lists hold its tools, in order: joined, they stay sorted.
        for part in strays {
            for (to, from) in [(&mut stray.under, part.under), (&mut stray.direct, part.direct)] {
                for (path, list) in from {
                    to.entry(path).or_default().extend(list);
                }
            }
        }
        (self.under, self.direct, self.stray) = (under, direct, stray);
    }

    /// Node ordinals by lower-cased display path.
    fn by_display(&self, catalog: &Catalog) -> &HashTable<u32> {
        self.by_display.get_or_init(|| {
            let (nodes, hasher) = (&catalog.nodes, &self.hasher);
            let key = |o: u32| hasher.hash_one(display_path(&nodes[o as usize].path).to_lowercase());
            let mut table = HashTable::with_capacity(nodes.len());
            for o in 0..nodes.len() as u32 {
                table.insert_unique(key(o), o, |&o| key(o));
            }
            table
        })
    }
}

/// Calls `f` with each prefix of `path`, deepest first, and the node at it (`None` where no
/// node is): up the parent links, by lookup where a node is missing.
fn ancestors<'p>(
    node_paths: &NodePaths,
    nodes: &[Node],
    parent: &[Option<u32>],
    path: &'p [String],
    mut f: impl FnMut(&'p [String], Option<u32>),
) {
    let mut at = node_paths.find(nodes, path);
    for d in (1..=path.len()).rev() {
        f(&path[..d], at);
        at = match at {
            Some(n) => parent[n as usize],
            None if d > 1 => node_paths.find(nodes, &path[..d - 1]),
            None => None,
        };
    }
}

/// A [`PathTable`] with the catalogue its keys are read from and the index's lookups: what
/// requests ask of the category graph.
#[derive(Clone, Copy)]
pub(crate) struct Paths<'a> {
    pub(crate) table: &'a PathTable,
    pub(crate) catalog: &'a Catalog,
    /// The nodes by path.
    pub(crate) nodes: &'a NodePaths,
    /// The tools by tag, and those that require scopes.
    pub(crate) facets: &'a ToolFacets,
    /// The index, when a scope set's views should keep every word's postings
    /// ([`toolsearch_index::Lexicon`]); `None` in tests of the lists alone.
    pub(crate) index: Option<&'a IndexReader>,
}

impl<'a> Paths<'a> {
    /// The path `segments` (parsed by the path rule) names among the categories `visible`
    /// accepts, if any: the exact path first, then a case-insensitive match when exactly one
    /// visible category has it (so a category the caller cannot see never makes a name
    /// ambiguous, nor resolves it).
    pub(crate) fn resolve(&self, segments: CategoryPath, visible: impl Fn(u32) -> bool) -> Option<CategoryPath> {
        if segments.is_empty() {
            return Some(segments);
        }
        if let Some(n) = self.node_ord(&segments) {
            if visible(n) {
                return Some(segments);
            }
        }
        let nodes = &self.catalog.nodes;
        let joined = display_path(&segments).to_lowercase();
        let matches: Vec<u32> = self
            .table
            .by_display(self.catalog)
            .iter_hash(self.table.hasher.hash_one(&joined))
            .copied()
            .filter(|&n| visible(n) && display_path(&nodes[n as usize].path).to_lowercase() == joined)
            .collect();
        match matches.as_slice() {
            [only] => Some(nodes[*only as usize].path.clone()),
            _ => None,
        }
    }

    /// Every tool ordinal, sorted.
    pub(crate) fn all(&self) -> &'a [u32] {
        &self.table.all
    }

    /// The ordinal of the category at `path`, if there is one.
    pub(crate) fn node_ord(&self, path: &[String]) -> Option<u32> {
        self.nodes.find(&self.catalog.nodes, path)
    }

    /// Tools at or below `path`, sorted.
    pub(crate) fn tools_under(&self, path: &[String]) -> &'a [u32] {
        let t = self.table;
        if path.is_empty() {
            return &t.all;
        }
        match self.node_ord(path) {
            Some(n) => t.under.get(n),
            None => t.stray.under.get(path).map_or(&[], Vec::as_slice),
        }
    }

    /// The tools a filter allows, sorted; `None` when it allows every tool. What the caller's
    /// scopes allow, under a path and with a tag too, is read from [`Paths::scoped`], so the
    /// time this takes does not grow with the tools they hide.
    pub(crate) fn allowed(&self, filter: &Filter) -> Option<Arc<Vec<u32>>> {
        let scoped = filter.scopes.as_deref().map(|s| self.scoped(s));
        if filter.path.is_empty() && filter.tags.is_empty() {
            return scoped.and_then(|s| s.tools.clone());
        }
        let t = self.table;
        // A restricted caller's tools under the path are read from its kept lists when it has
        // them, so the hidden tools there add nothing to the time.
        let kept = scoped
            .as_ref()
            .filter(|_| !filter.path.is_empty())
            .and_then(|s| self.allowed_tools(&filter.path, false, s));
        let mut allowed: Option<Vec<u32>> =
            kept.or_else(|| (!filter.path.is_empty()).then(|| self.tools_under(&filter.path).to_vec()));
        // Its tag lists too, and the whole list a `!tag` is taken from.
        for tag in &filter.tags {
            // `!tag` keeps the tools without it.
            let (tag, without) = match tag.trim().strip_prefix('!') {
                Some(t) => (t, true),
                None => (tag.trim(), false),
            };
            let with_tag = self.tagged(&tag.trim().to_lowercase(), scoped.as_deref());
            allowed = Some(match (allowed, without) {
                (None, false) => with_tag.to_vec(),
                (Some(a), false) => intersect(&a, with_tag),
                (None, true) => difference(self.every_tool(scoped.as_deref()), with_tag),
                (Some(a), true) => difference(&a, with_tag),
            });
        }
        // A path or a tag was given, so `allowed` is a list: keep what the scopes allow.
        let mut allowed = allowed.unwrap_or_else(|| t.all.clone());
        if let Some(s) = scoped.filter(|s| s.tools.is_some()) {
            allowed.retain(|&o| s.tool_view.contains(o));
        }
        Some(Arc::new(allowed))
    }

    /// For a restricted caller, which nodes (by ordinal) hold a tool it may see; `None` for a
    /// trusted caller (every node is visible).
    pub(crate) fn visible_nodes(&self, scopes: &Option<Vec<String>>) -> Option<Arc<Vec<bool>>> {
        scopes.as_deref().map(|s| self.scoped(s).nodes.clone())
    }

    /// Calls `f` with the node at `path` and each node above it, deepest first.
    pub(crate) fn ancestors(&self, path: &[String], mut f: impl FnMut(u32)) {
        let t = self.table;
        ancestors(self.nodes, &self.catalog.nodes, &t.parent, path, |_, node| {
            if let Some(n) = node {
                f(n)
            }
        });
    }

    /// Tools directly at `path`, sorted.
    pub(crate) fn tools_at(&self, path: &[String]) -> &'a [u32] {
        match self.node_ord(path) {
            Some(n) => self.table.direct.get(n),
            None => self.table.stray.direct.get(path).map_or(&[], Vec::as_slice),
        }
    }

    /// Child nodes of `path`.
    pub(crate) fn children(&self, path: &[String]) -> &'a [u32] {
        if path.is_empty() {
            return &self.table.top;
        }
        match self.node_ord(path) {
            Some(n) => &self.table.children[n as usize],
            None => self.table.stray.children.get(path).map_or(&[], Vec::as_slice),
        }
    }
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
