//! The offline indexer: catalogue in, index directory out.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
use crate::progress::Reporter;

/// Texts embedded between two progress updates.
const EMBED_CHUNK: usize = 256;

/// How to build an index.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Where embedding progress goes (nowhere by default).
    pub progress: Reporter,
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
    let start = Instant::now();
    let target = resolve_target(out)?;
    check_target(&target, out)?;
    // Created first: an unwritable destination is reported before any embedding.
    let staging = Staging::new(&target, out)?;
    let mut dense_texts: Vec<String> = catalog.tools.iter().map(tool_dense_text).collect();
    dense_texts.extend(catalog.nodes.iter().map(node_dense_text));
    let hashes: Vec<String> = dense_texts.iter().map(|t| text_hash(t)).collect();

    // A calibration fitted to the index being replaced stays with it.
    // So does a query adapter learned for the same model (it maps that model's query vectors).
    let old = IndexMeta::read(&target).ok();
    let calibration = old.as_ref().and_then(|m| m.calibration);
    let adapter = old
        .and_then(|m| m.adapter.filter(|_| m.model_sha256 == embedder.model_sha256()))
        .filter(|a| a.fits(embedder.dimension()));
    let previous = previous_vectors(options.reuse_from.as_deref().unwrap_or(&target), embedder);
    let mut vectors: Vec<Vec<f32>> = hashes.iter().map(|h| previous.get(h).cloned().unwrap_or_default()).collect();
    let missing: Vec<usize> = (0..vectors.len()).filter(|&i| vectors[i].is_empty()).collect();
    let embed_start = Instant::now();
    embed_missing(embedder, &dense_texts, &missing, &mut vectors, &options.progress)?;
    let embed_seconds = embed_start.elapsed().as_secs_f64();

    let dir = staging.path();
    let catalog_path = dir.join(CATALOG_FILE);
    let json = serde_json::to_vec(catalog).map_err(|e| IndexError::Io(catalog_path.clone(), e.into()))?;
    std::fs::write(&catalog_path, json).map_err(io(&catalog_path))?;
    write_vectors(&dir.join(VECTORS_FILE), &vectors)?;
    let hnsw_basename = build_hnsw(dir, &vectors[..catalog.tools.len()])?;
    write_lexical(&dir.join(LEXICAL_DIR), catalog)?;

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
        calibration,
        adapter,
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

/// Where the index goes: `out` itself, or, when `out` is a symlink, the directory it points
/// to (the link is kept and keeps pointing there).
fn resolve_target(out: &Path) -> Result<PathBuf, IndexError> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(out).map_err(|e| {
            IndexError::WouldClobber(out.to_path_buf(), format!("is a symlink whose target cannot be used ({e})"))
        }),
        _ => Ok(out.to_path_buf()),
    }
}

/// Entries an index of an older format may hold (its file list cannot be read).
const OLD_FORMAT_ENTRIES: &[&str] = &["catalog.json", "vectors.f32", "lexical", "tools.hnsw.graph", "tools.hnsw.data"];

/// An existing target must be an empty directory, or an index whose metadata verifies and
/// that holds only what the index wrote. `shown` is the path as the user gave it.
fn check_target(target: &Path, shown: &Path) -> Result<(), IndexError> {
    let refuse = |reason: String| Err(IndexError::WouldClobber(shown.to_path_buf(), reason));
    let meta = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(IndexError::Io(shown.to_path_buf(), e)),
        Ok(m) => m,
    };
    if !meta.is_dir() {
        return refuse("exists and is not a directory".into());
    }
    let entries: Vec<String> = std::fs::read_dir(target)
        .map_err(io(shown))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(io(shown))?;
    if entries.is_empty() {
        return Ok(());
    }
    let owned: Vec<String> = match IndexMeta::read(target) {
        Ok(m) => m.files.iter().map(|f| f.path.split('/').next().unwrap_or_default().to_owned()).collect(),
        Err(IndexError::Version { .. }) => OLD_FORMAT_ENTRIES.iter().map(|s| (*s).to_owned()).collect(),
        Err(_) => return refuse("exists and is not a toolsearch index (no verified meta.bin)".into()),
    };
    let foreign = entries.iter().find(|e| {
        e.as_str() != META_FILE && !e.ends_with(".lock") && e.as_str() != ".meta-update" && !owned.contains(e)
    });
    match foreign {
        Some(name) => refuse(format!("holds {name:?}, which is not a file of the index")),
        None => Ok(()),
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
    progress: &Reporter,
) -> Result<(), IndexError> {
    if missing.is_empty() {
        return Ok(());
    }
    progress.start("embedding documents", missing.len() as u64);
    let result = embed_in_chunks(embedder, texts, missing, vectors, progress);
    progress.finish();
    result
}

fn embed_in_chunks(
    embedder: &dyn Embedder,
    texts: &[String],
    missing: &[usize],
    vectors: &mut [Vec<f32>],
    progress: &Reporter,
) -> Result<(), IndexError> {
    // Long texts last within each chunk is the embedder's job; chunking only paces progress.
    let mut order = missing.to_vec();
    order.sort_by_key(|&i| texts[i].len());
    for chunk in order.chunks(EMBED_CHUNK) {
        let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_str()).collect();
        for (&i, v) in chunk.iter().zip(embedder.embed(&batch)?) {
            vectors[i] = v;
        }
        progress.advance(chunk.len() as u64);
    }
    Ok(())
}

fn write_lexical(dir: &Path, catalog: &Catalog) -> Result<(), IndexError> {
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
    for (ord, node) in catalog.nodes.iter().enumerate() {
        let scopes: Vec<String> = (0..=node.path.len()).map(|d| display_path(&node.path[..d])).collect();
        w.add(DocKind::Node, ord as u32, &node_lexical(node), &scopes)?;
    }
    w.finish()
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
