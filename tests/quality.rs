//! Benchmark harness and calibration on the sample catalogue with our own labelled queries.

#[path = "common/mod.rs"]
mod common;

use toolsearch::eval::{fit_calibration, load_queries, run_bench, BenchOptions};
use toolsearch::index::IndexMeta;
use toolsearch::{Engine, EngineOptions, Retrieval};

fn queries() -> Vec<toolsearch::eval::LabelledQuery> {
    load_queries(&common::repo().join("tests/data/sample-queries.jsonl"), None, None).unwrap()
}

/// Hybrid beats BM25 and keeps within one rank's worth of dense on the 24 sample queries: on
/// so few, which of hybrid and dense wins turns on a single query's rank (they tied at .928
/// with examples in the embedded text; .930 against .938 since examples went to BM25 only),
/// so the dev sets carry the claim that hybrid beats both (docs/benchmarks.md).
#[test]
fn hybrid_beats_bm25_and_keeps_up_with_dense_on_the_sample_queries() {
    let engine = common::sample();
    let run = |retrieval| {
        run_bench(engine, &queries(), &BenchOptions { retrieval, cached_runs: 5, ..BenchOptions::default() }).unwrap()
    };
    let (hybrid, bm25, dense) = (run(Retrieval::Hybrid), run(Retrieval::Lexical), run(Retrieval::Dense));
    assert_eq!(hybrid.queries, 24);
    assert!(hybrid.recall[1].1 >= 0.9, "hybrid R@5 {:?}", hybrid.recall);
    assert!(
        hybrid.ndcg10 >= bm25.ndcg10 + 0.1 && hybrid.ndcg10 >= dense.ndcg10 - 0.01,
        "{} {} {}",
        hybrid.ndcg10,
        bm25.ndcg10,
        dense.ndcg10
    );
    // Single-index modes really skip the other index.
    assert_eq!(bm25.latency_ms.embed.p99, 0.0);
    assert_eq!(dense.latency_ms.lexical.p99, 0.0);
    // A repeated query is served from the cache.
    assert!(hybrid.cached_p50_us.unwrap() < hybrid.latency_ms.total.p50 * 1000.0);
}

#[test]
fn gold_groups_count_any_member() {
    let q = queries();
    let slack = q.iter().find(|q| q.text.contains("slack")).unwrap();
    assert_eq!(slack.gold, vec![vec!["slack.post_message".to_string(), "chat.send_message".to_string()]]);
}

#[test]
fn calibration_is_fitted_stored_in_the_index_and_used_on_open() {
    let dir = common::build(&common::sample_catalog(), "calibrated");
    let engine = common::open(&dir);
    let report = fit_calibration(&engine, &queries()).unwrap();
    let f = report.fitted;
    assert!(
        f.scale >= 0.0 && f.margin_scale >= 0.0 && f.scale + f.margin_scale > 0.0,
        "confidence must grow with the score: {report:?}"
    );
    assert_eq!((report.train_queries, report.heldout_queries), (12, 12));
    IndexMeta::set_calibration(&dir, &report.fitted).unwrap();
    let reopened = Engine::with_embedder(&dir, common::embedder(), EngineOptions::default()).unwrap();
    assert_eq!(reopened.calibration(), &report.fitted);
    // The index still verifies after the metadata was rewritten.
    toolsearch::IndexReader::open(&dir).unwrap();
}

#[test]
fn bm25_beside_the_embedding_ranks_exactly_as_one_after_the_other() {
    // A model on one thread (as the gateway runs it) leaves a core idle, so a query it must
    // embed has BM25 on a thread beside it; the shared model runs on every core, so BM25 runs
    // after it, as it does after a cached query vector's (free) embedding. The rankings must be
    // the same, scores and all, with lexical evidence in them.
    use toolsearch::embed::{Embedder, EmbedderOptions, ModelFiles, OnnxEmbedder};
    let files = ModelFiles::choose(None, None).unwrap();
    let one_thread = OnnxEmbedder::load(&files, EmbedderOptions { intra_threads: Some(1), ..Default::default() });
    let one_thread: std::sync::Arc<dyn Embedder> = std::sync::Arc::new(one_thread.unwrap());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(one_thread.busies_every_core(), cores == 1);
    assert!(common::embedder().busies_every_core(), "the default model runs on every core");
    let dir = common::build(&common::sample_catalog(), "beside");
    let beside = Engine::with_embedder(&dir, one_thread, EngineOptions::default()).unwrap();
    let after = common::open(&dir);
    let cached = common::open(&dir);
    for q in queries() {
        cached.embed_query(&q.text).unwrap();
        let hybrid = |e: &Engine| e.rank_tools_timed(&q.text, &Default::default(), 10, Retrieval::Hybrid).unwrap();
        let ((a, ta), (b, tb), (c, tc)) = (hybrid(&beside), hybrid(&after), hybrid(&cached));
        assert!(ta.embed > 0.0 && tb.embed > 0.0, "{ta:?} {tb:?}");
        assert!(ta.lexical > 0.0 && tb.lexical > 0.0 && tc.lexical > 0.0, "{ta:?} {tb:?} {tc:?}");
        assert!(!a.results.is_empty(), "{}", q.text);
        assert_eq!(a, b, "{}", q.text);
        assert_eq!(b, c, "{}", q.text);
    }
}

#[test]
fn bench_measures_the_default_path_and_the_answerability_decision_on_twins() {
    let engine = common::sample();
    let options = BenchOptions { twins: true, cached_runs: 0, ..BenchOptions::default() };
    let report = run_bench(engine, &queries(), &options).unwrap();
    let default = report.default_path.clone().expect("hybrid mode measures the default path");
    let twins = default.twins.clone().expect("asked for twins");
    // Every sample query has its gold tool among its candidates: each makes a pair.
    assert_eq!(twins.pairs, 24);
    // The page a caller gets is the uncut ranking with at most a few weak tail results cut.
    assert!(default.ndcg10 <= report.ndcg10 + 1e-9 && default.ndcg10 >= report.ndcg10 - 0.01, "{default:?}");
    assert_eq!(default.no_match_present, 0.0, "no sample query is answered NO_MATCH with its gold tool there");
    assert!((twins.ceiling - (0.5 + 0.5 * twins.gold_first)).abs() < 1e-9);
    assert!(twins.gold_first >= 0.7, "{twins:?}");
    assert!(twins.auroc > 0.5 && twins.auroc_gold_first > 0.5, "answerable tells originals from twins: {twins:?}");
    assert!(twins.no_match_removed >= twins.no_match_present, "{twins:?}");
}
