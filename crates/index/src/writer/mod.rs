//! The offline indexer: catalogue in, index directory out.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use toolsearch_catalog::{display_path, Catalog, CatalogWarning};
use toolsearch_embed::Embedder;

use crate::atomic::Staging;
use crate::document::{node_dense_text, node_lexical, tool_dense_text, tool_lexical};
use crate::error::IndexError;
use crate::format::{
    file_sum, text_hash, write_hashes, IndexMeta, FORMAT_VERSION, GRAPH_FILE, HASHES_FILE, LEXICAL_DIR, VECTORS_FILE,
};
use crate::graph::Graph;
use crate::graph_parts::PART_ROWS;
use crate::lexical::{DocKind, LexicalWriter};
use crate::progress::Reporter;
use crate::source::{Source, Streamed};
use crate::vectors::{VectorFile, Vectors};

mod embedding;
mod previous;
mod target;

use embedding::embed_missing;
use previous::Previous;
use target::{check_target, data_files, resolve_target};

/// How to build an index.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Where embedding progress goes (nowhere by default).
    pub progress: Reporter,
    /// An index to take vectors (by document text hash) and its graph from, instead of the
    /// one at the output (which gives them when it was built with the same model), and, when
    /// the output holds no index, its calibration and query adapter: one that cannot give its
    /// vectors (another model, a file that does not verify) fails the build, naming why
    /// ([`IndexError::Unreusable`]).
    pub reuse_from: Option<PathBuf>,
    /// Release the embedder's model ([`Embedder::release`]) once every document is embedded,
    /// so the graph and BM25 phases run without it: for a one-shot build (the CLI), not for a
    /// server that goes on answering queries with the same embedder.
    pub release_model: bool,
}

/// What a build did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuildReport {
    /// Tool documents.
    pub tools: usize,
    /// Node documents.
    pub nodes: usize,
    /// Documents embedded now.
    pub embedded: usize,
    /// Documents whose vector was reused from a previous index.
    pub reused: usize,
    /// Seconds spent embedding.
    pub embed_seconds: f64,
    /// Seconds spent building the HNSW graph.
    pub graph_seconds: f64,
    /// Whether the previous index's graph was updated (few tools changed) rather than the
    /// graph built from scratch.
    pub graph_updated: bool,
    /// Points the graph's builder left unreachable on layer 0 that the repair pass linked
    /// back (expected 0; see the index's `graph_repair` module).
    pub graph_repaired: usize,
    /// Seconds spent building the BM25 index.
    pub lexical_seconds: f64,
    /// Seconds in all.
    pub total_seconds: f64,
    /// What the catalogue's loader tolerated (schemas indexed without validation, duplicate
    /// names left out, descriptions cut), each naming the tool and where it is.
    pub warnings: Vec<CatalogWarning>,
}

/// Builds the index of `catalog` at `out`, atomically replacing any index already there.
///
/// `out` must be missing, an empty directory, or an index (recognised by its verified
/// metadata) holding nothing but the files the index wrote; anything else is refused before
/// any work is done, so no file the index did not write is ever deleted. A symlink `out`
/// stays a symlink: the directory it points to is replaced. Whether `out` can be written is
/// checked before embedding. On any error, `out` is left as it was.
pub fn build_index(
    catalog: &Catalog,
    embedder: &dyn Embedder,
    out: &Path,
    options: &BuildOptions,
) -> Result<BuildReport, IndexError> {
    build(Input::Held(Cow::Borrowed(catalog)), embedder, out, options)
}

/// [`build_index`] that takes the catalogue and drops it once it is written, before the graph
/// is built: a one-shot build then never holds the catalogue and the graph's working set at
/// once.
pub fn build_index_owned(
    catalog: Catalog,
    embedder: &dyn Embedder,
    out: &Path,
    options: &BuildOptions,
) -> Result<BuildReport, IndexError> {
    build(Input::Held(Cow::Owned(catalog)), embedder, out, options)
}

/// [`build_index`] of the JSON Lines catalogue `file`, read a tool at a time: each tool is
/// validated and written to the index as it is read, and read back from there when needed, so
/// the build never holds the catalogue (the CLI's build of a JSON Lines file). Same index as
/// [`load_path`](toolsearch_catalog::load_path) then [`build_index`]; an invalid catalogue
/// fails with [`IndexError::Catalog`], naming the line, and leaves `out` as it was.
pub fn build_index_jsonl(
    file: &Path,
    embedder: &dyn Embedder,
    out: &Path,
    options: &BuildOptions,
) -> Result<BuildReport, IndexError> {
    build(Input::Jsonl(file), embedder, out, options)
}

