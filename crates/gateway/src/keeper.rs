//! The task that keeps a running gateway current, without dropping a client session:
//!
//! - an upstream's tool list changes, or it goes down or comes back: listed again, the index
//!   rebuilt (changes that arrive together cost one rebuild);
//! - the config file is edited (or the process gets SIGHUP): servers added, removed or changed
//!   are started, stopped or restarted, filters, trust, scopes and facades applied at the
//!   rebuild that follows, and the tool set settings (`toolset`, `scopes`, `access`) after it,
//!   each session's set made again; another `model` is loaded and every tool embedded again
//!   with it (`crate::keeper_index`); a config that does not load is refused with its error
//!   and the running one kept; `state`, which only a restart can apply, is named in the status;
//! - an operator approves a held tool (the pins file changes): rebuilt;
//! - an upstream's resources or prompts change: listed again (prompts are indexed, so a
//!   change to them rebuilds); a watched resource's update goes to its watchers at once.
//!
//! Every session is then told `list_changed` (of tools, resources, prompts) where what it
//! sees moved. A replica (`Role::Replica`) rebuilds nothing: it reloads the shared index when
//! another process rebuilt it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;
use toolsearch_embed::Embedder;

use crate::catalogue::PinsStamp;
use crate::config::GatewayConfig;
use crate::config_changes::{bounds, lazy, restart_needed, same_listings, token_changes};
use crate::fleet::Fleet;
use crate::listing::Listing;
use crate::pins;
use crate::pins::HeldNow;
use crate::stamp::{file_stamp, settled_stamp, FileStamp};
use crate::upstream::{UpEvent, Upstream};
use toolsearch_mcp::ops::Status;
use toolsearch_mcp::Hub;

/// How long the keeper waits after a change for more before it rebuilds.
const COALESCE: Duration = Duration::from_millis(250);
/// How often the config and pins files are looked at.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The keeper's state.
pub(crate) struct Keeper {
    pub(crate) hub: Arc<Hub>,
    /// The upstreams' resources and prompts as the hub passes them on.
    pub(crate) passthrough: Option<Arc<crate::passthrough::Passthrough>>,
    pub(crate) fleet: Arc<Fleet>,
    pub(crate) config: GatewayConfig,
    pub(crate) state: PathBuf,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) held: HeldNow,
    /// What the pins passed, for the calls checked against it (reloaded after each guard pass,
    /// or each reload of the shared index on a replica).
    pub(crate) vetted: Arc<crate::vetted::Vetted>,
    pub(crate) status: Arc<dyn Status>,
    /// The listings the index was last built from.
    pub(crate) last: BTreeMap<String, Listing>,
    /// The pins file as the last rebuild left it.
    pub(crate) pins: Option<PinsStamp>,
    /// A replica's view of the shared index (`None` for the gateway that builds it): what
    /// `index/meta.bin` was when last loaded. A replica never writes under the state dir; it
    /// reloads the index when another process rebuilt it.
    pub(crate) replica: Option<Option<FileStamp>>,
    /// Held while the index directory is written (here, and by the learner's swaps).
    pub(crate) writer: crate::learner::IndexWriter,
    /// The shared store, when the pins are kept in PostgreSQL (`crate::store`).
    pub(crate) store: Option<Arc<crate::store::PgStore>>,
    /// What the learner is to do (`crate::learner::reconfigure`).
    pub(crate) learn: tokio::sync::watch::Sender<Option<crate::learner::LearnSettings>>,
    /// The store's generation when last pulled.
    pub(crate) store_seen: u64,
    /// Whether the last guard pass ran without the store (nothing new trusted): the next one
    /// that can reach it runs as soon as it is back.
    pub(crate) untrusted: bool,
    /// The last refusal of the config's tool set settings reported (said once, not at every
    /// turn that tries them again).
    pub(crate) tool_sets_refused: Option<String>,
    /// The last reload of the shared index a replica could not make (said once likewise).
    pub(crate) follow_refused: Option<String>,
}

