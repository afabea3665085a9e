//! What a restricted caller may see, worked out once per scope set and kept: the tools its
//! scopes allow, the categories that hold one, the views BM25 scores with, and the catalogue's
//! lists (tools under and at each category, its children) cut to them.
//!
//! Working them out takes a pass over every tool that requires a scope, so a request that did
//! it itself took time in proportion to the tools its caller cannot see (at 5,000 hidden tools,
//! 0.8 ms of each answer, against 0.03 ms with none): a caller could time how much is hidden.
//! Kept per scope set, a request reads them in constant time; only the first request of a scope
//! set after the index opens (or after [`SCOPE_SETS`] others pushed it out) pays the pass, and
//! not even that for the sets a server knows ahead or met before a rebuild
//! (`Ranker::prepare_for`, in `visible.rs`). A set prepared ahead also keeps every word's
//! postings inside its views ([`toolsearch_index::Lexicon`]), so that no search of it walks a
//! word's whole list the first time it reads the word; a set first met at a request gets them
//! when it is next prepared (a server does that behind the request: `Ranker::is_prepared_for`).
//!
//! A set is kept by the scopes in it that some tool requires (an identity provider's `openid`
//! or another server's scopes show a caller no other tool), so callers differing only in those
//! share it. A server taking scope sets it cannot know ahead (an identity provider's tokens)
//! works out ahead the sets the tools' scopes make, when they are few ([`Paths::scoped_unnamed`]):
//! then no caller's first request pays the pass either.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use toolsearch_index::{DocKind, View};

use crate::cache::{Lru, Weigh};
use crate::filter::difference;
use crate::lists::Lists;
use crate::scope::Paths;

/// Scope sets kept (a gateway serves a few: one per role or team).
pub(crate) const SCOPE_SETS: usize = 64;

/// Most bytes the scope sets kept hold together; a set over an eighth of it is worked out on
/// each request instead, which none is: its cut lists ([`VISIBLE_MAX`]) and word postings
/// ([`LEXICON_MAX`]) are bounded below that, and its own list of tools passes it only past
/// about three million tools.
pub(crate) const SCOPE_BYTES: usize = 128 * 1024 * 1024;

/// Scope sets no host named that [`Paths::scoped_unnamed`] works out ahead, at most: every set
/// of the scopes the tools require when they are four or fewer.
pub(crate) const UNNAMED_SETS: usize = 16;

/// Bytes the kept scope sets may hold before [`Paths::scoped_unnamed`] adds no more: the rest
/// of [`SCOPE_BYTES`] is for the sets callers use.
const UNNAMED_BYTES: usize = SCOPE_BYTES / 4;

/// A caller's scopes that some tool requires (sorted), as a cache key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ScopeKey(Vec<String>);

impl Weigh for ScopeKey {
    fn weight(&self) -> usize {
        self.0.iter().map(Weigh::weight).sum::<usize>() + std::mem::size_of::<Self>()
    }
}

/// What one scope set may see.
pub(crate) struct Scoped {
    /// The tools the scopes allow, sorted; `None` when they allow every tool.
    pub(crate) tools: Option<Arc<Vec<u32>>>,
    /// Per node ordinal: whether it holds a tool the scopes allow.
    pub(crate) nodes: Arc<Vec<bool>>,
    /// Per node ordinal: how many tools the scopes allow at or below it; empty when they
    /// allow every tool (then it is every tool under it), or when `visible` is kept (then it
    /// is the length of its list).
    counts: Vec<u32>,
    /// The tools allowed, as the statistics base of tool searches and a membership test.
    pub(crate) tool_view: View,
    /// The nodes visible, as the statistics base of category searches.
    pub(crate) node_view: View,
    /// The catalogue's lists cut to what the scopes allow, when some tool is hidden and the
    /// lists are small enough to keep ([`VISIBLE_MAX`]).
    visible: Option<Visible>,
    /// Whether its views were worked out at a request, without every word's postings (a
    /// request does not pay the walk of every posting list): they are added when it is next
    /// prepared ([`Paths::scoped_ahead`]).
    pub(crate) words_pending: bool,
    /// The callers' own scope sets met with this set's key that also hold scopes no tool
    /// requires (an identity provider's `openid`, another service's), at most [`ASKED_MAX`]:
    /// the next engine is prepared for them as well as for the key, so that a rebuild adding a
    /// tool that requires one of those scopes finds its holders prepared under their new key.
    asked: Mutex<Vec<Vec<String>>>,
}

