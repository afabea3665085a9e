//! [`IndexReader`]: an opened, verified index, ready to serve searches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolsearch_catalog::{Catalog, Tool};
use toolsearch_embed::Embedder;

use crate::blocks::{self, BLOCKS_FILE, BLOCK_CHECKED};
use crate::dense::{exact_top_k, Hit};
use crate::error::IndexError;
use crate::format::{file_sum, IndexMeta, CATALOG_FILE, GRAPH_FILE, HASHES_FILE, LEXICAL_DIR, VECTORS_FILE};
use crate::graph::Graph;
use crate::lexical::{DocKind, Lexical, Lexicon, TermCount, View};
use crate::lookups::{NodePaths, ToolFacets};
use crate::store::CatalogStore;
use crate::vectors::Vectors;

/// How to open an index.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Check every byte against its checksum before it is used: on open, or block by block
    /// on first use ([`IndexReader::open_with`]). Sizes are always checked.
    pub verify_checksums: bool,
    /// Scopes of at most this many tools are searched by exact scan; larger ones by HNSW.
    pub exact_scan_max: usize,
    /// HNSW search breadth at 10k tools. A larger graph is searched more broadly, three times
    /// as broadly for each tenfold ([`IndexReader::search_breadth`]), and never more narrowly
    /// than the number of results asked for.
    pub ef_search: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { verify_checksums: true, exact_scan_max: 5_000, ef_search: 64 }
    }
}

/// An opened index. `Send + Sync`; all methods take `&self`.
pub struct IndexReader {
    dir: PathBuf,
    meta: IndexMeta,
    catalog: CatalogStore,
    vectors: Vectors,
    graph: Graph,
    lexical: Lexical,
    options: OpenOptions,
}

impl std::fmt::Debug for IndexReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexReader").field("dir", &self.dir).field("tools", &self.meta.tools).finish()
    }
}

impl IndexReader {
    /// Opens the index in `dir` with default options.
    pub fn open(dir: &Path) -> Result<IndexReader, IndexError> {
        IndexReader::open_with(dir, OpenOptions::default())
    }

