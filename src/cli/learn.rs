//! `toolsearch learn`: fit a query adapter to an index's own labels and store it.

use std::path::PathBuf;

use toolsearch::eval::{labels_from_audit, learn_adapter, load_queries, LabelledQuery, LearnError};
use toolsearch::index::IndexMeta;
use toolsearch::EngineOptions;

use super::common::{emit, engine_options, open_with, Global};
use super::failure::{Failure, Problem};
use super::render;

/// Fit a query adapter to this catalogue's own labelled queries (or an audit trail's searches
/// that ended in an expanded, successful call) and store it in the index, if it beats the
/// unadapted ranking on held-out labels.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// Labelled queries (queries.jsonl format), an audit trail (JSON Lines of audit entries), or
    /// a gateway's trail directory (STATE/audit: its rotated files are read oldest first).
    labels: Option<PathBuf>,
    /// Only queries of this split (labelled queries only).
    #[arg(long)]
    split: Option<String>,
    /// Leave out the queries `toolsearch bench --sample N` runs, to bench on them afterwards.
    #[arg(long, value_name = "N")]
    except_sample: Option<usize>,
    /// Report the fit without storing it.
    #[arg(long)]
    dry_run: bool,
    /// Remove the adapter stored in the index and exit.
    #[arg(long, conflicts_with_all = ["labels", "dry_run"])]
    remove: bool,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let index_err = |e: toolsearch::index::IndexError| Problem::Index.because(e);
    if args.remove {
        if IndexMeta::read(&args.index).map_err(index_err)?.adapter.is_none() {
            super::output::say_err!("{} has no query adapter (nothing changed)", args.index.display());
            return Ok(());
        }
        IndexMeta::set_adapter(&args.index, None).map_err(index_err)?;
        super::output::say_err!("removed the query adapter of {}", args.index.display());
        return Ok(());
    }
    let Some(path) = &args.labels else {
        return Err(Problem::Usage.because("learn needs a labels file (or --remove)"));
    };
    let labels = load_labels(path, args)?;
    // The adapter is fitted against the unadapted ranking, whatever the index holds now.
    let options = EngineOptions { use_adapter: false, ..engine_options(global, None) };
    let engine = open_with(&args.index, options)?;
    let report = learn_adapter(&engine, &labels).map_err(|e| match e {
        LearnError::TooFewLabels { .. } => Problem::InvalidQueries.because(format!("{}: {e}", path.display())),
        LearnError::Engine(m) => Problem::Internal.because(m),
    })?;
    emit(global, &report, || render::learned(&report, args.dry_run))?;
    match &report.adapter {
        None => Err(Problem::NotLearned.because(format!(
            "the adapter did not beat the unadapted ranking on {} held-out queries (nDCG@10 {:.3} vs {:.3}); nothing stored",
            report.judge, report.ndcg_after, report.ndcg_before
        ))),
        Some(a) if !args.dry_run => IndexMeta::set_adapter(&args.index, Some(a.clone())).map_err(index_err),
        Some(_) => Ok(()),
    }
}

/// Labelled queries, or the labels an audit trail holds (told apart by the first record).
fn load_labels(path: &PathBuf, args: &Args) -> Result<Vec<LabelledQuery>, Failure> {
    let bad = |e: String| Problem::InvalidQueries.because(e);
    if path.is_dir() {
        // A gateway's trail directory: its files, oldest first.
        let files = toolsearch::mcp::trail::files(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
        if files.is_empty() {
            return Err(bad(format!("{}: no audit trail files (trail*.jsonl) in this directory", path.display())));
        }
        let mut labels = toolsearch::gateway::learner::trail_labels(path).map_err(bad)?;
        for (i, l) in labels.iter_mut().enumerate() {
            l.id = format!("audit-{}", i + 1);
        }
        return Ok(labels);
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let is_audit = serde_json::from_str::<serde_json::Value>(first).is_ok_and(|v| v.get("event").is_some());
    if is_audit {
        return labels_from_audit(&text).map_err(|(line, e)| bad(format!("{}:{line}: {e}", path.display())));
    }
    let mut labels = load_queries(path, args.split.as_deref(), None).map_err(|e| bad(e.to_string()))?;
    if let Some(n) = args.except_sample {
        let sample = load_queries(path, args.split.as_deref(), Some(n)).map_err(|e| bad(e.to_string()))?;
        let skip: std::collections::HashSet<&str> = sample.iter().map(|q| q.id.as_str()).collect();
        labels.retain(|q| !skip.contains(q.id.as_str()));
    }
    Ok(labels)
}
