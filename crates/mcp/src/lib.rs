//! toolsearch-mcp: serving MCP to clients. A session's tool set, the hub that sessions share,
//! stdio and Streamable HTTP with their guards, how a checked call runs (the [`ToolRunner`]
//! seam), where passed-through resources and prompts come from (the [`OfferSource`] seam), and
//! operations (metrics, the audit trail, health). `toolsearch serve` serves an index to one
//! client with it; the gateway (`toolsearch-gateway`) plugs its upstreams into the same seams.
//! This crate knows nothing of upstreams: the arrows point from the gateway to here.
//!
//! Key design decision: the server exposes a *tool set* per client session, not the raw
//! protocol: `tools/list` answers with the definitions the model may see now, every
//! `tools/call` goes through the tool set, and when the visible set changes (a facade unfolds,
//! a tool is expanded, a group or an upstream server goes down or comes back) the client gets
//! `notifications/tools/list_changed`. The protocol itself is the official Rust SDK's (`rmcp`),
//! with a conformance filter in front of stdio; requests are handled concurrently, and a tool
//! set is locked only for its own work, never while a tool runs.
//!
//! ## Where things live
//!
//! - a client's session: `session/` (`mod.rs` its state and tool set, `handler.rs` the answer to
//!   each MCP request, `offers.rs` what passes through besides tools, `rounds.rs` and
//!   `driving.rs` a session-free client's multi-round requests, `record.rs` its trail, log and
//!   metrics, `remake.rs` its set made again when the hub's configuration changes), `session_view.rs` (what outlives a session may hold of it), `notifier.rs`;
//! - what sessions share: `hub.rs`, `visible.rs` (what each set of scopes may see of the
//!   catalogue, as digests), `fresh_sets.rs` (session-free starting sets), `checks.rs`
//!   (availability checks off the message path);
//! - transports: `stdio.rs` (with its conformance filter), `http.rs` (Streamable HTTP on hyper),
//!   `http_guard.rs` (tokens, rates, session caps and ownership, message shape; `http_guard/idle.rs`
//!   idle sessions closed, `http_guard/reload.rs` who may call replaced), `http_origin.rs`
//!   (which Origin and Host headers are answered; CORS for configured origins), `http_auth.rs`
//!   (who a bearer token names: a static token's digest or an OAuth principal), `strikes.rs`
//!   (refused tokens throttled per client address, the client read through trusted proxies),
//!   `http_access.rs` (tokens, limits, and the public documents and pages an embedding server
//!   adds, such as an OAuth redirect), `token_names.rs`;
//! - identity: `oauth/` (the endpoint as an OAuth 2.1 protected resource: JWTs verified by the
//!   issuer's keys, introspection, claims to scopes, RFC 9728 metadata), `tls.rs` (HTTPS for
//!   what the gateway fetches);
//! - the seams the gateway plugs into: `runner.rs` ([`ToolRunner`]), `offer_source.rs`
//!   ([`OfferSource`]), `ops.rs` (`Operations` and the `Status` seam);
//! - operations: `ops_http.rs` (`/healthz`, `/readyz`, `/metrics`), `metrics.rs`, `trail.rs`;
//!   `secrets.rs` (the masker of logs and trail), `config.rs` (`serve --config`); calls gated
//!   by annotations are `toolsearch_query::effects`.
#![deny(missing_docs)]

mod access_reload;
mod checks;
mod config;
pub mod fleet_rounds;
mod fresh_sets;
mod http;
mod http_access;
mod http_auth;
mod http_guard;
mod http_origin;
mod http_pages;
mod hub;
pub mod metrics;
mod notifier;
pub mod oauth;
pub mod offer_source;
pub mod ops;
mod ops_http;
pub mod rate;
mod runner;
pub mod secrets;
mod session;
mod session_view;
mod stdio;
pub mod strikes;
pub mod tls;
mod token_names;
pub mod trace;
pub mod trail;
mod visible;

pub use access_reload::SessionsEnded;
pub use checks::{spawn_command_checks, CommandChecks, FirstRun};
pub use config::{field_path, plain_error, read_config, Access, Grant, ServeConfig, ServeError};
pub use http::{bound_silence, close_unread, serve_http, HttpAccess, HttpLimits};
pub use http_access::{Callback, Callbacks};
pub use hub::Hub;
pub use notifier::Notifier;
pub use offer_source::{BoxFutureRef, Offer, OfferSource, Watched};
/// What a [`ToolRunner`] answers a call with (the protocol's own type).
pub use rmcp::model::CallToolResult;
pub use runner::{Asker, BoxFuture, CommandRunner, NoRunner, ProgressSink, Question, RunContext, RunError, ToolRunner};
pub use session::{Caller, Session};
pub use session_view::{SessionHandle, SessionView};
pub use stdio::{serve_io, stdio_streams, MAX_MESSAGE_BYTES};
pub use token_names::{process_token_name, state_token_key, token_name, TOKEN_KEY_FILE};
pub use tokio_util::sync::CancellationToken;
pub use toolsearch_query::effects::{NO_DESTRUCTIVE, READ_ONLY};

/// The MCP protocol versions served, oldest first: 2024-11-05 through 2025-11-25 with
/// sessions (`initialize`), and the session-free 2026-07-28.
pub fn protocol_versions() -> &'static [rmcp::model::ProtocolVersion] {
    rmcp::model::ProtocolVersion::known_up_to(&rmcp::model::ProtocolVersion::V_2026_07_28)
}