/// Callers' own scope sets a kept set remembers ([`Scoped::asked`]).
const ASKED_MAX: usize = 8;

impl Scoped {
    /// Remembers `scopes` (sorted), kept by this set's key `key`, when they hold more than it.
    fn met(&self, scopes: &[String], key: &ScopeKey) {
        if scopes.len() == key.0.len() {
            return;
        }
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        if asked.len() < ASKED_MAX && !asked.iter().any(|a| a == scopes) {
            asked.push(scopes.to_vec());
        }
    }
}

/// Entries (4 bytes each) the catalogue's lists may hold for a scope set to keep them cut to
/// what it allows: past that (about 250,000 tools three categories deep), a request filters
/// the catalogue's lists instead, in time that grows with the hidden tools among them.
const VISIBLE_MAX: usize = 1 << 20;

/// Bytes a scope set's view of the tools may keep of every word's postings inside it (about
/// 30,000 tools in view with 30 distinct words each; its view of the categories an eighth of
/// that): past that, a request filters a word's postings the first time its view reads the
/// word, in time that grows with the hidden documents holding it.
const LEXICON_MAX: usize = 8 << 20;

/// Per node, the tools a scope set allows at or below it and directly at it, and its child
/// nodes holding one; the same at the root; and per tag, the tools it allows carrying it. A
/// request reads them instead of filtering the catalogue's lists, whose hidden tools would
/// each add to its time.
struct Visible {
    under: Lists,
    direct: Lists,
    children: Lists,
    top: Vec<u32>,
    root_direct: Vec<u32>,
    /// Tags (lower case) a tool allowed carries, with those tools, sorted.
    tagged: HashMap<Box<str>, Vec<u32>>,
}

impl Visible {
    fn bytes(&self) -> usize {
        let tagged: usize = self.tagged.iter().map(|(t, l)| t.len() + 16 + 24 + l.len() * 4).sum();
        self.under.bytes()
            + self.direct.bytes()
            + self.children.bytes()
            + (self.top.len() + self.root_direct.len()) * 4
            + tagged
    }
}

impl Weigh for Arc<Scoped> {
    fn weight(&self) -> usize {
        let tools = self.tools.as_ref().map_or(0, |t| t.len());
        // The list (4 bytes a tool), the views' bits (a bit a tool or node), the node flags.
        std::mem::size_of::<Scoped>()
            + tools * 4
            + tools / 8
            + self.nodes.len() * 9 / 8
            + self.counts.len() * 4
            + self.visible.as_ref().map_or(0, Visible::bytes)
            + self.tool_view.lexicon_bytes()
            + self.node_view.lexicon_bytes()
            + ASKED_MAX * 3 * std::mem::size_of::<String>()
    }
}

/// The first `max` subsets of `0..n` (as sorted positions), smaller ones first, each size in
/// lexicographic order.
fn subsets_by_size(n: usize, max: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for k in 0..=n {
        let mut c: Vec<usize> = (0..k).collect();
        loop {
            if out.len() == max {
                return out;
            }
            out.push(c.clone());
            // The last position that can still move right, moved, and those after it packed behind.
            let Some(i) = (0..k).rev().find(|&i| c[i] < n - k + i) else { break };
            c[i] += 1;
            for j in i + 1..k {
                c[j] = c[j - 1] + 1;
            }
        }
    }
    out
}

/// The kept scope sets of one engine (so of one index generation).
pub(crate) type ScopeCache = Lru<ScopeKey, Arc<Scoped>>;

/// A fresh, empty [`ScopeCache`].
pub(crate) fn scope_cache() -> ScopeCache {
    Lru::new(SCOPE_SETS, SCOPE_BYTES)
}

