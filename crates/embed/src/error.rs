//! Embedding errors.

use std::path::PathBuf;

/// Why the model could not be found, loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No `models/` directory was found anywhere it is looked for.
    #[error("model files not found (looked in: {searched}); run scripts/setup, or name the models directory (or set TOOLSEARCH_MODELS)")]
    NotFound {
        /// Every place that was searched, joined for display.
        searched: String,
    },
    /// A required file is missing from the models directory.
    #[error("{}: missing; run scripts/setup to install the model files", .0.display())]
    MissingFile(PathBuf),
    /// A file could not be read.
    #[error("{path}: cannot read: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    /// The ONNX Runtime library could not be loaded.
    #[error("cannot load ONNX Runtime from {path}: {reason}", path = .0.display(), reason = .1)]
    RuntimeLoad(PathBuf, String),
    /// A model directory's config is missing or says something toolsearch cannot use; names
    /// the file and the field.
    #[error("{path}: {reason}", path = .0.display(), reason = .1)]
    Config(PathBuf, String),
    /// `--model` names neither a known model nor a directory.
    #[error("model {0:?}: neither a named model (stock, tools) nor a directory")]
    UnknownModel(String),
    /// The model could not be initialised or run.
    #[error("embedding model: {0}")]
    Runtime(String),
}
