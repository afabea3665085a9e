//! Ranking metrics over ranked ids and groups of interchangeable gold ids.

use serde::Serialize;

/// The 0-based rank of each position's newly credited gold group, or `None` when the id at that
/// position is irrelevant or its group was already credited higher up.
fn credits(ranked: &[&str], gold: &[Vec<String>]) -> Vec<Option<usize>> {
    let mut credited = vec![false; gold.len()];
    ranked
        .iter()
        .map(|id| {
            let g = gold.iter().position(|group| group.iter().any(|x| x == id))?;
            if credited[g] {
                None
            } else {
                credited[g] = true;
                Some(g)
            }
        })
        .collect()
}

/// Fraction of gold groups found in the top `k`.
pub fn recall_at(ranked: &[&str], gold: &[Vec<String>], k: usize) -> f64 {
    let top = &ranked[..ranked.len().min(k)];
    credits(top, gold).iter().flatten().count() as f64 / gold.len().max(1) as f64
}

/// nDCG@k with binary relevance (each gold group counts once).
pub fn dcg_ndcg(ranked: &[&str], gold: &[Vec<String>], k: usize) -> f64 {
    let top = &ranked[..ranked.len().min(k)];
    let dcg: f64 = credits(top, gold)
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_some())
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..gold.len().min(k)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    if ideal > 0.0 {
        dcg / ideal
    } else {
        0.0
    }
}

/// The 1-based rank of the first relevant id, if any.
pub fn first_relevant_rank(ranked: &[&str], gold: &[Vec<String>]) -> Option<usize> {
    ranked.iter().position(|id| gold.iter().any(|g| g.iter().any(|x| x == id))).map(|r| r + 1)
}

/// One bin of a reliability diagram: the (confidence, relevant) pairs whose confidence falls
/// in `[lower, upper)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReliabilityBin {
    /// The bin's lower edge.
    pub lower: f64,
    /// The bin's upper edge.
    pub upper: f64,
    /// Pairs in it.
    pub count: usize,
    /// Their mean confidence.
    pub confidence: f64,
    /// The share of them that are relevant.
    pub accuracy: f64,
}

/// The reliability diagram of (confidence, relevant) pairs in `bins` equal-width bins (empty
/// bins included, with a count of 0).
pub fn reliability(pairs: &[(f32, bool)], bins: usize) -> Vec<ReliabilityBin> {
    let bins = bins.max(1);
    let mut out: Vec<ReliabilityBin> = (0..bins)
        .map(|b| ReliabilityBin {
            lower: b as f64 / bins as f64,
            upper: (b + 1) as f64 / bins as f64,
            count: 0,
            confidence: 0.0,
            accuracy: 0.0,
        })
        .collect();
    for &(c, relevant) in pairs {
        let bin = &mut out[((c.clamp(0.0, 1.0) as f64 * bins as f64) as usize).min(bins - 1)];
        bin.count += 1;
        bin.confidence += c as f64;
        bin.accuracy += f64::from(u8::from(relevant));
    }
    for bin in out.iter_mut().filter(|b| b.count > 0) {
        bin.confidence /= bin.count as f64;
        bin.accuracy /= bin.count as f64;
    }
    out
}

/// Expected calibration error over (confidence, relevant) pairs, with `bins` equal-width bins.
pub fn expected_calibration_error(pairs: &[(f32, bool)], bins: usize) -> f64 {
    let n = pairs.len().max(1) as f64;
    reliability(pairs, bins).iter().map(|b| b.count as f64 / n * (b.accuracy - b.confidence).abs()).sum()
}

/// The ROC curve of `(score, positive)` pairs: (false-positive rate, true-positive rate) at
/// each threshold, from (0, 0) to (1, 1), tied scores taken together.
pub fn roc_curve(pairs: &[(f32, bool)]) -> Vec<(f64, f64)> {
    let mut sorted = pairs.to_vec();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let positives = sorted.iter().filter(|p| p.1).count().max(1) as f64;
    let negatives = sorted.iter().filter(|p| !p.1).count().max(1) as f64;
    let (mut tp, mut fp) = (0.0, 0.0);
    let mut curve = vec![(0.0, 0.0)];
    for (i, &(score, positive)) in sorted.iter().enumerate() {
        match positive {
            true => tp += 1.0,
            false => fp += 1.0,
        }
        if sorted.get(i + 1).is_none_or(|next| next.0 != score) {
            curve.push((fp / negatives, tp / positives));
        }
    }
    curve
}

