//! Hybrid fusion of dense and lexical candidates, and the confidence map. Pure functions over
//! plain data, so they are tested without a model.

use serde::{Deserialize, Serialize};
use toolsearch_index::Hit;

/// How dense and lexical candidates are combined into one ranking.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Fusion {
    /// `alpha * cosine + (1 - alpha) * lexical`, where `lexical` is the BM25 score damped by
    /// the query's best BM25 (see [`lexical_feature`]). Both terms are absolute, so the fused
    /// score means the same across queries and the confidence is a monotone map of it.
    Blend {
        /// Weight of the dense score.
        alpha: f32,
    },
    /// Reciprocal rank fusion: `sum 1 / (k + rank)`.
    Rrf {
        /// The RRF constant (60 in the literature).
        k: f32,
    },
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Blend { alpha: 0.7 }
    }
}

/// A candidate from either index, with its evidence from both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Document ordinal.
    pub ord: u32,
    /// Cosine similarity to the query (known for every candidate).
    pub cosine: f32,
    /// BM25 score, when the lexical index returned it.
    pub bm25: Option<f32>,
    /// 0-based rank in the dense list, when there.
    pub dense_rank: Option<usize>,
    /// 0-based rank in the lexical list, when there.
    pub lexical_rank: Option<usize>,
}

/// A fused, ranked candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Document ordinal.
    pub ord: u32,
    /// Fused score (orders the results).
    pub score: f32,
    /// Calibrated relevance in [0, 1], comparable across queries.
    pub confidence: f32,
}

/// The map from evidence to P(relevant): a logistic (Platt) map of the blend score
/// `alpha * cosine + (1 - alpha) * lexical`, monotone in it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Weight of the cosine in the blend score.
    pub alpha: f32,
    /// Damping constant of the lexical feature (BM25 units).
    pub lexical_k: f32,
    /// Logistic slope.
    pub scale: f32,
    /// Logistic intercept.
    pub bias: f32,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration { alpha: 0.7, lexical_k: 4.0, scale: 11.5, bias: -6.0 }
    }
}

impl Calibration {
    /// The blend score of one candidate.
    pub fn blend(&self, cosine: f32, lexical: f32) -> f32 {
        self.alpha * cosine + (1.0 - self.alpha) * lexical
    }

    /// P(relevant) for a blend score.
    pub fn confidence(&self, blend: f32) -> f32 {
        let z = self.scale * blend + self.bias;
        (1.0 / (1.0 + (-z).exp())).clamp(0.0, 1.0)
    }
}

/// The lexical feature of a BM25 score: `bm25 / (best + k)`, in [0, 1). Relative to the
/// query's best match (BM25 grows with query length), damped when even the best is weak.
pub fn lexical_feature(bm25: Option<f32>, best: f32, k: f32) -> f32 {
    match bm25 {
        Some(b) if best > 0.0 => b / (best + k),
        _ => 0.0,
    }
}

/// Merges the two hit lists into candidates; `cosine_of` gives the cosine of lexical-only hits.
pub fn merge(dense: &[Hit], lexical: &[Hit], cosine_of: impl Fn(u32) -> f32) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = dense
        .iter()
        .enumerate()
        .map(|(r, h)| Candidate { ord: h.ord, cosine: h.score, bm25: None, dense_rank: Some(r), lexical_rank: None })
        .collect();
    let mut pos: std::collections::HashMap<u32, usize> = out.iter().enumerate().map(|(i, c)| (c.ord, i)).collect();
    for (r, h) in lexical.iter().enumerate() {
        match pos.get(&h.ord) {
            Some(&i) => {
                out[i].bm25 = Some(h.score);
                out[i].lexical_rank = Some(r);
            }
            None => {
                pos.insert(h.ord, out.len());
                out.push(Candidate {
                    ord: h.ord,
                    cosine: cosine_of(h.ord),
                    bm25: Some(h.score),
                    dense_rank: None,
                    lexical_rank: Some(r),
                });
            }
        }
    }
    out
}

