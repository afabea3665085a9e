//! Index errors.

use std::path::PathBuf;

/// Why an index could not be built or opened.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A file could not be read or written.
    #[error("{path}: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    /// The directory is not an index, or misses a file.
    #[error("{path}: {reason}", path = .0.display(), reason = .1)]
    NotAnIndex(PathBuf, String),
    /// A file's content does not match its recorded checksum or structure.
    #[error("{path}: corrupted index file ({reason}); rebuild the index with `toolsearch index`", path = .0.display(), reason = .1)]
    Corrupted(PathBuf, String),
    /// The index was written by another format version.
    #[error("{path}: index format version {found}, this build reads version {expected}; rebuild the index with `toolsearch index`", path = .path.display())]
    Version {
        /// The metadata file.
        path: PathBuf,
        /// Version found.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// The index was built with another embedding model.
    #[error("{path}: built with model {found}, but the loaded model is {expected}; rebuild the index or load the model it was built with", path = .path.display())]
    ModelMismatch {
        /// The metadata file.
        path: PathBuf,
        /// Model recorded in the index.
        found: String,
        /// Model loaded now.
        expected: String,
    },
    /// Refusing to replace something that is not an index, or an index directory holding
    /// files the index did not write. Nothing was changed.
    #[error("{path}: {reason}; refusing to replace it (nothing was changed)", path = .0.display(), reason = .1)]
    WouldClobber(PathBuf, String),
    /// The index a build was asked to take its vectors from (`BuildOptions::reuse_from`)
    /// cannot give them: built with another model, or its vectors do not verify. Nothing was
    /// changed.
    #[error("{path}: its vectors cannot be reused: {reason}; build without reusing it (nothing was changed)", path = .0.display(), reason = .1)]
    Unreusable(PathBuf, String),
    /// The index cannot be written where it was asked to go (checked before any work).
    #[error("{path}: cannot write the index there: {source}", path = .0.display(), source = .1)]
    Unwritable(PathBuf, std::io::Error),
    /// The catalogue a build reads from its file as it goes is invalid (one built from memory
    /// was validated when it was loaded).
    #[error(transparent)]
    Catalog(#[from] toolsearch_catalog::CatalogError),
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] toolsearch_embed::EmbedError),
    /// The lexical engine failed.
    #[error("lexical index at {path}: {reason}", path = .0.display(), reason = .1)]
    Lexical(PathBuf, String),
    /// The vector graph failed.
    #[error("vector index at {path}: {reason}", path = .0.display(), reason = .1)]
    Dense(PathBuf, String),
}

/// Attaches a path to an io::Error.
pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |e| IndexError::Io(path.to_path_buf(), e)
}
