//! Running a query set against an engine.

use std::time::Instant;

use serde::Serialize;
use toolsearch_index::document::tool_lexical;
use toolsearch_index::{DocKind, Reporter, View};
use toolsearch_query::{Engine, ErrorCode, Filter, ProtocolError, Retrieval, StageTimes};

use crate::answers::{DefaultPath, Tally};
use crate::metrics::{
    dcg_ndcg, expected_calibration_error, first_relevant_rank, recall_at, reliability, roc_curve, Percentiles,
    ReliabilityBin,
};
use crate::queries::LabelledQuery;
use crate::structure::NodeEvidence;

/// How to run a benchmark.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Which indexes answer.
    pub retrieval: Retrieval,
    /// Cut-offs for Recall@k.
    pub ks: Vec<usize>,
    /// Results ranked per query (MRR looks this deep).
    pub depth: usize,
    /// Where progress goes (nowhere by default).
    pub progress: Reporter,
    /// Queries re-run to measure the cached path (0 = skip).
    pub cached_runs: usize,
    /// Also measure the answerability decision on twins (each query with its gold tools
    /// taken out of its candidates).
    pub twins: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            retrieval: Retrieval::Hybrid,
            ks: vec![1, 5, 10],
            depth: 100,
            progress: Reporter::default(),
            cached_runs: 200,
            twins: false,
        }
    }
}

/// Latency percentiles of each stage, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StageLatency {
    /// Query embedding.
    pub embed: Percentiles,
    /// Dense search.
    pub dense: Percentiles,
    /// Lexical search.
    pub lexical: Percentiles,
    /// Fusion.
    pub fuse: Percentiles,
    /// End to end.
    pub total: Percentiles,
}

/// The outcome of one benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// `hybrid`, `bm25` or `dense`.
    pub mode: String,
    /// Queries run.
    pub queries: usize,
    /// (k, Recall@k) for each requested k.
    pub recall: Vec<(usize, f64)>,
    /// nDCG@10.
    pub ndcg10: f64,
    /// Mean reciprocal rank (within `depth`).
    pub mrr: f64,
    /// Expected calibration error of the top-10 confidences (10 bins).
    pub ece: f64,
    /// Mean confidence of the top-10 results.
    pub mean_confidence: f64,
    /// Fraction of the top-10 results that are relevant.
    pub precision10: f64,
    /// What a search answers by default (hybrid mode only): its page's quality, how often it
    /// answers `NO_MATCH_IN_CATEGORY`, and its answerability on twins when asked for.
    pub default_path: Option<DefaultPath>,
    /// Latency by stage, milliseconds.
    pub latency_ms: StageLatency,
    /// Median total latency of repeated (cached) queries, microseconds.
    pub cached_p50_us: Option<f64>,
    /// Recall@10 of the HNSW graph against an exact scan of the same stored vectors, over
    /// the first `GRAPH_RECALL_QUERIES` (100) queries (dense and hybrid modes, whatever the
    /// catalogue's size: small catalogues are served by the exact scan anyway).
    pub graph_recall10: Option<f64>,
    /// What `bench --report` draws beside these figures (not in the JSON).
    #[serde(skip)]
    pub plots: Plots,
}

/// The deepest cut-off of [`Plots::recall_curve`].
pub const RECALL_CURVE_K: usize = 20;

/// The data behind `bench --report`'s pictures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plots {
    /// Recall@k for k = 1 to [`RECALL_CURVE_K`] (or the depth, if less).
    pub recall_curve: Vec<(usize, f64)>,
    /// The reliability diagram of the top-10 confidences (10 bins), whose ECE is
    /// [`BenchReport::ece`].
    pub reliability: Vec<ReliabilityBin>,
    /// Each query's latency by stage, milliseconds.
    pub latency_ms: Vec<StageTimes>,
    /// With twins: the ROC curve of `answerable`, originals against twins.
    pub twin_roc: Option<Vec<(f64, f64)>>,
}

/// Queries the graph's recall is measured on.
pub const GRAPH_RECALL_QUERIES: usize = 100;

