//! The offline indexer: catalogue in, index directory out.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use toolsearch_catalog::{display_path, Catalog};
use toolsearch_embed::Embedder;

use crate::atomic::Staging;
use crate::dense::{build_hnsw, read_vectors, write_vectors};
use crate::document::{node_dense_text, node_lexical, tool_dense_text, tool_lexical};
use crate::error::{io, IndexError};
use crate::format::{
    file_sum, text_hash, IndexMeta, CATALOG_FILE, FORMAT_VERSION, LEXICAL_DIR, META_FILE, VECTORS_FILE,
};
use crate::lexical::{DocKind, LexicalWriter};

/// Most tool names folded into a category node's document.
const NODE_TOOL_NAMES: usize = 24;
/// Texts embedded between two progress updates.
const EMBED_CHUNK: usize = 256;

/// How to build an index.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Show a progress bar on a terminal.
    pub progress: bool,
    /// An index to take vectors from (by document text hash); default: the output itself.
    pub reuse_from: Option<PathBuf>,
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
    /// Seconds in all.
    pub total_seconds: f64,
}

/// Builds the index of `catalog` at `out`, atomically replacing any index already there.
///
/// Refuses to replace a non-empty directory that is not an index. On any error, `out` is
/// left as it was.
pub fn build_index(
    catalog: &Catalog,
    embedder: &dyn Embedder,
    out: &Path,
    options: &BuildOptions,
) -> Result<BuildReport, IndexError> {
    let start = Instant::now();
    check_target(out)?;
    let tool_names = names_under_nodes(catalog);
    let mut dense_texts: Vec<String> = catalog.tools.iter().map(tool_dense_text).collect();
    dense_texts.extend(catalog.nodes.iter().zip(&tool_names).map(|(n, names)| node_dense_text(n, names)));
    let hashes: Vec<String> = dense_texts.iter().map(|t| text_hash(t)).collect();

    let previous = previous_vectors(options.reuse_from.as_deref().unwrap_or(out), embedder);
    let mut vectors: Vec<Vec<f32>> = hashes.iter().map(|h| previous.get(h).cloned().unwrap_or_default()).collect();
    let missing: Vec<usize> = (0..vectors.len()).filter(|&i| vectors[i].is_empty()).collect();
    let embed_start = Instant::now();
    embed_missing(embedder, &dense_texts, &missing, &mut vectors, options.progress)?;
    let embed_seconds = embed_start.elapsed().as_secs_f64();

    let staging = Staging::new(out)?;
    let dir = staging.path();
    let catalog_path = dir.join(CATALOG_FILE);
    let json = serde_json::to_vec(catalog).map_err(|e| IndexError::Io(catalog_path.clone(), e.into()))?;
    std::fs::write(&catalog_path, json).map_err(io(&catalog_path))?;
    write_vectors(&dir.join(VECTORS_FILE), &vectors)?;
    let hnsw_basename = build_hnsw(dir, &vectors[..catalog.tools.len()])?;
    write_lexical(&dir.join(LEXICAL_DIR), catalog, &tool_names)?;

    let mut files = Vec::new();
    for rel in data_files(dir, dir)? {
        files.push(file_sum(dir, &rel)?);
    }
    let meta = IndexMeta {
        format_version: FORMAT_VERSION,
        model_id: embedder.model_id().to_owned(),
        model_sha256: embedder.model_sha256().to_owned(),
        dimension: embedder.dimension() as u32,
        catalog_hash: catalog.content_hash(),
        generation: random_u64(),
        tools: catalog.tools.len() as u32,
        nodes: catalog.nodes.len() as u32,
        doc_hashes: hashes,
        hnsw_basename,
        files,
        created_unix: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        extensions: Default::default(),
    };
    meta.write(dir)?;
    staging.commit()?;
    Ok(BuildReport {
        tools: catalog.tools.len(),
        nodes: catalog.nodes.len(),
        embedded: missing.len(),
        reused: vectors.len() - missing.len(),
        embed_seconds,
        total_seconds: start.elapsed().as_secs_f64(),
    })
}