/// Ranks candidates, best first (ties broken by ordinal), each with its confidence.
pub fn rank(candidates: &[Candidate], fusion: Fusion, calibration: &Calibration) -> Vec<Scored> {
    let best = candidates.iter().filter_map(|c| c.bm25).fold(0.0f32, f32::max);
    let mut out: Vec<Scored> = candidates
        .iter()
        .map(|c| {
            let lexical = lexical_feature(c.bm25, best, calibration.lexical_k);
            let blend = calibration.blend(c.cosine, lexical);
            let score = match fusion {
                Fusion::Blend { alpha } => alpha * c.cosine + (1.0 - alpha) * lexical,
                Fusion::Rrf { k } => {
                    let rr = |r: Option<usize>| r.map_or(0.0, |r| 1.0 / (k + r as f32 + 1.0));
                    rr(c.dense_rank) + rr(c.lexical_rank)
                }
            };
            Scored { ord: c.ord, score, confidence: calibration.confidence(blend) }
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ord.cmp(&b.ord)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(ord: u32, score: f32) -> Hit {
        Hit { ord, score }
    }

    #[test]
    fn merge_joins_evidence_for_the_same_document() {
        let c = merge(&[hit(1, 0.9), hit(2, 0.5)], &[hit(2, 7.0), hit(3, 3.0)], |_| 0.1);
        assert_eq!(c.len(), 3);
        let two = c.iter().find(|c| c.ord == 2).unwrap();
        assert_eq!((two.dense_rank, two.lexical_rank, two.bm25), (Some(1), Some(0), Some(7.0)));
        assert_eq!(c.iter().find(|c| c.ord == 3).unwrap().cosine, 0.1);
    }

    #[test]
    fn blend_lets_strong_lexical_evidence_overtake_a_small_dense_lead() {
        let c = merge(&[hit(1, 0.60), hit(2, 0.55), hit(3, 0.1)], &[hit(2, 9.0), hit(3, 1.0)], |_| 0.0);
        let r = rank(&c, Fusion::Blend { alpha: 0.7 }, &Calibration::default());
        assert_eq!(r[0].ord, 2);
        let dense_only = rank(&c, Fusion::Blend { alpha: 1.0 }, &Calibration::default());
        assert_eq!(dense_only[0].ord, 1);
    }

    #[test]
    fn rrf_rewards_agreement_between_lists() {
        let c = merge(&[hit(1, 0.9), hit(2, 0.8)], &[hit(2, 5.0), hit(3, 4.0)], |_| 0.0);
        let r = rank(&c, Fusion::Rrf { k: 60.0 }, &Calibration::default());
        assert_eq!(r[0].ord, 2);
    }

    #[test]
    fn confidence_is_monotone_and_bounded() {
        let cal = Calibration::default();
        let mut last = 0.0;
        for i in 0..=10 {
            let c = cal.confidence(cal.blend(i as f32 / 10.0, 0.5));
            assert!((0.0..=1.0).contains(&c) && c >= last);
            last = c;
        }
        assert!(cal.confidence(cal.blend(0.8, 0.7)) > 0.9);
        assert!(cal.confidence(cal.blend(0.05, 0.0)) < 0.05);
    }

    #[test]
    fn blend_ranking_agrees_with_confidence_order() {
        let c = merge(&[hit(1, 0.6), hit(2, 0.5), hit(3, 0.45)], &[hit(3, 8.0), hit(2, 2.0)], |_| 0.0);
        let r = rank(&c, Fusion::default(), &Calibration::default());
        assert!(r.windows(2).all(|w| w[0].confidence >= w[1].confidence));
    }

    #[test]
    fn a_weak_best_lexical_match_counts_less() {
        assert!(lexical_feature(Some(1.0), 1.0, 4.0) < lexical_feature(Some(20.0), 20.0, 4.0));
        assert_eq!(lexical_feature(None, 5.0, 4.0), 0.0);
    }
}
