//! HTTPS for what the gateway fetches (upstream MCP servers, identity providers): rustls on
//! ring with the platform's roots, installed once as the process's provider so that every
//! HTTP client, ours and the SDK's, speaks TLS the same way.

fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Another part of the process may have installed one first: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A `reqwest` client builder with the TLS provider in place.
pub fn client_builder() -> reqwest::ClientBuilder {
    install();
    reqwest::Client::builder()
}

/// A blocking `reqwest` client with the TLS provider in place (the trace exporter's: made and
/// used outside any async runtime).
pub fn blocking_client() -> Result<reqwest::blocking::Client, String> {
    install();
    reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}
