//! OpenTelemetry traces (`toolsearch.telemetry`, off by default): a span per client request,
//! one for its search, expand or call inside it, and one for each request to an upstream,
//! exported over OTLP/HTTP (protobuf) by a batch processor on a thread of its own.
//!
//! Attributes follow the OpenTelemetry GenAI and MCP semantic conventions: `mcp.method.name`,
//! `mcp.session.id`, `jsonrpc.request.id`, `gen_ai.operation.name` (`execute_tool`),
//! `gen_ai.tool.name`. A call's arguments are recorded (`gen_ai.tool.call.arguments`) only
//! with `record_arguments`. A W3C `traceparent` a client sends in a request's `_meta` is
//! continued, and the gateway sends its own on to upstreams, in `_meta` as well.
//!
//! Without `telemetry` nothing is installed: spans are the API's no-ops, which cost a few
//! nanoseconds each.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde::Deserialize;
use serde_json::{Map, Value};

/// `toolsearch.telemetry`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP endpoint's base URL (`http://collector:4318`); spans go to `/v1/traces`.
    pub otlp_endpoint: String,
    /// The `service.name` of the spans (default `toolsearch-gateway`).
    #[serde(default)]
    pub service_name: Option<String>,
    /// Record a call's arguments on its span (default false: they may hold personal data).
    #[serde(default)]
    pub record_arguments: bool,
}

static SETTINGS: OnceLock<TelemetrySettings> = OnceLock::new();

/// The installed exporter; flushes and shuts down when dropped.
pub struct Telemetry(opentelemetry_sdk::trace::SdkTracerProvider);

impl Drop for Telemetry {
    fn drop(&mut self) {
        let _ = self.0.shutdown();
    }
}

/// Installs the exporter of `settings` as the process's tracer provider. Call it outside any
/// async runtime (its HTTP client is a blocking one, on the exporter's own thread).
pub fn install(settings: &TelemetrySettings) -> Result<Telemetry, String> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    crate::oauth::fetch::secure_url(&settings.otlp_endpoint).map_err(|e| format!("otlp_endpoint: {e}"))?;
    let client = crate::tls::blocking_client().map_err(|e| format!("otlp_endpoint: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(format!("{}/v1/traces", settings.otlp_endpoint.trim_end_matches('/')))
        .build()
        .map_err(|e| format!("otlp_endpoint: {e}"))?;
    let name = settings.service_name.clone().unwrap_or_else(|| "toolsearch-gateway".to_owned());
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(opentelemetry_sdk::Resource::builder().with_service_name(name).build())
        .build();
    global::set_tracer_provider(provider.clone());
    let _ = SETTINGS.set(settings.clone());
    Ok(Telemetry(provider))
}

/// Whether traces are exported.
pub(crate) fn on() -> bool {
    SETTINGS.get().is_some()
}

/// The trace context a request's `_meta` carries (`traceparent`, `tracestate`), if any.
pub(crate) fn parent_of(meta: &Map<String, Value>) -> Context {
    let carrier: HashMap<String, String> = ["traceparent", "tracestate"]
        .iter()
        .filter_map(|k| meta.get(*k).and_then(Value::as_str).map(|v| (k.to_string(), v.to_owned())))
        .collect();
    TraceContextPropagator::new().extract(&carrier)
}

/// The `_meta` entries that carry `cx` on to an upstream.
pub fn carrier(cx: &Context) -> HashMap<String, String> {
    let mut carrier = HashMap::new();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(cx, &mut carrier);
    }
    carrier
}

/// A span under `parent`, named `name`, of `kind`, with `attributes`; the context it is current in.
pub fn span(parent: &Context, name: String, kind: SpanKind, attributes: Vec<KeyValue>) -> Context {
    if !on() {
        return Context::new();
    }
    let tracer = global::tracer("toolsearch");
    let span =
        tracer.span_builder(name).with_kind(kind).with_attributes(attributes).start_with_context(&tracer, parent);
    parent.with_span(span)
}

/// The span of a client's `tools/call` of `name` (a discovery tool or a revealed one), under
/// the trace its `_meta` continues.
pub(crate) fn client_call(
    meta: &Map<String, Value>,
    name: &str,
    session: &str,
    request_id: &str,
    arguments: &Value,
) -> Context {
    if !on() {
        return Context::new();
    }
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("mcp.session.id", session.to_owned()),
        KeyValue::new("jsonrpc.request.id", request_id.to_owned()),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", name.to_owned()),
    ];
    if SETTINGS.get().is_some_and(|s| s.record_arguments) {
        attributes.push(KeyValue::new("gen_ai.tool.call.arguments", arguments.to_string()));
    }
    span(&parent_of(meta), format!("tools/call {name}"), SpanKind::Server, attributes)
}
