//! Operating a server: what it measures and records ([`Operations`]: metrics, the audit trail
//! on disk, request logs, upstream states). The HTTP endpoints that show it are served from
//! `ops_http`:
//!
//! - `/healthz`: 200 `ok` while the process serves (for a liveness probe).
//! - `/readyz`: 200 when the index is loaded and answering, else 503, with JSON: the tools
//!   indexed, each upstream's state (up or down, tools, the operator's reason), the tools held
//!   back and the tools flagged as possibly injected.
//! - `/metrics`: OpenMetrics text (`crate::metrics`).
//!
//! These endpoints are for operators. With bearer tokens configured, `/readyz`'s details and
//! `/metrics` need a token holding the scope [`OPS_SCOPE`] (both name upstreams and tools that
//! a client's scopes may hide from it); without one, `/readyz` answers only `{"ready": ...}`
//! and `/metrics` 401. Without tokens (loopback only) they are open, like `/mcp`. A browser
//! `Origin` other than a loopback one is refused, as on `/mcp`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::metrics::Metrics;
use crate::trail::Trail;

/// Request log events queued for the log thread at most.
const LOG_QUEUE: usize = 4096;

/// How long the log thread rests after writing what was queued: a log line is at most this
/// late, and at this rate [`LOG_QUEUE`] holds 200,000 events a second.
const LOG_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// What the gateway reports while it works (a terminal line, or a JSON line for scripts).
pub trait Status: Send + Sync {
    /// One event: a short `kind` and its details.
    fn event(&self, kind: &str, detail: Value);
}

/// The scope a bearer token needs to read `/metrics` and `/readyz`'s details.
pub const OPS_SCOPE: &str = "ops";

/// One upstream's state, as `/readyz` and the `upstream_up` metric show it.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamState {
    /// Its name in the config.
    pub name: String,
    /// Connected.
    pub up: bool,
    /// Tools it lists.
    pub tools: usize,
    /// Why it is down (operator's wording, credentials masked).
    pub reason: Option<String>,
    /// Progress notifications it sent that named no open request of its own, dropped
    /// (the gateway routes them by ownership).
    pub progress_dropped: u64,
}

/// A source of details for `/readyz` beyond the index: upstream states, and an object of more
/// fields (the tools held back and flagged).
pub type Details = Arc<dyn Fn() -> (Vec<UpstreamState>, Value) + Send + Sync>;

/// Why a server is not ready, asked at each `/readyz`: `None` when nothing holds it back.
pub type Unready = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What a server measures and records.
pub struct Operations {
    /// Counters and histograms served at `/metrics`.
    pub metrics: Metrics,
    /// The audit trail on disk, if one is kept (shared with what a session's remake writes).
    pub trail: Option<Arc<Trail>>,
    /// Where request log events go, if anywhere: through a bounded queue to a thread of its
    /// own, so a reader that stops draining the log (a full stderr pipe) never blocks a call.
    log: Option<std::sync::mpsc::SyncSender<(String, Value)>>,
    /// Log events dropped because the queue was full.
    dropped: Arc<AtomicU64>,
    /// Upstream states and held tools, for a gateway.
    pub details: Option<Details>,
    /// Why the server is not ready beyond its index, if it is not (a gateway whose shared
    /// state store is unreachable): `/readyz` answers 503 while this says something.
    pub unready: Option<Unready>,
    ids: AtomicU64,
    prefix: u32,
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operations").field("trail", &self.trail).finish()
    }
}

impl Default for Operations {
    fn default() -> Self {
        Operations::new(None, None, None)
    }
}

impl Operations {
    /// Operations with a trail, a request log and gateway details, each optional.
    pub fn new(trail: Option<Trail>, log: Option<Arc<dyn Status>>, details: Option<Details>) -> Operations {
        // Request ids of two processes (two replicas) differ in their prefix.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let prefix = (nanos as u32) ^ std::process::id().rotate_left(16);
        let dropped = Arc::new(AtomicU64::new(0));
        let log = log.and_then(|status| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(String, Value)>(LOG_QUEUE);
            let spawned = std::thread::Builder::new().name("toolsearch-log".into()).spawn(move || {
                // Written in batches: the thread wakes at most once per LOG_PAUSE, not once per
                // request (each wake-up takes a core from the client and the upstream).
                while let Ok((kind, detail)) = rx.recv() {
                    status.event(&kind, detail);
                    while let Ok((kind, detail)) = rx.try_recv() {
                        status.event(&kind, detail);
                    }
                    std::thread::sleep(LOG_PAUSE);
                }
            });
            spawned.ok().map(|_| tx)
        });
        Operations {
            metrics: Metrics::default(),
            trail: trail.map(Arc::new),
            log,
            dropped,
            details,
            unready: None,
            ids: AtomicU64::new(0),
            prefix,
        }
    }

    /// These operations, not ready while `unready` says why.
    pub fn with_unready(mut self, unready: Unready) -> Operations {
        self.unready = Some(unready);
        self
    }

    /// Log events dropped so far because the log was not read fast enough.
    pub fn dropped_log_events(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// A new request id, unique within the process and unlikely to repeat across processes.
    pub fn request_id(&self) -> String {
        format!("{:08x}-{:x}", self.prefix, self.ids.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Logs one event, when a log is configured; dropped (and counted) when the queue is full.
    pub fn log(&self, kind: &str, detail: Value) {
        if let Some(log) = &self.log {
            if log.try_send((kind.to_owned(), detail)).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// A log that stops being read: its first event blocks until the test lets it go.
    struct Stalled {
        gate: Mutex<()>,
        seen: Mutex<Vec<u64>>,
    }

    impl Status for Stalled {
        fn event(&self, _kind: &str, detail: Value) {
            drop(self.gate.lock().unwrap());
            self.seen.lock().unwrap().push(detail.as_u64().unwrap());
        }
    }

    #[test]
    fn a_log_nobody_reads_drops_and_counts_events_instead_of_blocking_a_request() {
        let status = Arc::new(Stalled { gate: Mutex::new(()), seen: Mutex::default() });
        let held = status.gate.lock().unwrap();
        let ops = Operations::new(None, Some(status.clone() as Arc<dyn Status>), None);
        let sent = LOG_QUEUE as u64 + 10;
        for i in 0..sent {
            ops.log("request", json!(i));
        }
        // The log thread holds at most one event; the queue the next LOG_QUEUE; the rest were
        // dropped, and none of the calls above waited.
        let dropped = ops.dropped_log_events();
        assert!((9..=10).contains(&dropped), "{dropped}");
        drop(held);
        let delivered = sent - dropped;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while (status.seen.lock().unwrap().len() as u64) < delivered {
            assert!(std::time::Instant::now() < deadline, "the queued events were not delivered");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let seen = status.seen.lock().unwrap();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order");
        assert_eq!(seen[0], 0);
    }
}
