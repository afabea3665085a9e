//! `toolsearch bench`: retrieval quality and latency on labelled queries.

use std::path::PathBuf;

use toolsearch::eval::{
    load_queries, report_html, run_bench, unknown_gold, write_report, BenchOptions, LabelledQuery, ReportMeta,
};
use toolsearch::{Engine, EngineOptions};

use super::common::{emit, progress, Cutoff, Global, ModeArg};
use super::failure::{Failure, Problem};
use super::output::say_err;
use super::render;

/// Which labelled queries a verb runs.
#[derive(clap::Args, Debug)]
pub(crate) struct QuerySet {
    /// The index directory.
    pub index: PathBuf,
    /// Labelled queries: {"id", "query", "gold": [...], "gold_groups": [[...]]} per line.
    pub queries: PathBuf,
    /// Only queries of this split: the `split` field, else a tag, else an id prefix.
    #[arg(long)]
    pub split: Option<String>,
    /// Run a deterministic sample of this many queries.
    #[arg(long)]
    pub sample: Option<usize>,
}

impl QuerySet {
    /// The queries, loaded and filtered.
    pub(crate) fn load(&self) -> Result<Vec<LabelledQuery>, Failure> {
        load_queries(&self.queries, self.split.as_deref(), self.sample).map_err(|e| Problem::InvalidQueries.because(e))
    }

    /// Refuses queries none of whose gold tools `engine`'s index holds (labelled with another
    /// catalogue's ids, every figure would be 0), and warns of the queries with a gold tool it
    /// lacks, which no ranking can find.
    pub(crate) fn check_gold(&self, labelled: &[LabelledQuery], engine: &Engine) -> Result<(), Failure> {
        let missing = unknown_gold(labelled, |id| engine.tool(id).is_some());
        let Some(&(q, id)) = missing.first() else { return Ok(()) };
        let (file, index) = (self.queries.display(), self.index.display());
        if missing.len() == labelled.len() {
            return Err(Problem::InvalidQueries.because(format!(
                "{file}: no query's gold tools are in the index {index} (query {:?} names {id:?}): are the \
                 queries labelled with this catalogue's tool ids?",
                q.id
            )));
        }
        say_err!(
            "warning: {file}: {} of {} queries name a gold tool the index {index} does not hold (query {:?} names \
             {id:?}); each counts as a miss",
            missing.len(),
            labelled.len(),
            q.id
        );
        Ok(())
    }
}

/// Measure retrieval quality and latency on labelled queries (queries.jsonl format).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    set: QuerySet,
    /// Modes to run and compare, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "hybrid,bm25,dense")]
    mode: Vec<ModeArg>,
    /// Recall cut-offs, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10", value_parser = clap::value_parser!(u16).range(1..))]
    k: Vec<u16>,
    /// Candidates drawn from each index per query for the uncut ranking (the default path
    /// measured beside it draws as many as the protocol: 64).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    depth: u16,
    /// Also measure the answerability decision on twins: each query again with its gold
    /// tools taken out of its candidates (AUROC, and how often each half answers NO_MATCH).
    #[arg(long)]
    twins: bool,
    /// Also write the results as one self-contained HTML page with pictures (quality by
    /// mode, a reliability diagram, latency histograms by stage, and with --twins the
    /// answerability ROC).
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    #[command(flatten)]
    cutoff: Cutoff,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let labelled = args.set.load()?;
    let depth = usize::from(args.depth);
    let options = EngineOptions {
        models: global.models.clone(),
        model: global.model.clone(),
        min_confidence: args.cutoff.min_confidence,
        ..EngineOptions::default()
    };
    let engine = Engine::open_with(&args.set.index, options).map_err(|e| Problem::Index.because(e))?;
    args.set.check_gold(&labelled, &engine)?;
    let mut reports = Vec::new();
    for &mode in &args.mode {
        engine.clear_query_cache();
        let options = BenchOptions {
            retrieval: mode.into(),
            ks: args.k.iter().map(|&k| k.into()).collect(),
            depth,
            progress: progress(global, true),
            twins: args.twins,
            ..BenchOptions::default()
        };
        reports.push(run_bench(&engine, &labelled, &options)?);
        // With a learned adapter, the same queries again without it, for comparison.
        if engine.adapter().is_some() && matches!(mode, ModeArg::Hybrid) {
            let plain = EngineOptions { use_adapter: false, ..engine.options().clone() };
            let plain = Engine::with_embedder(&args.set.index, engine.embedder().clone(), plain)
                .map_err(|e| Problem::Index.because(e))?;
            let mut report = run_bench(&plain, &labelled, &options)?;
            report.mode = "hybrid-no-adapter".into();
            reports.push(report);
        }
    }
    if let Some(path) = &args.report {
        let meta =
            ReportMeta { index: args.set.index.display().to_string(), queries: args.set.queries.display().to_string() };
        write_report(path, &report_html(&reports, &meta))
            .map_err(|e| Problem::Io.because(format!("{}: {e}", path.display())))?;
    }
    emit(global, &reports, || render::bench(&reports))
}
