//! Learning a per-index query adapter from a deployment's own labels (`toolsearch learn`).
//!
//! What does not transfer across catalogues works well within one: a residual linear map on
//! the query embedding, `q' = normalize(q + q W)`, fitted by ridge regression toward the mean
//! vector of each query's gold tools. The labels are split three ways by a hash of the query
//! id: 70% fit `W`, 15% choose the ridge strength and the blend weight, and the last 15% judge
//! the choice against the unadapted ranking. An adapter that does not beat it there is
//! refused, so nothing worse than the default ranking is ever stored.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde::Serialize;
use toolsearch_index::{Hit, QueryAdapter};
use toolsearch_query::fusion::DEFAULT_BLEND;
use toolsearch_query::{Engine, Fusion};

use crate::metrics::dcg_ndcg;
use crate::queries::LabelledQuery;

/// How a candidate adapter was fitted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Ridge regression toward the gold tools' mean vector, with this strength.
    Ridge(f32),
    /// Softmax over the tools (contrastive), stopped after this many epochs.
    Contrastive(usize),
}

/// Epochs after which the contrastive fit is offered for choosing.
const CHECKPOINTS: [usize; 5] = [1, 2, 4, 7, 10];

/// Fewest labelled queries `learn` accepts (a smaller held-out part judges nothing).
pub const MIN_LABELS: usize = 40;
/// Ridge strengths tried.
const LAMBDAS: [f32; 7] = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0];
/// Cosine weights tried with the adapted query.
const ALPHAS: [f32; 5] = [0.5, 0.65, 0.8, 0.9, 1.0];
/// Most queries used to choose and to judge (each ranked once per setting).
const MAX_EVAL: usize = 1_500;

/// What `learn` found.
#[derive(Debug, Clone, Serialize)]
pub struct LearnReport {
    /// Labelled queries used (with at least one gold tool in the catalogue).
    pub labels: usize,
    /// Fitted on.
    pub fit: usize,
    /// Used to choose the ridge strength and blend weight.
    pub choose: usize,
    /// Used to judge the choice.
    pub judge: usize,
    /// nDCG@10 on the judging part without an adapter.
    pub ndcg_before: f64,
    /// nDCG@10 on the judging part with the chosen adapter.
    pub ndcg_after: f64,
    /// How the chosen adapter was fitted.
    pub method: Method,
    /// The chosen cosine weight.
    pub alpha: f32,
    /// The adapter, when it beat the unadapted ranking (it is `None` when refused).
    #[serde(skip)]
    pub adapter: Option<QueryAdapter>,
}

/// Why nothing could be learned.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// Too few usable labels.
    #[error("{found} labelled queries name a tool of this catalogue; learn needs at least {MIN_LABELS}")]
    TooFewLabels {
        /// Usable labels found.
        found: usize,
    },
    /// The engine failed.
    #[error("{0}")]
    Engine(String),
}

/// A held-out query's embedding and BM25 hits.
type Evidence = (Vec<f32>, Vec<Hit>);

/// Which part of the labels a query falls in: 0..70 fit, 70..85 choose, 85..100 judge.
/// Where a label falls in the fit (0..70) / choose (70..85) / judge (85..100) split: where its
/// tag [`SPLIT_TAG`] puts it (a caller that splits by who taught), else by a hash of its id.
fn part(q: &LabelledQuery) -> u64 {
    match q.tags.iter().find_map(|t| t.strip_prefix(SPLIT_TAG)) {
        Some("fit") => 0,
        Some("choose") => 70,
        Some("judge") => 85,
        _ => bucket(&q.id),
    }
}

/// A label's tag `split:fit`, `split:choose` or `split:judge` places it in that part of
/// [`learn_adapter`]'s split.
pub const SPLIT_TAG: &str = "split:";

fn bucket(id: &str) -> u64 {
    let mut h = DefaultHasher::new();
    id.hash(&mut h);
    h.finish() % 100
}

/// Mean nDCG@10 of `set` ranked from its evidence, the query vectors moved by `w` if given.
fn mean_ndcg(
    engine: &Engine,
    set: &[&LabelledQuery],
    ev: &[Evidence],
    w: Option<&[f32]>,
    fusion: Fusion,
) -> Result<f64, LearnError> {
    let catalog = engine.catalog();
    let mut total = 0.0;
    for (q, (v, lexical)) in set.iter().zip(ev) {
        let moved = w.map(|w| toolsearch_index::adapter_apply(w, v));
        let ranked = engine
            .rank_with_vector(moved.as_deref().unwrap_or(v), lexical, fusion)
            .map_err(|e| LearnError::Engine(e.to_string()))?;
        let ids: Vec<&str> = ranked.iter().take(10).map(|s| catalog.tools[s.ord as usize].id.as_str()).collect();
        total += dcg_ndcg(&ids, &q.gold, 10);
    }
    Ok(total / set.len().max(1) as f64)
}