/// An existing target must be an index (to be replaced) or an empty directory.
fn check_target(out: &Path) -> Result<(), IndexError> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(IndexError::WouldClobber(out.to_path_buf()));
    }
    let empty = std::fs::read_dir(out).map_err(io(out))?.next().is_none();
    if empty || out.join(META_FILE).is_file() {
        Ok(())
    } else {
        Err(IndexError::WouldClobber(out.to_path_buf()))
    }
}

/// Vectors of a previous index built with the same model, keyed by document text hash.
fn previous_vectors(dir: &Path, embedder: &dyn Embedder) -> HashMap<String, Vec<f32>> {
    let Ok(meta) = IndexMeta::read(dir) else {
        return HashMap::new();
    };
    if meta.model_sha256 != embedder.model_sha256() || meta.dimension as usize != embedder.dimension() {
        return HashMap::new();
    }
    let dim = meta.dimension as usize;
    let Ok(flat) = read_vectors(&dir.join(VECTORS_FILE), meta.doc_hashes.len(), dim) else {
        return HashMap::new();
    };
    meta.doc_hashes.into_iter().zip(flat.chunks_exact(dim).map(<[f32]>::to_vec)).collect()
}

fn embed_missing(
    embedder: &dyn Embedder,
    texts: &[String],
    missing: &[usize],
    vectors: &mut [Vec<f32>],
    progress: bool,
) -> Result<(), IndexError> {
    let bar =
        if progress && !missing.is_empty() { ProgressBar::new(missing.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("embedding {bar:40} {pos}/{len} documents ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Long texts last within each chunk is the embedder's job; chunking only paces progress.
    let mut order = missing.to_vec();
    order.sort_by_key(|&i| texts[i].len());
    for chunk in order.chunks(EMBED_CHUNK) {
        let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_str()).collect();
        for (&i, v) in chunk.iter().zip(embedder.embed(&batch)?) {
            vectors[i] = v;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}

fn write_lexical(dir: &Path, catalog: &Catalog, tool_names: &[Vec<&str>]) -> Result<(), IndexError> {
    let mut w = LexicalWriter::create(dir)?;
    for (ord, tool) in catalog.tools.iter().enumerate() {
        let mut scopes: Vec<String> = Vec::new();
        for p in &tool.paths {
            for d in 0..=p.len() {
                let s = display_path(&p[..d]);
                if !scopes.contains(&s) {
                    scopes.push(s);
                }
            }
        }
        w.add(DocKind::Tool, ord as u32, &tool_lexical(tool), &scopes)?;
    }
    for (ord, (node, names)) in catalog.nodes.iter().zip(tool_names).enumerate() {
        let scopes: Vec<String> = (0..=node.path.len()).map(|d| display_path(&node.path[..d])).collect();
        w.add(DocKind::Node, ord as u32, &node_lexical(node, names), &scopes)?;
    }
    w.finish()
}

/// For each node (in catalogue order), names of tools under it: direct children first.
fn names_under_nodes(catalog: &Catalog) -> Vec<Vec<&str>> {
    let index: HashMap<&[String], usize> =
        catalog.nodes.iter().enumerate().map(|(i, n)| (n.path.as_slice(), i)).collect();
    let mut direct: Vec<Vec<&str>> = vec![Vec::new(); catalog.nodes.len()];
    let mut deeper: Vec<Vec<&str>> = vec![Vec::new(); catalog.nodes.len()];
    for tool in &catalog.tools {
        for p in &tool.paths {
            for d in 1..=p.len() {
                if let Some(&i) = index.get(&p[..d]) {
                    let list = if d == p.len() { &mut direct[i] } else { &mut deeper[i] };
                    if list.len() < NODE_TOOL_NAMES && !list.contains(&tool.name.as_str()) {
                        list.push(&tool.name);
                    }
                }
            }
        }
    }
    direct
        .into_iter()
        .zip(deeper)
        .map(|(mut d, rest)| {
            for n in rest {
                if d.len() < NODE_TOOL_NAMES && !d.contains(&n) {
                    d.push(n);
                }
            }
            d
        })
        .collect()
}

/// Relative paths of every file under `dir` except the metadata, sorted.
fn data_files(root: &Path, dir: &Path) -> Result<Vec<String>, IndexError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            out.extend(data_files(root, &path)?);
        } else {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            if rel != META_FILE && !rel.ends_with(".lock") {
                out.push(rel);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    h.finish()
}
