//! toolsearch-gateway: toolsearch's MCP server in front of a user's real MCP servers. It owns
//! the upstreams: their config, the stdio children and HTTP clients (with credentials from
//! commands), their listings, the fleet that supervises them and the keeper that follows
//! their changes and the config file, forwarding of calls, reads and prompts, the pins and
//! injection scan that guard what a model reads, the preflight check, and the learner that
//! adapts the ranking to the gateway's own traffic.
//!
//! Key design decision: the gateway plugs into the server of `toolsearch-mcp` through the seams
//! that server defines (a [`toolsearch_mcp::ToolRunner`] that forwards calls, an
//! [`toolsearch_mcp::OfferSource`] that passes resources and prompts through, a
//! [`toolsearch_mcp::ops::Status`] it reports to), never the other way: the server knows
//! nothing of upstreams, so a new transport or a new thing to pin lands in this crate alone.
#![deny(missing_docs)]

mod catalogue;
mod child;
mod config;
mod credentials;
mod cut;
mod filter;
pub mod fleet;
mod forward;
pub mod gateway;
mod keeper;
pub mod learner;
pub mod lineage;
mod listing;
mod logs;
pub mod offers;
pub mod passthrough;
mod pin_diff;
pub mod pins;
pub mod preflight;
mod progress;
mod reasons;
mod scan;
mod secrets;
mod upstream;

pub use config::{GatewayConfig, GatewayLimits, GatewaySettings, InheritEnv, ServerSpec};
pub use credentials::HeaderCommand;
pub use forward::UpstreamRunner;
pub use listing::{ListLimits, Listing};
pub use secrets::mask as mask_secrets;
pub use upstream::{Failure, Upstream};
