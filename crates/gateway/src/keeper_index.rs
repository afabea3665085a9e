//! The index a running gateway serves, as the keeper (`crate::keeper`) keeps it: rebuilt by the
//! gateway that builds it, with the model the config names (another model, named by a reload,
//! is loaded first and every tool embedded again with it), or followed by a replica, which
//! serves with the model the shared index records.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use toolsearch_embed::{Embedder, EmbedderOptions, ModelFiles, OnnxEmbedder};

use crate::catalogue::{rebuild, PinsStamp};
use crate::config::GatewaySettings;
use crate::keeper::Keeper;
use crate::listing::Listing;
use crate::stamp::FileStamp;
use toolsearch_mcp::ServeError;

impl Keeper {
    /// A replica's turn: the index reloaded if another process rebuilt it (`moved`, now at
    /// `stamp`), and every session told what changed.
    pub(crate) async fn follow(&mut self, moved: bool, stamp: Option<FileStamp>) {
        if moved {
            let live = self.hub.live().clone();
            match tokio::task::spawn_blocking(move || live.reload()).await {
                Ok(Ok(())) => {
                    self.follow_refused = None;
                    self.vetted.reload(&self.state);
                    self.replica = Some(stamp);
                    let tools = self.hub.live().engine().catalog().tools.len();
                    self.status.event("index_reloaded", json!({"tools": tools}));
                    self.hub.announce_catalogue_changed().await;
                }
                // Caught mid-swap, unreadable, or built with a model that cannot be loaded here:
                // tried again at the next look, and said once until it changes.
                Ok(Err(e)) => self.refused(e.to_string()),
                Err(e) => self.refused(e.to_string()),
            }
        } else {
            self.hub.announce_changes().await;
        }
        self.hub.announce_offers().await;
    }

    /// Rebuilds the index from `now` and reloads the engine on a blocking thread; whether it
    /// did.
    pub(crate) async fn rebuild(&mut self, now: BTreeMap<String, Listing>) -> bool {
        let (config, embedder, status, live, held) = (
            self.config.clone(),
            self.embedder.clone(),
            self.status.clone(),
            self.hub.live().clone(),
            self.held.clone(),
        );
        let (state, writer, shared) = (self.state.clone(), self.writer.clone(), self.held.clone());
        let pass = |trust: bool| {
            let (listings, state, writer) = (now.clone(), state.clone(), writer.clone());
            let (config, embedder, status, live, held) =
                (config.clone(), embedder.clone(), status.clone(), live.clone(), held.clone());
            async move {
                let blocking = move || -> Result<Option<PinsStamp>, ServeError> {
                    let _writing = writer.lock().unwrap_or_else(|p| p.into_inner());
                    let (built, stamp) =
                        rebuild(&listings, &config, embedder.as_ref(), &state, &held, status.as_ref(), trust)?;
                    // With the model it was built with (another, when a reload changed it). With
                    // nothing to index, the index is as it was and keeps its model; a model a
                    // reload loaded embeds the next build that has tools.
                    let reloaded = if built { live.reload_with(embedder) } else { live.reload() };
                    reloaded.map_err(|e| ServeError::Config(state.join("index"), e.to_string()))?;
                    Ok(stamp)
                };
                tokio::task::spawn_blocking(blocking)
                    .await
                    .map_err(|e| ServeError::Config(PathBuf::from("index"), e.to_string()))?
            }
        };
        match crate::store::guarded(self.store.as_ref(), &self.state, &shared, pass).await {
            Ok((stamp, trusted)) => {
                self.vetted.reload(&self.state);
                self.last = now;
                self.pins = stamp;
                self.untrusted = !trusted;
                true
            }
            Err(e) => {
                self.status.event("index_error", json!({"error": e.to_string()}));
                false
            }
        }
    }

    /// Says why the shared index could not be reloaded, once until the reason changes.
    fn refused(&mut self, error: String) {
        if self.follow_refused.as_deref() != Some(error.as_str()) {
            self.status.event("index_error", json!({ "error": error }));
            self.follow_refused = Some(error);
        }
    }

    /// Applies a reload's `model` (`new`'s against the running config's). The gateway that
    /// builds the index loads it here, and the rebuild that follows embeds every tool with it
    /// (sessions keep being served by the old model and index until the new ones are swapped
    /// in). `false` when it cannot be loaded: said, and the running model kept. `--model` on
    /// the command line outranks the config, and a replica serves with the model the shared
    /// index records: for them the edit changes nothing, and that is said too.
    pub(crate) async fn change_model(&mut self, new: &GatewaySettings) -> bool {
        if self.config.settings.model == new.model {
            return true;
        }
        let engine = self.hub.live().engine();
        let options = engine.options();
        let kept = match (&options.model, self.replica.is_some()) {
            (Some(_), _) => Some("--model on the command line overrides toolsearch.model"),
            (None, true) => Some("a replica serves with the model the shared index records"),
            (None, false) => None,
        };
        if let Some(why) = kept {
            let note = format!("{why}: the running model is kept");
            self.status.event("config_note", json!({"config": self.config.path.display().to_string(), "note": note}));
            return true;
        }
        let (models, name, started) = (options.models.clone(), new.model.clone(), Instant::now());
        let loaded = tokio::task::spawn_blocking(move || {
            let files = ModelFiles::choose(models.as_deref(), name.as_deref()).map_err(|e| e.to_string())?;
            OnnxEmbedder::load(&files, EmbedderOptions::default()).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        match loaded {
            // The same model by another name (`tools` named where it was the default): kept.
            Ok(e) if toolsearch_embed::same_vectors(&e, self.embedder.as_ref()) => true,
            Ok(embedder) => {
                let seconds = started.elapsed().as_secs_f64();
                self.status.event("model_loaded", json!({"model": embedder.model_id(), "seconds": seconds}));
                self.embedder = Arc::new(embedder);
                true
            }
            Err(e) => {
                let error = format!("{}: toolsearch.model: {e}; the running model is kept", self.config.path.display());
                self.status.event("config_error", json!({"error": crate::secrets::mask(&error)}));
                false
            }
        }
    }
}
