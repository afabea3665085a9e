//! The `toolsearch.limits` section of a gateway config: bounds on what upstreams and clients
//! may make the gateway hold, each with a default, and the check that refuses a bound that
//! would refuse everything (no session, no tool, an empty page).

use serde::Deserialize;

/// The longest idle time Linux takes for TCP keep-alive (`TCP_KEEPIDLE`), so the longest
/// `http.peer_timeout_secs` that applies as written.
const MAX_PEER_TIMEOUT_SECS: u64 = 32_767;

/// Bounds on what upstreams and clients may make the gateway hold, each with a default
/// (docs/gateway-operations.md, "Limits").
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayLimits {
    /// One upstream's tool list: pages, tools and bytes.
    pub list: crate::listing::ListLimits,
    /// HTTP clients: sessions, bodies, slow clients.
    pub http: toolsearch_mcp::HttpLimits,
    /// The largest tool result passed on to a client, as JSON (default 1 MiB: more would
    /// flood a model's context); a larger one is cut to it with a notice (one too large to be
    /// held at all, a stdio line over `GatewayLimits::max_line`, is a `RESULT_TOO_LARGE`
    /// error naming the limit).
    pub max_result_bytes: usize,
}

impl Default for GatewayLimits {
    fn default() -> Self {
        GatewayLimits { list: Default::default(), http: Default::default(), max_result_bytes: 1 << 20 }
    }
}

impl GatewayLimits {
    /// The longest line a stdio upstream may write: a tool list page or a result (a longer
    /// one is answered with an error as it is read, never held).
    pub(crate) fn max_line(&self) -> usize {
        self.max_result_bytes.max(self.list.max_bytes).saturating_add(64 * 1024)
    }

    /// Refuses a bound that would refuse everything, naming it (`http.max_sessions: 0 ...`):
    /// no session or tool at all, a body or result too small for any message, a page of
    /// nothing (its cursor would never move on).
    pub(crate) fn check(&self) -> Result<(), String> {
        let (l, h) = (&self.list, &self.http);
        for (name, value, least) in [
            ("list.max_pages", l.max_pages, 1),
            ("list.max_tools", l.max_tools, 1),
            ("list.max_bytes", l.max_bytes, 256),
            ("list.page", l.page, 1),
            ("http.max_sessions", h.max_sessions, 1),
            ("http.max_sessions_per_token", h.max_sessions_per_token, 1),
            ("http.max_body_bytes", h.max_body_bytes, 256),
            ("max_result_bytes", self.max_result_bytes, 256),
        ] {
            if value < least {
                return Err(format!("{name}: {value} would refuse everything it bounds; give at least {least}"));
            }
        }
        if h.peer_timeout_secs > MAX_PEER_TIMEOUT_SECS {
            return Err(format!(
                "http.peer_timeout_secs: {} is longer than a TCP keep-alive can wait ({MAX_PEER_TIMEOUT_SECS} s); \
                 give at most that, or 0 to leave it to the kernel",
                h.peer_timeout_secs
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::GatewayLimits;

    #[test]
    fn a_bound_that_would_refuse_everything_is_named() {
        assert_eq!(GatewayLimits::default().check(), Ok(()));
        let mut limits = GatewayLimits::default();
        limits.list.page = 0;
        assert_eq!(limits.check().unwrap_err(), "list.page: 0 would refuse everything it bounds; give at least 1");
        let mut limits = GatewayLimits::default();
        limits.http.max_body_bytes = 100;
        assert!(limits.check().unwrap_err().starts_with("http.max_body_bytes: 100 "));
        let mut limits = GatewayLimits::default();
        limits.http.peer_timeout_secs = 32_768;
        assert!(limits.check().unwrap_err().starts_with("http.peer_timeout_secs: 32768 is longer than"));
        limits.http.peer_timeout_secs = 0;
        assert_eq!(limits.check(), Ok(()), "0: the kernel's defaults");
    }
}
