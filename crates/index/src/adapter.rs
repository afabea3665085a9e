//! [`QueryAdapter`]: a per-index residual linear map on the query embedding, fitted by
//! `toolsearch learn` on a deployment's own labelled queries and stored in the index.

use serde::{Deserialize, Serialize};

/// `q' = normalize(q + q W)`: a residual map (W = 0 is the identity), fitted by ridge
/// regression toward the tools each training query was answered with. It only moves the
/// query, so the index itself is unchanged and the adapter can be removed at any time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryAdapter {
    /// Vector dimension `d`.
    pub dimension: u32,
    /// `W`, `d x d`, row-major.
    pub weights: Vec<f32>,
    /// How it was fitted (e.g. `ridge 0.01`, `contrastive 4 epochs`), as chosen on held-out
    /// labels.
    pub method: String,
    /// The blend's cosine weight chosen with it (the adapted embedding usually deserves more).
    pub alpha: f32,
    /// Labelled queries fitted on.
    pub trained_on: u32,
    /// Held-out queries it was judged on.
    pub heldout: u32,
    /// Held-out nDCG@10 without the adapter.
    pub heldout_ndcg_before: f64,
    /// Held-out nDCG@10 with it.
    pub heldout_ndcg_after: f64,
}

impl QueryAdapter {
    /// Whether the adapter fits vectors of `dimension`.
    pub fn fits(&self, dimension: usize) -> bool {
        self.dimension as usize == dimension && self.weights.len() == dimension * dimension
    }

    /// The adapted unit vector of the unit query vector `q`.
    pub fn apply(&self, q: &[f32]) -> Vec<f32> {
        apply(&self.weights, q)
    }
}

/// `normalize(q + q W)` for a row-major `d x d` matrix `w`.
pub fn apply(w: &[f32], q: &[f32]) -> Vec<f32> {
    let d = q.len();
    let mut out = q.to_vec();
    for (i, &qi) in q.iter().enumerate() {
        if qi != 0.0 {
            let row = &w[i * d..(i + 1) * d];
            for (o, &x) in out.iter_mut().zip(row) {
                *o += qi * x;
            }
        }
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        out.iter_mut().for_each(|x| *x /= norm);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_weights_are_the_identity_and_the_result_is_a_unit_vector() {
        let q = [0.6, 0.8];
        assert_eq!(apply(&[0.0; 4], &q), q.to_vec());
        let moved = apply(&[0.0, 1.0, 0.0, 0.0], &q);
        let norm: f32 = moved.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-6 && moved[1] > 0.8, "{moved:?}");
    }
}
