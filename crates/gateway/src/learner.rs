//! The gateway learning from its own traffic (opt-in: `toolsearch.learn` in the config).
//!
//! On a schedule it reads its audit trail, labels each search that a successful call of a tool
//! it showed (or that was expanded since) followed (`labels_from_audit`), and fits a query
//! adapter to those labels on the index it serves (`learn_adapter`: 70% of the labels fit, 15%
//! choose, 15% judge, split by a hash of the query text, so a repeated query never sits on
//! both sides). The adapter is stored and swapped in only when, on the judged labels, it beats
//! both the unadapted ranking and the adapter in force: a worse one is never served. Each run
//! is a `learned` status event; `/readyz` shows the last run and `/metrics` the labels, the
//! held-out gain and the last swap.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use toolsearch_disclosure::LiveCatalog;
use toolsearch_embed::Embedder;
use toolsearch_eval::{judge_adapter, labels_from_audit, learn_adapter, LabelledQuery, LearnError};
use toolsearch_index::IndexMeta;
use toolsearch_mcp::ops::Status;
use toolsearch_mcp::{trail, Hub};
use toolsearch_query::{Engine, EngineOptions};

/// Most labels a run fits on, the newest: bounds a run's time and memory whatever the trail
/// holds (embedding 20,000 queries takes about two minutes of one core).
pub const MAX_LABELS: usize = 20_000;

/// The `toolsearch.learn` section of a gateway config: present = on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearnSettings {
    /// Seconds between runs (default 3600).
    pub every_secs: u64,
    /// New labels the trail must hold since the last run for another fit (default 20).
    pub min_new_labels: usize,
}

impl Default for LearnSettings {
    fn default() -> Self {
        LearnSettings { every_secs: 3600, min_new_labels: 20 }
    }
}

/// What the last run did, for the status and `/readyz`.
pub type LastRun = Arc<Mutex<Option<Value>>>;

/// Serialises what writes the index directory (the keeper's rebuilds, the learner's swaps).
pub type IndexWriter = Arc<Mutex<()>>;

/// A learning run's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Labels read from the trail.
    pub labels: usize,
    /// Held-out nDCG@10 of the ranking in force, and of the new adapter (`None` when no fit
    /// was made).
    pub judged: Option<(f64, f64)>,
    /// Whether the new adapter was swapped in.
    pub swapped: bool,
    /// Why no fit was made, when none was.
    pub skipped: Option<String>,
}

/// The learner's state between runs.
pub(crate) struct Learner {
    pub(crate) hub: Arc<Hub>,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) trail: PathBuf,
    pub(crate) settings: LearnSettings,
    pub(crate) status: Arc<dyn Status>,
    pub(crate) last: LastRun,
    pub(crate) writer: IndexWriter,
}

