//! Lazy upstreams: started when a call, read or prompt needs one, stopped when idle.
//!
//! A lazy server's tools stay in the catalogue while it is not running: its last listing is
//! kept in the state directory (`super::kept`: a changed entry starts afresh) and read back at
//! startup, where it stands in for connecting.
//! The first request that needs the server wakes its supervisor, which connects as for any
//! server; requests wait for that within the connect timeout. After `idle_stop_secs` without
//! a request (none in flight), the session is closed and the supervisor waits again; the
//! server stays available. A lazy server without a kept listing is started at once to list
//! it, then stopped when idle. One that fails to start is down and retried like any other.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How a lazy server is kept.
#[derive(Debug, Clone)]
pub struct LazySettings {
    /// The state directory its listing is kept under.
    pub state: PathBuf,
    /// How long it may sit unused before it is stopped.
    pub idle: Duration,
}

/// A lazy server's state.
#[derive(Debug)]
pub(crate) struct Lazy {
    pub(super) settings: LazySettings,
    /// Woken by a request that needs the server while it is not running.
    pub(super) wanted: Notify,
    /// Woken when a session is up.
    pub(super) connected: Notify,
    /// When it was last used.
    used: Mutex<Instant>,
    /// Requests to it in flight.
    busy: AtomicUsize,
}

impl Lazy {
    pub(super) fn new(settings: LazySettings) -> Lazy {
        Lazy {
            settings,
            wanted: Notify::new(),
            connected: Notify::new(),
            used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
        }
    }

    /// A request starts using the server.
    pub(super) fn enter(&self) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// A request is done with the server.
    pub(super) fn leave(&self) {
        self.busy.fetch_sub(1, Ordering::SeqCst);
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Whether it has been unused, with nothing in flight, for the idle time.
    pub(super) fn idle(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
            && self.used.lock().unwrap_or_else(|p| p.into_inner()).elapsed() >= self.settings.idle
    }
}
