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
//!
//! ## Where things live
//!
//! - its config: `config/` (`mod.rs` the settings, `sources.rs` which editor's file it is,
//!   `servers.rs` one server entry, `env.rs` `${...}` forms, `toolset.rs` the tool set over the
//!   gateway's defaults, `itself.rs` an entry that starts this gateway), `filter.rs`,
//!   `lineage.rs` (no chain of gateways);
//! - its upstreams: `upstream/` (`mod.rs` one server, `supervise.rs` connect, list, ping and
//!   retry, `connect.rs` reaching a stdio child or an HTTP endpoint, `client.rs` the handler of
//!   what the server sends, `asks.rs` its questions to the calling client, `lazy.rs`), `child.rs`
//!   (stdio children: a minimal environment, their own process group, bounded lines),
//!   `credentials.rs` (headers from commands), `progress.rs` (progress routed by ownership),
//!   `listing.rs` and `offers.rs` (bounded listings), `fleet.rs` (the set as it changes);
//! - serving them: `forward.rs` (the [`toolsearch_mcp::ToolRunner`]), `passthrough/` (the
//!   [`toolsearch_mcp::OfferSource`]: `mod.rs` lists, reads and prompts, `subscriptions.rs`
//!   subscriptions, log levels and list changes), `logs.rs`, `cut.rs` (results cut to a bound),
//!   `reasons.rs` (what a client is told of a failure), `secrets.rs` (what the operator's log
//!   masks);
//! - trust: `pins.rs` and `pin_diff.rs` (pins and holds), `approve.rs` (approvals by digest),
//!   `vetted.rs` (no call forwarded before the pins passed its definition), `scan.rs` (the
//!   injection scan), `store/` (the pins and holds a fleet of replicas shares in PostgreSQL),
//!   `audit_query.rs` (the audit trail read back for an operator);
//! - running: `catalogue.rs` (the catalogue and index built from the listings), `gateway.rs`
//!   (starting it), `keeper.rs` (following changes and the config file; `config_changes.rs`: what a reload
//!   changed; `keeper_index.rs`: the index rebuilt or followed, and the model changed), `learner.rs` (learning
//!   from its own traffic; `teachers.rs`: who teaches and who judges), `preflight.rs` (`--check`).
#![deny(missing_docs)]

pub mod approve;
pub mod audit_query;
mod catalogue;
mod child;
mod child_program;
mod config;
mod config_changes;
mod credentials;
mod cut;
mod filter;
pub mod fleet;
mod forward;
pub mod gateway;
mod keeper;
mod keeper_index;
pub mod learner;
pub mod lineage;
mod listing;
pub mod login;
mod logs;
pub mod offers;
pub mod passthrough;
mod pin_diff;
pub mod pins;
pub mod preflight;
mod progress;
mod reasons;
mod scan;
mod served_access;
mod stamp;
pub mod store;
mod teachers;
use toolsearch_mcp::secrets;
mod upstream;
mod vetted;

pub use config::{GatewayConfig, GatewayLimits, GatewaySettings, InheritEnv, ServerSpec};
pub use credentials::HeaderCommand;
pub use forward::UpstreamRunner;
pub use listing::{ListLimits, Listing};
pub use secrets::mask as mask_secrets;
pub use upstream::{Failure, Upstream};
