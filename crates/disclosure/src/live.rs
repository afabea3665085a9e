//! A catalogue that can change while agents run: the engine behind every tool set, swapped
//! atomically when tools are registered or the index is rebuilt.
//!
//! Tool sets hold a [`LiveCatalog`] rather than an engine, and take the current engine for
//! each call: a tool registered at run time is found by the next discovery call, without
//! rebuilding any agent.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use toolsearch_catalog::{parse_str, Format};
use toolsearch_embed::Embedder;
use toolsearch_index::{build_index, BuildOptions, IndexError};
use toolsearch_query::{Answerability, Engine, EngineError, EngineOptions, Executor};

use crate::error::DisclosureError;

/// The current engine, and how to make the next one.
pub struct LiveCatalog {
    engine: RwLock<Arc<Engine>>,
    options: EngineOptions,
    executor: RwLock<Option<Arc<dyn Executor>>>,
    /// Serialises rebuilds.
    rebuild: Mutex<()>,
}

impl std::fmt::Debug for LiveCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveCatalog").field("index", &self.engine().index().dir()).finish()
    }
}

impl LiveCatalog {
    /// Wraps an open engine; its options are used to reopen it after a change.
    pub fn new(engine: Engine) -> Arc<LiveCatalog> {
        let mut options = engine.options().clone();
        // The answerability model the engine chose for its model, when the caller gave none, is
        // chosen again for another model (`reload_with`).
        if options.answerability == Answerability::for_model(engine.embedder().model_id()) {
            options.answerability = Answerability::default();
        }
        Arc::new(LiveCatalog {
            engine: RwLock::new(Arc::new(engine)),
            options,
            executor: RwLock::new(None),
            rebuild: Mutex::new(()),
        })
    }

    /// The engine serving now.
    pub fn engine(&self) -> Arc<Engine> {
        self.engine.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The index build the current engine serves (changes with every rebuild).
    pub fn generation(&self) -> u64 {
        self.engine().index().meta().generation
    }

    /// Registers the executor for `call_tool`, on this engine and every later one.
    pub fn set_executor(&self, executor: Arc<dyn Executor>) {
        self.engine().set_executor(executor.clone());
        *self.executor.write().unwrap_or_else(|p| p.into_inner()) = Some(executor);
    }

    /// Reopens the index directory (after another process rebuilt it). The model is kept
    /// while the index was built with it; an index rebuilt with another model is opened with
    /// the model it records (or the one the options name), loaded anew.
    pub fn reload(&self) -> Result<(), DisclosureError> {
        let _guard = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.engine();
        let dir = current.index().dir().to_path_buf();
        match self.swap_in(&dir, current.embedder().clone()) {
            Err(DisclosureError::Engine(EngineError::Index(IndexError::ModelMismatch { .. }))) => {
                let engine = Engine::open_with(&dir, self.options.clone())?;
                self.install(engine);
                Ok(())
            }
            done => done,
        }
    }

    /// Reopens the index directory with `embedder`, the model it was just rebuilt with (a
    /// model change); fails, keeping the engine serving, if the index records another.
    pub fn reload_with(&self, embedder: Arc<dyn Embedder>) -> Result<(), DisclosureError> {
        let _guard = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let dir = self.engine().index().dir().to_path_buf();
        self.swap_in(&dir, embedder)
    }

    /// Adds tools (and categories) to the catalogue at run time: `snippet` is a native
    /// manifest fragment `{"tools": [...], "nodes": [...]}` that may use the catalogue's groups.
    /// The index is rebuilt in place (atomically, re-embedding only the new documents), its
    /// calibration kept, and the engine swapped; returns how many tools were added.
    pub fn register_tools(&self, snippet: &Value) -> Result<usize, DisclosureError> {
        let _guard = self.rebuild.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.engine();
        let mut catalog = current.index().full_catalog()?;
        let source = Path::new("<registered tools>");
        let mut fragment = snippet.clone();
        let Some(obj) = fragment.as_object_mut() else {
            return Err(DisclosureError::NotAManifest);
        };
        obj.insert("groups".into(), serde_json::to_value(&catalog.groups).expect("groups serialise"));
        let added = parse_str(source, &fragment.to_string(), Some(Format::Manifest))?;
        let count = added.tools.len();
        catalog.merge(added, source)?;
        let dir = current.index().dir().to_path_buf();
        build_index(&catalog, current.embedder().as_ref(), &dir, &BuildOptions::default())?;
        self.swap_in(&dir, current.embedder().clone())?;
        Ok(count)
    }

    fn swap_in(&self, dir: &Path, embedder: Arc<dyn Embedder>) -> Result<(), DisclosureError> {
        let engine = Engine::with_embedder(dir, embedder, self.options.clone())?;
        self.install(engine);
        Ok(())
    }

    /// Serves `engine` from now on, with the executor registered, prepared for every scope set
    /// the engine serving now has met: no caller's first request after a rebuild pays for
    /// working out what it may see (time that grows with the tools hidden from it).
    fn install(&self, engine: Engine) {
        if let Some(executor) = self.executor.read().unwrap_or_else(|p| p.into_inner()).clone() {
            engine.set_executor(executor);
        }
        engine.prepare_for(&self.engine().kept_callers());
        *self.engine.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(engine);
    }
}