/// The key statistics caches know a caller's view by (0 is the whole catalogue's).
pub(crate) fn scopes_key(scopes: &[String]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    Some(scopes).hash(&mut h);
    h.finish()
}

impl Paths<'_> {
    /// What a caller holding `scopes` (sorted) may see: kept, or worked out (without its
    /// views' words, which only [`Paths::scoped_ahead`] walks every posting list for) and kept.
    pub(crate) fn scoped(&self, scopes: &[String]) -> Arc<Scoped> {
        let key = self.key(scopes);
        if let Some(s) = self.table.scoped.get(&key) {
            s.met(scopes, &key);
            return s;
        }
        let s = Arc::new(self.work_out(&key.0, false));
        s.met(scopes, &key);
        self.table.scoped.put(key, s.clone());
        s
    }

    /// What a caller holding `scopes` (sorted) may see, with its views' words: kept, or worked
    /// out whole (again, when it was first worked out at a request) and kept. For callers
    /// prepared ahead of their requests.
    pub(crate) fn scoped_ahead(&self, scopes: &[String]) -> Arc<Scoped> {
        let key = self.key(scopes);
        let s = match self.table.scoped.get(&key) {
            Some(s) if !s.words_pending => s,
            kept => {
                let s = Arc::new(self.work_out(&key.0, true));
                // What the set worked out at a request remembered, it remembers still.
                let asked = kept.map(|k| k.asked.lock().unwrap_or_else(|p| p.into_inner()).clone());
                *s.asked.lock().unwrap_or_else(|p| p.into_inner()) = asked.unwrap_or_default();
                self.table.scoped.put(key.clone(), s.clone());
                s
            }
        };
        s.met(scopes, &key);
        s
    }

    /// Whether what a caller holding `scopes` (sorted) may see is kept, with its views' words.
    pub(crate) fn kept_whole(&self, scopes: &[String]) -> bool {
        self.table.scoped.get(&self.key(scopes)).is_some_and(|s| !s.words_pending)
    }

    /// The key `scopes` (sorted) are kept by: those of them some tool requires. A lookup in
    /// the catalogue's few required scopes each, whatever the tools hidden.
    fn key(&self, scopes: &[String]) -> ScopeKey {
        let required = &self.table.required;
        ScopeKey(scopes.iter().filter(|s| required.binary_search(s).is_ok()).cloned().collect())
    }

    /// Works out ahead, once per engine, what callers holding scope sets no host named may see
    /// (an identity provider's users, whose scopes arrive with their requests): every set of the
    /// scopes the tools require when they are four or fewer; else none of them, each alone, each
    /// two, ..., up to [`UNNAMED_SETS`] sets; and only while the kept sets hold under
    /// [`UNNAMED_BYTES`]. Worked out before the sets hosts name, they are the first the kept
    /// sets give up for others.
    pub(crate) fn scoped_unnamed(&self) {
        if self.table.unnamed.set(()).is_err() || self.table.required.is_empty() {
            return;
        }
        let required = &self.table.required;
        for set in subsets_by_size(required.len(), UNNAMED_SETS) {
            if self.table.scoped.bytes() > UNNAMED_BYTES {
                break;
            }
            self.scoped_ahead(&set.iter().map(|&i| required[i].clone()).collect::<Vec<_>>());
        }
    }

    /// The scope sets kept, least recently used first, each followed by the callers' own sets
    /// it was met with that hold scopes no tool requires ([`Scoped::asked`]).
    pub(crate) fn kept_scope_sets(&self) -> Vec<Vec<String>> {
        let mut sets = Vec::new();
        for (ScopeKey(key), kept) in self.table.scoped.entries() {
            sets.push(key);
            sets.extend(kept.asked.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
        }
        sets
    }

    /// [`Paths::scoped`] without the cache: one pass over the tools that require scopes, one
    /// over the tools allowed; with `words`, one over every posting list of the index.
    fn work_out(&self, scopes: &[String], words: bool) -> Scoped {
        let tools = &self.catalog.tools;
        let hidden: Vec<u32> = self
            .facets
            .restricted()
            .iter()
            .copied()
            .filter(|&o| tools[o as usize].requires.iter().any(|r| scopes.binary_search(r).is_err()))
            .collect();
        let allowed = (!hidden.is_empty()).then(|| Arc::new(difference(self.all(), &hidden)));
        let mut counts = vec![0u32; if allowed.is_some() { self.catalog.nodes.len() } else { 0 }];
        let mut above: Vec<u32> = Vec::new();
        for &t in allowed.as_deref().map_or(&[][..], Vec::as_slice) {
            // A tool on several paths counts once at a node they share.
            above.clear();
            for p in &tools[t as usize].paths {
                self.ancestors(p, |n| above.push(n));
            }
            above.sort_unstable();
            above.dedup();
            for &n in &above {
                counts[n as usize] += 1;
            }
        }
        let nodes: Vec<bool> = match allowed {
            None => vec![true; self.catalog.nodes.len()],
            Some(_) => counts.iter().map(|&c| c > 0).collect(),
        };
        let key = scopes_key(scopes);
        let tool_view = match &allowed {
            None => View::everything(),
            Some(a) => View::of(key, a, tools.len()),
        };
        let node_view = if nodes.iter().all(|&v| v) {
            View::everything()
        } else {
            let ords: Vec<u32> = (0..nodes.len() as u32).filter(|&n| nodes[n as usize]).collect();
            View::of(key, &ords, nodes.len())
        };
        // Only a scope set hiding a tool has restricted views (a node is hidden only with its tools).
        let words_pending = !words && allowed.is_some() && self.index.is_some();
        let (tool_view, node_view) = match words {
            true => (
                self.with_lexicon(tool_view, DocKind::Tool, LEXICON_MAX),
                self.with_lexicon(node_view, DocKind::Node, LEXICON_MAX / 8),
            ),
            false => (tool_view, node_view),
        };
        let visible = allowed.as_ref().and_then(|_| self.cut(&tool_view, &nodes));
        if visible.is_some() {
            counts = Vec::new(); // the cut lists' lengths
        }
        let asked = Mutex::default();
        Scoped { tools: allowed, nodes: Arc::new(nodes), counts, tool_view, node_view, visible, words_pending, asked }
    }

    /// `view` keeping every word's postings inside it, when it is restricted and they fit in
    /// `max` bytes (else as it is: its requests filter a word's postings the first time they
    /// read it).
    fn with_lexicon(&self, view: View, kind: DocKind, max: usize) -> View {
        match self.index.map(|index| index.view_lexicon(kind, &view, max)) {
            Some(Ok(Some(lexicon))) => view.with_lexicon(lexicon),
            _ => view,
        }
    }

    /// The catalogue's lists cut to the tools in `view` and the nodes `nodes` marks, unless
    /// they are too long to keep.
    fn cut(&self, view: &View, nodes: &[bool]) -> Option<Visible> {
        let t = self.table;
        let n = self.catalog.nodes.len();
        let tagged: usize = self.facets.tags().map(|(_, list)| list.len()).sum();
        if t.under.total() + t.direct.total() + tagged + 3 * n > VISIBLE_MAX {
            return None;
        }
        let tools = |list: &'_ [u32]| list.iter().copied().filter(|&o| view.contains(o)).collect::<Vec<u32>>();
        let shown = |list: &'_ [u32]| list.iter().copied().filter(|&c| nodes[c as usize]).collect::<Vec<u32>>();
        Some(Visible {
            under: Lists::collect((0..n as u32).map(|i| tools(t.under.get(i)))),
            direct: Lists::collect((0..n as u32).map(|i| tools(t.direct.get(i)))),
            children: Lists::collect(t.children.iter().map(|c| shown(c))),
            top: shown(&t.top),
            root_direct: tools(self.tools_at(&[])),
            tagged: self
                .facets
                .tags()
                .map(|(tag, list)| (Box::from(tag), tools(list)))
                .filter(|(_, list)| !list.is_empty())
                .collect(),
        })
    }

    /// The tools carrying `tag` (lower case) that `scoped` allows when it keeps them cut, else
    /// every tool carrying it: the caller filters.
    pub(crate) fn tagged<'s>(&'s self, tag: &str, scoped: Option<&'s Scoped>) -> &'s [u32] {
        match scoped.and_then(|s| s.visible.as_ref()) {
            Some(v) => v.tagged.get(tag).map_or(&[], Vec::as_slice),
            None => self.facets.tagged(tag),
        }
    }

    /// The tools `scoped` allows when it keeps its lists cut, else every tool: the caller
    /// filters.
    pub(crate) fn every_tool<'s>(&'s self, scoped: Option<&'s Scoped>) -> &'s [u32] {
        match scoped.filter(|s| s.visible.is_some()).and_then(|s| s.tools.as_deref()) {
            Some(tools) => tools,
            None => self.all(),
        }
    }

    /// The tools `scoped` allows at or below `path` (`directly` at it), sorted, when it keeps
    /// them; else `None`, and the caller filters the catalogue's list.
    pub(crate) fn allowed_tools(&self, path: &[String], directly: bool, scoped: &'_ Scoped) -> Option<Vec<u32>> {
        let v = scoped.visible.as_ref()?;
        match (path.is_empty(), directly) {
            (true, true) => Some(v.root_direct.clone()),
            (true, false) => scoped.tools.as_deref().cloned(),
            (false, _) => {
                let n = self.node_ord(path)?;
                Some(if directly { v.direct.get(n) } else { v.under.get(n) }.to_vec())
            }
        }
    }

    /// The tools directly at `path` that `scoped` allows (every one when `None`), in catalogue
    /// order: its kept list, else the catalogue's, filtered to its view.
    pub(crate) fn tools_at_in(&self, path: &[String], scoped: Option<&Scoped>) -> Vec<u32> {
        match scoped {
            None => self.tools_at(path).to_vec(),
            Some(s) => self
                .allowed_tools(path, true, s)
                .unwrap_or_else(|| self.tools_at(path).iter().copied().filter(|&o| s.tool_view.contains(o)).collect()),
        }
    }

    /// The child nodes of `path` holding a tool `scoped` allows, when it keeps them.
    pub(crate) fn allowed_children(&self, path: &[String], scoped: &'_ Scoped) -> Option<Vec<u32>> {
        let v = scoped.visible.as_ref()?;
        match path.is_empty() {
            true => Some(v.top.clone()),
            false => self.node_ord(path).map(|n| v.children.get(n).to_vec()),
        }
    }

    /// The tools at or below the node `n`: those `scoped` allows when it keeps them cut, else
    /// all of them (the caller filters).
    pub(crate) fn under<'s>(&'s self, n: u32, scoped: Option<&'s Scoped>) -> &'s [u32] {
        match scoped.and_then(|s| s.visible.as_ref()) {
            Some(v) => v.under.get(n),
            None => self.tools_under(&self.catalog.nodes[n as usize].path),
        }
    }

    /// How many tools `scoped` allows at or below the node `n`: read, not counted.
    pub(crate) fn allowed_under(&self, n: u32, scoped: &Scoped) -> usize {
        match (&scoped.visible, scoped.counts.get(n as usize)) {
            (Some(_), _) => self.under(n, Some(scoped)).len(),
            (None, Some(&c)) => c as usize,
            (None, None) => self.tools_under(&self.catalog.nodes[n as usize].path).len(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn subsets_come_smaller_first_and_stop_at_the_most_asked() {
        assert_eq!(super::subsets_by_size(0, 16), vec![Vec::<usize>::new()]);
        let three = super::subsets_by_size(3, 16);
        assert_eq!(three, vec![vec![], vec![0], vec![1], vec![2], vec![0, 1], vec![0, 2], vec![1, 2], vec![0, 1, 2]]);
        let five = super::subsets_by_size(5, 16);
        assert_eq!(
            (five.len(), five[5].clone(), five[15].clone()),
            (16, vec![4], vec![3, 4]),
            "none, 5 alone, 10 pairs"
        );
        assert_eq!(super::subsets_by_size(40, 16).len(), 16);
    }
}