    /// Opens the index in `dir`, checking the format version and every file's size.
    ///
    /// No byte is used before it is checked, but not every byte is checked here: the lean
    /// table is checked as it is read, the graph and the BM25 index whole (both are read on
    /// open or by the first search anyway, and are a tenth of the index), and the vectors and
    /// tool records, most of an index's bytes, one 4 KiB block at a time the first time a
    /// search or a record read touches it (`blocks`). So opening a million tools reads about
    /// a fifth of the index, and a corrupted block is an error naming its file when it is met,
    /// never an answer computed from it. `toolsearch verify` checks every byte at once.
    ///
    /// A rebuild may swap the directory while it is being opened. The answer is then the old
    /// index or the new one, never a mix: the build generation in the metadata is read before
    /// and after, and an open that straddled a swap (whether it failed or not) is done again.
    pub fn open_with(dir: &Path, options: OpenOptions) -> Result<IndexReader, IndexError> {
        const ATTEMPTS: usize = 8;
        let generation = || IndexMeta::read(dir).map(|m| m.generation).ok();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let before = generation();
            let result = IndexReader::open_once(dir, options.clone());
            let after = generation();
            let stable = match &result {
                Ok(r) => after == Some(r.meta.generation),
                Err(_) => before == after,
            };
            if stable || attempt == ATTEMPTS {
                return result;
            }
        }
    }

    /// One attempt at opening: may fail, or mix two builds, if a rebuild swaps the directory
    /// meanwhile ([`IndexReader::open_with`] detects that).
    fn open_once(dir: &Path, options: OpenOptions) -> Result<IndexReader, IndexError> {
        let meta = IndexMeta::read(dir)?;
        for sum in &meta.files {
            let path = dir.join(&sum.path);
            let len = std::fs::metadata(&path)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => IndexError::Corrupted(path.clone(), "missing".into()),
                    _ => IndexError::Io(path.clone(), e),
                })?
                .len();
            if len != sum.len {
                return Err(IndexError::Corrupted(path, format!("{len} bytes, expected {}", sum.len)));
            }
        }
        let (tools, nodes) = (meta.tools as usize, meta.nodes as usize);
        let sum_of = |rel: &str| meta.files.iter().find(|f| f.path == rel);
        let table = sum_of(CATALOG_FILE).map(|f| f.xxh3).filter(|_| options.verify_checksums);
        // The lean table is decoded while the other files are checked and mapped: side by side,
        // the two take the time of the longer (the table's, from a few thousand tools on).
        let (rest, catalog) = rayon::join(
            || -> Result<_, IndexError> {
                let mut sums = None;
                if options.verify_checksums {
                    for sum in meta.files.iter().filter(|s| checked_whole_on_open(&s.path)) {
                        if file_sum(dir, &sum.path)?.xxh3 != sum.xxh3 {
                            return Err(IndexError::Corrupted(dir.join(&sum.path), "checksum mismatch".into()));
                        }
                    }
                    let lens = BLOCK_CHECKED.map(|rel| sum_of(rel).map_or(0, |f| f.len));
                    sums = Some(blocks::read(dir, sum_of(BLOCKS_FILE).map(|f| f.xxh3), lens)?);
                }
                let (vector_sums, record_sums) = sums.map(|[v, r]| (v, r)).unzip();
                let vectors = Vectors::open_checked(
                    &dir.join(VECTORS_FILE),
                    tools + nodes,
                    meta.dimension as usize,
                    vector_sums,
                )?;
                let graph = Graph::open(&dir.join(GRAPH_FILE), tools)?;
                let lexical = Lexical::open(&dir.join(LEXICAL_DIR))?;
                Ok((record_sums, vectors, graph, lexical))
            },
            || CatalogStore::open(dir, tools, nodes, table),
        );
        // A file checked whole is named first, as when the checks ran before the table's read.
        let (record_sums, vectors, graph, lexical) = rest?;
        let mut catalog = catalog?;
        catalog.check_records(record_sums);
        Ok(IndexReader { dir: dir.to_path_buf(), meta, catalog, vectors, graph, lexical, options })
    }

    /// Fails unless `embedder` is the model this index was built with.
    pub fn check_model(&self, embedder: &dyn Embedder) -> Result<(), IndexError> {
        self.meta.check_model(&self.dir, embedder)
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The metadata.
    pub fn meta(&self) -> &IndexMeta {
        &self.meta
    }

    /// The lean catalogue: every category and group whole, every tool with its id, name,
    /// paths, summary, tags, scopes, group and version, but without description, schemas,
    /// usage notes, examples or metadata, which [`IndexReader::tool_record`] reads on demand.
    pub fn catalog(&self) -> &Catalog {
        self.catalog.lean()
    }

    /// The ordinal of the tool whose id is exactly `id`.
    pub fn tool_by_id(&self, id: &str) -> Option<u32> {
        self.catalog.names().by_id(id, &self.catalog().tools)
    }

    /// The tools whose id or name is `query` once both are trimmed and case-folded: id
    /// matches first, then name matches, in catalogue order within each, each tool once.
    pub fn tools_named(&self, query: &str) -> Vec<u32> {
        self.catalog.names().exact(query, &self.catalog().tools)
    }

    /// Per tool, by ordinal: the ordinal of the category node at its path when it has one
    /// path and a node is there, else [`NO_NODE`](crate::NO_NODE) (stored in the table when it
    /// is written, so neither the open nor the engine's path table looks a tool's path up;
    /// `toolsearch verify` checks each against its path).
    pub fn tool_nodes(&self) -> &[u32] {
        self.catalog.tool_nodes()
    }

    /// The category nodes of [`IndexReader::catalog`] by path (made as the table is decoded).
    pub fn node_paths(&self) -> &NodePaths {
        self.catalog.node_paths()
    }

    /// The ordinal of the category node at `path`, if there is one.
    pub fn node_by_path(&self, path: &[String]) -> Option<u32> {
        self.node_paths().find(&self.catalog().nodes, path)
    }

    /// The tools by lower-cased tag, and those that require scopes (found as the table is
    /// decoded, each tool's tags and scopes still in cache).
    pub fn tool_facets(&self) -> &ToolFacets {
        self.catalog.facets()
    }

    /// Tool `ord`'s full record, read from the index.
    pub fn tool_record(&self, ord: u32) -> Result<Tool, IndexError> {
        self.catalog.tool(ord)
    }

    /// Tool `ord`'s full record as stored (one JSON object), its blocks checked, not parsed:
    /// what changed in a tool between two indexes, found without decoding either.
    pub fn tool_record_bytes(&self, ord: u32) -> Result<&[u8], IndexError> {
        self.catalog.record_bytes(ord)
    }

    /// The whole normalised catalogue the index was built from, every tool record read.
    pub fn full_catalog(&self) -> Result<Catalog, IndexError> {
        self.catalog.full()
    }

    /// Dense top `k` tools for the unit vector `query`. `allowed` (sorted tool ordinals)
    /// restricts the search; small scopes are scanned exactly, large ones through HNSW.
    ///
    /// Fails if a vector it read is in a corrupted block (as do every dense method).
    pub fn dense_tools(&self, query: &[f32], k: usize, allowed: Option<&[u32]>) -> Result<Vec<Hit>, IndexError> {
        let n = self.meta.tools as usize;
        let hits = match allowed {
            None if n <= self.options.exact_scan_max => exact_top_k(&self.vectors, query, 0..n as u32, k),
            None => self.graph.search(&self.vectors, query, k, self.search_breadth(), None),
            Some(a) if a.len() <= self.options.exact_scan_max => {
                exact_top_k(&self.vectors, query, a.iter().copied(), k)
            }
            Some(a) => self.graph.search(&self.vectors, query, k, self.search_breadth().max(2 * k), Some(a)),
        };
        self.vectors.fault().map(|()| hits)
    }

    /// Dense top `k` among the tool ordinals `ords` by exact scan, however many they are: its
    /// time depends on their number alone, not on the tools left out (a filtered graph walk
    /// takes longer where the tools left out crowd the query's neighbourhood).
    pub fn dense_tools_exact(&self, query: &[f32], k: usize, ords: &[u32]) -> Result<Vec<Hit>, IndexError> {
        let hits = exact_top_k(&self.vectors, query, ords.iter().copied(), k);
        self.vectors.fault().map(|()| hits)
    }

    /// The HNSW search breadth for this index: [`OpenOptions::ef_search`] at 10k tools, three
    /// times that for each tenfold above (192 at 100k, 576 at 1M with the default 64), at most
    /// 16 times. Chosen by `cargo bench --bench graph` on realistic vectors: recall@10 0.997 at
    /// 100k (p50 0.39 ms) and 0.97 at 1M (p50 under 1.1 ms); docs/graph.md.
    pub fn search_breadth(&self) -> usize {
        breadth(self.meta.tools as usize, self.options.ef_search)
    }

    /// Dense top `k` among the node ordinals `ords`.
    pub fn dense_nodes(
        &self,
        query: &[f32],
        k: usize,
        ords: impl Iterator<Item = u32>,
    ) -> Result<Vec<Hit>, IndexError> {
        let tools = self.meta.tools;
        let hits = exact_top_k(&self.vectors, query, ords.map(|o| o + tools), k);
        self.vectors.fault().map(|()| hits.into_iter().map(|h| Hit { ord: h.ord - tools, ..h }).collect())
    }

    /// The stored vector of tool `ord` (f32, from the stored f16).
    pub fn tool_vector(&self, ord: u32) -> Result<Vec<f32>, IndexError> {
        let v = self.vectors.to_f32(ord);
        self.vectors.fault().map(|()| v)
    }

    /// The stored vector of node `ord`.
    pub fn node_vector(&self, ord: u32) -> Result<Vec<f32>, IndexError> {
        let v = self.vectors.to_f32(self.meta.tools + ord);
        self.vectors.fault().map(|()| v)
    }

    /// Cosine of tool `ord`'s stored vector with the unit vector `query`.
    pub fn tool_score(&self, ord: u32, query: &[f32]) -> Result<f32, IndexError> {
        let s = self.vectors.score(ord, query);
        self.vectors.fault().map(|()| s)
    }

    /// Cosine of node `ord`'s stored vector with the unit vector `query`.
    pub fn node_score(&self, ord: u32, query: &[f32]) -> Result<f32, IndexError> {
        let s = self.vectors.score(self.meta.tools + ord, query);
        self.vectors.fault().map(|()| s)
    }

    /// Approximate dense top `k` tools through the graph with breadth `ef`, whatever the
    /// catalogue's size (benchmarks compare it with [`IndexReader::exact_tools`]).
    pub fn graph_tools(&self, query: &[f32], k: usize, ef: usize) -> Result<Vec<Hit>, IndexError> {
        let hits = self.graph.search(&self.vectors, query, k, ef, None);
        self.vectors.fault().map(|()| hits)
    }

    /// Exact dense top `k` tools over the stored vectors.
    pub fn exact_tools(&self, query: &[f32], k: usize) -> Result<Vec<Hit>, IndexError> {
        let hits = exact_top_k(&self.vectors, query, 0..self.meta.tools, k);
        self.vectors.fault().map(|()| hits)
    }

    /// BM25 top `k` documents of `kind` for `text` inside the category `scope` (display form),
    /// restricted to the sorted ordinals `allowed` when given, scored with the statistics of
    /// the documents in `view` (the caller's; it must contain `allowed`).
    pub fn lexical(
        &self,
        text: &str,
        kind: DocKind,
        scope: Option<&str>,
        allowed: Option<&Arc<Vec<u32>>>,
        view: &View,
        k: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        self.lexical.search(text, kind, scope, allowed, view, k)
    }

    /// The distinct analysed terms of `text`, each with the number of documents of `kind` in
    /// `view` that hold it: what [`IndexReader::lexical`] would match, term by term.
    pub fn term_coverage(&self, text: &str, kind: DocKind, view: &View) -> Result<Vec<TermCount>, IndexError> {
        self.lexical.coverage(text, kind, view)
    }

    /// The postings of every word of `kind` inside the restricted `view`, for
    /// [`View::with_lexicon`]: one walk of every posting list of the kind, so that no request of
    /// the view walks one. `None` when `view` is every document, or when they would pass
    /// `max_bytes`.
    pub fn view_lexicon(
        &self,
        kind: DocKind,
        view: &View,
        max_bytes: usize,
    ) -> Result<Option<Arc<Lexicon>>, IndexError> {
        Ok(self.lexical.lexicon(kind, view, max_bytes)?.map(Arc::new))
    }

    /// Every distinct analysed term of `text`, as documents are indexed.
    pub fn analysed_terms(&self, text: &str) -> std::collections::HashSet<String> {
        self.lexical.all_terms(text)
    }
}

/// Whether the file `rel` of an index is checked whole when it opens: not the files checked
/// by block, nor the table and the block sums (each checked on the bytes read, so read once),
/// nor the text hashes (read only by a rebuild, which checks them itself).
fn checked_whole_on_open(rel: &str) -> bool {
    !BLOCK_CHECKED.contains(&rel) && ![CATALOG_FILE, BLOCKS_FILE, HASHES_FILE].contains(&rel)
}

/// The search breadth over `tools` tools for a breadth of `base` at 10k (see
/// [`IndexReader::search_breadth`]).
fn breadth(tools: usize, base: usize) -> usize {
    let tens = (tools.max(1) as f64 / 10_000.0).log10().max(0.0);
    (base as f64 * 3f64.powf(tens).min(16.0)).round() as usize
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_larger_graph_is_searched_more_broadly() {
        let b = |n| super::breadth(n, 64);
        assert_eq!((b(0), b(5_000), b(10_000)), (64, 64, 64));
        assert_eq!((b(100_000), b(1_000_000)), (192, 576));
        assert_eq!(b(1_000_000_000), 1024, "at most 16 times");
        assert!((10_000..1_000_000).step_by(10_000).all(|n| b(n) <= b(n + 10_000)), "never narrower for more tools");
    }
}
