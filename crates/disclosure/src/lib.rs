//! toolsearch-disclosure: the agent-side half of progressive disclosure, what an agent host
//! calls between LLM turns to decide which tool definitions the model sees.
//!
//! Key design decision: the [`ToolSet`] is a state machine fed with the model's tool calls,
//! not a view computed from scratch each turn. Every call returns the result text and the
//! change (`added`, `removed`); facades unfold into their inner tools and fold back,
//! conditional groups hide and return their tools as their cached availability changes, and
//! discovery is just more tools, so the model drives all of it through ordinary tool calls.
//! Entries are kept by identity (tool id, facade name), and the engine is taken from a
//! [`LiveCatalog`] at each call, so the catalogue may change under a running agent.
//!
//! ## Where things live
//!
//! - the tool set: `toolset/` (`mod.rs` the set and its config, `dispatch.rs` a call by name,
//!   `entries.rs` what it shows, `derive.rs` what a catalogue and a config imply, `unfold.rs`
//!   facades, `discover.rs` the discovery tools, `calls.rs` catalogue tools, a model's calls
//!   as its API gives them, and availability);
//! - what it is built from: `facade.rs`, `groups.rs` (availability checks, cached and shared),
//!   `discovery.rs` (discovery as tools), `names.rs`, `live.rs` (a catalogue that changes under
//!   running agents);
//! - what comes out: `definition.rs`, `render.rs` (OpenAI, Anthropic, Gemini, MCP JSON),
//!   `model_calls.rs` (a model API's calls read, and answered in its shape), `prompt.rs`
//!   (the system-prompt snippet), `audit.rs` (the trail), `tokens.rs` (token accounting),
//!   `replay.rs` (a script of calls, as the model would see it), `error.rs`.
#![deny(missing_docs)]

mod audit;
mod definition;
mod discovery;
mod error;
mod facade;
mod groups;
mod live;
pub mod model_calls;
mod names;
mod prompt;
mod render;
pub mod replay;
mod tokens;
mod toolset;

pub use audit::{AuditEntry, AuditEvent, AuditTrail, CallOutcome};
pub use definition::{sanitize_name, ToolDef, MAX_NAME_CHARS};
pub use discovery::{Detail, DiscoveryConfig, DiscoveryMode, PROMPT_TAG};
pub use error::DisclosureError;
pub use facade::{is_discovery_name, Facade, Inner, Item, Select, DEFAULT_QUERY_LIMIT};
pub use groups::{Availability, Clock, ManualClock, Probe, Reason, SystemClock, DEFAULT_TTL};
pub use live::LiveCatalog;
pub use names::{Diagnostic, NamedTool};
pub use render::{anthropic_tool_references, openai_tool_search_output, render, render_one, Dialect};
pub use tokens::TokenCounter;
pub use toolset::{Change, Outcome, PendingCall, Step, ToolSet, ToolSetConfig, DEFAULT_MAX_DEPTH};
