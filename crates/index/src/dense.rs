//! The dense side of the index: unit vectors in one flat file, an HNSW graph over the tool
//! vectors (hnsw_rs, dot-product distance), and an exact scan for small scopes.

use std::io::{Read, Write};
use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::prelude::{DistDot, Hnsw, HnswIo};

use crate::error::{io, IndexError};

/// A scored document: its ordinal (tool or node number) and a score (higher is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Document ordinal.
    pub ord: u32,
    /// Score: cosine similarity for dense hits, BM25 for lexical hits.
    pub score: f32,
}

const MAX_CONNECTIONS: usize = 24;
const MAX_LAYERS: usize = 16;
const EF_CONSTRUCTION: usize = 200;

/// Writes `rows` vectors as little-endian f32.
pub(crate) fn write_vectors(path: &Path, rows: &[Vec<f32>]) -> Result<(), IndexError> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io(path))?);
    for v in rows {
        for x in v {
            f.write_all(&x.to_le_bytes()).map_err(io(path))?;
        }
    }
    f.flush().map_err(io(path))
}

/// Reads `rows x dim` vectors written by [`write_vectors`], in chunks straight into the
/// result (no second copy of the file in memory).
pub(crate) fn read_vectors(path: &Path, rows: usize, dim: usize) -> Result<Vec<f32>, IndexError> {
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let len = file.metadata().map_err(io(path))?.len();
    if len != (rows * dim * 4) as u64 {
        return Err(IndexError::Corrupted(path.to_path_buf(), format!("{len} bytes, expected {}", rows * dim * 4)));
    }
    let mut vectors = Vec::with_capacity(rows * dim);
    let mut chunk = vec![0u8; 1 << 20];
    while vectors.len() < rows * dim {
        let want = ((rows * dim - vectors.len()) * 4).min(chunk.len());
        file.read_exact(&mut chunk[..want]).map_err(io(path))?;
        vectors.extend(chunk[..want].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    }
    Ok(vectors)
}

/// Builds the HNSW graph over `vectors` and dumps it in `dir`; returns the dump's basename.
pub(crate) fn build_hnsw(dir: &Path, vectors: &[Vec<f32>]) -> Result<String, IndexError> {
    let n = vectors.len().max(1);
    let hnsw: Hnsw<f32, DistDot> = Hnsw::new(MAX_CONNECTIONS, n, MAX_LAYERS, EF_CONSTRUCTION, DistDot {});
    let data: Vec<(&Vec<f32>, usize)> = vectors.iter().zip(0..).collect();
    hnsw.parallel_insert(&data);
    hnsw.file_dump(dir, crate::format::HNSW_BASENAME).map_err(|e| IndexError::Dense(dir.to_path_buf(), e.to_string()))
}

/// The loaded HNSW graph.
pub(crate) struct Graph {
    hnsw: Hnsw<'static, f32, DistDot>,
}

impl Graph {
    /// Loads the graph dumped under `basename` in `dir`.
    ///
    /// hnsw_rs ties a loaded graph's lifetime to its loader; the loader is leaked (a few
    /// paths and options, the data itself is owned by the graph since nothing is mmapped).
    pub(crate) fn load(dir: &Path, basename: &str) -> Result<Graph, IndexError> {
        let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
        let hnsw =
            loader.load_hnsw::<f32, DistDot>().map_err(|e| IndexError::Dense(dir.to_path_buf(), e.to_string()))?;
        Ok(Graph { hnsw })
    }

    /// Approximate top `k` by cosine; `allowed` (sorted ordinals) restricts the result.
    pub(crate) fn search(&self, query: &[f32], k: usize, ef: usize, allowed: Option<&Vec<usize>>) -> Vec<Hit> {
        let filter = allowed.map(|a| a as &dyn hnsw_rs::filter::FilterT);
        self.hnsw
            .search_filter(query, k, ef.max(k), filter)
            .into_iter()
            .map(|n| Hit { ord: n.d_id as u32, score: 1.0 - n.distance })
            .collect()
    }

    /// Points in the graph.
    pub(crate) fn len(&self) -> usize {
        self.hnsw.get_nb_point()
    }
}

/// Exact top `k` by cosine over the rows `ords` of `vectors` (`dim` columns).
pub(crate) fn exact_top_k(
    vectors: &[f32],
    dim: usize,
    query: &[f32],
    ords: impl Iterator<Item = u32>,
    k: usize,
) -> Vec<Hit> {
    let mut hits: Vec<Hit> = ords
        .map(|o| {
            let row = &vectors[o as usize * dim..(o as usize + 1) * dim];
            Hit { ord: o, score: dot(row, query) }
        })
        .collect();
    top_k(&mut hits, k);
    hits
}

/// Keeps the `k` best hits, sorted best first (ties by ordinal, for determinism).
pub(crate) fn top_k(hits: &mut Vec<Hit>, k: usize) {
    let cmp = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.ord.cmp(&b.ord));
    if hits.len() > k {
        hits.select_nth_unstable_by(k, cmp);
        hits.truncate(k);
    }
    hits.sort_by(cmp);
}

/// Dot product (the cosine of unit vectors). Uses AVX2 and FMA when the CPU has them (checked
/// once at run time, so the binary stays portable), else a loop the compiler vectorises.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *AVX2.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            // SAFETY: the CPU supports AVX2 and FMA, checked above.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}

/// [`dot`] compiled for AVX2 + FMA: the same code, wider registers and fused multiply-adds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_portable(a, b)
}

/// Eight independent accumulators let the compiler vectorise the loop (a single running sum
/// cannot be reordered under IEEE rules).
#[inline(always)]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let chunks = n / 8;
    for i in 0..chunks {
        let (x, y) = (&a[i * 8..i * 8 + 8], &b[i * 8..i * 8 + 8]);
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for i in chunks * 8..n {
        sum += a[i] * b[i];
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_the_plain_sum_for_any_length() {
        for n in [0, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "{n}");
            assert!((dot_portable(&a, &b) - plain).abs() < 1e-4, "{n}");
        }
    }

    #[test]
    fn top_k_keeps_the_best_sorted_with_ties_by_ordinal() {
        let mut hits: Vec<Hit> =
            [(3, 0.5), (1, 0.9), (2, 0.5), (4, 0.1)].iter().map(|&(ord, score)| Hit { ord, score }).collect();
        top_k(&mut hits, 3);
        assert_eq!(hits.iter().map(|h| h.ord).collect::<Vec<_>>(), [1, 2, 3]);
    }
}