impl Keeper {
    /// Runs until the upstreams' event channel closes (the gateway is dropped).
    pub(crate) async fn run(mut self, mut events: mpsc::UnboundedReceiver<UpEvent>) {
        let mut tick = tokio::time::interval(LOOK_EVERY);
        // SIGHUP re-reads the config at once (Unix; elsewhere the watch of its file alone).
        #[cfg(unix)]
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        #[cfg(not(unix))]
        let mut hangup: Option<mpsc::Receiver<()>> = None;
        // As the config was when it was read: an edit made while the gateway started is applied.
        let mut config_stamp = self.config.stamp;
        loop {
            let (first, hup) = tokio::select! {
                e = events.recv() => match e {
                    Some(e) => (Some(e), false),
                    None => break,
                },
                _ = tick.tick() => (None, false),
                Some(()) = async { match hangup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => (None, true),
            };
            // Another replica's approval (told through the store), or the store back: pulled,
            // and judged again when the pins moved or the last pass could not trust.
            let mut back = false;
            if let Some(store) = self.store.clone().filter(|s| s.generation() != self.store_seen) {
                self.store_seen = store.generation();
                back = store.pull(&self.state).await.is_ok() && self.untrusted;
            }
            let approved = back || (self.replica.is_none() && pins::pins_stamp(&self.state) != self.pins);
            let edited = hup || file_stamp(&self.config.path) != config_stamp;
            let index_now = self.replica.map(|_| file_stamp(&self.state.join("index").join("meta.bin")));
            let moved = index_now.is_some() && index_now != self.replica;
            if first.is_none() && !approved && !edited && !moved {
                continue;
            }
            // A watched resource's update goes straight to its watchers, a log message to its
            // listeners.
            let mut first = first;
            if matches!(first, Some(UpEvent::ResourceUpdated(..) | UpEvent::Logged(..))) {
                if let Some(e) = first.take() {
                    self.relay(&e).await;
                }
                if !approved && !edited {
                    continue;
                }
            }
            let mut force = approved;
            if edited {
                config_stamp = settled_stamp(&self.config.path).await;
                force |= self.reload(hup).await;
            }
            // A server that churns its list is heard out for a moment, so a burst of changes
            // costs one rebuild, not one each.
            tokio::time::sleep(COALESCE).await;
            let mut batch: Vec<UpEvent> = first.into_iter().collect();
            while let Ok(e) = events.try_recv() {
                batch.push(e);
            }
            self.take(&batch).await;
            // Failed requests are the operator's to read (logged by `take`): nothing to rebuild
            // or announce.
            let only_failures = batch.iter().all(|e| matches!(e, UpEvent::RequestFailed(..)));
            if only_failures && !approved && !edited && !moved {
                continue;
            }
            if approved {
                self.status.event("pins_changed", json!({"pins": pins::pins_path(&self.state)}));
            }
            if let Some(stamp) = index_now {
                self.follow(moved, stamp).await;
                self.apply_tool_sets().await;
                continue;
            }
            let now = self.fleet.listings();
            if (force || !same_listings(&now, &self.last)) && self.rebuild(now).await {
                self.hub.announce_catalogue_changed().await;
            } else {
                self.hub.announce_changes().await;
            }
            self.hub.announce_offers().await;
            self.apply_tool_sets().await;
        }
    }

    /// Applies the config's tool set settings (`toolset`, `scopes`, `access`) to every session
    /// they change, once the index holds what they name (a pinned tool of a server just added).
    /// Settings no tool set can be made from are refused (said once, with the reason), the
    /// running ones kept, and tried again after each change.
    async fn apply_tool_sets(&mut self) {
        let (toolset, principal) = crate::gateway::tool_sets(&self.config.settings);
        match self.hub.reconfigure(toolset, principal).await {
            Ok(changed) => {
                self.tool_sets_refused = None;
                if let Some(sessions) = changed {
                    self.status.event("tool_sets_changed", json!({"sessions_remade": sessions}));
                }
            }
            Err(e) => {
                let error = format!("{}: toolset: {e}; the running tool sets are kept", self.config.path.display());
                if self.tool_sets_refused.as_deref() != Some(error.as_str()) {
                    self.status.event("config_error", json!({"error": crate::secrets::mask(&error)}));
                    self.tool_sets_refused = Some(error);
                }
            }
        }
    }

    /// Passes a watched resource's update, or a log message, on to the clients it is for.
    async fn relay(&self, e: &UpEvent) {
        let Some(p) = self.passthrough.as_ref() else { return };
        match e {
            UpEvent::ResourceUpdated(server, uri) => p.updated(server, uri).await,
            UpEvent::Logged(server, message) => p.logged(server, message.clone()).await,
            _ => {}
        }
    }

    /// Lists again each server whose tools changed (once, however many times it said so),
    /// and reports every event.
    async fn take(&self, batch: &[UpEvent]) {
        let mut relisted = std::collections::BTreeSet::new();
        for e in batch {
            let (UpEvent::Up(n)
            | UpEvent::Down(n)
            | UpEvent::ToolsChanged(n)
            | UpEvent::OffersChanged(n)
            | UpEvent::ResourceUpdated(n, _)
            | UpEvent::Logged(n, _)
            | UpEvent::RequestFailed(n, _)) = e;
            // An event of a server removed since is moot.
            let Some(up) = self.fleet.get(n) else { continue };
            match e {
                // A server that floods list_changed is listed again, and said to have changed,
                // once per batch, with how many times it said so.
                UpEvent::ToolsChanged(_) => {
                    if relisted.insert(n.clone()) {
                        up.relist().await;
                        let times = batch.iter().filter(|x| *x == e).count();
                        self.status.event("tools_changed", json!({"server": n, "times": times}));
                    }
                }
                UpEvent::OffersChanged(_) => {
                    if relisted.insert(format!("{n}\0offers")) {
                        up.relist_offers().await;
                        offers_refused(self.status.as_ref(), n, &up);
                        let times = batch.iter().filter(|x| *x == e).count();
                        self.status.event("offers_changed", json!({"server": n, "times": times}));
                    }
                }
                UpEvent::ResourceUpdated(..) | UpEvent::Logged(..) => self.relay(e).await,
                UpEvent::Up(_) => {
                    if let Some(p) = self.passthrough.as_ref() {
                        p.resubscribe(n).await;
                    }
                    self.status.event("upstream_up", json!({"server": n, "tools": up.tool_count()}));
                    offers_refused(self.status.as_ref(), n, &up);
                }
                UpEvent::Down(_) => {
                    self.status.event("upstream_down", json!({"server": n, "reason": up.operator_reason()}))
                }
                UpEvent::RequestFailed(_, detail) => {
                    // Said once per batch and server however often it repeats (a dead server
                    // fails every call the same way).
                    if relisted.insert(format!("{n}\0failed\0{detail}")) {
                        let repeats = batch.iter().filter(|x| *x == e).count();
                        self.status.event(
                            "upstream_request_failed",
                            json!({"server": n, "detail": crate::secrets::mask(detail), "times": repeats}),
                        );
                    }
                }
            }
        }
    }

    /// Applies the config file as it is now; whether the index must be rebuilt.
    async fn reload(&mut self, signalled: bool) -> bool {
        let started = Instant::now();
        // Its unnamed tokens are named as the running config's were, so that an edit elsewhere
        // is not taken for a change of tokens.
        let loaded =
            GatewayConfig::load(&self.config.path).and_then(|mut c| c.settings.name_tokens(&self.state).map(|()| c));
        let mut new = match loaded {
            Ok(c) => c,
            Err(e) => {
                // The running config stays; the operator sees why the new one was refused.
                self.status.event("config_error", json!({"error": crate::secrets::mask(&e.to_string())}));
                return false;
            }
        };
        // Who may call first: a set the endpoint may not take refuses the whole config.
        let (a, b) = (&self.config.settings, &new.settings);
        if a.access_differs(b) {
            let access = b.http_access(&self.state);
            match self.hub.set_http_access(access).await {
                Ok(Some(ended)) => {
                    if a.tokens != b.tokens {
                        let mut event = token_changes(&a.tokens, &b.tokens);
                        event["sessions_ended"] = json!(ended.tokens);
                        self.status.event("tokens_changed", event);
                    }
                    if a.auth.oauth != b.auth.oauth {
                        self.status.event("oauth_changed", json!({"sessions_ended": ended.oauth}));
                    }
                }
                // Served over stdio, a gateway takes no tokens: nothing changed for anyone.
                Ok(None) => {}
                Err(e) => {
                    let error = format!("{}: {e}; the running ones are kept", new.path.display());
                    self.status.event("config_error", json!({"error": error}));
                    return false;
                }
            }
        }
        let connect = Duration::from_secs(new.settings.connect_timeout_secs);
        let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
        for name in self.config.servers.keys() {
            if !new.servers.contains_key(name) {
                removed.push(name.clone());
            }
        }
        for (name, spec) in &new.servers {
            match self.config.servers.get(name) {
                None => added.push(name.clone()),
                // The bounds on what it may send, and its connect timeout, are fixed when it starts.
                Some(old) if old != spec || bounds(&self.config) != bounds(&new) => changed.push(name.clone()),
                // Whether it is lazy, and its idle bound, are fixed when it starts.
                Some(_) if lazy(&self.config, name) != lazy(&new, name) => changed.push(name.clone()),
                Some(_) => continue,
            }
        }
        // Removed and changed servers are stopped (their process groups ended) before any new
        // one starts: a changed server never runs twice on the same data.
        for name in removed.iter().chain(&changed) {
            self.fleet.stop(name).await;
        }
        for name in added.iter().chain(&changed) {
            let lazy = crate::gateway::lazy_settings(&new, name, &self.state, self.replica.is_some());
            let call_timeout = crate::gateway::call_timeout(&new, name);
            self.fleet.add(name, &new.servers[name], new.settings.limits, connect, lazy, call_timeout);
        }
        // Traces: the next span goes to the new endpoint; the old one is flushed to its own.
        if self.config.settings.telemetry != new.settings.telemetry {
            let telemetry = new.settings.telemetry.clone();
            let replaced =
                tokio::task::spawn_blocking(move || toolsearch_mcp::trace::replace(telemetry.as_ref())).await;
            if let Err(e) = replaced.map_err(|e| e.to_string()).and_then(|r| r) {
                let error = format!("toolsearch.telemetry.{e}: the running traces are kept");
                self.status.event("config_error", json!({"error": crate::secrets::mask(&error)}));
                // Kept as running, so the next reload tries the new settings again.
                new.settings.telemetry = self.config.settings.telemetry.clone();
            }
        }
        // A model that cannot be loaded is kept as running, so the next reload tries it again.
        if !self.change_model(&new.settings).await {
            new.settings.model = self.config.settings.model.clone();
        }
        let restart = restart_needed(&self.config, &new);
        if !restart.is_empty() {
            self.status.event("config_restart_needed", json!({"settings": restart}));
        }
        // The audit trail's settings (whether it is written, with argument values, the bounds
        // of its files) apply to its next record; the learner's to its next run.
        if let Some(trail) = self.hub.ops().trail.as_ref() {
            trail.set_settings(new.settings.audit);
        }
        let (old, replica) = (&self.config.settings, self.replica.is_some());
        crate::learner::reconfigure((&self.learn, &self.writer), (old, &new.settings), replica, &*self.status);
        if let Some(p) = self.passthrough.as_ref() {
            p.set_requires(new.settings.requires.clone());
        }
        // Call timeouts, the gateway's and a server's own, bound the next request on (one
        // running keeps its own): the server keeps running, and what it holds.
        self.fleet.set_call_timeout(Duration::from_secs(new.settings.call_timeout_secs));
        for name in new.servers.keys().filter(|n| !added.contains(n) && !changed.contains(n)) {
            if let Some(up) = self.fleet.get(name) {
                up.set_call_timeout(crate::gateway::call_timeout(&new, name));
            }
        }
        // Rate limits too: the next request and call meet the new ones.
        self.hub.set_rate_limits(new.settings.rate_limits.clone());
        self.config = new;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        self.status.event(
            "config_reloaded",
            json!({"added": added, "removed": removed, "changed": changed, "signal": signalled, "ms": ms}),
        );
        true
    }
}

/// Reports each of `server`'s resource, template or prompt lists left out, and why (the server
/// stays up: its tools and its other lists are served).
pub(crate) fn offers_refused(status: &dyn Status, server: &str, up: &Upstream) {
    for reason in up.offers().problems {
        status.event("offers_refused", json!({"server": server, "reason": reason}));
    }
}
