//! [`Ranker`]: an opened index with the query-time model, its path table, caches and
//! confidence map. It ranks; it knows nothing of requests, cursors or tool calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolsearch_catalog::{Catalog, Tool};
use toolsearch_embed::{EmbedError, Embedder, EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch_index::{IndexError, IndexMeta, IndexReader, OpenOptions, QueryAdapter};

use crate::answerable::Answerability;
use crate::cache::Lru;
use crate::fusion::{Calibration, Fusion};
use crate::ranking::{Ranked, ResultKey};
use crate::scope::{PathTable, Paths};

/// Most bytes each query cache holds, keys included.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// The default [`EngineOptions::relative_cut`]: the largest on the grid whose worst loss of
/// nDCG@10 on the training sets stays under .005, chosen the same with any dev set held out.
pub const RELATIVE_CUT: f32 = 0.03;

/// How an [`Engine`](crate::Engine) ranks and where it finds its model.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The `models/` directory; found automatically when `None`.
    pub models: Option<PathBuf>,
    /// The model (a name or a directory, see [`ModelFiles::choose`]); `None`: the one the
    /// index records, so an index opens with the model it was built with.
    pub model: Option<String>,
    /// Fusion method.
    pub fusion: Fusion,
    /// Confidence map; `None` uses the one stored in the index by `toolsearch calibrate`, or
    /// the built-in default.
    pub calibration: Option<Calibration>,
    /// Candidates drawn from each index before fusion.
    pub candidates: usize,
    /// An explicit floor in place of the default rules: when set, a search shows the pointers
    /// at this confidence or more and answers `NO_MATCH_IN_CATEGORY` only when none is left.
    /// When `None` (the default), what is shown is decided by [`EngineOptions::relative_cut`],
    /// whether to answer at all by [`EngineOptions::answerability`].
    pub min_confidence: Option<f32>,
    /// A result is shown only when its confidence is at least this share of the best
    /// result's (chosen leave-one-set-out so that it almost never drops a relevant tool:
    /// docs/answerability.md).
    pub relative_cut: f32,
    /// The query-level decision whether any tool fits: below its threshold a search answers
    /// `NO_MATCH_IN_CATEGORY`, with the best few candidates as hints. Left at its default, an
    /// engine uses the fit for its index's model ([`Answerability::for_model`]).
    pub answerability: Answerability,
    /// How the index is opened.
    pub open: OpenOptions,
    /// Query embeddings, and ranked results, kept in LRU caches (0 disables them).
    pub query_cache: usize,
    /// Use the query adapter stored in the index by `toolsearch learn`, if there is one.
    pub use_adapter: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            models: None,
            model: None,
            fusion: Fusion::default(),
            calibration: None,
            candidates: 64,
            min_confidence: None,
            relative_cut: RELATIVE_CUT,
            answerability: Answerability::default(),
            open: OpenOptions::default(),
            query_cache: 1024,
            use_adapter: true,
        }
    }
}

/// Why an engine could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The index is missing, corrupted, or from another model or format.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The model could not be found or loaded.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// The ranking half of an engine. `Send + Sync`.
pub struct Ranker {
    index: IndexReader,
    embedder: Arc<dyn Embedder>,
    paths: PathTable,
    adapter: Option<QueryAdapter>,
    calibration: Calibration,
    pub(crate) vectors: Lru<String, Vec<f32>>,
    pub(crate) results: Lru<ResultKey, Ranked>,
    options: EngineOptions,
}

impl std::fmt::Debug for Ranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ranker").field("index", &self.index).field("options", &self.options).finish()
    }
}

