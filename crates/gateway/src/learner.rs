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
//!
//! In a fleet (a PostgreSQL state store) one replica at a time learns, from every replica's
//! trail, and every replica serves what it swapped in (`crate::store::adapters`).
//!
//! Only the principals the operator trusts teach (`learn.from`: token names, `*` for all;
//! nobody until set). Each label keeps the principal that taught it; with two or more, the
//! judge draws from principals other than those fitted on, so one principal's consistent
//! labels cannot win by judging themselves. A fit under which more than `learn.max_moved` of
//! the catalogue's tools stop coming first for their own text (a neutral probe set, not the
//! traffic) is held for review instead of swapped in; so is one that, with several principals
//! teaching, would change the first tool of more than that share of what the principals it
//! did not learn from searched.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolsearch_disclosure::LiveCatalog;
use toolsearch_eval::{
    firsts_moved, judge_adapter, labels_from_audit, learn_adapter, searches_from_audit, top_moved, LabelledQuery,
    LearnError, SPLIT_TAG,
};
use toolsearch_index::IndexMeta;
use toolsearch_mcp::ops::Status;
use toolsearch_mcp::{trail, Hub};
use toolsearch_query::{Engine, EngineOptions};

use crate::config::GatewaySettings;
pub use crate::config::LearnSettings;
pub use crate::teachers::by_principal;
use crate::teachers::{asked_by_others, teachers};

/// Most labels a run fits on, the newest: bounds a run's time and memory whatever the trail
/// holds (embedding 20,000 queries takes about two minutes of one core).
pub const MAX_LABELS: usize = 20_000;

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
    /// Of the catalogue's tool texts probed, how many the new adapter puts a different tool
    /// first for (when it beat the ranking in force).
    pub moved: Option<(usize, usize)>,
    /// Why no fit was made, when none was.
    pub skipped: Option<String>,
}

