//! The integration tests, one binary: each file of `tests/` is a module here, so the whole
//! stack (ONNX Runtime, tantivy, the MCP SDK) is linked once rather than once per file,
//! which keeps a clean build's `target/` gigabytes smaller and its link steps few.
//!
//! Each file keeps its own copy of `common` (`#[path]`), so its fixtures (the scratch
//! directory, the sample engine) are its own, as when every file was its own binary; the
//! embedding model alone is loaded once for all of them.

// Each module's own copy of `common` is the point (see above).
#![allow(clippy::duplicate_mod)]

mod answers;
mod authz;
mod call;
mod catalog;
mod cli;
mod client_entries;
mod dialects;
mod disclosure;
mod doc_configs;
mod doc_links;
mod docs;
mod gateway;
mod gateway_asks;
mod gateway_audit;
mod gateway_bounds;
mod gateway_browser;
mod gateway_clients;
mod gateway_configs;
mod gateway_fleet;
mod gateway_haproxy;
mod gateway_http;
mod gateway_lazy;
mod gateway_learn;
mod gateway_limits_live;
mod gateway_live;
mod gateway_login;
mod gateway_model;
mod gateway_names;
mod gateway_oauth;
mod gateway_oauth_live;
mod gateway_oauth_mock;
mod gateway_offers;
mod gateway_ops;
mod gateway_per_user;
mod gateway_pins;
mod gateway_quarantine;
mod gateway_rate;
mod gateway_replicas;
mod gateway_revisions;
mod gateway_search;
mod gateway_silent_peer;
mod gateway_sse;
mod gateway_startup;
mod gateway_store;
mod gateway_store_growth;
mod gateway_strikes;
mod gateway_tls;
mod gateway_tokens;
mod gateway_tokens_live;
mod gateway_tool_sets_live;
mod gateway_traces;
mod gateway_trust;
mod gateway_upstreams;
mod import;
mod imports;
mod index;
mod layout;
mod learn;
mod malformed;
mod model_identity;
mod models;
mod paging;
mod prepared_scopes;
mod protocol;
mod protocol_page;
mod quality;
mod report;
mod security;
mod serve;
mod serve_watch;
mod shipping;
mod transcripts;
mod unmatched;

/// The real embedding model, loaded once for the whole binary and shared by every module's
/// `common::embedder()`.
pub fn shared_embedder() -> std::sync::Arc<toolsearch::embed::OnnxEmbedder> {
    use toolsearch::embed::{EmbedderOptions, ModelFiles, OnnxEmbedder};
    static E: std::sync::OnceLock<std::sync::Arc<OnnxEmbedder>> = std::sync::OnceLock::new();
    E.get_or_init(|| {
        let files = ModelFiles::choose(None, None).expect("model files: run scripts/setup");
        std::sync::Arc::new(OnnxEmbedder::load(&files, EmbedderOptions::default()).expect("model loads"))
    })
    .clone()
}