/// Mean recall@10 of the graph search (the breadth the engine uses) against an exact scan.
fn graph_recall(engine: &Engine, queries: &[LabelledQuery]) -> Result<f64, ProtocolError> {
    let index = engine.index();
    let ef = index.search_breadth();
    let fault = |e: toolsearch_index::IndexError| ProtocolError::new(ErrorCode::Internal, e.to_string());
    let mut found = 0usize;
    let mut wanted = 0usize;
    for q in queries {
        let v = engine.tool_query(&q.text)?;
        let exact: Vec<u32> = index.exact_tools(&v, 10).map_err(fault)?.iter().map(|h| h.ord).collect();
        found += index.graph_tools(&v, 10, ef).map_err(fault)?.iter().filter(|h| exact.contains(&h.ord)).count();
        wanted += exact.len();
    }
    Ok(found as f64 / wanted.max(1) as f64)
}

/// Runs `queries` against `engine` and measures quality and latency.
pub fn run_bench(
    engine: &Engine,
    queries: &[LabelledQuery],
    options: &BenchOptions,
) -> Result<BenchReport, ProtocolError> {
    let bar = &options.progress;
    bar.start("bench queries", queries.len() as u64);
    let mut recall = vec![0.0; options.ks.len()];
    let mut curve = vec![0.0; RECALL_CURVE_K.min(options.depth)];
    let (mut ndcg, mut mrr) = (0.0, 0.0);
    let mut pairs: Vec<(f32, bool)> = Vec::new();
    let mut times: Vec<StageTimes> = Vec::with_capacity(queries.len());
    let catalog = engine.catalog();
    let mut answers = (options.retrieval == Retrieval::Hybrid).then(Tally::default);
    for q in queries {
        let (ranked, t) = engine.rank_tools_timed(&q.text, &Filter::default(), options.depth, options.retrieval)?;
        let ranked = ranked.results;
        times.push(t);
        let ids: Vec<&str> =
            ranked.iter().take(options.depth).map(|s| catalog.tools[s.ord as usize].id.as_str()).collect();
        for (r, &k) in recall.iter_mut().zip(&options.ks) {
            *r += recall_at(&ids, &q.gold, k);
        }
        for (k, r) in curve.iter_mut().enumerate() {
            *r += recall_at(&ids, &q.gold, k + 1);
        }
        ndcg += dcg_ndcg(&ids, &q.gold, 10);
        mrr += first_relevant_rank(&ids, &q.gold).map_or(0.0, |r| 1.0 / r as f64);
        if let Some(tally) = answers.as_mut() {
            tally.add(engine, q, options.twins)?;
        }
        for (s, id) in ranked.iter().zip(&ids).take(10) {
            pairs.push((s.confidence, q.gold.iter().any(|g| g.iter().any(|x| x == id))));
        }
        bar.advance(1);
    }
    bar.finish();
    let n = queries.len().max(1) as f64;
    let cached_p50_us = (options.cached_runs > 0 && options.retrieval != Retrieval::Lexical).then(|| {
        // Each query twice in a row: the second answer comes from the cache.
        let mut v = Vec::new();
        for q in queries.iter().take(options.cached_runs) {
            let _ = engine.rank_tools_timed(&q.text, &Filter::default(), options.depth, options.retrieval);
            let s = Instant::now();
            let _ = engine.rank_tools_timed(&q.text, &Filter::default(), options.depth, options.retrieval);
            v.push(s.elapsed().as_secs_f64() * 1e6);
        }
        Percentiles::of(&v).p50
    });
    let graph_recall10 = (options.retrieval != Retrieval::Lexical && !queries.is_empty())
        .then(|| graph_recall(engine, &queries[..queries.len().min(GRAPH_RECALL_QUERIES)]))
        .transpose()?;
    let stage = |f: fn(&StageTimes) -> f64| Percentiles::of(&times.iter().map(|t| f(t) * 1e3).collect::<Vec<_>>());
    Ok(BenchReport {
        mode: match options.retrieval {
            Retrieval::Hybrid => "hybrid",
            Retrieval::Lexical => "bm25",
            Retrieval::Dense => "dense",
        }
        .into(),
        queries: queries.len(),
        recall: options.ks.iter().zip(recall).map(|(&k, r)| (k, r / n)).collect(),
        ndcg10: ndcg / n,
        mrr: mrr / n,
        ece: expected_calibration_error(&pairs, 10),
        mean_confidence: pairs.iter().map(|p| p.0 as f64).sum::<f64>() / pairs.len().max(1) as f64,
        precision10: pairs.iter().filter(|p| p.1).count() as f64 / pairs.len().max(1) as f64,
        default_path: answers.as_ref().map(|a| a.report(engine, options.twins)),
        latency_ms: StageLatency {
            embed: stage(|t| t.embed),
            dense: stage(|t| t.dense),
            lexical: stage(|t| t.lexical),
            fuse: stage(|t| t.fuse),
            total: stage(|t| t.total),
        },
        cached_p50_us,
        graph_recall10,
        plots: Plots {
            recall_curve: curve.into_iter().enumerate().map(|(k, r)| (k + 1, r / n)).collect(),
            reliability: reliability(&pairs, 10),
            latency_ms: times.iter().map(|t| scaled(t, 1e3)).collect(),
            twin_roc: answers.filter(|_| options.twins).map(|a| roc_curve(a.twin_pairs())),
        },
    })
}

