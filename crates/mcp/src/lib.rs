//! toolsearch-mcp: the Model Context Protocol front-end. `toolsearch serve` speaks MCP over
//! stdio (newline-delimited JSON-RPC 2.0) for one client, backed by a disclosure tool set.
//!
//! Key design decision: the server exposes the *tool set*, not the raw protocol: `tools/list`
//! answers with the definitions the model may see now, every `tools/call` goes through
//! [`ToolSet::call`](toolsearch_disclosure::ToolSet::call), and when a call changes the visible
//! set (a facade unfolds, a tool is expanded, a group goes down) the server sends
//! `notifications/tools/list_changed`, so any MCP client gets progressive disclosure without
//! knowing about it.
#![deny(missing_docs)]

mod command;
mod config;
mod server;

pub use command::{CommandCheck, CommandExecutor, MAX_OUTPUT_BYTES, MAX_TIMEOUT_SECS};
pub use config::{Access, ServeConfig, ServeError};
pub use server::{Server, MAX_MESSAGE_BYTES, PROTOCOL_VERSIONS};
