//! Quarantine before calls: a call is forwarded only when the definition its server lists
//! *now* is the one the pins passed.
//!
//! The index is rebuilt (and changed tools held) some time after a server connects, reconnects
//! or relists; a lazy server's kept listing may be stale when the call that starts it arrives.
//! So each forwarded call compares the digest of the tool's definition in the server's current
//! listing (a lazy server's fresh one: the check runs once the session is up) with the digest
//! the last guard let through. A mismatch waits, bounded, for the guard to judge the new
//! listing: passed (the pin moved, `trust: auto`), it runs; held, or still unjudged when the
//! wait ends, it is refused and nothing reaches the server.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use toolsearch_mcp::RunError;

use crate::approve::Judged;
use crate::upstream::Upstream;

/// The longest a call waits for the guard to judge a server's new listing.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(15);

/// What the last guard pass judged, and a signal each time that changes.
#[derive(Debug)]
pub(crate) struct Vetted {
    judged: RwLock<Arc<Judged>>,
    /// Bumped after each guard pass, for the calls that wait on one.
    generation: watch::Sender<u64>,
}

impl Default for Vetted {
    fn default() -> Vetted {
        Vetted { judged: RwLock::default(), generation: watch::Sender::new(0) }
    }
}

impl Vetted {
    /// Records what a guard pass let through (`STATE/pins.json` less `STATE/held.json`), and
    /// wakes the calls waiting on it.
    pub(crate) fn reload(&self, state: &Path) {
        let judged = Judged::read(state);
        *self.judged.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(judged);
        self.generation.send_modify(|g| *g += 1);
    }

    fn judged(&self) -> Arc<Judged> {
        self.judged.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether tool `name` of `up` (catalogue id `id`) may be called now: its definition in the
    /// server's current listing is the one the guard passed, waiting at most `wait` for a guard
    /// pass when it is not (yet).
    pub(crate) async fn check(&self, up: &Upstream, id: &str, name: &str, wait: Duration) -> Result<(), RunError> {
        let mut changes = self.generation.subscribe();
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        loop {
            // Marked seen before reading, so a pass that lands meanwhile wakes the wait below.
            changes.borrow_and_update();
            let Some(now) = up.definition_digest(name) else {
                return Err(RunError::Unavailable(format!(
                    "MCP server {:?} no longer lists tool {name:?}: it is not called",
                    up.name
                )));
            };
            let judged = self.judged();
            if judged.passed.get(id) == Some(&now) {
                return Ok(());
            }
            // This very definition was judged and held, or the wait is over: refused.
            if judged.held.get(id) == Some(&now) || tokio::time::Instant::now() >= deadline {
                return Err(RunError::Unavailable(format!(
                    "tool {id:?} is held: its definition changed since it was approved (or is not \
                     approved yet), so the gateway does not call it. Its operator can review it \
                     with `toolsearch gateway held` and approve it"
                )));
            }
            let _ = tokio::time::timeout_at(deadline, changes.changed()).await;
        }
    }
}