/// Area under the ROC curve of `(score, positive)` pairs: the chance that a random positive
/// scores above a random negative, ties counting half (0.5 without both kinds).
pub fn auroc(pairs: &[(f32, bool)]) -> f64 {
    let mut sorted: Vec<(f32, bool)> = pairs.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let positives = sorted.iter().filter(|p| p.1).count() as f64;
    let negatives = sorted.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return 0.5;
    }
    // Mid-ranks of tied scores; the sum of the positives' ranks gives the Mann-Whitney U.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().position(|p| p.0 != sorted[i].0).map_or(sorted.len(), |k| i + k);
        let mid = (i + j + 1) as f64 / 2.0;
        rank_sum += mid * sorted[i..j].iter().filter(|p| p.1).count() as f64;
        i = j;
    }
    (rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives)
}

/// p50 / p95 / p99 of a sample, in the sample's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `values`.
    pub fn of(values: &[f64]) -> Percentiles {
        if values.is_empty() {
            return Percentiles::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |p: f64| v[(((p / 100.0) * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Percentiles { p50: at(50.0), p95: at(95.0), p99: at(99.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auroc_counts_ordered_pairs_and_ties_as_half() {
        assert_eq!(auroc(&[(0.9, true), (0.1, false)]), 1.0);
        assert_eq!(auroc(&[(0.1, true), (0.9, false)]), 0.0);
        assert_eq!(auroc(&[(0.5, true), (0.5, false)]), 0.5);
        assert_eq!(auroc(&[(0.9, true), (0.3, true), (0.5, false), (0.1, false)]), 0.75);
        assert_eq!(auroc(&[(0.9, true)]), 0.5);
    }

    fn g(groups: &[&[&str]]) -> Vec<Vec<String>> {
        groups.iter().map(|gr| gr.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn recall_counts_each_group_once() {
        let gold = g(&[&["a", "a2"], &["b"]]);
        assert_eq!(recall_at(&["a", "a2", "x"], &gold, 3), 0.5);
        assert_eq!(recall_at(&["x", "b", "a2"], &gold, 2), 0.5);
        assert_eq!(recall_at(&["x", "b", "a2"], &gold, 3), 1.0);
    }

    #[test]
    fn ndcg_is_one_for_a_perfect_ranking_and_drops_with_rank() {
        let gold = g(&[&["a"], &["b"]]);
        assert!((dcg_ndcg(&["a", "b", "x"], &gold, 10) - 1.0).abs() < 1e-12);
        assert!((dcg_ndcg(&["b", "a"], &gold, 10) - 1.0).abs() < 1e-12);
        let lower = dcg_ndcg(&["x", "a", "b"], &gold, 10);
        assert!(lower < 1.0 && lower > 0.5);
        assert_eq!(dcg_ndcg(&["x"], &gold, 10), 0.0);
    }

    #[test]
    fn first_relevant_rank_is_one_based() {
        assert_eq!(first_relevant_rank(&["x", "a"], &g(&[&["a"]])), Some(2));
        assert_eq!(first_relevant_rank(&["x"], &g(&[&["a"]])), None);
    }

    #[test]
    fn reliability_bins_hold_their_pairs_and_roc_runs_corner_to_corner() {
        let pairs = [(0.05, false), (0.15, true), (0.95, true), (0.91, false), (1.0, true)];
        let bins = reliability(&pairs, 10);
        assert_eq!(bins.len(), 10);
        assert_eq!(bins.iter().map(|b| b.count).sum::<usize>(), 5);
        assert_eq!((bins[9].count, (bins[9].accuracy * 3.0).round()), (3, 2.0));
        assert!((bins[9].confidence - (0.95 + 0.91 + 1.0) / 3.0).abs() < 1e-6);
        let roc = roc_curve(&[(0.9, true), (0.8, false), (0.8, true), (0.1, false)]);
        assert_eq!(roc, [(0.0, 0.0), (0.0, 0.5), (0.5, 1.0), (1.0, 1.0)]);
    }

    #[test]
    fn ece_is_zero_when_confidence_matches_accuracy() {
        let pairs: Vec<(f32, bool)> = (0..10).map(|i| (0.75, i % 4 != 0)).collect::<Vec<_>>();
        let pairs: Vec<(f32, bool)> = pairs.into_iter().take(8).collect();
        assert!(expected_calibration_error(&pairs, 10) < 1e-6);
        assert!((expected_calibration_error(&[(0.9, false), (0.9, false)], 10) - 0.9).abs() < 1e-6);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Percentiles::of(&v), Percentiles { p50: 50.0, p95: 95.0, p99: 99.0 });
    }
}
