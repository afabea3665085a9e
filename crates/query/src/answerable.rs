//! Answerability: does any tool fit this request at all? A query-level decision, apart from
//! each result's confidence (which says how likely one tool is relevant, and orders and shows
//! results). A small logistic model over the candidate list: the best blend score, its lead
//! over the 2nd to 10th, and the dense list's lead of its first over its second cosine.
//!
//! Fitted leave-one-set-out on dev "twins" (each labelled query against its catalogue with and
//! without its gold tools; `scripts/fit-answerability.py`, docs/answerability.md). Candidates are
//! drawn only from the tools the caller may see, so the estimate says nothing of hidden ones.

use serde::{Deserialize, Serialize};

use crate::fusion::{blend_scores, reference_score, Candidate, Fusion, DEFAULT_BLEND};

/// Answerability features, in model order: best blend score, its lead over the mean of the
/// 2nd to 10th, and the best cosine's lead over the second among dense candidates.
pub type Features = [f32; 3];

/// A logistic model of P(some tool fits) over [`Features`], standardised, with the threshold
/// under which the engine answers `NO_MATCH_IN_CATEGORY`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Answerability {
    /// Feature means (standardisation).
    pub mean: Features,
    /// Feature standard deviations (standardisation).
    pub scale: Features,
    /// Weights of the standardised features.
    pub weights: Features,
    /// Intercept.
    pub bias: f32,
    /// Below this probability the answer is `NO_MATCH_IN_CATEGORY`: the lowest of the dev
    /// sets' 1st percentiles over answerable queries, so each keeps >= 99% of them answered.
    pub threshold: f32,
}

impl Default for Answerability {
    /// The stock model's fit: the five dev sets' twins pooled, each set weighing the same, with
    /// off-catalogue queries (one set's queries against another set's tools) as one more group
    /// of negatives (`scripts/fit-answerability.py`).
    fn default() -> Self {
        Answerability {
            mean: [0.347_204, 0.120_250, 0.054_933],
            scale: [0.138_482, 0.082_583, 0.066_889],
            weights: [0.401_910, 0.662_188, 0.176_458],
            bias: -0.396_651,
            threshold: 0.133,
        }
    }
}

impl Answerability {
    /// The model fitted for an index's embedding model: the tool-trained model's own fit (the
    /// same recipe over its candidate dumps; threshold .109), the stock fit
    /// ([`Answerability::default`]) for any other model.
    pub fn for_model(model_id: &str) -> Answerability {
        if model_id == toolsearch_embed::TOOLS_MODEL_ID {
            Answerability {
                mean: [0.355_207, 0.130_758, 0.067_245],
                scale: [0.137_708, 0.086_372, 0.077_574],
                weights: [0.428_171, 0.775_028, 0.140_219],
                bias: -0.421_785,
                threshold: 0.109,
            }
        } else {
            Answerability::default()
        }
    }

    /// P(some tool fits) for these features, in [0, 1].
    pub fn probability(&self, f: &Features) -> f32 {
        let z: f32 =
            (0..f.len()).map(|i| self.weights[i] * (f[i] - self.mean[i]) / self.scale[i]).sum::<f32>() + self.bias;
        (1.0 / (1.0 + (-z).exp())).clamp(0.0, 1.0)
    }

    /// P(some tool fits) for a candidate list fused with `fusion` (0 for no candidate).
    pub fn of(&self, candidates: &[Candidate], fusion: Fusion) -> f32 {
        features(candidates, fusion).map_or(0.0, |f| self.probability(&f))
    }

    /// Whether an answer of this probability is `NO_MATCH_IN_CATEGORY`.
    pub fn abstains(&self, probability: f32) -> bool {
        probability < self.threshold
    }
}

/// The features of a candidate list, `None` when it is empty. The blend is `fusion`'s (the
/// default blend's under RRF, as for confidences).
pub fn features(candidates: &[Candidate], fusion: Fusion) -> Option<Features> {
    if candidates.is_empty() {
        return None;
    }
    let (alpha, lexical_k) = match (fusion, DEFAULT_BLEND) {
        (Fusion::Blend { alpha, lexical_k }, _) | (_, Fusion::Blend { alpha, lexical_k }) => (alpha, lexical_k),
        _ => unreachable!("the default is a blend"),
    };
    let blend = blend_scores(candidates, alpha, lexical_k);
    let best = blend.iter().copied().fold(f32::MIN, f32::max);
    let (mut first, mut second) = (None::<f32>, None::<f32>);
    for c in candidates.iter().filter(|c| c.dense_rank.is_some()) {
        if first.is_none_or(|f| c.cosine > f) {
            second = first;
            first = Some(c.cosine);
        } else if second.is_none_or(|s| c.cosine > s) {
            second = Some(c.cosine);
        }
    }
    let cosine_gap = first.unwrap_or(0.0) - second.unwrap_or(0.0);
    Some([best, best - reference_score(&blend), cosine_gap])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(ord: u32, rank: usize, cosine: f32) -> Candidate {
        Candidate { cosine, dense_rank: Some(rank), ..Candidate::new(ord) }
    }

    #[test]
    fn a_clear_winner_is_answerable_and_a_flat_crowd_is_not() {
        let model = Answerability::default();
        let mut winner = vec![dense(0, 0, 0.80)];
        winner.extend((1..20).map(|i| dense(i, i as usize, 0.30 - i as f32 * 0.001)));
        let crowd: Vec<Candidate> = (0..20).map(|i| dense(i, i as usize, 0.31 - i as f32 * 0.001)).collect();
        let (w, c) = (model.of(&winner, Fusion::default()), model.of(&crowd, Fusion::default()));
        assert!(w > 0.8 && !model.abstains(w), "winner {w}");
        assert!(c < model.threshold && model.abstains(c), "crowd {c}");
    }

    #[test]
    fn nothing_retrieved_is_not_answerable() {
        assert_eq!(Answerability::default().of(&[], Fusion::default()), 0.0);
    }

    #[test]
    fn features_are_the_best_blend_its_lead_and_the_cosine_gap() {
        let c = [dense(0, 0, 0.9), dense(1, 1, 0.5), dense(2, 2, 0.4)];
        let only_dense = Fusion::Blend { alpha: 1.0, lexical_k: 0.0 };
        let f = features(&c, only_dense).unwrap();
        assert!((f[0] - 0.9).abs() < 1e-6);
        assert!((f[1] - (0.9 - 0.45)).abs() < 1e-6);
        assert!((f[2] - 0.4).abs() < 1e-6);
    }

    #[test]
    fn more_lead_never_lowers_the_probability() {
        let model = Answerability::default();
        let mut last = 0.0;
        for i in 0..20 {
            let p = model.probability(&[0.4, i as f32 * 0.02, 0.05]);
            assert!(p >= last);
            last = p;
        }
    }
}
