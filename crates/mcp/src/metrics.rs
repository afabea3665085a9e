//! The server's metrics, kept with the `prometheus-client` crate and served as OpenMetrics
//! text at `/metrics`: requests and their latency by method, upstream and outcome, search
//! latency, upstreams up or down, tools in the index, open sessions (and those closed for
//! idling), refused bearer tokens.
//!
//! Label values are bounded: methods are the MCP methods served, upstreams the configured
//! servers (or `toolsearch` for what the gateway answers itself), outcomes a fixed few.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// The `upstream` label of what the server answers itself (discovery, facades, refusals).
pub const OWN: &str = "toolsearch";

/// Labels of a request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    upstream: String,
    outcome: String,
}

/// Labels of an upstream.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets from 0.25 ms to about 65 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 19))
}

/// Every metric of one server process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Histograms<RequestLabels>,
    search: Histogram,
    up: Family<UpstreamLabels, Gauge>,
    progress_dropped: Family<UpstreamLabels, Gauge>,
    tools: Gauge,
    sessions: Gauge,
    learn: LearnGauges,
    /// Refused bearer tokens, and requests throttled for them.
    strikes: (Counter, Counter),
    /// HTTP sessions closed for idling past `limits.http.session_idle_secs`.
    idle_closed: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("toolsearch");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register("requests", "MCP requests answered, by method, upstream and outcome", requests.clone());
        let latency: Histograms<RequestLabels> = Family::new_with_constructor(latency_histogram);
        registry.register(
            "request_duration_seconds",
            "Time to answer an MCP request, by method, upstream and outcome",
            latency.clone(),
        );
        let search = latency_histogram();
        registry.register("search_duration_seconds", "Time to answer a discovery search", search.clone());
        let up = Family::<UpstreamLabels, Gauge>::default();
        registry.register("upstream_up", "1 when the upstream server is connected, 0 when it is down", up.clone());
        let progress_dropped = Family::<UpstreamLabels, Gauge>::default();
        registry.register(
            "upstream_progress_dropped",
            "Progress notifications an upstream sent that named no open request of its own, dropped since it started",
            progress_dropped.clone(),
        );
        let tools = Gauge::default();
        registry.register("index_tools", "Tools in the index served", tools.clone());
        let sessions = Gauge::default();
        registry.register("sessions", "Client sessions open", sessions.clone());
        let learn = LearnGauges::register(&mut registry);
        let refused_tokens = Counter::default();
        registry.register(
            "http_refused_tokens",
            "Bearer tokens the HTTP endpoint refused (401), since it started",
            refused_tokens.clone(),
        );
        let throttled = Counter::default();
        registry.register(
            "http_throttled_tokens",
            "Requests answered 429 because their address had presented too many refused tokens",
            throttled.clone(),
        );
        let strikes = (refused_tokens, throttled);
        let idle_closed = Counter::default();
        registry.register(
            "http_sessions_idle_closed",
            "HTTP sessions closed for idling past limits.http.session_idle_secs, since the start",
            idle_closed.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            search,
            up,
            progress_dropped,
            tools,
            sessions,
            learn,
            strikes,
            idle_closed,
        }
    }
}

/// What a gateway learning from its own traffic shows (`toolsearch.learn`).
#[derive(Debug, Clone, Default)]
struct LearnGauges {
    labels: Gauge,
    gain: Gauge<f64, AtomicU64>,
    swaps: Gauge,
    last_swap: Gauge,
}

impl LearnGauges {
    fn register(registry: &mut Registry) -> LearnGauges {
        let g = LearnGauges::default();
        registry.register(
            "learn_labels",
            "Labelled searches the last learning run read from the audit trail",
            g.labels.clone(),
        );
        registry.register(
            "learn_heldout_gain",
            "nDCG@10 the last learning run's adapter gains over the ranking in force, on held-out labels",
            g.gain.clone(),
        );
        registry.register("learn_swaps", "Adapters swapped in since the gateway started", g.swaps.clone());
        registry.register(
            "learn_last_swap_timestamp_seconds",
            "When the last adapter was swapped in (Unix seconds; 0 for never)",
            g.last_swap.clone(),
        );
        g
    }
}

impl Metrics {
    /// Counts one request and its latency.
    pub fn request(&self, method: &str, upstream: &str, outcome: &str, seconds: f64) {
        let labels =
            RequestLabels { method: method.to_owned(), upstream: upstream.to_owned(), outcome: outcome.to_owned() };
        self.requests.get_or_create(&labels).inc();
        self.latency.get_or_create(&labels).observe(seconds);
    }

    /// Records one discovery search's latency.
    pub fn search(&self, seconds: f64) {
        self.search.observe(seconds);
    }

    /// Sets whether `upstream` is up.
    pub fn upstream(&self, upstream: &str, up: bool) {
        self.up.get_or_create(&UpstreamLabels { upstream: upstream.to_owned() }).set(i64::from(up));
    }

    /// Sets how many progress notifications `upstream` sent that were dropped.
    pub fn progress_dropped(&self, upstream: &str, count: u64) {
        let labels = UpstreamLabels { upstream: upstream.to_owned() };
        self.progress_dropped.get_or_create(&labels).set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Sets the number of tools in the index and of open sessions.
    pub fn sizes(&self, tools: usize, sessions: usize) {
        self.tools.set(tools as i64);
        self.sessions.set(sessions as i64);
    }

    /// Records a learning run: labels read, held-out gain over the ranking in force, adapters
    /// swapped in so far and when the last was (Unix seconds, 0 for never).
    pub fn learned(&self, labels: usize, gain: f64, swaps: u64, last_swap: u64) {
        self.learn.labels.set(i64::try_from(labels).unwrap_or(i64::MAX));
        self.learn.gain.set(gain);
        self.learn.swaps.set(i64::try_from(swaps).unwrap_or(i64::MAX));
        self.learn.last_swap.set(i64::try_from(last_swap).unwrap_or(i64::MAX));
    }

    /// Sets how many bearer tokens were refused and how many requests throttled for them.
    pub fn refused_tokens(&self, refused: u64, throttled: u64) {
        use std::sync::atomic::Ordering;
        self.strikes.0.inner().store(refused, Ordering::Relaxed);
        self.strikes.1.inner().store(throttled, Ordering::Relaxed);
    }

    /// Sets how many HTTP sessions were closed for idling.
    pub fn sessions_idle_closed(&self, closed: u64) {
        self.idle_closed.inner().store(closed, std::sync::atomic::Ordering::Relaxed);
    }

    /// Everything, as OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The content type of [`Metrics::encode`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_their_labels() {
        let m = Metrics::default();
        m.request("tools/call", "memory", "ok", 0.002);
        m.request("tools/call", "memory", "ok", 0.004);
        m.request("tools/call", OWN, "refused", 0.001);
        m.upstream("memory", true);
        m.sizes(12, 3);
        let text = m.encode();
        assert!(
            text.contains(r#"toolsearch_requests_total{method="tools/call",upstream="memory",outcome="ok"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"toolsearch_request_duration_seconds_count{method="tools/call",upstream="memory",outcome="ok"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"toolsearch_upstream_up{upstream="memory"} 1"#), "{text}");
        assert!(text.contains("toolsearch_index_tools 12") && text.ends_with("# EOF\n"), "{text}");
    }
}
