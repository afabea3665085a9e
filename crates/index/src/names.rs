//! Tools by name: the tool with an exact id, and the tools whose id or name is a query once
//! both are trimmed and case-folded.
//!
//! Each table is a sorted array of entries, the high 32 bits of a key's XXH3 above the tool's
//! ordinal, 8 bytes an entry; keys are read from the catalogue when a hash matches, never
//! copied. The tables are made and sorted when `catalog.bin` is written and used in place
//! from its memory map: an open neither hashes a key nor sorts (at a million tools, hashing
//! while decoding and sorting after cost 0.2 s of CPU of every open), and the tables' pages
//! are read from the page cache only where a lookup touches them. A lookup is a binary
//! search. A sorted array has no probe sequence to flood, so a fixed hash is safe.

use rayon::prelude::*;
use toolsearch_catalog::Tool;
use xxhash_rust::xxh3::xxh3_64;

/// Marks an entry of the table by folded key keyed by the tool's name, not its id.
const BY_NAME: u32 = 1 << 31;
const HIGH: u64 = !0xffff_ffff;

/// The name lookups of an opened index: the two tables [`Tables`] made, in place.
#[derive(Debug)]
pub(crate) struct Names {
    words: Words,
    /// Tools: the first `tools` words are the table by exact id, the next `2 * tools` the
    /// table by folded id and name.
    tools: usize,
}

/// Where the tables' words are.
#[derive(Debug)]
enum Words {
    /// In a map of `catalog.bin`, from this byte offset of the map (8-byte aligned; the
    /// words are little-endian, as is every machine this crate builds for).
    Mapped(memmap2::Mmap, usize),
    /// Copied out (tables decoded from bytes that are not a map, or not aligned).
    Owned(Vec<u64>),
}

impl Default for Names {
    fn default() -> Names {
        Names { words: Words::Owned(Vec::new()), tools: 0 }
    }
}

/// The bytes [`write_tables`] writes for `tools` tools.
pub(crate) fn tables_len(tools: usize) -> Option<usize> {
    tools.checked_mul(3 * 8)
}

/// The tables of tools added in ordinal order, sorted when finished: by exact id, then by
/// folded id and by folded name ([`entries_of`]).
#[derive(Default)]
pub(crate) struct Tables {
    by_id: Vec<u64>,
    by_key: Vec<u64>,
    buf: String,
}

impl Tables {
    /// Adds the next tool.
    pub(crate) fn add(&mut self, tool: &Tool) {
        let ord = self.by_id.len() as u32;
        let (id, keys) = entries_of(ord, tool, &mut self.buf);
        self.by_id.push(id);
        self.by_key.extend(keys);
    }

    /// The two tables, sorted.
    pub(crate) fn finish(mut self) -> (Vec<u64>, Vec<u64>) {
        rayon::join(|| self.by_id.par_sort_unstable(), || self.by_key.par_sort_unstable());
        (self.by_id, self.by_key)
    }
}

/// The sorted tables of `tools`.
#[cfg(test)]
pub(crate) fn tables_of<'a>(tools: impl Iterator<Item = &'a Tool>) -> (Vec<u64>, Vec<u64>) {
    let mut tables = Tables::default();
    tools.for_each(|t| tables.add(t));
    tables.finish()
}

/// Writes the tables (little-endian words, [`tables_len`] bytes).
pub(crate) fn write_tables(
    out: &mut impl std::io::Write,
    (by_id, by_key): &(Vec<u64>, Vec<u64>),
) -> std::io::Result<()> {
    for &e in by_id.iter().chain(by_key) {
        out.write_all(&e.to_le_bytes())?;
    }
    Ok(())
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
fn entry(hash: u64, ord: u32) -> u64 {
    (hash & HIGH) | u64::from(ord)
}

/// The values of the entries of sorted `table` whose key hashes like `hash`.
fn entries(table: &[u64], hash: u64) -> impl Iterator<Item = u32> + '_ {
    let high = hash & HIGH;
    let from = table.partition_point(|&e| e < high);
    table[from..].iter().take_while(move |&&e| e & HIGH == high).map(|&e| e as u32)
}