/// `t` with every stage multiplied by `by`.
fn scaled(t: &StageTimes, by: f64) -> StageTimes {
    StageTimes {
        embed: t.embed * by,
        dense: t.dense * by,
        lexical: t.lexical * by,
        fuse: t.fuse * by,
        total: t.total * by,
    }
}

/// Writes, for each query, every hybrid candidate with its evidence and whether it is gold, as
/// JSON Lines (`{"id", "candidates": [{"tool", "cosine", "bm25", "dense_rank", "lexical_rank", "gold"}]}`),
/// so fusion and calibration can be studied offline without re-embedding.
pub fn dump_candidates(
    engine: &Engine,
    queries: &[LabelledQuery],
    depth: usize,
    out: &mut dyn std::io::Write,
) -> Result<(), String> {
    let catalog = engine.catalog();
    let nodes = NodeEvidence::new(engine);
    for q in queries {
        let cands = engine.tool_candidates(&q.text, &Filter::default(), depth).map_err(|e| e.to_string())?;
        let qv = engine.tool_query(&q.text).map_err(|e| e.to_string())?;
        let mut seen = std::collections::HashMap::new();
        let mut rows: Vec<serde_json::Value> = Vec::with_capacity(cands.len());
        for c in &cands {
            let id = &catalog.tools[c.ord as usize].id;
            let node = nodes.of(engine, &qv, c.ord, &mut seen)?;
            rows.push(serde_json::json!({
                "tool": id, "cosine": c.cosine, "bm25": c.bm25, "dense_rank": c.dense_rank,
                "lexical_rank": c.lexical_rank,
                "gold": q.gold.iter().any(|g| g.contains(id)),
                "node": node.map(|n| n.0), "node_tools": node.map(|n| n.1),
            }));
        }
        let line = serde_json::json!({
            "id": q.id, "groups": q.gold.len(), "candidates": rows, "terms": term_counts(engine, q)?,
        });
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The query's analysed terms, each with the number of tools holding it (`documents`) and how
/// many of those are gold tools (`gold`): a term is unmatched with the gold tools taken out
/// when the two are equal.
fn term_counts(engine: &Engine, q: &LabelledQuery) -> Result<Vec<serde_json::Value>, String> {
    let index = engine.index();
    let terms = index.term_coverage(&q.text, DocKind::Tool, &View::everything()).map_err(|e| e.to_string())?;
    let gold: Vec<std::collections::HashSet<String>> = engine
        .catalog()
        .tools
        .iter()
        .filter(|t| q.gold.iter().any(|g| g.contains(&t.id)))
        .map(|t| index.analysed_terms(&tool_lexical(t).all()))
        .collect();
    Ok(terms
        .iter()
        .map(|t| {
            let in_gold = gold.iter().filter(|g| g.contains(&t.term)).count();
            serde_json::json!({"surface": t.surface, "term": t.term, "documents": t.documents, "gold": in_gold})
        })
        .collect())
}
