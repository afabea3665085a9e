//! Fitting the confidence map: Platt scaling of the fused score on labelled queries.

use serde::Serialize;
use toolsearch_query::{Calibration, Engine, Filter, ProtocolError};

use toolsearch_query::fusion::reference_score;

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

/// One result to fit on: fused score, the answer's reference score, relevant or not.
type Sample = (f32, f32, bool);

/// The top `k` results of each query as samples.
fn samples(engine: &Engine, queries: &[&LabelledQuery], k: usize) -> Result<Vec<Sample>, ProtocolError> {
    let catalog = engine.catalog();
    let mut out = Vec::new();
    for q in queries {
        let ranked = engine.rank_tools(&q.text, &Filter::default(), k)?;
        let scores: Vec<f32> = ranked.iter().map(|s| s.score).collect();
        let reference = reference_score(&scores);
        for s in ranked.iter().take(k) {
            let id = &catalog.tools[s.ord as usize].id;
            out.push((s.score, reference, q.gold.iter().any(|g| g.contains(id))));
        }
    }
    Ok(out)
}

/// Fits `P(relevant) = 1 / (1 + exp(-(scale * score + bias)))` on the top-10 results of the
/// even-numbered queries, and measures the ECE before and after on the odd-numbered ones.
pub fn fit_calibration(engine: &Engine, queries: &[LabelledQuery]) -> Result<CalibrationReport, ProtocolError> {
    let train: Vec<&LabelledQuery> = queries.iter().step_by(2).collect();
    let heldout: Vec<&LabelledQuery> = queries.iter().skip(1).step_by(2).collect();
    let fitted = platt(&samples(engine, &train, 10)?);
    let held = samples(engine, &heldout, 10)?;
    let previous = *engine.calibration();
    let ece = |c: &Calibration| {
        let pairs: Vec<(f32, bool)> = held.iter().map(|&(s, m, r)| (c.confidence(s, m), r)).collect();
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

/// Logistic regression on the features (score, score - reference) by Newton's method, with a
/// tiny ridge for stability. Both weights are kept non-negative (a weight that comes out
/// negative is fixed at zero and the others refitted), so confidence never falls as the score
/// or the margin rises, even when few labelled queries are available.
pub fn platt(samples: &[Sample]) -> Calibration {
    let mut fixed = [false; 3];
    loop {
        let w = newton(samples, fixed);
        match (0..2).find(|&i| !fixed[i] && w[i] < 0.0) {
            Some(i) => fixed[i] = true,
            None => return Calibration { scale: w[0] as f32, margin_scale: w[1] as f32, bias: w[2] as f32 },
        }
    }
}

/// Newton's method for the logistic loss; weights marked `fixed` stay at zero.
fn newton(samples: &[Sample], fixed: [bool; 3]) -> [f64; 3] {
    let mut w = [4.0f64, 16.0, -4.0];
    for i in 0..3 {
        if fixed[i] {
            w[i] = 0.0;
        }
    }
    for _ in 0..100 {
        let mut grad = [1e-6 * w[0], 1e-6 * w[1], 0.0];
        let mut h = [[1e-6, 0.0, 0.0], [0.0, 1e-6, 0.0], [0.0, 0.0, 1e-9]];
        for &(s, m, y) in samples {
            let x = [f64::from(s), f64::from(s - m), 1.0];
            let z: f64 = (0..3).map(|i| w[i] * x[i]).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            let e = p - f64::from(u8::from(y));
            let v = (p * (1.0 - p)).max(1e-12);
            for i in 0..3 {
                grad[i] += e * x[i];
                for j in 0..3 {
                    h[i][j] += v * x[i] * x[j];
                }
            }
        }
        for i in (0..3).filter(|&i| fixed[i]) {
            grad[i] = 0.0;
            h[i] = [0.0; 3];
            for row in h.iter_mut() {
                row[i] = 0.0;
            }
            h[i][i] = 1.0;
        }
        let Some(step) = solve3(h, grad) else { break };
        for i in 0..3 {
            w[i] -= step[i];
        }
        if step.iter().all(|d| d.abs() < 1e-9) {
            break;
        }
    }
    w
}

/// Solves the 3x3 system `a x = b` by Cramer's rule.
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    if d.abs() < 1e-300 {
        return None;
    }
    let mut x = [0.0; 3];
    for (k, xk) in x.iter_mut().enumerate() {
        let mut m = a;
        for i in 0..3 {
            m[i][k] = b[i];
        }
        *xk = det(m) / d;
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::platt;

    #[test]
    fn platt_recovers_a_known_logistic_map() {
        // Scores and references on a grid, labelled with the proportion a known map predicts.
        let (a, b, c) = (6.0f64, 12.0f64, -5.0f64);
        let mut samples = Vec::new();
        for i in 0..=40 {
            for r in 0..=8 {
                let (s, m) = (i as f64 / 40.0, r as f64 / 10.0);
                let p = 1.0 / (1.0 + (-(a * s + b * (s - m) + c)).exp());
                let positives = (p * 100.0).round() as usize;
                samples.extend((0..100).map(|j| (s as f32, m as f32, j < positives)));
            }
        }
        let fit = platt(&samples);
        assert!(
            (fit.scale - 6.0).abs() < 0.3 && (fit.margin_scale - 12.0).abs() < 0.3 && (fit.bias + 5.0).abs() < 0.2,
            "{fit:?}"
        );
    }
}