/// nDCG@10 on the judging part of `labels` (the part [`learn_adapter`] judges on) with
/// `adapter`, or with none: how a gateway compares the adapter in force with a new one on the
/// same held-out labels. `engine` must be opened with `use_adapter: false`.
pub fn judge_adapter(
    engine: &Engine,
    labels: &[LabelledQuery],
    adapter: Option<&QueryAdapter>,
) -> Result<f64, LearnError> {
    let known: HashSet<&str> = engine.catalog().tools.iter().map(|t| t.id.as_str()).collect();
    let mut judge: Vec<&LabelledQuery> = labels
        .iter()
        .filter(|q| part(q) >= 85 && q.gold.iter().flatten().any(|g| known.contains(g.as_str())))
        .collect();
    judge.truncate(MAX_EVAL);
    let err = |e: toolsearch_query::ProtocolError| LearnError::Engine(e.to_string());
    let ev: Vec<Evidence> = judge
        .iter()
        .map(|q| Ok((engine.embed_query(&q.text).map_err(err)?, engine.lexical_tools(&q.text).map_err(err)?)))
        .collect::<Result<_, LearnError>>()?;
    let fusion = match (adapter, engine.options().fusion) {
        (Some(a), Fusion::Blend { lexical_k, .. }) => Fusion::Blend { alpha: a.alpha, lexical_k },
        (_, fusion) => fusion,
    };
    mean_ndcg(engine, &judge, &ev, adapter.map(|a| a.weights.as_slice()), fusion)
}

/// Whether the query with this id falls in the judging part of the labels (15%, by a hash of
/// the id), where [`learn_adapter`] and [`judge_adapter`] judge.
pub fn judged(id: &str) -> bool {
    bucket(id) >= 85
}