impl Learner {
    /// Runs every `every_secs` until the task is dropped.
    pub(crate) async fn run(self) {
        let every = Duration::from_secs(self.settings.every_secs.max(1));
        let (mut seen, mut swaps, mut last_swap) = (0usize, 0u64, 0u64);
        loop {
            tokio::time::sleep(every).await;
            let (live, embedder, dir, writer) =
                (self.hub.live().clone(), self.embedder.clone(), self.trail.clone(), self.writer.clone());
            let min_new = self.settings.min_new_labels;
            let done =
                tokio::task::spawn_blocking(move || learn_once(&live, embedder, &dir, &writer, seen, min_new)).await;
            let run = match done {
                Ok(Ok(run)) => run,
                Ok(Err(e)) => {
                    self.status.event("learn_error", json!({"error": e}));
                    continue;
                }
                Err(e) => {
                    self.status.event("learn_error", json!({"error": e.to_string()}));
                    continue;
                }
            };
            if run.skipped.is_none() {
                seen = run.labels;
            }
            if run.swapped {
                swaps += 1;
                last_swap = unix_now();
            }
            let gain = run.judged.map_or(0.0, |(in_force, new)| new - in_force);
            self.hub.ops().metrics.learned(run.labels, gain, swaps, last_swap);
            let detail = json!({
                "labels": run.labels,
                "ndcg_in_force": run.judged.map(|j| j.0),
                "ndcg_new": run.judged.map(|j| j.1),
                "gain": gain,
                "swapped": run.swapped,
                "swaps": swaps,
                "last_swap": (last_swap > 0).then_some(last_swap),
                "skipped": run.skipped,
            });
            // A run that only waited for labels is logged when the wait starts, not each time.
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            let waiting_still = run.skipped.is_some()
                && last.as_ref().is_some_and(|l| !l["skipped"].is_null() && l["labels"] == detail["labels"]);
            if !waiting_still {
                self.status.event("learned", detail.clone());
            }
            *last = Some(detail);
        }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Every label the trail in `dir` holds, oldest first, each with its query text as its id (so
/// the fit / choose / judge split of a query never moves as the trail grows or rotates).
pub fn trail_labels(dir: &Path) -> Result<Vec<LabelledQuery>, String> {
    let files = trail::files(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut labels = Vec::new();
    for file in files {
        // A file rotated away between the listing and the read is simply gone.
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let found = labels_from_audit(&text).map_err(|(line, e)| format!("{}:{line}: {e}", file.display()))?;
        labels.extend(found);
    }
    for l in &mut labels {
        l.id = l.text.clone();
    }
    Ok(labels)
}

/// One run: reads the trail, and when it holds `min_new` labels more than `seen`, fits an
/// adapter on the index `live` serves and swaps it in if it beats what serves now.
pub fn learn_once(
    live: &LiveCatalog,
    embedder: Arc<dyn Embedder>,
    trail: &Path,
    writer: &IndexWriter,
    seen: usize,
    min_new: usize,
) -> Result<Run, String> {
    let mut labels = trail_labels(trail)?;
    // A trail that rotated away more than it gained is counted afresh.
    let total = labels.len();
    let seen = if total < seen { 0 } else { seen };
    let skip = |why: String| Ok(Run { labels: total, judged: None, swapped: false, skipped: Some(why) });
    if total < seen + min_new.max(1) {
        return skip(format!("{} new labels since the last fit; waiting for {min_new}", total - seen));
    }
    labels.drain(..labels.len().saturating_sub(MAX_LABELS));
    let serving = live.engine();
    let dir = serving.index().dir().to_path_buf();
    let options = EngineOptions { use_adapter: false, ..serving.options().clone() };
    let plain = Engine::with_embedder(&dir, embedder, options).map_err(|e| e.to_string())?;
    let report = match learn_adapter(&plain, &labels) {
        Ok(r) => r,
        Err(e @ LearnError::TooFewLabels { .. }) => return skip(e.to_string()),
        Err(e) => return Err(e.to_string()),
    };
    // The ranking in force: the adapter the index holds now, if any, judged on the same labels.
    let in_force = match plain.index().meta().adapter.as_ref() {
        Some(a) => judge_adapter(&plain, &labels, Some(a)).map_err(|e| e.to_string())?,
        None => report.ndcg_before,
    };
    let judged = Some((in_force, report.ndcg_after));
    let Some(adapter) = report.adapter.filter(|_| report.ndcg_after > in_force) else {
        return Ok(Run { labels: total, judged, swapped: false, skipped: None });
    };
    let _writing = writer.lock().unwrap_or_else(|p| p.into_inner());
    // The index may have been rebuilt (other tools) since the fit began: store only into the
    // build that was fitted on.
    let now = IndexMeta::read(&dir).map_err(|e| e.to_string())?;
    if now.generation != plain.index().meta().generation {
        return Ok(Run {
            labels: total,
            judged,
            swapped: false,
            skipped: Some("the index was rebuilt during the fit".into()),
        });
    }
    IndexMeta::set_adapter(&dir, Some(adapter)).map_err(|e| e.to_string())?;
    live.reload().map_err(|e| e.to_string())?;
    Ok(Run { labels: total, judged, swapped: true, skipped: None })
}
