//! Category scopes: resolving a requested path, and the tools and child nodes under a path.

use hashbrown::HashMap;
use toolsearch_catalog::{display_path, Catalog, CategoryPath};

/// What a request restricts the catalogue to: a category path (empty = everything), tags (a
/// tool must carry all of them; compared case-insensitively) and the caller's scopes (a tool
/// whose `requires` are not all held does not exist for the caller; `None` = trusted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Filter {
    /// Category path prefix.
    pub path: CategoryPath,
    /// Required tags; `!tag` requires a tool not to carry `tag`.
    pub tags: Vec<String>,
    /// The caller's scopes, sorted; `None` for a trusted caller.
    pub scopes: Option<Vec<String>>,
}

impl Filter {
    /// The same filter over another path.
    pub fn at(&self, path: &[String]) -> Filter {
        Filter { path: path.to_vec(), ..self.clone() }
    }

    /// Whether the filter hides anything besides the path (tags or a restricted caller).
    pub fn restricts(&self) -> bool {
        !self.tags.is_empty() || self.scopes.is_some()
    }
}

/// Lookup tables over the category graph, built once per engine (when an index opens: at a
/// million tools they are built in a fraction of a second, each key allocated once, never
/// per lookup; hashbrown's seeded foldhash, not SipHash).
pub(crate) struct PathTable {
    node_by_path: HashMap<CategoryPath, u32>,
    node_by_display: HashMap<String, Vec<u32>>,
    /// Tool ordinals at or below each path but the root (that is [`PathTable::all`]), sorted.
    under: HashMap<CategoryPath, Vec<u32>>,
    /// Tool ordinals directly at each path, sorted.
    direct: HashMap<CategoryPath, Vec<u32>>,
    /// Child node ordinals of each path.
    children: HashMap<CategoryPath, Vec<u32>>,
    /// Tool ordinals carrying each (lower-cased) tag, sorted.
    tagged: HashMap<String, Vec<u32>>,
    /// Tools that require scopes, with those scopes, sorted by ordinal.
    restricted: Vec<(u32, Vec<String>)>,
    /// Every tool ordinal, sorted.
    all: Vec<u32>,
}

impl PathTable {
    pub(crate) fn new(catalog: &Catalog) -> PathTable {
        let mut t = PathTable {
            node_by_path: HashMap::new(),
            node_by_display: HashMap::new(),
            under: HashMap::new(),
            direct: HashMap::new(),
            children: HashMap::new(),
            tagged: HashMap::new(),
            restricted: Vec::new(),
            all: (0..catalog.tools.len() as u32).collect(),
        };
        for (i, n) in catalog.nodes.iter().enumerate() {
            t.node_by_path.insert(n.path.clone(), i as u32);
            t.node_by_display.entry(display_path(&n.path).to_lowercase()).or_default().push(i as u32);
            push(&mut t.children, &n.path[..n.path.len() - 1], i as u32);
        }
        for (i, tool) in catalog.tools.iter().enumerate() {
            let ord = i as u32;
            for p in &tool.paths {
                push(&mut t.direct, p, ord);
                for d in 1..=p.len() {
                    push(&mut t.under, &p[..d], ord);
                }
            }
            if !tool.requires.is_empty() {
                t.restricted.push((ord, tool.requires.clone()));
            }
            for tag in &tool.tags {
                let tag = tag.to_lowercase();
                match t.tagged.get_mut(&tag) {
                    Some(list) if list.last() == Some(&ord) => {}
                    Some(list) => list.push(ord),
                    None => {
                        t.tagged.insert(tag, vec![ord]);
                    }
                }
            }
        }
        for list in t.under.values_mut().chain(t.direct.values_mut()) {
            list.sort_unstable();
            list.dedup();
            list.shrink_to_fit();
        }
        t
    }

    /// The path `segments` (parsed by the path rule) names among the categories `visible`
    /// accepts, if any: the exact path first, then a case-insensitive match when exactly one
    /// visible category has it (so a category the caller cannot see never makes a name
    /// ambiguous, nor resolves it).
    pub(crate) fn resolve(
        &self,
        segments: CategoryPath,
        catalog: &Catalog,
        visible: impl Fn(u32) -> bool,
    ) -> Option<CategoryPath> {
        if segments.is_empty() {
            return Some(segments);
        }
        if let Some(&n) = self.node_by_path.get(&segments) {
            if visible(n) {
                return Some(segments);
            }
        }
        let joined = display_path(&segments).to_lowercase();
        let matches: Vec<u32> =
            self.node_by_display.get(&joined).into_iter().flatten().copied().filter(|&n| visible(n)).collect();
        match matches.as_slice() {
            [only] => Some(catalog.nodes[*only as usize].path.clone()),
            _ => None,
        }
    }

