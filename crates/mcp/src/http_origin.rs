//! Which `Host` and `Origin` headers the HTTP listener answers: loopback origins always, others
//! only when configured; on a loopback listener, only loopback host names (a page that rebinds
//! its own name to 127.0.0.1 reads nothing). A page at a configured origin gets the CORS headers
//! a browser needs to call `/mcp` (`cors`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
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
    match wrong_host(&request, hosts.as_deref().map(Vec::as_slice)) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

/// The 403 for a request whose `Host` is not one of `hosts` (`None`: any passes), if it is not.
fn wrong_host(request: &Request, hosts: Option<&[String]>) -> Option<Response> {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    hosts.filter(|hosts| !host_allowed(host, hosts)).map(|_| {
        (StatusCode::FORBIDDEN, "forbidden: the Host header is not one this gateway answers to").into_response()
    })
}

/// The configured origins a page may call `/mcp` from (`allowed_origins`), replaced whole when
/// a reloaded config changes them.
#[derive(Clone, Default)]
pub(crate) struct Origins(Arc<std::sync::RwLock<Arc<Vec<String>>>>);

impl Origins {
    pub(crate) fn new(origins: Vec<String>) -> Origins {
        Origins(Arc::new(std::sync::RwLock::new(Arc::new(origins))))
    }

    /// The origins as they are now.
    pub(crate) fn now(&self) -> Arc<Vec<String>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces them, for the next request on.
    pub(crate) fn set(&self, origins: Vec<String>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(origins);
    }
}

/// The configured origins and the hosts the listener answers to (`None`: any).
pub(crate) type CorsState = (Origins, Option<Arc<Vec<String>>>);

/// CORS for a page at a configured origin (`allowed_origins`, exactly; a loopback origin passes
/// `guard`'s check but gets no CORS unless listed, so no local page can call a gateway that did
/// not ask for it): its preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered
/// here, without a token, as browsers send none on a preflight; every answer to it names the
/// origin and exposes the headers an MCP client reads (`Mcp-Session-Id` above all). Any other
/// origin gets no CORS header.
pub(crate) async fn cors(State((origins, hosts)): State<CorsState>, request: Request, next: Next) -> Response {
    let origin = request.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok());
    let origins = origins.now();
    let listed = |o: &&str| origins.iter().any(|a| a == o);
    let Some(origin) = origin.filter(listed).and_then(|o| HeaderValue::from_str(o).ok()) else {
        return next.run(request).await;
    };
    let preflight =
        request.method() == Method::OPTIONS && request.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut answer = if preflight {
        if let Some(refused) = wrong_host(&request, hosts.as_deref().map(Vec::as_slice)) {
            return refused;
        }
        let mut answer = StatusCode::NO_CONTENT.into_response();
        let h = answer.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE"));
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id",
            ),
        );
        h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        answer
    } else {
        next.run(request).await
    };
    let h = answer.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.append(header::VARY, HeaderValue::from_static("origin"));
    if !preflight {
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("mcp-session-id, mcp-protocol-version, www-authenticate, retry-after"),
        );
    }
    answer
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
