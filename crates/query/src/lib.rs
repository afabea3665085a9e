//! The discovery protocol over a toolsearch index: `list`, `search_nodes`,
//! `search_tool_by_category` and `expand_tool`, answered with ranked, confidence-scored
//! pointers or typed errors that tell the caller what to do next.
//!
//! Key design decision: ranking is hybrid and scoped *before* retrieval. Both the dense
//! (embedding) and the lexical (BM25) candidates are drawn from inside the requested category,
//! fused (normalised-score blending by default, reciprocal rank fusion as an option), and every
//! pointer carries a `confidence` from a monotone map of absolute relevance features (cosine
//! similarity, relative BM25), so a threshold on it can turn weak guesses into a
//! `NO_MATCH_IN_CATEGORY` answer that names the categories where the query does match.
//!
//! ## Where things live
//!
//! [`Ranker`] (`ranker.rs`) owns the opened index, the embedder, the path table, the caches
//! (`cache.rs`) and the calibration, and ranks (`ranking.rs`; `fusion.rs` the blend and the
//! confidence; `answerable.rs` the query-level decision; `coverage.rs` the query terms nothing in view mentions; `matching.rs` exact and regex matches;
//! `scope.rs` and `lists.rs` a caller's view of the category graph; `filter.rs` what a request
//! restricts it to; `scoped.rs` and `visible.rs` what is kept for a scope set, and
//! `prepare_behind.rs` a host's [`PrepareBehind`], which works one out after its first
//! request). [`Engine`] (`engine.rs`) is a ranker plus the protocol calls for a
//! [`Principal`] (`principal.rs`; `effects.rs` the `read-only` and `no-destructive` limits
//! its annotations set on calls), with `protocol.rs` the request and answer types and
//! `cursor.rs` the cursors; `hints.rs` and `suggest.rs` build the hints of error answers;
//! `call.rs` checks and runs `call_tool` through the host's [`Executor`]; `error.rs` the typed
//! codes and next calls.
#![deny(missing_docs)]

pub mod answerable;
mod cache;
mod call;
mod coverage;
mod cursor;
pub mod effects;
mod engine;
mod error;
mod filter;
pub mod fusion;
mod hints;
mod lists;
mod matching;
mod prepare_behind;
mod principal;
mod protocol;
mod ranker;
mod ranking;
mod scope;
mod scoped;
mod suggest;
mod visible;

pub use answerable::Answerability;
pub use call::{CallToolRequest, CallToolResponse, Executor, ToolFailure};
pub use coverage::unmatched;
pub use engine::Engine;
pub use error::{Call, ErrorCode, NextAction, ProtocolError};
pub use fusion::{Calibration, Fusion};
pub use matching::EXACT_CONFIDENCE;
pub use prepare_behind::PrepareBehind;
pub use principal::Principal;
pub use protocol::*;
pub use ranker::{EngineError, EngineOptions, Ranker};
pub use ranking::{Ranked, Retrieval, StageTimes};
pub use scope::Filter;
pub use suggest::{quoted, MAX_SUGGESTED};