/// Where a run reads its labels: this gateway's trail directory, or (in a fleet) the fleet's
/// trail as text, with the labels the fleet's adapter in force was fitted from.
pub enum Trail<'a> {
    /// The trail files in a directory.
    Dir(&'a Path),
    /// A trail's JSON lines, and how many labels the adapter in force was fitted from.
    Fleet(&'a str, usize),
}

/// The learner's state between runs.
pub(crate) struct Learner {
    pub(crate) hub: Arc<Hub>,
    pub(crate) trail: PathBuf,
    /// In a fleet: the store's URL and this replica's id (`crate::store::adapters`).
    pub(crate) store: Option<(String, String)>,
    /// The settings as the config says now (`None`: not learning), replaced by a reload.
    pub(crate) settings: tokio::sync::watch::Receiver<Option<LearnSettings>>,
    pub(crate) status: Arc<dyn Status>,
    pub(crate) last: LastRun,
    pub(crate) writer: IndexWriter,
}

impl Learner {
    /// Runs every `every_secs` until the task is dropped. New settings start the wait again,
    /// and the next run fits afresh (whose labels count may have changed); none: it waits.
    pub(crate) async fn run(mut self) {
        let (mut seen, mut swaps, mut last_swap) = (0usize, 0u64, 0u64);
        let mut last_asked = None;
        loop {
            let asked = self.settings.borrow_and_update().clone();
            if asked != last_asked {
                (seen, last_asked) = (0, asked.clone());
            }
            let every = asked.as_ref().map(|s| Duration::from_secs(s.every_secs.max(1)));
            tokio::select! {
                changed = self.settings.changed() => match changed {
                    Ok(()) => continue,
                    Err(_) => return,
                },
                () = async { match every { Some(every) => tokio::time::sleep(every).await, None => std::future::pending().await } } => {}
            }
            let Some(settings) = asked else { continue };
            // A fit under settings a reload replaced meanwhile is not swapped in.
            let (now, under) = (self.settings.clone(), settings.clone());
            let current = move || now.borrow().as_ref() == Some(&under);
            let (live, dir, writer) = (self.hub.live().clone(), self.trail.clone(), self.writer.clone());
            // In a fleet, one replica learns at a time, from every replica's trail.
            let lead = match &self.store {
                None => None,
                Some((url, _)) => match crate::store::adapters::Lead::take(url).await {
                    Ok(Some(lead)) => Some(lead),
                    Ok(None) => continue,
                    Err(e) => {
                        self.status.event("learn_error", json!({"error": e}));
                        continue;
                    }
                },
            };
            // The model the index serves with now (a reload may have changed it since the last run).
            let model = live.engine().index().meta().model_key();
            let fleet = match &lead {
                None => None,
                Some(lead) => match (lead.trail().await, lead.fitted_from(&model).await) {
                    (Ok(text), Ok(fitted)) => Some((text, fitted)),
                    (Err(e), _) | (_, Err(e)) => {
                        self.status.event("learn_error", json!({"error": e}));
                        continue;
                    }
                },
            };
            let done = tokio::task::spawn_blocking(move || {
                let trail = match &fleet {
                    Some((text, fitted)) => Trail::Fleet(text, *fitted),
                    None => Trail::Dir(&dir),
                };
                learn_once(&live, trail, &writer, seen, &settings, &current)
            })
            .await;
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
                if let (Some(lead), Some((_, replica))) = (&lead, &self.store) {
                    let dir = self.hub.live().engine().index().dir().to_path_buf();
                    let published = match IndexMeta::read(&dir).map(|m| m.adapter) {
                        Ok(Some(adapter)) => lead.publish(&model, &adapter, run.labels, replica).await,
                        Ok(None) => Ok(()),
                        Err(e) => Err(e.to_string()),
                    };
                    if let Err(e) = published {
                        self.status.event("learn_error", json!({"error": e}));
                    }
                }
            }
            drop(lead);
            let gain = run.judged.map_or(0.0, |(in_force, new)| new - in_force);
            self.hub.ops().metrics.learned(run.labels, gain, swaps, last_swap);
            let detail = json!({
                "labels": run.labels,
                "ndcg_in_force": run.judged.map(|j| j.0),
                "ndcg_new": run.judged.map(|j| j.1),
                "gain": gain,
                "swapped": run.swapped,
                "moved": run.moved.map(|(m, n)| json!({"tools": m, "probed": n})),
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

/// The learning `s` asks of this process (`None`: none), or why it cannot learn: only a
/// gateway that writes its own trail learns, from the principals the operator names.
pub(crate) fn asked(s: &GatewaySettings, replica: bool) -> Result<Option<LearnSettings>, &'static str> {
    match &s.learn {
        None => Ok(None),
        Some(_) if replica => Err("learning reads the audit trail this gateway writes: a replica has none"),
        Some(_) if !s.audit.enabled => {
            Err("learning reads the audit trail this gateway writes: audit.enabled is false")
        }
        Some(l) if l.from.is_empty() => Err(
            "learn.from names nobody whose traffic may teach: list the trusted tokens' names (or \"*\" for every caller)",
        ),
        Some(l) => Ok(Some(l.clone())),
    }
}

/// Gives the learner what `new` asks when it differs from what `old` asked (a reload), and
/// says so: `learn_on` with the names that teach, or `learn_off` with why. Sent under the
/// index writer's lock, so that a fit is either swapped in before the change or sees it.
pub(crate) fn reconfigure(
    (learner, writer): (&tokio::sync::watch::Sender<Option<LearnSettings>>, &IndexWriter),
    (old, new): (&GatewaySettings, &GatewaySettings),
    replica: bool,
    status: &dyn Status,
) {
    let now = asked(new, replica);
    if asked(old, replica) == now {
        return;
    }
    let _writing = writer.lock().unwrap_or_else(|p| p.into_inner());
    match &now {
        Ok(Some(l)) => status.event("learn_on", json!({"from": l.from, "every_secs": l.every_secs})),
        Ok(None) => status.event("learn_off", json!({"reason": "the config has no toolsearch.learn"})),
        Err(reason) => status.event("learn_off", json!({ "reason": reason })),
    }
    learner.send_replace(now.ok().flatten());
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Every label the trail in `dir` holds, oldest first, each with its query text as its id (so
/// the fit / choose / judge split of a query never moves as the trail grows or rotates).
pub fn trail_labels(dir: &Path) -> Result<Vec<LabelledQuery>, String> {
    read_trail(dir).map(|(labels, _)| labels)
}

/// Every search of a trail as (token, query), oldest first.
type Searches = Vec<(String, String)>;

/// The trail in `dir`, read once: its labels (as [`trail_labels`]) and its searches.
fn read_trail(dir: &Path) -> Result<(Vec<LabelledQuery>, Searches), String> {
    let files = trail::files(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (mut labels, mut searches) = (Vec::new(), Vec::new());
    for file in files {
        // A file rotated away between the listing and the read is simply gone.
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let (found, asked) = parse_trail(&text).map_err(|(line, e)| format!("{}:{line}: {e}", file.display()))?;
        labels.extend(found);
        searches.extend(asked);
    }
    Ok((labels, searches))
}

/// One trail text's labels (each with its query text as its id) and searches.
fn parse_trail(text: &str) -> Result<(Vec<LabelledQuery>, Searches), (usize, String)> {
    let mut labels = labels_from_audit(text)?;
    for l in &mut labels {
        l.id = l.text.clone();
    }
    Ok((labels, searches_from_audit(text)))
}

/// The neutral probe set a swap is bounded on: up to 400 of the catalogue's tool texts (name
/// and description), spread evenly over it, each with its tool's ord.
fn probes(engine: &Engine) -> Vec<(String, u32)> {
    let tools = &engine.catalog().tools;
    let step = tools.len().div_ceil(400).max(1);
    let own =
        |(ord, t): (usize, &toolsearch_catalog::Tool)| (format!("{}: {}", t.name, t.details.description), ord as u32);
    tools.iter().enumerate().step_by(step).map(own).collect()
}

/// One run: reads the trail, and when it holds `min_new` labels more than `seen` (in a fleet,
/// more than the fleet's adapter in force was fitted from), fits an adapter on the index
/// `live` serves and swaps it in if it beats what serves now, and if `current()` still says
/// `settings` are the config's when it would.
pub fn learn_once(
    live: &LiveCatalog,
    trail: Trail<'_>,
    writer: &IndexWriter,
    seen: usize,
    settings: &LearnSettings,
    current: &dyn Fn() -> bool,
) -> Result<Run, String> {
    let min_new = settings.min_new_labels;
    let ((labels, searches), seen) = match trail {
        Trail::Dir(dir) => (read_trail(dir)?, seen),
        Trail::Fleet(text, fitted) => {
            (parse_trail(text).map_err(|(line, e)| format!("the fleet's trail:{line}: {e}"))?, seen.max(fitted))
        }
    };
    let mut labels = by_principal(labels, settings);
    // A trail that rotated away more than it gained is counted afresh.
    let total = labels.len();
    let seen = if total < seen { 0 } else { seen };
    let skip = |why: String| Ok(Run { labels: total, judged: None, swapped: false, moved: None, skipped: Some(why) });
    if total < seen + min_new.max(1) {
        return skip(format!("{} new labels since the last fit; waiting for {min_new}", total - seen));
    }
    labels.drain(..labels.len().saturating_sub(MAX_LABELS));
    let serving = live.engine();
    let dir = serving.index().dir().to_path_buf();
    let options = EngineOptions { use_adapter: false, ..serving.options().clone() };
    // With the model the index serves with (a reload may change it: the swap below then refuses).
    let plain = Engine::with_embedder(&dir, serving.embedder().clone(), options).map_err(|e| e.to_string())?;
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
        return Ok(Run { labels: total, judged, swapped: false, moved: None, skipped: None });
    };
    let moved = top_moved(&plain, &probes(&plain), plain.index().meta().adapter.as_ref(), &adapter)
        .map_err(|e| e.to_string())?;
    let held = |why: String| Ok(Run { labels: total, judged, swapped: false, moved: Some(moved), skipped: Some(why) });
    if moved.0 as f64 > settings.max_moved * moved.1 as f64 {
        return held(format!(
            "held for review: under the new adapter {} of {} tools no longer come first for their own text, over learn.max_moved {}",
            moved.0, moved.1, settings.max_moved
        ));
    }
    // With several principals teaching, one principal's fit must not re-rank everyone else's
    // requests: when more than `learn.max_moved` of what the others searched would change its
    // first tool, the fit waits for review. (With one, the operator named who teaches.)
    if labels.iter().any(|l| l.tags.iter().any(|t| t.starts_with(SPLIT_TAG))) {
        let others = asked_by_others(&searches, &teachers(&labels));
        let overridden = firsts_moved(&plain, &others, plain.index().meta().adapter.as_ref(), &adapter)
            .map_err(|e| e.to_string())?;
        if overridden.0 as f64 > settings.max_moved * overridden.1 as f64 {
            return held(format!(
                "held for review: under the new adapter {} of {} searches by principals it did not learn from change their first tool, over learn.max_moved {}",
                overridden.0, overridden.1, settings.max_moved
            ));
        }
    }
    let _writing = writer.lock().unwrap_or_else(|p| p.into_inner());
    // The index may have been rebuilt (other tools) since the fit began: store only into the
    // build that was fitted on.
    let now = IndexMeta::read(&dir).map_err(|e| e.to_string())?;
    if now.generation != plain.index().meta().generation {
        return Ok(Run {
            labels: total,
            judged,
            swapped: false,
            moved: Some(moved),
            skipped: Some("the index was rebuilt during the fit".into()),
        });
    }
    if !current() {
        let why = "the learn settings changed during the fit".into();
        return Ok(Run { labels: total, judged, swapped: false, moved: Some(moved), skipped: Some(why) });
    }
    IndexMeta::set_adapter(&dir, Some(adapter)).map_err(|e| e.to_string())?;
    live.reload().map_err(|e| e.to_string())?;
    Ok(Run { labels: total, judged, swapped: true, moved: Some(moved), skipped: None })
}
