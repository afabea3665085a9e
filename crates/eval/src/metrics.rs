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

/// Expected calibration error over (confidence, relevant) pairs, with `bins` equal-width bins.
pub fn expected_calibration_error(pairs: &[(f32, bool)], bins: usize) -> f64 {
    if pairs.is_empty() {
        return 0.0;
    }
    let mut conf = vec![0.0f64; bins];
    let mut hits = vec![0.0f64; bins];
    let mut count = vec![0usize; bins];
    for &(c, relevant) in pairs {
        let b = ((c.clamp(0.0, 1.0) as f64 * bins as f64) as usize).min(bins - 1);
        conf[b] += c as f64;
        hits[b] += f64::from(u8::from(relevant));
        count[b] += 1;
    }
    (0..bins)
        .filter(|&b| count[b] > 0)
        .map(|b| count[b] as f64 / pairs.len() as f64 * ((hits[b] - conf[b]) / count[b] as f64).abs())
        .sum()
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
