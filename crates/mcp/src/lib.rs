//! toolsearch-mcp: the Model Context Protocol front-ends. `toolsearch serve` serves an index
//! to one client over stdio; `toolsearch gateway` puts the same server in front of a user's
//! real MCP servers (stdio children and Streamable HTTP), over stdio or Streamable HTTP.
//!
//! Key design decision: the server exposes a *tool set* per client session, not the raw
//! protocol: `tools/list` answers with the definitions the model may see now, every
//! `tools/call` goes through the tool set, and when the visible set changes (a facade unfolds,
//! a tool is expanded, a group or an upstream server goes down or comes back) the client gets
//! `notifications/tools/list_changed`. The protocol itself is the official Rust SDK's (`rmcp`),
//! with a conformance filter in front of stdio; requests are handled concurrently, and a tool
//! set is locked only for its own work, never while a tool runs.
#![deny(missing_docs)]

mod checks;
mod child;
mod config;
mod credentials;
mod cut;
mod effects;
pub mod fleet;
mod forward;
pub mod gateway;
mod http;
mod http_guard;
mod hub;
mod keeper;
mod listing;
pub mod metrics;
pub mod offers;
pub mod ops;
pub mod passthrough;
pub mod pins;
pub mod preflight;
mod progress;
mod reasons;
mod runner;
mod scan;
mod secrets;
mod session;
mod stdio;
mod token_names;
pub mod trail;
mod upstream;

pub use checks::spawn_command_checks;
pub use config::{
    Access, GatewayConfig, GatewayLimits, GatewaySettings, Grant, InheritEnv, ServeConfig, ServeError, ServerSpec,
};
pub use credentials::HeaderCommand;
pub use effects::{NO_DESTRUCTIVE, READ_ONLY};
pub use forward::UpstreamRunner;
pub use http::{serve_http, HttpAccess, HttpLimits};
pub use hub::Hub;
pub use listing::{ListLimits, Listing};
pub use runner::{BoxFuture, CommandRunner, NoRunner, ProgressSink, RunContext, RunError, ToolRunner};
pub use secrets::mask as mask_secrets;
pub use session::{Caller, Session};
pub use stdio::{serve_io, stdio_streams, MAX_MESSAGE_BYTES};
pub use token_names::{state_token_key, token_name, TOKEN_KEY_FILE};
pub use tokio_util::sync::CancellationToken;
pub use upstream::{Failure, Upstream};

/// The MCP protocol versions served, oldest first (the session-less 2026-07-28 revision is
/// not: progressive disclosure needs a session).
pub fn protocol_versions() -> &'static [rmcp::model::ProtocolVersion] {
    rmcp::model::ProtocolVersion::known_up_to(&rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
}
