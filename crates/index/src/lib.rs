//! The on-disk toolsearch index: the offline indexer ([`build_index`]) that turns a catalogue
//! into a hybrid index, and the [`IndexReader`] that serves it.
//!
//! An index directory holds one dense vector per tool and per category node (an HNSW graph
//! over the tool vectors, hnsw_rs), a BM25 index of the same documents (tantivy, with an
//! English stemming analyser), the normalised catalogue, and a checksummed metadata file.
//!
//! Key design decision: writer and reader share only the format module, never state, and a
//! build is staged in a sibling directory and swapped in with one atomic rename, so a reader
//! can never observe a half-written index and a failed or interrupted build leaves the
//! previous index untouched. Every file is checksummed; [`IndexReader::open`] refuses a
//! wrong format version, a different embedding model or a corrupted file, naming the file.
#![deny(missing_docs)]

mod adapter;
mod atomic;
mod calibration;
mod dense;
pub mod document;
mod error;
mod format;
mod lexical;
mod progress;
mod reader;
mod writer;

pub use adapter::{apply as adapter_apply, QueryAdapter};
pub use calibration::Calibration;
pub use dense::{dot, Hit};
pub use error::IndexError;
pub use format::{IndexMeta, FORMAT_VERSION};
pub use lexical::{DocKind, View};
pub use progress::{Progress, Reporter, Silent};
pub use reader::{IndexReader, OpenOptions};
pub use writer::{build_index, BuildOptions, BuildReport};
