//! Dense scoring: hits, the exact scan for small scopes, top-k selection and the dot product.
//! (The vectors live in [`crate::vectors`], the graph over them in [`crate::graph`].)

use crate::vectors::Vectors;

/// A scored document: its ordinal (tool or node number) and a score (higher is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Document ordinal.
    pub ord: u32,
    /// Score: cosine similarity for dense hits, BM25 for lexical hits.
    pub score: f32,
}

/// Exact top `k` by cosine over the rows `ords` of `vectors`.
pub(crate) fn exact_top_k(vectors: &Vectors, query: &[f32], ords: impl Iterator<Item = u32>, k: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = ords.map(|o| Hit { ord: o, score: vectors.score(o, query) }).collect();
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
