//! Availability checks off the message path: each command check runs on a thread of its own,
//! every `interval`, and its last result is what the tool sets read (an atomic load). A hung
//! check therefore freezes nothing, and a change is announced to every session when it is seen,
//! not at the next request. The threads run while the [`CommandChecks`] they were started
//! with is kept: a server whose configuration names new checks starts those and drops these.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use toolsearch_disclosure::Availability;

use crate::hub::Hub;
use toolsearch_exec::CommandCheck;

/// The threads of the checks [`spawn_command_checks`] started: they stop when this is dropped
/// (at once, not at their next run; a run under way finishes first and is not announced).
#[must_use = "the checks stop when this is dropped"]
#[derive(Debug)]
pub struct CommandChecks {
    _running: Vec<mpsc::Sender<()>>,
}

/// Checks that have each run once, not yet registered anywhere: what a server that is
/// replacing its checks waits for without holding anything, then [`starts`](Self::start) if
/// they are still the ones wanted.
#[derive(Debug)]
pub struct FirstRun {
    results: Vec<(String, CommandCheck, bool)>,
}

impl FirstRun {
    /// Runs every check of `checks` once, in parallel, each for at most `timeout`.
    pub fn run(checks: &BTreeMap<String, Vec<String>>, timeout: Duration) -> FirstRun {
        let results = std::thread::scope(|s| {
            let runs: Vec<_> = checks
                .iter()
                .map(|(name, argv)| {
                    let check = CommandCheck { argv: argv.clone(), timeout };
                    s.spawn(move || {
                        let ok = check.passes();
                        (name.clone(), check, ok)
                    })
                })
                .collect();
            runs.into_iter().filter_map(|r| r.join().ok()).collect()
        });
        FirstRun { results }
    }

    /// Registers each check with `availability` as its first result (replacing a check of the
    /// same name), then re-runs each every `interval` on its own thread, calling
    /// [`Hub::announce_changes`] through `runtime` when a result changes, until the
    /// [`CommandChecks`] returned is dropped.
    pub fn start(
        self,
        interval: Duration,
        availability: &Availability,
        hub: impl Fn() -> Option<Arc<Hub>> + Send + Sync + 'static,
        runtime: tokio::runtime::Handle,
    ) -> CommandChecks {
        let hub = Arc::new(hub);
        let mut running = Vec::new();
        for (name, check, ok) in self.results {
            let state = Arc::new(AtomicBool::new(ok));
            let read = state.clone();
            availability.register(name, move || read.load(Ordering::SeqCst));
            let (hub, runtime) = (hub.clone(), runtime.clone());
            let (keep, kept) = mpsc::channel::<()>();
            running.push(keep);
            std::thread::spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = kept.recv_timeout(interval) {
                    let now = check.passes();
                    let dropped = matches!(kept.try_recv(), Err(mpsc::TryRecvError::Disconnected));
                    if state.swap(now, Ordering::SeqCst) != now && !dropped {
                        if let Some(hub) = hub() {
                            runtime.spawn(async move { hub.announce_changes().await });
                        }
                    }
                }
            });
        }
        CommandChecks { _running: running }
    }
}

/// Runs every check once (in parallel) so the first answers are right, then
/// [`starts`](FirstRun::start) them: registered with `availability`, re-run every `interval`
/// until the [`CommandChecks`] returned is dropped.
pub fn spawn_command_checks(
    checks: &BTreeMap<String, Vec<String>>,
    timeout: Duration,
    interval: Duration,
    availability: &Availability,
    hub: impl Fn() -> Option<Arc<Hub>> + Send + Sync + 'static,
    runtime: tokio::runtime::Handle,
) -> CommandChecks {
    FirstRun::run(checks, timeout).start(interval, availability, hub, runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many times the check writing to `log` has run.
    fn runs(log: &std::path::Path) -> usize {
        std::fs::read_to_string(log).map_or(0, |s| s.lines().count())
    }

    #[test]
    fn checks_run_every_interval_until_their_handle_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs");
        let argv = vec!["sh".to_owned(), "-c".to_owned(), format!("echo run >> '{}'", log.display())];
        let checks = BTreeMap::from([("logged".to_owned(), argv)]);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let availability = Availability::default();
        let every = Duration::from_millis(50);
        let handle = spawn_command_checks(
            &checks,
            Duration::from_secs(5),
            every,
            &availability,
            || None,
            runtime.handle().clone(),
        );
        assert!(availability.has_check("logged") && runs(&log) >= 1, "run once before it returns");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while runs(&log) < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(every);
        }
        assert!(runs(&log) >= 3, "re-run every interval");
        drop(handle);
        // A run under way when dropped may still finish; none starts after it.
        std::thread::sleep(Duration::from_millis(500));
        let after = runs(&log);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(runs(&log), after, "no run after the handle was dropped");
    }
}
