//! toolsearch: semantic tool search for LLM agents.
//!
//! An offline indexer turns a tool catalogue into a hybrid index (HNSW vectors + BM25), and a
//! query engine answers the progressive-disclosure protocol (`list`, `search_nodes`,
//! `search_tool_by_category`, `expand_tool`) with ranked, confidence-scored pointers, so an
//! agent loads a tool's full schema only when it has chosen the tool. The disclosure runtime
//! ([`disclosure`]) decides, between LLM turns, which tool definitions the model sees.
//!
//! Key design decision: this crate is only a facade. Each job lives in its own crate
//! (`catalog`, `embed`, `index`, `query`, `disclosure`, `exec`, `mcp`) with dependencies pointing one way, and the CLI is a
//! thin layer over this API.
//!
//! ## Where things live
//!
//! `src/lib.rs` re-exports the crates; behind the default `cli` feature, `src/cli/` is the
//! command line: `mod.rs` the verbs and dispatch, one file per verb with its flags and `run`,
//! `common.rs` shared flag groups and choices, `failure.rs` the error type and `ExitStatus`,
//! `render.rs` human output, `output.rs` pipe-safe printing.
//!
//! ```no_run
//! use toolsearch::{Engine, Principal, SearchToolsRequest};
//! let engine = Engine::open(std::path::Path::new("/tmp/sample-index"))?;
//! let answer = engine.search_tool_by_category(&Principal::trusted(), &SearchToolsRequest {
//!     query: "rename a variable everywhere".into(),
//!     ..Default::default()
//! })?;
//! for p in answer.results {
//!     println!("{:.2} {}", p.confidence, p.tool_id);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

// The CLI lives in the library (so the Python package can run it as its `toolsearch` command)
// and names this crate `toolsearch::...` as a dependent would.
extern crate self as toolsearch;

#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;

pub use toolsearch_catalog as catalog;
pub use toolsearch_disclosure as disclosure;
pub use toolsearch_embed as embed;
pub use toolsearch_eval as eval;
pub use toolsearch_exec as exec;
pub use toolsearch_index as index;
/// The MCP front-ends: the server (`toolsearch-mcp`) and the gateway in front of a user's
/// MCP servers (`toolsearch-gateway`), under one path.
pub mod mcp {
    pub use toolsearch_gateway::*;
    pub use toolsearch_mcp::*;
}
pub use toolsearch_gateway as gateway;
pub use toolsearch_query as query;

pub use toolsearch_catalog::{load_path, Catalog, CatalogError, Format, PathSpec, Tool};
pub use toolsearch_embed::{Embedder, ModelFiles, OnnxEmbedder};
pub use toolsearch_index::{build_index, build_index_jsonl, build_index_owned, BuildOptions, BuildReport, IndexReader};
pub use toolsearch_query::*;

/// The README's Rust example, compiled by `cargo test --doc` so that it keeps up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

/// docs/disclosure.md's Rust example, compiled by `cargo test --doc` as the README's is.
#[cfg(doctest)]
#[doc = include_str!("../docs/disclosure.md")]
pub struct DisclosureExample;
