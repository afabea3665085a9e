//! `toolsearch serve --watch`: the index served is picked up again when another process
//! rebuilds, recalibrates or relearns it, and the configuration's tool set and scopes when the
//! file is edited (its executor, checks and timeout too: new checks run once first, off the
//! watch); the client is told `list_changed` when what it sees moved.
//!
//! Every build and every metadata update (`calibrate`, `learn`) replaces the index's
//! metadata file atomically, so the watcher compares that file's bytes (and the
//! configuration's): a change means something to load. What does not load (an index that does
//! not open, a configuration that does not parse or pins a tool the catalogue lacks) leaves
//! what was served before in place, with a warning, and is tried again only once it changes
//! again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolsearch::disclosure::LiveCatalog;
use toolsearch::index::META_FILE;
use toolsearch::mcp::{Hub, ServeConfig};
use toolsearch::Principal;

use super::output::say_err;
use super::serve_running::Running;

/// What `serve` watches, and what it serves from it.
pub(crate) struct Watched {
    /// The server.
    pub hub: Arc<Hub>,
    /// The catalogue it serves.
    pub live: Arc<LiveCatalog>,
    /// What it runs tools and checks with.
    pub running: Arc<Running>,
    /// The index directory given on the command line.
    pub index: PathBuf,
    /// The configuration file given.
    pub config: Option<PathBuf>,
    /// Who the client is served as under a configuration.
    pub principal: Box<dyn Fn(&ServeConfig) -> Principal + Send + Sync>,
    /// The files as they were before the index and the configuration were loaded.
    pub seen: Seen,
}

/// The index's metadata file and the configuration file as last seen; `None` where one could
/// not be read.
#[derive(Default)]
pub(crate) struct Seen {
    index: Option<Vec<u8>>,
    config: Option<Vec<u8>>,
}

impl Seen {
    /// The files as they are now, read before the server loads what they describe, so that a
    /// change made meanwhile is a change the watch sees (at worst one reload of the same).
    pub(crate) fn now(index: &Path, config: Option<&Path>) -> Seen {
        Seen { index: std::fs::read(index.join(META_FILE)).ok(), config: config.and_then(|c| std::fs::read(c).ok()) }
    }
}

/// A file's bytes; `None` while it cannot be read (an index directory being replaced, a file
/// being rewritten): nothing is done until it can.
async fn bytes(path: PathBuf) -> Option<Vec<u8>> {
    tokio::task::spawn_blocking(move || std::fs::read(path).ok()).await.ok().flatten()
}

impl Watched {
    /// Checks every `every` until the process ends.
    pub(crate) async fn watch(mut self, every: Duration) {
        let meta = self.index.join(META_FILE);
        let Seen { index: mut index_seen, config: mut config_seen } = std::mem::take(&mut self.seen);
        loop {
            tokio::time::sleep(every).await;
            let now = bytes(meta.clone()).await;
            if now.is_some() && now != index_seen {
                index_seen = now;
                self.reload_index().await;
            }
            if let Some(path) = &self.config {
                let now = bytes(path.clone()).await;
                if now.is_some() && now != config_seen {
                    config_seen = now;
                    self.reconfigure(path).await;
                }
            }
        }
    }

    async fn reload_index(&self) {
        let live = self.live.clone();
        let dir = self.index.display();
        match tokio::task::spawn_blocking(move || live.reload()).await {
            Ok(Ok(())) => {
                let engine = self.live.engine();
                let (tools, model) = (engine.index().meta().tools, engine.embedder().model_id().to_owned());
                drop(engine);
                say_err!("toolsearch serve: the index changed on disk; serving it now ({tools} tools, model {model})");
                // A configuration naming what the index no longer has (a pinned tool removed).
                let hub = self.hub.clone();
                if let Ok(Err(e)) = tokio::task::spawn_blocking(move || hub.check().map(drop)).await {
                    say_err!("warning: the index changed under the configuration: {e}; what it lacks is not offered");
                }
                self.hub.announce_catalogue_changed().await;
            }
            Ok(Err(e)) => {
                say_err!(
                    "warning: the index at {dir} changed on disk but does not open ({e}); still serving the one before"
                )
            }
            Err(_) => say_err!("warning: reopening the index at {dir} failed; still serving the one before"),
        }
    }

    async fn reconfigure(&self, path: &Path) {
        let keep = "still serving with the configuration before";
        let config = match ServeConfig::load(path) {
            Ok(c) => c,
            Err(e) => {
                say_err!("warning: {e}; {keep}");
                return;
            }
        };
        let (changed, pending) = self.running.apply(&config);
        if !changed.is_empty() {
            say_running(path, &changed);
        }
        if let Some(pending) = pending {
            // New checks run once before they are used, for up to the timeout: off the watch,
            // which goes on seeing edits and rebuilds meanwhile.
            let (running, hub, path) = (self.running.clone(), self.hub.clone(), path.to_owned());
            tokio::spawn(async move {
                if let Ok(true) = tokio::task::spawn_blocking(move || running.finish(pending)).await {
                    say_running(&path, &["checks"]);
                    hub.announce_changes().await;
                }
            });
        }
        let principal = (self.principal)(&config);
        let trusted = principal.scopes().is_none();
        match self.hub.reconfigure(config.toolset.clone(), principal).await {
            Ok(Some(_)) => {
                say_err!("toolsearch serve: {} changed; serving its tool set and scopes now", path.display());
                if trusted {
                    say_err!("warning: no scopes configured: the client is trusted and sees and calls every tool");
                }
            }
            Ok(None) => {}
            Err(e) => say_err!("warning: {}: {e}; {keep}", path.display()),
        }
    }
}

/// Tells the operator that `changed` (settings of the configuration at `path`) are in use now.
fn say_running(path: &Path, changed: &[&str]) {
    let names: Vec<String> = changed.iter().map(|c| format!("\"{c}\"")).collect();
    say_err!("toolsearch serve: {} changed; running with its {} now", path.display(), names.join(", "));
}
