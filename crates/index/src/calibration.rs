//! [`Calibration`]: the confidence map an index carries, fitted by `toolsearch calibrate`.

use serde::{Deserialize, Serialize};

/// The map from the fused score to P(relevant): logistic (Platt scaling) over two features of
/// a result, its fused score `s` and its margin `s - m` over `m`, the mean score of the results
/// ranked 2nd to 10th. The margin tells a clear winner from a crowd of similar weak matches,
/// which the absolute score alone cannot. Within one answer both features grow with `s`, so
/// confidence order always agrees with rank order. Fitted on labelled queries by
/// `toolsearch calibrate` and stored in the index.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Weight of the fused score.
    pub scale: f32,
    /// Weight of the margin over the mean of the 2nd to 10th results.
    #[serde(default)]
    pub margin_scale: f32,
    /// Intercept.
    pub bias: f32,
}

impl Default for Calibration {
    /// The stock model's fit: four dev sets pooled, each weighing the same, with the default blend
    /// (`scripts/fit-confidence.py`, docs/benchmarks.md); `toolsearch calibrate` fits one to a
    /// catalogue's own labelled queries.
    fn default() -> Self {
        Calibration { scale: 3.67, margin_scale: 18.63, bias: -3.84 }
    }
}

impl Calibration {
    /// The map fitted for the model an index records: the tool-trained model's own fit
    /// (`scripts/fit-confidence.py 0.5 32` over its candidate dumps of the five dev sets, each
    /// weighing the same: ECE .018-.059 held out, docs/benchmarks.md), the stock fit
    /// ([`Calibration::default`]) for any other model.
    pub fn for_model(model_id: &str) -> Calibration {
        if model_id == toolsearch_embed::TOOLS_MODEL_ID {
            Calibration { scale: 5.65, margin_scale: 17.578, bias: -4.339 }
        } else {
            Calibration::default()
        }
    }

    /// P(relevant) for a result with fused score `score` in an answer whose 2nd to 10th
    /// results average `reference`.
    pub fn confidence(&self, score: f32, reference: f32) -> f32 {
        let z = self.scale * score + self.margin_scale * (score - reference) + self.bias;
        (1.0 / (1.0 + (-z).exp())).clamp(0.0, 1.0)
    }
}
