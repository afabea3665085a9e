//! A tool's example requests as vectors of their own: a query close to one of them finds the
//! tool even when the tool's own text is far from the query's words.
//!
//! An example is a request, and a request is best compared with a request: in the tool's
//! embedded text it is one clause among the name, description and parameters, and its pull
//! there is diluted (docs/gateway.md, "Teaching the search", has the measurement). So each
//! tool's first [`MAX_EXAMPLE_VECTORS`] examples are also embedded alone, as queries, into
//! `examples.f16` (one f16 row each, tool order), with `examples.bin` naming each row's tool
//! and its text hash (so a rebuild reuses the vectors of examples that did not change). A
//! tool's dense score is then the best of its own text's cosine and its examples'. An index
//! without examples has neither file, and older indexes open as before.

use std::collections::HashMap;
use std::path::Path;

use toolsearch_embed::Embedder;

use crate::dense::Hit;
use crate::error::{io, IndexError};
use crate::format::{file_sum, text_hash, IndexMeta};
use crate::source::Source;
use crate::vectors::{OldVectors, VectorFile, Vectors};

/// The example vectors (f16 rows, one per example, in tool order).
pub(crate) const EXAMPLE_VECTORS_FILE: &str = "examples.f16";
/// Per example row: its tool's ordinal (u32) and its text's hash (u128), little-endian.
pub(crate) const EXAMPLE_ROWS_FILE: &str = "examples.bin";
/// Examples of one tool embedded on their own (the rest still count in its text and BM25).
pub const MAX_EXAMPLE_VECTORS: usize = 8;
const ROW_BYTES: usize = 20;
/// Examples embedded between two looks at the catalogue.
const CHUNK: usize = 256;

/// The examples of `tool` that get a vector: trimmed, non-empty, the first few.
fn example_texts(tool: &toolsearch_catalog::Tool) -> impl Iterator<Item = &str> {
    tool.details.examples.iter().map(|e| e.trim()).filter(|e| !e.is_empty()).take(MAX_EXAMPLE_VECTORS)
}

/// Writes the example files of `source` into `dir` (nothing when no tool has an example),
/// reusing the vectors of the index in `previous` built with the same model. Returns the
/// example rows and how many were embedded now.
pub(crate) fn write(
    dir: &Path,
    source: &Source<'_>,
    embedder: &dyn Embedder,
    previous: &Path,
) -> Result<(usize, usize), IndexError> {
    // First pass: each row's tool and hash (texts are made again when embedded, not held).
    let mut rows: Vec<(u32, u128)> = Vec::new();
    for (ord, tool) in source.tools()?.enumerate() {
        let tool = tool?;
        rows.extend(example_texts(&tool).map(|e| (ord as u32, text_hash(e))));
    }
    if rows.is_empty() {
        return Ok((0, 0));
    }
    let old = OldExamples::open(previous, embedder);
    let file = VectorFile::create(&dir.join(EXAMPLE_VECTORS_FILE), rows.len(), embedder.dimension())?;
    let mut embedded = 0;
    let mut pending: Vec<(usize, String)> = Vec::new();
    let mut flush = |pending: &mut Vec<(usize, String)>| -> Result<(), IndexError> {
        for (i, text) in pending.drain(..) {
            file.put(i, &embedder.embed_query(&text)?)?;
            embedded += 1;
        }
        Ok(())
    };
    let mut at = 0;
    for tool in source.tools()? {
        let tool = tool?;
        for text in example_texts(&tool) {
            match old.as_ref().and_then(|o| o.rows.get(&rows[at].1).map(|&r| (o, r))) {
                Some((o, r)) => file.copy_row(at, &o.vectors, r)?,
                None => pending.push((at, text.to_owned())),
            }
            at += 1;
        }
        if pending.len() >= CHUNK {
            flush(&mut pending)?;
        }
    }
    flush(&mut pending)?;
    drop(flush);
    drop(file);
    let bytes: Vec<u8> = rows.iter().flat_map(|(t, h)| t.to_le_bytes().into_iter().chain(h.to_le_bytes())).collect();
    let path = dir.join(EXAMPLE_ROWS_FILE);
    std::fs::write(&path, bytes).map_err(io(&path))?;
    Ok((rows.len(), embedded))
}

/// Reads `examples.bin`: each row's tool and text hash.
fn read_rows(path: &Path) -> Result<Vec<(u32, u128)>, IndexError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    if bytes.len() % ROW_BYTES != 0 {
        return Err(IndexError::Corrupted(path.to_path_buf(), format!("{} bytes, not whole rows", bytes.len())));
    }
    Ok(bytes
        .chunks_exact(ROW_BYTES)
        .map(|c| {
            let tool = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
            (tool, u128::from_le_bytes(c[4..].try_into().expect("16 bytes")))
        })
        .collect())
}

