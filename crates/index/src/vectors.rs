//! The vector file: one half-precision (f16) row per document, tools first, then nodes,
//! memory-mapped by the reader.
//!
//! f16 halves the file and the pages a search touches; scores are computed in f32 from the
//! converted row, and the recall@10 of f16 against f32 is measured in docs/scaling.md.

use std::path::{Path, PathBuf};
use toolsearch_catalog::platform::{read_exact_at, write_all_at};

use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::blocks::Checked;
use crate::dense::dot;
use crate::error::{io, IndexError};

/// A vector file being written a row at a time, in any order: it is sized up front and each
/// row is written in its place, so a build never holds the vectors in memory.
pub(crate) struct VectorFile {
    file: std::fs::File,
    path: PathBuf,
    dim: usize,
}

impl VectorFile {
    /// Creates `path` with room for `rows` rows of `dim` columns (zero until written).
    pub(crate) fn create(path: &Path, rows: usize, dim: usize) -> Result<VectorFile, IndexError> {
        let file = std::fs::File::create(path).map_err(io(path))?;
        file.set_len((rows * dim * 2) as u64).map_err(io(path))?;
        Ok(VectorFile { file, path: path.to_path_buf(), dim })
    }

    /// Writes row `i` from f32.
    pub(crate) fn put(&self, i: usize, row: &[f32]) -> Result<(), IndexError> {
        let mut half = vec![f16::ZERO; self.dim];
        half.convert_from_f32_slice(&row[..self.dim.min(row.len())]);
        let bytes: Vec<u8> = half.iter().flat_map(|x| x.to_le_bytes()).collect();
        write_all_at(&self.file, &bytes, (i * self.dim * 2) as u64).map_err(io(&self.path))
    }

    /// Writes row `i` as row `from` of another index's vector file (lossless).
    pub(crate) fn copy_row(&self, i: usize, old: &OldVectors, from: u32) -> Result<(), IndexError> {
        let mut bytes = vec![0u8; self.dim * 2];
        let at = u64::from(from) * bytes.len() as u64;
        read_exact_at(&old.file, &mut bytes, at).map_err(io(&old.path))?;
        write_all_at(&self.file, &bytes, (i * self.dim * 2) as u64).map_err(io(&self.path))
    }
}

/// The previous index's vector file, whose rows a rebuild copies by reading them (not mapping
/// them: a build's memory should not grow with the old file).
pub(crate) struct OldVectors {
    file: std::fs::File,
    path: PathBuf,
}

impl OldVectors {
    /// Opens `path` if it holds exactly `rows x dim` vectors.
    pub(crate) fn open(path: &Path, rows: usize, dim: usize) -> Option<OldVectors> {
        let file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        (len == (rows * dim * 2) as u64).then(|| OldVectors { file, path: path.to_path_buf() })
    }
}

/// Writes `rows` as little-endian f16 (tests and the graph benchmark build files this way).
pub(crate) fn write(path: &Path, rows: &[Vec<f32>]) -> Result<(), IndexError> {
    let dim = rows.first().map_or(0, Vec::len);
    let file = VectorFile::create(path, rows.len(), dim)?;
    for (i, row) in rows.iter().enumerate() {
        file.put(i, row)?;
    }
    Ok(())
}

/// The vectors of an index: memory-mapped, or (for one part of a graph being built in parts)
/// a few rows read into memory.
pub(crate) struct Vectors {
    rows_of: Rows,
    rows: usize,
    dim: usize,
    /// The block sums a served index's rows are checked against before first use (none for
    /// a file being built, or an index opened without checks).
    check: Option<Checked>,
    /// What a row in a corrupted block reads as (see [`Vectors::fault`]).
    zeros: Vec<f16>,
}

/// Where the rows are.
enum Rows {
    /// None: an empty file cannot be mapped.
    Empty,
    Mapped(memmap2::Mmap),
    Owned(Vec<f16>),
}

impl Vectors {
    /// Maps `rows x dim` vectors written by [`write`], unchecked (a file this process wrote).
    pub(crate) fn open(path: &Path, rows: usize, dim: usize) -> Result<Vectors, IndexError> {
        Vectors::open_checked(path, rows, dim, None)
    }

    /// Maps `rows x dim` vectors written by [`write`]; with `sums`, each 4 KiB block is
    /// checked against its sum the first time a row in it is read.
    pub(crate) fn open_checked(
        path: &Path,
        rows: usize,
        dim: usize,
        sums: Option<Vec<u64>>,
    ) -> Result<Vectors, IndexError> {
        let file = std::fs::File::open(path).map_err(io(path))?;
        let len = file.metadata().map_err(io(path))?.len();
        let want = (rows * dim * 2) as u64;
        if len != want {
            return Err(IndexError::Corrupted(path.to_path_buf(), format!("{len} bytes, expected {want}")));
        }
        // An empty file cannot be mapped; there is nothing to read either.
        // SAFETY: index files are never modified in place (a rebuild swaps a new directory in).
        let rows_of =
            if len == 0 { Rows::Empty } else { Rows::Mapped(unsafe { memmap2::Mmap::map(&file) }.map_err(io(path))?) };
        let check = sums.map(|s| Checked::new(path, s));
        Ok(Vectors { rows_of, rows, dim, check, zeros: vec![f16::ZERO; dim] })
    }