    /// The tools a caller with `scopes` may see, sorted; `None` when it may see every tool.
    pub(crate) fn visible_tools(&self, scopes: &Option<Vec<String>>) -> Option<Vec<u32>> {
        self.allowed(&Filter { scopes: scopes.clone(), ..Filter::default() })
    }

    /// The ordinal of the category at `path`, if there is one.
    pub(crate) fn node_ord(&self, path: &[String]) -> Option<u32> {
        self.node_by_path.get(path).copied()
    }

    /// Tools at or below `path`, sorted.
    pub(crate) fn tools_under(&self, path: &[String]) -> &[u32] {
        if path.is_empty() {
            return &self.all;
        }
        self.under.get(path).map_or(&[], Vec::as_slice)
    }

    /// The tools a filter allows, sorted; `None` when it allows every tool.
    pub(crate) fn allowed(&self, filter: &Filter) -> Option<Vec<u32>> {
        let mut allowed: Option<Vec<u32>> = (!filter.path.is_empty()).then(|| self.tools_under(&filter.path).to_vec());
        for tag in &filter.tags {
            // `!tag` keeps the tools without it.
            let (tag, without) = match tag.trim().strip_prefix('!') {
                Some(t) => (t, true),
                None => (tag.trim(), false),
            };
            let with_tag = self.tagged.get(&tag.trim().to_lowercase()).map_or(&[][..], Vec::as_slice);
            allowed = Some(match (allowed, without) {
                (None, false) => with_tag.to_vec(),
                (Some(a), false) => intersect(&a, with_tag),
                (None, true) => difference(&self.all, with_tag),
                (Some(a), true) => difference(&a, with_tag),
            });
        }
        if let Some(scopes) = &filter.scopes {
            let hidden: Vec<u32> = self
                .restricted
                .iter()
                .filter(|(_, requires)| requires.iter().any(|r| scopes.binary_search(r).is_err()))
                .map(|(o, _)| *o)
                .collect();
            if !hidden.is_empty() {
                let base = allowed.unwrap_or_else(|| self.all.clone());
                allowed = Some(difference(&base, &hidden));
            }
        }
        allowed
    }

    /// For a restricted caller, which nodes (by ordinal) hold a tool it may see, computed in
    /// one pass over its tools; `None` for a trusted caller (every node is visible).
    pub(crate) fn visible_nodes(&self, scopes: &Option<Vec<String>>, catalog: &Catalog) -> Option<Vec<bool>> {
        scopes.as_ref()?;
        let allowed = self.allowed(&Filter { scopes: scopes.clone(), ..Filter::default() });
        let mut visible = vec![allowed.is_none(); catalog.nodes.len()];
        for &t in allowed.as_deref().unwrap_or(&[]) {
            for p in &catalog.tools[t as usize].paths {
                for d in 1..=p.len() {
                    if let Some(&n) = self.node_by_path.get(&p[..d]) {
                        visible[n as usize] = true;
                    }
                }
            }
        }
        Some(visible)
    }

    /// Tools directly at `path`, sorted.
    pub(crate) fn tools_at(&self, path: &[String]) -> &[u32] {
        self.direct.get(path).map_or(&[], Vec::as_slice)
    }

    /// Child nodes of `path`.
    pub(crate) fn children(&self, path: &[String]) -> &[u32] {
        self.children.get(path).map_or(&[], Vec::as_slice)
    }
}

/// Appends `ord` to the list at `key`, allocating the key only when it is new.
fn push(map: &mut HashMap<CategoryPath, Vec<u32>>, key: &[String], ord: u32) {
    match map.get_mut(key) {
        Some(list) => list.push(ord),
        None => {
            map.insert(key.to_vec(), vec![ord]);
        }
    }
}

/// The items of sorted `a` that are not in sorted `b`.
pub(crate) fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|x| b.binary_search(x).is_err()).collect()
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
