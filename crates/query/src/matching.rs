//! Matching by name rather than by meaning: a query that is exactly a tool's id or name puts
//! that tool first, and `match: "regex"` selects tools whose id or name a pattern matches (as
//! agent platforms' regex tool search does). Both look only at the tools the filter allows.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};
use regex::{Regex, RegexBuilder};
use toolsearch_catalog::Catalog;

use crate::error::ProtocolError;
use crate::fusion::Scored;
use crate::ranker::Ranker;
use crate::scope::Filter;

/// The confidence of an exact id or name match.
pub const EXACT_CONFIDENCE: f32 = 0.99;
/// Longest pattern accepted, in bytes.
const MAX_PATTERN: usize = 512;
/// Most memory a compiled pattern may take.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Tool ordinals by their exact id, and by their folded id and folded name.
///
/// The tables hold ordinals only, 4 bytes an entry: keys are read from the catalogue when a
/// bucket is probed, never copied (at a million tools, copies of every id and name cost
/// hundreds of megabytes and most of the time an index took to open).
#[derive(Debug)]
pub(crate) struct NameTable {
    hasher: DefaultHashBuilder,
    /// Ordinals by exact id.
    by_id: HashTable<u32>,
    /// Ordinals by folded id, and ordinals | [`BY_NAME`] by folded name.
    by_key: HashTable<u32>,
}

/// Marks an entry of [`NameTable::by_key`] keyed by the tool's name, not its id.
const BY_NAME: u32 = 1 << 31;

/// How a key is compared: trimmed, case-folded (char by char, without allocating).
fn fold(s: &str) -> impl Iterator<Item = char> + Clone + '_ {
    s.trim().chars().flat_map(char::to_lowercase)
}

impl NameTable {
    pub(crate) fn new(catalog: &Catalog) -> NameTable {
        let hasher = DefaultHashBuilder::default();
        let tools = &catalog.tools;
        let (mut by_id, mut by_key) =
            (HashTable::with_capacity(tools.len()), HashTable::with_capacity(2 * tools.len()));
        // Only when the table grows past its capacity (never, sized as it is).
        let folded = |ord: u32| {
            let t = &tools[(ord & !BY_NAME) as usize];
            hash_folded(&hasher, if ord & BY_NAME != 0 { &t.name } else { &t.id }, &mut String::new())
        };
        let mut buf = String::new();
        for (ord, tool) in tools.iter().enumerate() {
            let ord = ord as u32;
            by_id.insert_unique(hasher.hash_one(&tool.id), ord, |&o| hasher.hash_one(&tools[o as usize].id));
            by_key.insert_unique(hash_folded(&hasher, &tool.id, &mut buf), ord, |&o| folded(o));
            by_key.insert_unique(hash_folded(&hasher, &tool.name, &mut buf), ord | BY_NAME, |&o| folded(o));
        }
        NameTable { hasher, by_id, by_key }
    }

    /// The tool whose id is exactly `id`.
    pub(crate) fn by_id(&self, id: &str, catalog: &Catalog) -> Option<u32> {
        self.by_id.find(self.hasher.hash_one(id), |&o| catalog.tools[o as usize].id == id).copied()
    }

    /// Tools whose folded id or name is `query`'s (ids first, each tool once).
    fn exact(&self, query: &str, catalog: &Catalog) -> Vec<u32> {
        let key = fold(query);
        let same = |o: u32| {
            let t = &catalog.tools[(o & !BY_NAME) as usize];
            fold(if o & BY_NAME != 0 { &t.name } else { &t.id }).eq(key.clone())
        };
        let hash = hash_folded(&self.hasher, query, &mut String::new());
        let mut found: Vec<u32> = self.by_key.iter_hash(hash).copied().filter(|&o| same(o)).collect();
        // Ids first, then names; in catalogue order within each.
        found.sort_unstable();
        let mut out: Vec<u32> = Vec::with_capacity(found.len());
        for o in found {
            let ord = o & !BY_NAME;
            if !out.contains(&ord) {
                out.push(ord);
            }
        }
        out
    }
}

/// The hash of `key` folded, folded into `buf` (reused, so building the table allocates
/// nothing per key).
fn hash_folded(hasher: &DefaultHashBuilder, key: &str, buf: &mut String) -> u64 {
    buf.clear();
    let key = key.trim();
    if key.is_ascii() {
        // The same folding as [`fold`], a byte at a time.
        buf.push_str(key);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(fold(key));
    }
    hasher.hash_one(buf.as_str())
}

