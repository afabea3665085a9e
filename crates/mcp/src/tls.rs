//! HTTPS for what the gateway fetches (upstream MCP servers, identity providers): rustls on
//! ring with the platform's roots, installed once as the process's provider so that every
//! HTTP client, ours and the SDK's, speaks TLS the same way.

/// A `reqwest` client builder with the TLS provider in place.
pub fn client_builder() -> reqwest::ClientBuilder {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Another part of the process may have installed one first: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}