    /// Reads rows `ords` of the `dim`-column vector file at `path` into memory, as rows
    /// `0..ords.len()` (a graph part's working set, without mapping the whole file).
    pub(crate) fn read_rows(path: &Path, dim: usize, ords: &[u32]) -> Result<Vectors, IndexError> {
        let file = std::fs::File::open(path).map_err(io(path))?;
        // Converted a row at a time: the rows are never held twice (bytes and values), which
        // for a part of a large graph would double its memory.
        let mut all = vec![f16::ZERO; ords.len() * dim];
        let mut bytes = vec![0u8; dim * 2];
        for (row, &o) in all.chunks_exact_mut(dim.max(1)).zip(ords) {
            read_exact_at(&file, &mut bytes, o as u64 * (dim * 2) as u64).map_err(io(path))?;
            row.iter_mut().zip(bytes.chunks_exact(2)).for_each(|(x, b)| *x = f16::from_le_bytes([b[0], b[1]]));
        }
        Ok(Vectors { rows_of: Rows::Owned(all), rows: ords.len(), dim, check: None, zeros: vec![f16::ZERO; dim] })
    }

    /// Every row, concatenated.
    fn all(&self) -> &[f16] {
        match &self.rows_of {
            Rows::Empty => &[],
            Rows::Mapped(map) => {
                // SAFETY: every bit pattern is a valid f16; the map is page-aligned, so there
                // is no unaligned prefix (checked).
                let (prefix, all, _) = unsafe { map.align_to::<f16>() };
                debug_assert!(prefix.is_empty());
                all
            }
            Rows::Owned(all) => all,
        }
    }

    /// Row `i`; zeros if its bytes are in a block that fails its check (the fault is then
    /// remembered, and [`Vectors::fault`] turns the answer being computed into an error).
    #[inline]
    pub(crate) fn row(&self, i: u32) -> &[f16] {
        let all = self.all();
        if all.is_empty() {
            return &[];
        }
        assert!((i as usize) < self.rows, "vector row {i} of {}", self.rows);
        let (from, to) = (i as usize * self.dim, (i as usize + 1) * self.dim);
        if let (Some(check), Rows::Mapped(map)) = (&self.check, &self.rows_of) {
            if !check.ok(map, 2 * from..2 * to) {
                return &self.zeros;
            }
        }
        &all[from..to]
    }

    /// The error for a corrupted block any row read so far has met: every answer computed
    /// from these vectors is checked with it before it is returned.
    pub(crate) fn fault(&self) -> Result<(), IndexError> {
        self.check.as_ref().map_or(Ok(()), Checked::fault)
    }

    /// Hints the CPU to load row `i` into cache (a no-op where there is no such hint).
    #[inline]
    pub(crate) fn prefetch(&self, i: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let all = self.all();
            let (start, end) = (i as usize * self.dim, ((i as usize + 1) * self.dim).min(all.len()));
            let mut at = start;
            while at < end {
                // SAFETY: a prefetch only hints the cache and `at` is inside the rows.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        all.as_ptr().add(at) as *const i8
                    )
                };
                at += 32;
            }
        }
    }

    /// Row `i` in f32.
    pub(crate) fn to_f32(&self, i: u32) -> Vec<f32> {
        let mut out = vec![0f32; self.dim];
        self.to_f32_into(i, &mut out);
        out
    }

    /// Row `i` in f32, into `out` (`dim` long).
    pub(crate) fn to_f32_into(&self, i: u32, out: &mut [f32]) {
        self.row(i).convert_to_f32_slice(out);
    }

    /// Cosine of row `i` with the unit vector `query`: converted and multiplied in one pass
    /// where the CPU has F16C, AVX2 and FMA, else converted a block at a time.
    pub(crate) fn score(&self, i: u32, query: &[f32]) -> f32 {
        dot_f16(self.row(i), query)
    }
}

/// Dot product of an f16 row with an f32 vector.
fn dot_f16(row: &[f16], query: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        static F16C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let fused = *F16C.get_or_init(|| {
            is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
        });
        if fused {
            // SAFETY: the CPU supports AVX2, FMA and F16C, checked above.
            return unsafe { dot_f16_avx2(row, query) };
        }
    }
    let mut block = [0f32; 64];
    row.chunks(64)
        .zip(query.chunks(64))
        .map(|(r, q)| {
            let n = r.len().min(q.len());
            r[..n].convert_to_f32_slice(&mut block[..n]);
            dot(&block[..n], &q[..n])
        })
        .sum()
}

/// [`dot_f16`] with F16C conversion and fused multiply-adds, 32 columns a step in four
/// independent accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_f16_avx2(row: &[f16], query: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = row.len().min(query.len());
    let (r, q) = (row.as_ptr() as *const __m128i, query.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: i + 8k + 8 <= n, so both loads stay inside the slices.
            let h = _mm256_cvtph_ps(_mm_loadu_si128(r.add((i + 8 * k) / 8)));
            *a = _mm256_fmadd_ps(h, _mm256_loadu_ps(q.add(i + 8 * k)), *a);
        }
        i += 32;
    }
    while i + 8 <= n {
        let h = _mm256_cvtph_ps(_mm_loadu_si128(r.add(i / 8)));
        acc[0] = _mm256_fmadd_ps(h, _mm256_loadu_ps(q.add(i)), acc[0]);
        i += 8;
    }
    let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), sum);
    let mut total: f32 = lanes.iter().sum();
    for j in i..n {
        total += row[j].to_f32() * query[j];
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fused_f16_dot_matches_the_converted_one_for_any_length() {
        for n in [0, 1, 7, 8, 9, 31, 32, 33, 384, 385] {
            let row: Vec<f16> = (0..n).map(|i| f16::from_f32((i as f32 * 0.37).sin())).collect();
            let q: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = row.iter().zip(&q).map(|(x, y)| x.to_f32() * y).sum();
            assert!((dot_f16(&row, &q) - plain).abs() < 1e-3, "{n}");
        }
    }
}
