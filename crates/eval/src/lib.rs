//! Retrieval-quality and latency benchmarks for toolsearch: labelled query sets in, Recall@k,
//! nDCG@10, MRR, expected calibration error and per-stage latency percentiles out; and token
//! accounting of discovery against loading every schema up front; `bench --report` draws them
//! on one self-contained HTML page (`report`).
//!
//! Key design decision: the harness measures the engine through the same ranking path the
//! protocol uses ([`toolsearch_query::Ranker::rank_tools_timed`]), switching only which indexes
//! answer (hybrid, BM25 alone, dense alone), so the modes are compared on real code paths in one
//! run, and metrics are pure functions over ranked ids, tested without a model. Beside that
//! uncut ranking it measures what a caller gets: the page `search_tool_by_category` answers by
//! default, and its answerability decision on "twins" (queries with their gold tools taken out).
//!
//! ## Where things live
//!
//! `run.rs` runs a query set and measures it, `answers.rs` the default path and twins,
//! `metrics.rs` the pure metrics, `queries.rs` the labelled query format, `report/` the HTML
//! page (`svg.rs` its charts), `tokens.rs` token accounting, `calibrate.rs` the confidence map;
//! `learn.rs`, `contrastive.rs` and `audit_labels.rs` are `toolsearch learn` (its fits, and
//! labels from an audit trail).
#![deny(missing_docs)]

mod answers;
mod audit_labels;
mod calibrate;
mod contrastive;
mod learn;
mod metrics;
mod queries;
mod report;
mod run;
mod structure;
mod tokens;

pub use answers::{DefaultPath, Twins, DEFAULT_LIMIT};
pub use audit_labels::{labels_from_audit, searches_from_audit, PRINCIPAL_TAG};
pub use calibrate::{fit_calibration, platt, CalibrationReport};
pub use learn::{
    firsts_moved, judge_adapter, judged, learn_adapter, top_moved, LearnError, LearnReport, MIN_LABELS, SPLIT_TAG,
};
pub use metrics::{
    auroc, dcg_ndcg, expected_calibration_error, first_relevant_rank, recall_at, reliability, roc_curve, Percentiles,
    ReliabilityBin,
};
pub use queries::{load_queries, unknown_gold, EvalError, LabelledQuery};
pub use report::{report_html, write_report, ReportMeta};
pub use run::{dump_candidates, run_bench, BenchOptions, BenchReport, Plots, StageLatency, RECALL_CURVE_K};
pub use tokens::{token_report, TokenReport};
