//! Fitting the confidence map: Platt scaling of the fused score on labelled queries.

use serde::Serialize;
use toolsearch_query::{Calibration, Engine, ProtocolError};

use crate::metrics::expected_calibration_error;
use crate::queries::LabelledQuery;

/// The outcome of a calibration fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// The fitted map.
    pub fitted: Calibration,
    /// The map in force before.
    pub previous: Calibration,
    /// Queries fitted on (even positions).
    pub train_queries: usize,
    /// Queries held out to measure (odd positions).
    pub heldout_queries: usize,
    /// ECE of the previous map on the held-out queries.
    pub heldout_ece_before: f64,
    /// ECE of the fitted map on the held-out queries.
    pub heldout_ece_after: f64,
}

/// (fused score, relevant) for the top `k` of each query.
fn score_pairs(engine: &Engine, queries: &[&LabelledQuery], k: usize) -> Result<Vec<(f32, bool)>, ProtocolError> {
    let catalog = engine.catalog();
    let mut out = Vec::new();
    for q in queries {
        for s in engine.rank_tools(&q.text, &[], k)?.iter().take(k) {
            let id = &catalog.tools[s.ord as usize].id;
            out.push((s.score, q.gold.iter().any(|g| g.contains(id))));
        }
    }
    Ok(out)
}

/// Fits `P(relevant) = 1 / (1 + exp(-(scale * score + bias)))` on the top-10 results of the
/// even-numbered queries, and measures the ECE before and after on the odd-numbered ones.
pub fn fit_calibration(engine: &Engine, queries: &[LabelledQuery]) -> Result<CalibrationReport, ProtocolError> {
    let train: Vec<&LabelledQuery> = queries.iter().step_by(2).collect();
    let heldout: Vec<&LabelledQuery> = queries.iter().skip(1).step_by(2).collect();
    let fitted = platt(&score_pairs(engine, &train, 10)?);
    let held = score_pairs(engine, &heldout, 10)?;
    let previous = *engine.calibration();
    let ece = |c: &Calibration| {
        let pairs: Vec<(f32, bool)> = held.iter().map(|&(s, r)| (c.confidence(s), r)).collect();
        expected_calibration_error(&pairs, 10)
    };
    Ok(CalibrationReport {
        fitted,
        previous,
        train_queries: train.len(),
        heldout_queries: heldout.len(),
        heldout_ece_before: ece(&previous),
        heldout_ece_after: ece(&fitted),
    })
}

/// Logistic regression of one feature by Newton's method, with a tiny ridge for stability.
pub fn platt(pairs: &[(f32, bool)]) -> Calibration {
    let (mut a, mut b) = (10.0f64, -5.0f64);
    for _ in 0..100 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (1e-6 * a, 0.0, 1e-6, 0.0, 1e-9);
        for &(s, y) in pairs {
            let s = f64::from(s);
            let p = 1.0 / (1.0 + (-(a * s + b)).exp());
            let e = p - f64::from(u8::from(y));
            let w = (p * (1.0 - p)).max(1e-12);
            ga += e * s;
            gb += e;
            haa += w * s * s;
            hab += w * s;
            hbb += w;
        }
        let det = haa * hbb - hab * hab;
        if det.abs() < 1e-18 {
            break;
        }
        let da = (hbb * ga - hab * gb) / det;
        let db = (haa * gb - hab * ga) / det;
        a -= da;
        b -= db;
        if da.abs() < 1e-9 && db.abs() < 1e-9 {
            break;
        }
    }
    Calibration { scale: a as f32, bias: b as f32 }
}

#[cfg(test)]
mod tests {
    use super::platt;

    #[test]
    fn platt_recovers_a_known_logistic_map() {
        // Scores on a grid, labelled with the exact proportion a logistic map predicts.
        let (scale, bias) = (12.0f64, -6.0f64);
        let mut pairs = Vec::new();
        for i in 0..=100 {
            let s = i as f64 / 100.0;
            let p = 1.0 / (1.0 + (-(scale * s + bias)).exp());
            let positives = (p * 200.0).round() as usize;
            pairs.extend((0..200).map(|j| (s as f32, j < positives)));
        }
        let c = platt(&pairs);
        assert!((c.scale - 12.0).abs() < 0.3 && (c.bias + 6.0).abs() < 0.2, "{c:?}");
    }
}
