//! `toolsearch serve --watch`: the index served is picked up again when another process
//! rebuilds, recalibrates or relearns it, and the client is told `list_changed`.
//!
//! Every build and every metadata update (`calibrate`, `learn`) replaces the index's
//! metadata file atomically, so the watcher compares that file's bytes: a change means an
//! index to open. Opening it checks it whole; one that does not open leaves the index served
//! before in place, with a warning, and is tried again only once the metadata changes again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolsearch::disclosure::LiveCatalog;
use toolsearch::index::META_FILE;
use toolsearch::mcp::Hub;

use super::output::say_err;

/// What the metadata file holds now; `None` while it cannot be read (the directory is being
/// replaced, or was removed): nothing is done until it can.
fn metadata(dir: &Path) -> Option<Vec<u8>> {
    std::fs::read(dir.join(META_FILE)).ok()
}

/// Watches the index `dir` that `live` serves, every `every`, until the process ends.
pub(crate) async fn watch(hub: Arc<Hub>, live: Arc<LiveCatalog>, dir: PathBuf, every: Duration) {
    let mut seen = metadata(&dir);
    loop {
        tokio::time::sleep(every).await;
        let now = {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || metadata(&dir)).await.ok().flatten()
        };
        if now.is_none() || now == seen {
            continue;
        }
        seen = now;
        let reloading = live.clone();
        match tokio::task::spawn_blocking(move || reloading.reload()).await {
            Ok(Ok(())) => {
                let engine = live.engine();
                let (tools, model) = (engine.index().meta().tools, engine.embedder().model_id().to_owned());
                drop(engine);
                say_err!("toolsearch serve: the index changed on disk; serving it now ({tools} tools, model {model})");
                hub.announce_catalogue_changed().await;
            }
            Ok(Err(e)) => say_err!(
                "warning: the index at {} changed on disk but does not open ({e}); still serving the one before",
                dir.display()
            ),
            Err(_) => {
                say_err!("warning: reopening the index at {} failed; still serving the one before", dir.display())
            }
        }
    }
}
