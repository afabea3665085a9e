//! [`IndexReader`]: an opened, verified index, ready to serve searches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolsearch_catalog::Catalog;
use toolsearch_embed::Embedder;

use crate::dense::{exact_top_k, read_vectors, Graph, Hit};
use crate::error::{io, IndexError};
use crate::format::{file_sum, FileSum, IndexMeta, CATALOG_FILE, LEXICAL_DIR, META_FILE, VECTORS_FILE};
use crate::lexical::{DocKind, Lexical, View};

/// How to open an index.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Verify every file's sha256 (sizes are always checked).
    pub verify_checksums: bool,
    /// Scopes of at most this many tools are searched by exact scan; larger ones by HNSW.
    pub exact_scan_max: usize,
    /// HNSW search breadth.
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
    catalog: Catalog,
    vectors: Vec<f32>,
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

    /// Opens the index in `dir`, checking the format version and every file.
    ///
    /// Every file is checked before anything parses it. The HNSW graph (the slowest part) is
    /// checked and loaded on a second thread while this one checks and reads the rest.
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
        let (graph_files, other_files): (Vec<&FileSum>, Vec<&FileSum>) =
            meta.files.iter().partition(|f| f.path.starts_with(&format!("{}.hnsw.", meta.hnsw_basename)));
        let verify = |files: &[&FileSum]| -> Result<(), IndexError> {
            if options.verify_checksums {
                for sum in files {
                    if file_sum(dir, &sum.path)?.sha256 != sum.sha256 {
                        return Err(IndexError::Corrupted(dir.join(&sum.path), "checksum mismatch".into()));
                    }
                }
            }
            Ok(())
        };
        let (graph, rest) = std::thread::scope(|s| {
            let graph = s.spawn(|| {
                verify(&graph_files)?;
                Graph::load(dir, &meta.hnsw_basename)
            });
            let rest = verify(&other_files).and_then(|()| read_rest(dir, &meta));
            let graph = graph.join().unwrap_or_else(|_| {
                Err(IndexError::Corrupted(dir.join(&meta.hnsw_basename), "the HNSW graph could not be loaded".into()))
            });
            (graph, rest)
        });
        // A damaged file outside the graph is reported before whatever the graph thread found.
        let (catalog, vectors, lexical) = rest?;
        let graph = graph?;
        if graph.len() != meta.tools as usize && meta.tools > 0 {
            return Err(IndexError::Corrupted(
                dir.join(format!("{}.hnsw.graph", meta.hnsw_basename)),
                "point count differs from the metadata".into(),
            ));
        }
        Ok(IndexReader { dir: dir.to_path_buf(), meta, catalog, vectors, graph, lexical, options })
    }

    /// Fails unless `embedder` is the model this index was built with.
    pub fn check_model(&self, embedder: &dyn Embedder) -> Result<(), IndexError> {
        if embedder.model_sha256() != self.meta.model_sha256 || embedder.dimension() != self.meta.dimension as usize {
            return Err(IndexError::ModelMismatch {
                path: self.dir.join(META_FILE),
                found: format!("{} (sha256 {})", self.meta.model_id, short(&self.meta.model_sha256)),
                expected: format!("{} (sha256 {})", embedder.model_id(), short(embedder.model_sha256())),
            });
        }
        Ok(())
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The metadata.
    pub fn meta(&self) -> &IndexMeta {
        &self.meta
    }

    /// The normalised catalogue the index was built from.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn dim(&self) -> usize {
        self.meta.dimension as usize
    }

    /// Dense top `k` tools for the unit vector `query`. `allowed` (sorted tool ordinals)
    /// restricts the search; small scopes are scanned exactly, large ones through HNSW.
    pub fn dense_tools(&self, query: &[f32], k: usize, allowed: Option<&[u32]>) -> Vec<Hit> {
        let n = self.meta.tools as usize;
        let tools = &self.vectors[..n * self.dim()];
        match allowed {
            None if n <= self.options.exact_scan_max => exact_top_k(tools, self.dim(), query, 0..n as u32, k),
            None => self.graph.search(query, k, self.options.ef_search, None),
            Some(a) if a.len() <= self.options.exact_scan_max => {
                exact_top_k(tools, self.dim(), query, a.iter().copied(), k)
            }
            Some(a) => {
                let filter: Vec<usize> = a.iter().map(|&o| o as usize).collect();
                self.graph.search(query, k, self.options.ef_search.max(2 * k), Some(&filter))
            }
        }
    }

    /// Dense top `k` among the node ordinals `ords`.
    pub fn dense_nodes(&self, query: &[f32], k: usize, ords: impl Iterator<Item = u32>) -> Vec<Hit> {
        let start = self.meta.tools as usize * self.dim();
        exact_top_k(&self.vectors[start..], self.dim(), query, ords, k)
    }

    /// The stored vector of tool `ord`.
    pub fn tool_vector(&self, ord: u32) -> &[f32] {
        let d = self.dim();
        &self.vectors[ord as usize * d..(ord as usize + 1) * d]
    }

    /// The stored vector of node `ord`.
    pub fn node_vector(&self, ord: u32) -> &[f32] {
        let d = self.dim();
        let start = (self.meta.tools as usize + ord as usize) * d;
        &self.vectors[start..start + d]
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
}

/// The catalogue, the vectors and the lexical index of a verified index directory.
fn read_rest(dir: &Path, meta: &IndexMeta) -> Result<(Catalog, Vec<f32>, Lexical), IndexError> {
    let catalog_path = dir.join(CATALOG_FILE);
    let bytes = std::fs::read(&catalog_path).map_err(io(&catalog_path))?;
    let catalog: Catalog =
        serde_json::from_slice(&bytes).map_err(|e| IndexError::Corrupted(catalog_path.clone(), e.to_string()))?;
    drop(bytes);
    if catalog.tools.len() != meta.tools as usize || catalog.nodes.len() != meta.nodes as usize {
        return Err(IndexError::Corrupted(catalog_path, "document counts differ from the metadata".into()));
    }
    // The loaders guarantee these; an index opened without checksum verification might not.
    if let Some(t) = catalog.tools.iter().find(|t| t.paths.is_empty() || t.id.is_empty()) {
        return Err(IndexError::Corrupted(catalog_path, format!("tool {:?} has no id or no path", t.id)));
    }
    if catalog.nodes.iter().any(|n| n.path.is_empty()) {
        return Err(IndexError::Corrupted(catalog_path, "a category has an empty path".into()));
    }
    let rows = meta.tools as usize + meta.nodes as usize;
    let vectors = read_vectors(&dir.join(VECTORS_FILE), rows, meta.dimension as usize)?;
    let lexical = Lexical::open(&dir.join(LEXICAL_DIR))?;
    Ok((catalog, vectors, lexical))
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}