/// Fits an adapter to `labels` on `engine`'s index (the engine's own adapter, if any, is not
/// used: open it with `use_adapter: false`).
pub fn learn_adapter(engine: &Engine, labels: &[LabelledQuery]) -> Result<LearnReport, LearnError> {
    let catalog = engine.catalog();
    let ord_of: HashMap<&str, u32> = catalog.tools.iter().enumerate().map(|(i, t)| (t.id.as_str(), i as u32)).collect();
    let usable: Vec<&LabelledQuery> =
        labels.iter().filter(|q| q.gold.iter().flatten().any(|g| ord_of.contains_key(g.as_str()))).collect();
    if usable.len() < MIN_LABELS {
        return Err(LearnError::TooFewLabels { found: usable.len() });
    }
    let (mut fit, mut choose, mut judge) = (Vec::new(), Vec::new(), Vec::new());
    for q in usable.iter().copied() {
        match part(q) {
            0..70 => fit.push(q),
            70..85 => choose.push(q),
            _ => judge.push(q),
        }
    }
    choose.truncate(MAX_EVAL);
    judge.truncate(MAX_EVAL);
    let err = |e: toolsearch_query::ProtocolError| LearnError::Engine(e.to_string());
    let index_err = |e: toolsearch_index::IndexError| LearnError::Engine(e.to_string());
    let d = engine.index().meta().dimension as usize;
    // Fit: Q (n x d) raw query vectors, T their targets.
    let mut qtq = vec![0f64; d * d];
    let mut qtr = vec![0f64; d * d];
    let mut examples: Vec<(Vec<f32>, Vec<u32>)> = Vec::with_capacity(fit.len());
    for q in &fit {
        let v = engine.embed_query(&q.text).map_err(err)?;
        let golds: Vec<u32> =
            q.gold.iter().filter_map(|g| g.iter().find_map(|id| ord_of.get(id.as_str()).copied())).collect();
        if golds.is_empty() {
            examples.push((v, golds));
            continue;
        }
        let mut t = vec![0f32; d];
        for &g in &golds {
            for (x, y) in t.iter_mut().zip(engine.index().tool_vector(g).map_err(index_err)?) {
                *x += y;
            }
        }
        let norm = t.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        let residual: Vec<f64> = t.iter().zip(&v).map(|(t, v)| f64::from(t / norm - v)).collect();
        for i in 0..d {
            let vi = f64::from(v[i]);
            for j in 0..d {
                qtq[i * d + j] += vi * f64::from(v[j]);
                qtr[i * d + j] += vi * residual[j];
            }
        }
        examples.push((v, golds));
    }
    // Each held-out query's vector and BM25 hits, drawn once: neither depends on the adapter.
    let evidence = |set: &[&LabelledQuery]| -> Result<Vec<Evidence>, LearnError> {
        set.iter()
            .map(|q| Ok((engine.embed_query(&q.text).map_err(err)?, engine.lexical_tools(&q.text).map_err(err)?)))
            .collect()
    };
    let (choose_e, judge_e) = (evidence(&choose)?, evidence(&judge)?);
    let (default_alpha, lexical_k) = match (engine.options().fusion, DEFAULT_BLEND) {
        (Fusion::Blend { alpha, lexical_k }, _) | (Fusion::Rrf { .. }, Fusion::Blend { alpha, lexical_k }) => {
            (alpha, lexical_k)
        }
        (Fusion::Rrf { .. }, Fusion::Rrf { .. }) => unreachable!("the default is a blend"),
    };
    let ndcg = |set: &[&LabelledQuery], ev: &[Evidence], w: Option<&[f32]>, alpha: f32| {
        mean_ndcg(engine, set, ev, w, Fusion::Blend { alpha, lexical_k })
    };
    // Candidates: ridge fits of several strengths, and the checkpoints of a contrastive fit
    // (fewer epochs = a stronger pull toward the identity map).
    let mut candidates: Vec<(Method, Vec<f32>)> = LAMBDAS
        .iter()
        .map(|&l| (Method::Ridge(l), ridge(&qtq, &qtr, d, f64::from(l) * fit.len().max(1) as f64 / 100.0)))
        .collect();
    let rows: Vec<Vec<f32>> = (0..catalog.tools.len() as u32)
        .map(|o| engine.index().tool_vector(o))
        .collect::<Result<_, _>>()
        .map_err(index_err)?;
    let tools: Vec<&[f32]> = rows.iter().map(Vec::as_slice).collect();
    candidates.extend(
        crate::contrastive::fit(&examples, &tools, d, &CHECKPOINTS)
            .into_iter()
            .map(|(e, w)| (Method::Contrastive(e), w)),
    );
    let mut best: Option<(f64, Method, f32, usize)> = None;
    for (i, (method, w)) in candidates.iter().enumerate() {
        for &alpha in &ALPHAS {
            let score = ndcg(&choose, &choose_e, Some(w), alpha)?;
            if best.as_ref().is_none_or(|b| score > b.0) {
                best = Some((score, *method, alpha, i));
            }
        }
    }
    let (_, method, alpha, i) = best.expect("the grid is not empty");
    let w = candidates.swap_remove(i).1;
    let described = match method {
        Method::Ridge(l) => format!("ridge {l}"),
        Method::Contrastive(e) => format!("contrastive {e} epochs"),
    };
    let before = ndcg(&judge, &judge_e, None, default_alpha)?;
    let after = ndcg(&judge, &judge_e, Some(&w), alpha)?;
    let adapter = (after > before).then_some(QueryAdapter {
        dimension: d as u32,
        weights: w,
        method: described,
        alpha,
        trained_on: fit.len() as u32,
        heldout: judge.len() as u32,
        heldout_ndcg_before: before,
        heldout_ndcg_after: after,
    });
    Ok(LearnReport {
        labels: usable.len(),
        fit: fit.len(),
        choose: choose.len(),
        judge: judge.len(),
        ndcg_before: before,
        ndcg_after: after,
        method,
        alpha,
        adapter,
    })
}