/// Where a build's catalogue comes from.
enum Input<'a> {
    Held(Cow<'a, Catalog>),
    Jsonl(&'a Path),
}

fn build(
    input: Input<'_>,
    embedder: &dyn Embedder,
    out: &Path,
    options: &BuildOptions,
) -> Result<BuildReport, IndexError> {
    let start = Instant::now();
    let target = resolve_target(out)?;
    check_target(&target, out)?;
    // Created first: an unwritable destination is reported before any embedding.
    let staging = Staging::new(&target, out)?;
    let dir = staging.path();
    // An index named to reuse must give its vectors (else the caller is told); the one being
    // replaced gives them when it can.
    let mut previous = match &options.reuse_from {
        Some(from) => Some(Previous::open(from, embedder).map_err(|e| match e {
            IndexError::NotAnIndex(dir, why) => IndexError::Unreusable(dir, format!("not an index ({why})")),
            e => e,
        })?),
        None => None,
    };
    let source = match input {
        Input::Held(catalog) => Source::Held(catalog),
        Input::Jsonl(file) => {
            // A one-shot build reads its catalogue without the model, which embedding loads again.
            if options.release_model {
                embedder.release();
            }
            let streamed = Streamed::write(file, dir)?;
            toolsearch_embed::memory::give_back();
            Source::Streamed(streamed)
        }
    };
    // Texts are made again when embedded rather than held: only their hashes and lengths stay.
    let mut hashes: Vec<u128> = Vec::with_capacity(source.tool_count() + source.nodes().len());
    let mut lengths: Vec<u32> = Vec::with_capacity(hashes.capacity());
    let texts = source.tools()?.map(|t| t.map(|t| tool_dense_text(&t)));
    for text in texts.chain(source.nodes().iter().map(|n| Ok(node_dense_text(n)))) {
        let text = text?;
        hashes.push(text_hash(&text));
        lengths.push(text.len() as u32);
    }
    toolsearch_embed::memory::give_back();

    // A calibration fitted to the index being replaced stays with it, and so does a query
    // adapter, when the model is the same: the map was fitted to that model's scores, the
    // adapter maps its query vectors.
    // A build into a new directory takes them from the index it was told to reuse.
    let old = IndexMeta::read(&target)
        .ok()
        .or_else(|| options.reuse_from.as_deref().and_then(|from| IndexMeta::read(from).ok()))
        .filter(|m| m.built_with(embedder));
    let calibration = old.as_ref().and_then(|m| m.calibration);
    let adapter = old.and_then(|m| m.adapter).filter(|a| a.fits(embedder.dimension()));
    if options.reuse_from.is_none() {
        previous = Previous::open(&target, embedder).ok();
    }
    // Each document's row in the previous index; empty when there is none (a first build
    // holds no per-document vector of `None`s: 10 MB at a million documents).
    let rows: Vec<Option<u32>> = match &previous {
        Some(p) => hashes.iter().map(|h| p.rows.get(h).copied()).collect(),
        None => Vec::new(),
    };
    // Vectors go straight to their file, reused rows as they are; the graph then reads them
    // from there, so no copy of the vectors is ever held in memory.
    let vectors_path = dir.join(VECTORS_FILE);
    let documents = hashes.len();
    let file = VectorFile::create(&vectors_path, documents, embedder.dimension())?;
    let mut missing: Vec<u32> = Vec::new();
    for i in 0..documents {
        match (rows.get(i).copied().flatten(), &previous) {
            (Some(r), Some(p)) => file.copy_row(i, &p.vectors, r)?,
            _ => missing.push(i as u32),
        }
    }
    // The hashes are written now rather than carried through embedding.
    write_hashes(&dir.join(HASHES_FILE), &hashes)?;
    drop(hashes);
    // Done with the old vectors and their hashes.
    let old_graph = previous.as_mut().and_then(|p| p.graph.take().map(|g| (p.tools, g)));
    drop(previous);
    let embed_start = Instant::now();
    let embedded = missing.len();
    embed_missing(embedder, &source, &lengths, missing, &file, &options.progress)?;
    let embed_seconds = embed_start.elapsed().as_secs_f64();
    if options.release_model {
        embedder.release();
    }
    drop(file);
    toolsearch_embed::memory::give_back();

    source.write_store(dir)?;
    let lexical_start = Instant::now();
    write_lexical(&dir.join(LEXICAL_DIR), &source)?;
    let lexical_seconds = lexical_start.elapsed().as_secs_f64();
    toolsearch_embed::memory::give_back();
    // Everything else the build needs of the catalogue, before an owned one is dropped.
    let (tools, nodes, catalog_hash) = (source.tool_count(), source.nodes().len(), source.content_hash()?);
    let warnings = source.warnings().to_vec();
    drop(source);
    toolsearch_embed::memory::give_back();
    let graph_start = Instant::now();
    let (graph_path, dim) = (dir.join(GRAPH_FILE), embedder.dimension());
    // Past one part's rows, the graph is built in parts whatever changed: updating it in
    // place would hold every row and list at once.
    let updated = match old_graph.filter(|_| tools <= PART_ROWS) {
        Some(old) => graph_updated(&graph_path, &vectors_path, documents, dim, &rows[..tools], old)?,
        None => false,
    };
    drop(rows);
    if !updated {
        crate::graph_build::write_fresh(&graph_path, &vectors_path, documents, dim, tools)?;
    }
    let graph_repaired =
        crate::graph_repair::repair(&graph_path, &Vectors::open(&vectors_path, documents, dim)?, tools)?;
    let graph_seconds = graph_start.elapsed().as_secs_f64();
    crate::blocks::write(dir)?;
    let mut files = Vec::new();
    for rel in data_files(dir, dir)? {
        files.push(file_sum(dir, &rel)?);
    }
    let meta = IndexMeta {
        format_version: FORMAT_VERSION,
        model_id: embedder.model_id().to_owned(),
        model_sha256: embedder.model_sha256().to_owned(),
        dimension: embedder.dimension() as u32,
        catalog_hash,
        generation: random_u64(),
        tools: tools as u32,
        nodes: nodes as u32,
        files,
        created_unix: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        calibration,
        adapter,
        model_pooling: embedder.pooling().to_owned(),
        model_source: embedder.source().map(str::to_owned),
        model_prompts: Some((embedder.prompts().0.to_owned(), embedder.prompts().1.to_owned())),
        model_max_length: embedder.max_length().map(|n| n as u32),
        model_tokenizer: embedder.tokenizer_fingerprint().map(str::to_owned),
    };
    meta.write(dir)?;
    staging.commit()?;
    Ok(BuildReport {
        tools,
        nodes,
        embedded,
        reused: documents - embedded,
        graph_updated: updated,
        graph_repaired,
        embed_seconds,
        graph_seconds,
        lexical_seconds,
        total_seconds: start.elapsed().as_secs_f64(),
        warnings,
    })
}

/// Writes the graph of the tools to `path` by updating `old` (the previous index's tool count
/// and graph), if few enough tools changed, over the memory-mapped vector file (`documents`
/// rows of `dim`). `tool_rows` is each tool's row in the previous index, if its vector was
/// reused. Returns whether the graph was updated (if not, nothing was written).
fn graph_updated(
    path: &Path,
    vectors_path: &Path,
    documents: usize,
    dim: usize,
    tool_rows: &[Option<u32>],
    (old_tools, graph): (usize, Graph),
) -> Result<bool, IndexError> {
    let vectors = Vectors::open(vectors_path, documents, dim)?;
    // A tool keeps its old graph node when its vector is an old tool's, once.
    let mut claimed = vec![false; old_tools];
    let old: Vec<Option<u32>> = tool_rows
        .iter()
        .map(|r| r.filter(|&r| (r as usize) < old_tools && !std::mem::replace(&mut claimed[r as usize], true)))
        .collect();
    crate::graph_build::write_updated(path, &graph, &old, &vectors)
}

fn write_lexical(dir: &Path, source: &Source<'_>) -> Result<(), IndexError> {
    let mut w = LexicalWriter::create(dir)?;
    for (ord, tool) in source.tools()?.enumerate() {
        let tool = tool?;
        let mut scopes: Vec<String> = Vec::new();
        for p in &tool.paths {
            for d in 0..=p.len() {
                let s = display_path(&p[..d]);
                if !scopes.contains(&s) {
                    scopes.push(s);
                }
            }
        }
        w.add(DocKind::Tool, ord as u32, &tool_lexical(&tool), &scopes)?;
    }
    for (ord, node) in source.nodes().iter().enumerate() {
        let scopes: Vec<String> = (0..=node.path.len()).map(|d| display_path(&node.path[..d])).collect();
        w.add(DocKind::Node, ord as u32, &node_lexical(node), &scopes)?;
    }
    w.finish()
}

fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    h.finish()
}