/// Tool `ord`'s entries: by id, then by folded id and by folded name (`buf` is reused).
fn entries_of(ord: u32, tool: &Tool, buf: &mut String) -> (u64, [u64; 2]) {
    let id = entry(xxh3_64(tool.id.as_bytes()), ord);
    (id, [entry(hash_folded(&tool.id, buf), ord), entry(hash_folded(&tool.name, buf), ord | BY_NAME)])
}

impl Names {
    /// The tables of a table of `tools` tools mapped in `map`, from byte `at` (checked to be
    /// in the map; words not aligned in memory are copied out).
    pub(crate) fn mapped(map: memmap2::Mmap, at: usize, tools: usize) -> Names {
        match Names::in_place(&map, at, tools) {
            Some(_) => Names { words: Words::Mapped(map, at), tools },
            None => Names::copied(&map, at, tools),
        }
    }

    /// The tables of `tools` tools written at byte `at` of `bytes`, copied out.
    pub(crate) fn copied(bytes: &[u8], at: usize, tools: usize) -> Names {
        let len = tables_len(tools).unwrap_or(0);
        let words = bytes.get(at..at.saturating_add(len)).unwrap_or_default();
        let words = words.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect();
        Names { words: Words::Owned(words), tools }
    }

    /// The words of the tables at byte `at` of `bytes`, if they are there and aligned.
    fn in_place(bytes: &[u8], at: usize, tools: usize) -> Option<&[u64]> {
        let bytes = bytes.get(at..at.checked_add(tables_len(tools)?)?)?;
        // SAFETY: any bits are a valid u64; `align_to` puts in the middle only aligned words.
        let (before, words, _) = unsafe { bytes.align_to::<u64>() };
        (before.is_empty() && words.len() == 3 * tools).then_some(words)
    }

    /// The tables: by exact id, and by folded id and name.
    fn tables(&self) -> (&[u64], &[u64]) {
        let words = match &self.words {
            Words::Mapped(map, at) => Names::in_place(map, *at, self.tools).unwrap_or_default(),
            Words::Owned(words) => words,
        };
        words.split_at(self.tools.min(words.len()))
    }

    /// The tool whose id is exactly `id`.
    pub(crate) fn by_id(&self, id: &str, tools: &[Tool]) -> Option<u32> {
        entries(self.tables().0, xxh3_64(id.as_bytes())).find(|&o| tools.get(o as usize).is_some_and(|t| t.id == id))
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
            entries(self.tables().1, hash_folded(query, &mut String::new())).filter(|&o| same(o)).collect();
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
        let mut bytes = Vec::new();
        write_tables(&mut bytes, &tables_of(tools.iter())).unwrap();
        assert_eq!(Some(bytes.len()), tables_len(tools.len()));
        Names::copied(&bytes, 0, tools.len())
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
    fn tables_mapped_in_place_find_as_tables_copied() {
        let tools: Vec<Tool> = (0..50).map(|i| tool(&format!("T{i}"), &format!("Name {}", i % 7))).collect();
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &[0; 16]).unwrap();
        write_tables(&mut file, &tables_of(tools.iter())).unwrap();
        // SAFETY: the temporary file is not changed while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let n = Names::mapped(map, 16, tools.len());
        assert!(matches!(n.words, Words::Mapped(..)), "aligned words are used in place");
        assert_eq!(n.by_id("T13", &tools), Some(13));
        assert_eq!(n.exact("name 6", &tools), vec![6, 13, 20, 27, 34, 41, 48]);
    }

    #[test]
    fn an_empty_catalogue_finds_nothing() {
        let n = Names::default();
        assert_eq!(n.by_id("x", &[]), None);
        assert!(n.exact("x", &[]).is_empty());
    }
}
