//! Tools by name: the tool with an exact id, and the tools whose id or name is a query once
//! both are trimmed and case-folded.
//!
//! Each table is a sorted array of entries, the high 32 bits of a key's XXH3 above the tool's
//! ordinal, 8 bytes an entry; keys are read from the catalogue when a hash matches, never
//! copied. The hashes are computed while the lean table is decoded, each tool's strings still
//! in cache, and sorted in parallel: at a million tools that is a few hundredths of a second,
//! where inserting into hash tables after the decode took a quarter to most of one (each
//! insert a cache miss). A lookup is a binary search, a query or two at a time. A sorted
//! array has no probe sequence to flood, so a fixed hash is safe.

use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use toolsearch_catalog::Tool;
use xxhash_rust::xxh3::xxh3_64;

/// Marks an entry of the table by folded key keyed by the tool's name, not its id.
const BY_NAME: u32 = 1 << 31;
const HIGH: u64 = !0xffff_ffff;

/// The name lookups of an opened index.
#[derive(Debug, Default)]
pub(crate) struct Names {
    /// The entries as decoded, until they are sorted.
    unsorted: Mutex<Option<(Vec<u64>, Vec<u64>)>>,
    /// The entries by exact id; by folded id, and (ordinal | [`BY_NAME`]) by folded name.
    sorted: OnceLock<(Vec<u64>, Vec<u64>)>,
}

/// How a key is compared: trimmed, case-folded (char by char, without allocating).
fn fold(s: &str) -> impl Iterator<Item = char> + Clone + '_ {
    s.trim().chars().flat_map(char::to_lowercase)
}

/// The hash of `key` folded, folded into `buf` (reused, so no key allocates).
fn hash_folded(key: &str, buf: &mut String) -> u64 {
    buf.clear();
    let key = key.trim();
    if key.is_ascii() {
        // The same folding as [`fold`], a byte at a time.
        buf.push_str(key);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(fold(key));
    }
    xxh3_64(buf.as_bytes())
}

/// The entry of `ord` under a key hashing to `hash` (kept sorted, entries are searched by
/// [`entries`]).
pub(crate) fn entry(hash: u64, ord: u32) -> u64 {
    (hash & HIGH) | u64::from(ord)
}

/// The values of the entries of sorted `table` whose key hashes like `hash`.
pub(crate) fn entries(table: &[u64], hash: u64) -> impl Iterator<Item = u32> + '_ {
    let high = hash & HIGH;
    let from = table.partition_point(|&e| e < high);
    table[from..].iter().take_while(move |&&e| e & HIGH == high).map(|&e| e as u32)
}

/// Tool `ord`'s entries: by id, then by folded id and by folded name (`buf` is reused).
pub(crate) fn entries_of(ord: u32, tool: &Tool, buf: &mut String) -> (u64, [u64; 2]) {
    let id = entry(xxh3_64(tool.id.as_bytes()), ord);
    (id, [entry(hash_folded(&tool.id, buf), ord), entry(hash_folded(&tool.name, buf), ord | BY_NAME)])
}

impl Names {
    /// The tables of the entries of every tool ([`entries_of`]), to be sorted by
    /// [`Names::sort`] or the first lookup.
    pub(crate) fn new(by_id: Vec<u64>, by_key: Vec<u64>) -> Names {
        Names { unsorted: Mutex::new(Some((by_id, by_key))), sorted: OnceLock::new() }
    }

    /// Sorts the tables (in parallel) unless they are sorted.
    pub(crate) fn sort(&self) {
        self.tables();
    }

    fn tables(&self) -> &(Vec<u64>, Vec<u64>) {
        self.sorted.get_or_init(|| {
            let (mut by_id, mut by_key) =
                self.unsorted.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
            rayon::join(|| by_id.par_sort_unstable(), || by_key.par_sort_unstable());
            (by_id, by_key)
        })
    }

    /// The tool whose id is exactly `id`.
    pub(crate) fn by_id(&self, id: &str, tools: &[Tool]) -> Option<u32> {
        entries(&self.tables().0, xxh3_64(id.as_bytes())).find(|&o| tools.get(o as usize).is_some_and(|t| t.id == id))
    }

    /// Tools whose folded id or name is `query`'s: ids first, then names, in catalogue order
    /// within each, each tool once.
    pub(crate) fn exact(&self, query: &str, tools: &[Tool]) -> Vec<u32> {
        let key = fold(query);
        let same = |o: u32| {
            tools
                .get((o & !BY_NAME) as usize)
                .is_some_and(|t| fold(if o & BY_NAME != 0 { &t.name } else { &t.id }).eq(key.clone()))
        };
        let mut found: Vec<u32> =
            entries(&self.tables().1, hash_folded(query, &mut String::new())).filter(|&o| same(o)).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(id: &str, name: &str) -> Tool {
        Tool { id: id.into(), name: name.into(), ..Tool::default() }
    }

    fn names(tools: &[Tool]) -> Names {
        let (mut by_id, mut by_key) = (Vec::new(), Vec::new());
        for (o, t) in tools.iter().enumerate() {
            let (id, keys) = entries_of(o as u32, t, &mut String::new());
            by_id.push(id);
            by_key.extend(keys);
        }
        Names::new(by_id, by_key)
    }

    #[test]
    fn ids_and_names_are_found_folded_ids_first() {
        let tools = [tool("git.Push", "push"), tool("Push", "send"), tool("mail.send", "Git.push")];
        let n = names(&tools);
        assert_eq!(n.by_id("Push", &tools), Some(1));
        assert_eq!(n.by_id("push", &tools), None, "ids are exact");
        assert_eq!(n.exact("  GIT.PUSH ", &tools), vec![0, 2], "the id match first, then the name match");
        assert_eq!(n.exact("push", &tools), vec![1, 0]);
        assert_eq!(n.exact("SEND", &tools), vec![1]);
        assert!(n.exact("pull", &tools).is_empty());
    }

    #[test]
    fn ascii_keys_fold_as_any_other() {
        let slow = |k: &str| xxh3_64(fold(k).collect::<String>().as_bytes());
        for k in ["  GitHub.Create_Issue ", "plain", "", "ÄRGER.Tool"] {
            assert_eq!(hash_folded(k, &mut String::new()), slow(k), "{k:?}");
        }
        let tools = [tool("ÄRGER.Tool", "x")];
        assert_eq!(names(&tools).exact("ärger.tool", &tools), vec![0]);
    }

    #[test]
    fn an_empty_catalogue_finds_nothing() {
        let n = Names::default();
        assert_eq!(n.by_id("x", &[]), None);
        assert!(n.exact("x", &[]).is_empty());
    }
}