/// The previous index's example vectors, by text hash, if it was built with the same model
/// and its files verify.
struct OldExamples {
    rows: HashMap<u128, u32>,
    vectors: OldVectors,
}

impl OldExamples {
    fn open(dir: &Path, embedder: &dyn Embedder) -> Option<OldExamples> {
        let meta = IndexMeta::read(dir).ok()?;
        if meta.model_sha256 != embedder.model_sha256() || meta.dimension as usize != embedder.dimension() {
            return None;
        }
        let verified = |rel: &str| {
            let sum = meta.files.iter().find(|f| f.path == rel);
            sum.is_some_and(|s| file_sum(dir, rel).is_ok_and(|now| now.xxh3 == s.xxh3 && now.len == s.len))
        };
        if !verified(EXAMPLE_ROWS_FILE) || !verified(EXAMPLE_VECTORS_FILE) {
            return None;
        }
        let old = read_rows(&dir.join(EXAMPLE_ROWS_FILE)).ok()?;
        let vectors = OldVectors::open(&dir.join(EXAMPLE_VECTORS_FILE), old.len(), meta.dimension as usize)?;
        let mut rows = HashMap::with_capacity(old.len());
        for (row, (_, h)) in old.into_iter().enumerate() {
            rows.entry(h).or_insert(row as u32);
        }
        Some(OldExamples { rows, vectors })
    }
}

/// The example vectors of an opened index.
pub(crate) struct ExampleVectors {
    vectors: Vectors,
    /// Each row's tool, non-decreasing.
    tools: Vec<u32>,
}

impl ExampleVectors {
    /// The example vectors of the index in `dir`, if it has them. Their files were checked
    /// whole (sizes always, checksums when the open verifies them) before this is called.
    pub(crate) fn open(dir: &Path, meta: &IndexMeta) -> Result<Option<ExampleVectors>, IndexError> {
        if !meta.files.iter().any(|f| f.path == EXAMPLE_ROWS_FILE) {
            return Ok(None);
        }
        let path = dir.join(EXAMPLE_ROWS_FILE);
        let tools: Vec<u32> = read_rows(&path)?.into_iter().map(|(t, _)| t).collect();
        if tools.windows(2).any(|w| w[0] > w[1]) || tools.last().is_some_and(|&t| t >= meta.tools) {
            return Err(IndexError::Corrupted(path, "example rows out of order or naming no tool".into()));
        }
        let vectors = Vectors::open(&dir.join(EXAMPLE_VECTORS_FILE), tools.len(), meta.dimension as usize)?;
        Ok(Some(ExampleVectors { vectors, tools }))
    }

    /// The best cosine of tool `ord`'s examples with the unit vector `query`, if it has any.
    pub(crate) fn best(&self, ord: u32, query: &[f32]) -> Option<f32> {
        let start = self.tools.partition_point(|&t| t < ord);
        let end = self.tools.partition_point(|&t| t <= ord);
        (start..end).map(|row| self.vectors.score(row as u32, query) - discount()).reduce(f32::max)
    }

    /// `hits` (dense top `k` by the tools' own text) with each tool's score raised to its best
    /// example's, and the tools (among the sorted `allowed`, when given) that an example puts
    /// in the top `k` added with `text(ord)`'s cosine or their example's, whichever is higher.
    pub(crate) fn lift(
        &self,
        hits: Vec<Hit>,
        query: &[f32],
        k: usize,
        allowed: Option<&[u32]>,
        text: impl Fn(u32) -> f32,
    ) -> Vec<Hit> {
        let mut best: HashMap<u32, f32> = HashMap::new();
        for (row, &tool) in self.tools.iter().enumerate() {
            if allowed.is_some_and(|a| a.binary_search(&tool).is_err()) {
                continue;
            }
            let s = self.vectors.score(row as u32, query) - discount();
            best.entry(tool).and_modify(|b| *b = b.max(s)).or_insert(s);
        }
        let mut out: Vec<Hit> = hits
            .into_iter()
            .map(|h| Hit { score: best.remove(&h.ord).map_or(h.score, |b| b.max(h.score)), ..h })
            .collect();
        let floor = if out.len() >= k { out.iter().map(|h| h.score).fold(f32::INFINITY, f32::min) } else { f32::MIN };
        out.extend(best.into_iter().filter(|&(_, s)| s > floor).map(|(ord, s)| Hit { ord, score: s.max(text(ord)) }));
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ord.cmp(&b.ord)));
        out.truncate(k);
        out
    }

    /// Whether a row read came from a corrupted block (see [`Vectors::fault`]).
    pub(crate) fn fault(&self) -> Result<(), IndexError> {
        self.vectors.fault()
    }
}

fn discount() -> f32 {
    static D: std::sync::OnceLock<f32> = std::sync::OnceLock::new();
    *D.get_or_init(|| std::env::var("TOOLSEARCH_EXAMPLE_DISCOUNT").ok().and_then(|v| v.parse().ok()).unwrap_or(0.0))
}
