//! The gateway's upstream servers as a set that changes while it serves: a server added to the
//! config is started and its availability group registered; one removed is stopped (its task
//! ended, its child process killed with it); one changed is both.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::mpsc;
use toolsearch_disclosure::Availability;

use crate::config::{GatewayLimits, ServerSpec};
use crate::listing::Listing;
use crate::upstream::{LazySettings, UpEvent, Upstream};

/// The running upstreams, by name.
pub struct Fleet {
    upstreams: RwLock<BTreeMap<String, Arc<Upstream>>>,
    tasks: Mutex<BTreeMap<String, tokio::task::JoinHandle<()>>>,
    events: mpsc::UnboundedSender<UpEvent>,
    availability: Arc<Availability>,
    /// The state directory (OAuth grants live under it).
    state: std::path::PathBuf,
    /// Whether each server's listing is kept under `state` for the next start (a primary).
    keeps_listings: bool,
    /// How long a forwarded request may take where a server's entry says nothing, in
    /// milliseconds: the config's, changed by a reload for the next request.
    call_timeout_ms: AtomicU64,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet").field("upstreams", &self.names()).finish()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (_, task) in std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner())) {
            task.abort();
        }
    }
}

impl Fleet {
    /// An empty fleet whose upstreams report to `events` and register their availability in
    /// `availability` (as group `upstream:NAME`), with `state` as the state directory; a
    /// request forwarded to a server whose entry gives no timeout may take `call_timeout`.
    pub(crate) fn new(
        events: mpsc::UnboundedSender<UpEvent>,
        availability: Arc<Availability>,
        state: &std::path::Path,
        call_timeout: Duration,
    ) -> Fleet {
        let fleet = Fleet {
            upstreams: RwLock::default(),
            tasks: Mutex::default(),
            events,
            availability,
            state: state.to_path_buf(),
            keeps_listings: false,
            call_timeout_ms: AtomicU64::new(0),
        };
        fleet.set_call_timeout(call_timeout);
        fleet
    }

    /// The same, keeping each server's listing under the state directory for the next start,
    /// where it is indexed while the server starts (`crate::upstream`'s kept listings): what a
    /// primary gateway does, and not a replica (which writes nothing there) or a check.
    pub(crate) fn keeping_listings(mut self, keep: bool) -> Fleet {
        self.keeps_listings = keep;
        self
    }

    /// Sets how long a request forwarded to a server whose entry gives no `call_timeout_secs`
    /// may take, from the next request on.
    pub(crate) fn set_call_timeout(&self, timeout: Duration) {
        self.call_timeout_ms.store(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// How long a request forwarded to `up` may take: its entry's own timeout, else the
    /// fleet's ([`Fleet::set_call_timeout`]).
    pub(crate) fn call_timeout(&self, up: &Upstream) -> Duration {
        up.call_timeout(Duration::from_millis(self.call_timeout_ms.load(Ordering::Relaxed)))
    }

    /// Starts server `name` (lazy: on demand, see `crate::upstream::lazy`; its requests
    /// forwarded within `call_timeout` if given); one of that name must have been stopped first
    /// ([`Fleet::stop`]).
    pub(crate) fn add(
        &self,
        name: &str,
        spec: &ServerSpec,
        limits: GatewayLimits,
        connect: Duration,
        lazy: Option<LazySettings>,
        call_timeout: Option<Duration>,
    ) {
        self.remove(name);
        let up =
            Upstream::new(name.to_owned(), spec.clone(), limits, lazy, call_timeout, &self.state, self.keeps_listings);
        let task = up.supervise(self.events.clone(), connect);
        let (flag, why) = (up.flag(), up.clone());
        self.availability.register_with_reason(
            format!("upstream:{name}"),
            move || flag.load(std::sync::atomic::Ordering::SeqCst),
            move || why.client_reason(),
        );
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_owned(), task);
        self.upstreams.write().unwrap_or_else(|p| p.into_inner()).insert(name.to_owned(), up);
    }

    /// Takes server `name` out of the fleet, if it runs: its supervision ends and it is marked
    /// down; what it runs is ended in the background (see [`Fleet::stop`] to wait for that).
    fn remove(&self, name: &str) -> Option<Arc<Upstream>> {
        if let Some(task) = self.tasks.lock().unwrap_or_else(|p| p.into_inner()).remove(name) {
            task.abort();
        }
        let up = self.upstreams.write().unwrap_or_else(|p| p.into_inner()).remove(name)?;
        up.flag().store(false, std::sync::atomic::Ordering::SeqCst);
        Some(up)
    }

    /// Stops server `name`, if it runs, and waits until its session is closed and its process
    /// group ended (a stdio child), so a changed server never runs twice on the same data.
    pub(crate) async fn stop(&self, name: &str) {
        if let Some(up) = self.remove(name) {
            up.stop().await;
        }
    }

    /// Server `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    /// Every server, by name.
    pub fn all(&self) -> BTreeMap<String, Arc<Upstream>> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The names of the servers.
    pub fn names(&self) -> Vec<String> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect()
    }

    /// The last known listing of every server that was ever connected.
    pub(crate) fn listings(&self) -> BTreeMap<String, Listing> {
        self.all().into_iter().filter_map(|(n, u)| u.listing().map(|l| (n, l))).collect()
    }
}
