//! The on-disk toolsearch index: the offline indexer ([`build_index`]) that turns a catalogue
//! into a hybrid index, and the [`IndexReader`] that serves it.
//!
//! An index directory holds one f16 vector per tool and per category node (`vectors.f16`),
//! an HNSW graph over the tool rows that refers to them by row (`graph.bin`; built by our own
//! parallel HNSW builder over the mapped rows, searched in place), a BM25 index of the same documents (tantivy, with an English
//! stemming analyser), the catalogue as a lean table (`catalog.bin`) plus one full JSON record
//! per tool (`tools.json`), the hash of every embedded text (`hashes.bin`), the XXH3 of each
//! 4 KiB block of the vectors and records (`blocks.bin`), and a metadata file (`meta.bin`)
//! holding the format version, the model and each file's size and XXH3.
//!
//! Key design decisions: the reader opens by memory map and reads nothing whole but the lean
//! table (decoded in parallel chunks), and no byte is used before it is checked, without
//! reading every byte on open: the small files are checked whole, the vectors and records
//! (most of an index) a block at a time when a search or a record read first touches it, so
//! an index opens in the time of decoding its lean table (0.87-1.02 s at a million tools on
//! two cores, with the engine's tables and a first search; 0.1 s at 100k), and a tool's schemas are parsed only when it
//! is expanded or called. Writer and reader share only the format module, never state,
//! and a build is staged in a sibling directory and swapped in with one atomic rename, so a
//! reader can never observe a half-written index (nor have a mapped file change under it)
//! and a failed or interrupted build leaves the previous index untouched.
//! A build holds no vectors and no copy of the catalogue: each vector goes to its row of the
//! file as it is embedded, the graph is built over the mapped file, and the table and records
//! are streamed, so its memory is the model, the input catalogue and ~230 bytes of graph
//! lists per tool.
//! [`IndexReader::open`] refuses a wrong format version ("rebuild the index"), a different
//! embedding model or a corrupted file, naming the file.
//!
//! ## Where things live
//!
//! - building: `writer/` (`mod.rs` the build, `target.rs` where it may write, `previous.rs` what
//!   it reuses of the index it replaces, `embedding.rs`), `source.rs` (a catalogue in memory or a
//!   streamed JSON Lines file), `document.rs` (the indexed text), `atomic.rs` (the swap),
//!   `progress.rs` (the [`Progress`] trait long jobs report through);
//! - the graph: `graph.rs` (its flat layout), `graph_walk.rs`, `graph_build.rs` (from scratch or
//!   updating the previous one), `graph_lists.rs`, `graph_parts.rs` (in parts past 200k tools),
//!   `graph_repair.rs` (no tool a walk cannot reach), `graph_bench.rs`;
//! - vectors and records: `vectors.rs` (mapped f16 rows), `dense.rs` (exact scan, top-k),
//!   `store.rs` (the lean table and on-demand records), `table.rs`, `lean.rs`, `header.rs`,
//!   `wire.rs`, `room.rs`, `lookups.rs` and `names.rs` (derived as the table decodes);
//! - BM25: `lexical/` (`schema.rs` the analyser, `writer.rs`, `view.rs` statistics over a
//!   caller's view, `mod.rs` search);
//! - the format and its checks: `format.rs`, `blocks.rs`, `calibration.rs`, `adapter.rs` (the
//!   learned query adapter), `reader.rs` (opening), `verify.rs`, `error.rs`.
#![deny(missing_docs)]

mod adapter;
mod atomic;
mod blocks;
mod calibration;
mod dense;
pub mod document;
mod error;
mod format;
mod graph;
#[doc(hidden)]
pub mod graph_bench;
mod graph_build;
mod graph_lists;
mod graph_parts;
mod graph_repair;
mod graph_walk;
mod header;
mod lean;
mod lexical;
mod lookups;
mod names;
mod progress;
mod reader;
mod room;
mod source;
mod store;
mod table;
mod vectors;
mod verify;
mod wire;
mod writer;

pub use adapter::{apply as adapter_apply, QueryAdapter};
pub use calibration::Calibration;
pub use dense::{dot, Hit};
pub use error::IndexError;
pub use format::{IndexMeta, FORMAT_VERSION, META_FILE};
pub use lexical::{DocKind, Lexicon, TermCount, View};
pub use lookups::{NodePaths, ToolFacets};
pub use progress::{Progress, Reporter, Silent};
pub use reader::{IndexReader, OpenOptions};
pub use table::NO_NODE;
pub use verify::{verify, Fault, VerifyReport};
pub use writer::{build_index, build_index_jsonl, build_index_owned, BuildOptions, BuildReport};