impl Ranker {
    /// Opens the index in `dir` with `options`, loading the model while the index opens (a
    /// bad index is reported first).
    pub fn open(dir: &Path, options: EngineOptions) -> Result<Ranker, EngineError> {
        // The index names its model: read first (a small file), so the model loads beside the
        // rest of the index. An unreadable one is reported by the open below.
        let recorded = IndexMeta::read(dir).ok().and_then(|m| m.model_choice());
        let choice = options.model.clone().or(recorded);
        let (index, embedder) = std::thread::scope(|s| {
            let model = s.spawn(|| -> Result<OnnxEmbedder, EngineError> {
                let files = ModelFiles::choose(options.models.as_deref(), choice.as_deref())?;
                // On every core: a query embeds 1.5-1.8x faster on two than on one (docs/latency.md,
                // "The model on every core").
                Ok(OnnxEmbedder::load(&files, EmbedderOptions::default())?)
            });
            let index = IndexReader::open_with(dir, options.open.clone());
            (index, model.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        Ranker::from_parts(index?, Arc::new(embedder?), options)
    }

    /// Opens the index in `dir` with an embedder the caller already loaded.
    pub fn with_embedder(
        dir: &Path,
        embedder: Arc<dyn Embedder>,
        options: EngineOptions,
    ) -> Result<Ranker, EngineError> {
        let index = IndexReader::open_with(dir, options.open.clone())?;
        Ranker::from_parts(index, embedder, options)
    }

    fn from_parts(
        index: IndexReader,
        embedder: Arc<dyn Embedder>,
        options: EngineOptions,
    ) -> Result<Ranker, EngineError> {
        index.check_model(embedder.as_ref())?;
        // The confidence map and the answerability model are fitted per model: an index's own
        // (`toolsearch calibrate`) or the caller's wins, else the fit for the index's model.
        let calibration = options
            .calibration
            .or(index.meta().calibration)
            .unwrap_or_else(|| Calibration::for_model(embedder.model_id()));
        let mut options = options;
        if options.answerability == Answerability::default() {
            options.answerability = Answerability::for_model(embedder.model_id());
        }
        let paths = PathTable::new(index.catalog(), index.tool_nodes(), index.node_paths());
        let adapter = index.meta().adapter.clone().filter(|a| options.use_adapter && a.fits(embedder.dimension()));
        Ok(Ranker {
            index,
            embedder,
            paths,
            adapter,
            calibration,
            vectors: Lru::new(options.query_cache, CACHE_BYTES),
            results: Lru::new(options.query_cache, CACHE_BYTES),
            options,
        })
    }

    /// The category graph's lookups, over this index's catalogue.
    pub(crate) fn paths(&self) -> Paths<'_> {
        let index = &self.index;
        Paths {
            table: &self.paths,
            catalog: index.catalog(),
            nodes: index.node_paths(),
            facets: index.tool_facets(),
            index: Some(index),
        }
    }

    /// The query adapter in force (stored by `toolsearch learn`, and not disabled).
    pub fn adapter(&self) -> Option<&QueryAdapter> {
        self.adapter.as_ref()
    }

    /// The fusion tool searches use: the options' blend, with the adapter's cosine weight
    /// when an adapter is in force.
    pub(crate) fn tool_fusion(&self) -> Fusion {
        match (self.options.fusion, &self.adapter) {
            (Fusion::Blend { lexical_k, .. }, Some(a)) => Fusion::Blend { alpha: a.alpha, lexical_k },
            (fusion, _) => fusion,
        }
    }

    /// The confidence map in force (from the options, the index, or the default).
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// Forgets every cached query embedding and ranking (benchmarks call it between runs).
    pub fn clear_query_cache(&self) {
        self.vectors.clear();
        self.results.clear();
    }

    /// The opened index.
    pub fn index(&self) -> &IndexReader {
        &self.index
    }

    /// The catalogue served, lean: tools carry id, name, paths, summary, tags, scopes, group
    /// and version; [`Ranker::full_tool`] reads the rest of one tool (description, schemas,
    /// usage notes, examples, metadata) and [`IndexReader::full_catalog`] all of them.
    pub fn catalog(&self) -> &Catalog {
        self.index.catalog()
    }

    /// The options in force.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The embedder used for queries.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The tool with this id, if any, lean (as in [`Ranker::catalog`]).
    pub fn tool(&self, id: &str) -> Option<&Tool> {
        self.index.tool_by_id(id).map(|o| &self.catalog().tools[o as usize])
    }

    /// The full record of the tool with this id, if any, read from the index.
    pub fn full_tool(&self, id: &str) -> Result<Option<Tool>, IndexError> {
        self.index.tool_by_id(id).map(|o| self.index.tool_record(o)).transpose()
    }
}