/// Solves `(A + lambda I) W = B` for `W` (`d x d`, row-major, as f32) by Cholesky.
fn ridge(a: &[f64], b: &[f64], d: usize, lambda: f64) -> Vec<f32> {
    let mut l = a.to_vec();
    for i in 0..d {
        l[i * d + i] += lambda;
    }
    // In-place Cholesky: lower triangle of `l` becomes L with A = L L^T.
    for j in 0..d {
        let mut s = l[j * d + j];
        for k in 0..j {
            s -= l[j * d + k] * l[j * d + k];
        }
        let diag = s.max(1e-12).sqrt();
        l[j * d + j] = diag;
        for i in j + 1..d {
            let mut s = l[i * d + j];
            for k in 0..j {
                s -= l[i * d + k] * l[j * d + k];
            }
            l[i * d + j] = s / diag;
        }
    }
    let mut w = vec![0f32; d * d];
    let mut y = vec![0f64; d];
    for col in 0..d {
        // L y = b[:, col]
        for i in 0..d {
            let mut s = b[i * d + col];
            for k in 0..i {
                s -= l[i * d + k] * y[k];
            }
            y[i] = s / l[i * d + i];
        }
        // L^T x = y
        for i in (0..d).rev() {
            let mut s = y[i];
            for k in i + 1..d {
                s -= l[k * d + i] * y[k];
            }
            y[i] = s / l[i * d + i];
        }
        for i in 0..d {
            w[i * d + col] = y[i] as f32;
        }
    }
    w
}

/// The first tool of `text` under `in_force` (`None`: no adapter) and under `new`.
fn firsts(
    engine: &Engine,
    text: &str,
    in_force: Option<&QueryAdapter>,
    new: &QueryAdapter,
) -> Result<(Option<u32>, Option<u32>), LearnError> {
    let err = |e: toolsearch_query::ProtocolError| LearnError::Engine(e.to_string());
    let v = engine.embed_query(text).map_err(err)?;
    let lexical: Vec<Hit> = engine.lexical_tools(text).map_err(err)?;
    let first = |a: Option<&QueryAdapter>| -> Result<Option<u32>, LearnError> {
        let fusion = match (a, engine.options().fusion) {
            (Some(a), Fusion::Blend { lexical_k, .. }) => Fusion::Blend { alpha: a.alpha, lexical_k },
            (_, fusion) => fusion,
        };
        let adapted = a.map(|a| toolsearch_index::adapter_apply(&a.weights, &v));
        let ranked = engine.rank_with_vector(adapted.as_deref().unwrap_or(&v), &lexical, fusion).map_err(err)?;
        Ok(ranked.first().map(|s| s.ord))
    };
    Ok((first(in_force)?, first(Some(new))?))
}

/// How many of `probes` (a tool's own text, with its ord) the tool wins under `in_force`
/// (`None`: no adapter) but loses to another under `new`, and how many were probed: how far a
/// swap would move the ranking beyond the labels it was fitted on. A probe whose first tool is
/// already another one is not counted when that other changes: among near-tied neighbours
/// the first place moves with any adapter, and nothing a caller relied on is lost. `engine`
/// must be opened with `use_adapter: false`.
pub fn top_moved(
    engine: &Engine,
    probes: &[(String, u32)],
    in_force: Option<&QueryAdapter>,
    new: &QueryAdapter,
) -> Result<(usize, usize), LearnError> {
    let mut moved = 0;
    for (text, own) in probes {
        let (was, now) = firsts(engine, text, in_force, new)?;
        if was == Some(*own) && now != Some(*own) {
            moved += 1;
        }
    }
    Ok((moved, probes.len()))
}

/// Of `queries` (what other principals searched), how many have a first tool under
/// `in_force`, and how many of those get another one under `new`: how far a fit would re-rank
/// the requests of people it did not learn from. `engine` must be opened with
/// `use_adapter: false`.
pub fn firsts_moved(
    engine: &Engine,
    queries: &[String],
    in_force: Option<&QueryAdapter>,
    new: &QueryAdapter,
) -> Result<(usize, usize), LearnError> {
    let (mut moved, mut answered) = (0, 0);
    for text in queries {
        let (Some(was), now) = firsts(engine, text, in_force, new)? else { continue };
        answered += 1;
        if now != Some(was) {
            moved += 1;
        }
    }
    Ok((moved, answered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_solves_a_small_system() {
        // A = [[2, 0], [0, 4]], B = I, lambda 0 -> W = A^-1.
        let w = ridge(&[2.0, 0.0, 0.0, 4.0], &[1.0, 0.0, 0.0, 1.0], 2, 0.0);
        assert!((w[0] - 0.5).abs() < 1e-6 && (w[3] - 0.25).abs() < 1e-6 && w[1].abs() < 1e-9, "{w:?}");
        // A larger lambda shrinks W toward zero (the identity map).
        let shrunk = ridge(&[2.0, 0.0, 0.0, 4.0], &[1.0, 0.0, 0.0, 1.0], 2, 100.0);
        assert!(shrunk[0] < 0.01);
    }
}
