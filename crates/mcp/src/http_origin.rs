//! Which `Host` and `Origin` headers the HTTP listener answers: loopback origins always, others
//! only when configured; on a loopback listener, only loopback host names (a page that rebinds
//! its own name to 127.0.0.1 reads nothing).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Refuses a request to the operations endpoints (`/healthz`, `/readyz`, `/metrics`) whose
/// `Host` is not one the listener answers to (`hosts`; `None`: any), as `/mcp` does: a page
/// that rebinds its own name to a tokenless loopback gateway reads nothing.
pub(crate) async fn host_guard(
    State(hosts): State<Option<Arc<Vec<String>>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(hosts) = hosts {
        let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if !host_allowed(host, &hosts) {
            return (StatusCode::FORBIDDEN, "forbidden: the Host header is not one this gateway answers to")
                .into_response();
        }
    }
    next.run(request).await
}

/// Whether `host` (a `Host` header: a name or address, with or without a port) is one of
/// `allowed`, whole or by its name alone.
pub(crate) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default().to_owned(),
        None => host.rsplit_once(':').map_or(host.as_str(), |(n, _)| n).to_owned(),
    };
    allowed.iter().any(|a| *a == host || *a == name)
}

/// Loopback origins are always allowed; others only when configured (exactly).
pub(crate) fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    let host = rest.map(|r| r.split('/').next().unwrap_or(r)).unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && !h.ends_with(':') => h,
        _ => host,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_and_configured_origins_pass() {
        assert!(origin_allowed("http://localhost:3000", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(origin_allowed("http://[::1]:8080", &[]));
        assert!(!origin_allowed("http://evil.example", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        assert!(!origin_allowed("null", &[]));
        assert!(origin_allowed("https://app.example", &["https://app.example".into()]));
    }
}