/// Whether `ord` is in `allowed` (sorted; `None` = every tool).
fn permitted(allowed: Option<&[u32]>, ord: u32) -> bool {
    allowed.is_none_or(|a| a.binary_search(&ord).is_ok())
}

impl Ranker {
    /// `ranked` with the allowed tools whose id or name equals `query` moved to the front, at
    /// [`EXACT_CONFIDENCE`] or more.
    pub(crate) fn promote_exact(&self, query: &str, filter: &Filter, mut ranked: Vec<Scored>) -> Vec<Scored> {
        let exact = self.names().exact(query, self.catalog());
        if exact.is_empty() {
            return ranked;
        }
        let allowed = self.paths().allowed(filter);
        let hits: Vec<u32> = exact.iter().copied().filter(|&o| permitted(allowed.as_deref(), o)).collect();
        if hits.is_empty() {
            return ranked;
        }
        let mut front = Vec::with_capacity(hits.len());
        for ord in hits {
            let found = ranked.iter().position(|s| s.ord == ord).map(|i| ranked.remove(i));
            let score = found.map_or(0.0, |s| s.score);
            let confidence = found.map_or(0.0, |s| s.confidence).max(EXACT_CONFIDENCE);
            front.push(Scored { ord, score, confidence });
        }
        front.extend(ranked);
        front
    }

    /// The allowed tools whose id or name `pattern` matches (case-insensitive unless the
    /// pattern says otherwise), in catalogue order, each at confidence 1.
    pub(crate) fn match_tools(&self, pattern: &str, filter: &Filter) -> Result<Vec<Scored>, ProtocolError> {
        let re = compile(pattern)?;
        let allowed = self.paths().allowed(filter);
        let catalog = self.catalog();
        let candidates: Box<dyn Iterator<Item = u32>> = match &allowed {
            Some(a) => Box::new(a.iter().copied()),
            None => Box::new(0..catalog.tools.len() as u32),
        };
        Ok(candidates
            .filter(|&o| {
                let t = &catalog.tools[o as usize];
                re.is_match(&t.id) || re.is_match(&t.name)
            })
            .map(|ord| Scored { ord, score: 1.0, confidence: 1.0 })
            .collect())
    }
}

/// Compiles a caller's pattern with bounded size (the regex crate matches in linear time, so
/// no pattern can make a search slow).
fn compile(pattern: &str) -> Result<Regex, ProtocolError> {
    if pattern.len() > MAX_PATTERN {
        return Err(ProtocolError::invalid(format!("query: a pattern may be at most {MAX_PATTERN} bytes")));
    }
    RegexBuilder::new(pattern).case_insensitive(true).size_limit(PATTERN_SIZE_LIMIT).build().map_err(|e| {
        let text = e.to_string();
        let first = text.lines().last().unwrap_or("").trim().trim_start_matches("error: ").to_owned();
        ProtocolError::invalid(format!("query is not a valid regular expression: {first}")).with_hints(vec![
            "with match \"regex\" the query is a pattern over tool ids and names, e.g. \"^github\\\\.\" or \"(?i)issue\""
                .into(),
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_checked_and_bounded() {
        assert!(compile("^github\\.").is_ok());
        let bad = compile("(unclosed").unwrap_err();
        assert!(bad.message.contains("not a valid regular expression"), "{}", bad.message);
        assert!(compile(&"a".repeat(MAX_PATTERN + 1)).is_err());
        assert!(compile("(a{1000}){1000}").is_err(), "a pattern over the size limit is refused");
    }

    #[test]
    fn ascii_keys_fold_as_any_other() {
        let h = DefaultHashBuilder::default();
        let slow = |k: &str| h.hash_one(fold(k).collect::<String>());
        for k in ["  GitHub.Create_Issue ", "plain", "", "ÄRGER.Tool"] {
            assert_eq!(hash_folded(&h, k, &mut String::new()), slow(k), "{k:?}");
        }
    }

    #[test]
    fn matching_is_case_insensitive_by_default() {
        assert!(compile("CREATE_issue").unwrap().is_match("github.create_issue"));
    }
}
