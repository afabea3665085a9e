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
//! nanoseconds each. A reloaded config's `telemetry` takes the place of the running one from
//! the next span on ([`replace`]); the one replaced is flushed to its endpoint.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
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

/// The settings and tracer provider installed now (`None`: traces are off), replaced by a
/// reloaded config ([`replace`]).
static CURRENT: Mutex<Option<(TelemetrySettings, SdkTracerProvider)>> = Mutex::new(None);
/// Whether traces are exported, and whether a call's arguments are recorded: read by every
/// span, so atomics beside the lock.
static ON: AtomicBool = AtomicBool::new(false);
static RECORD_ARGUMENTS: AtomicBool = AtomicBool::new(false);

/// The installed exporter; flushes and shuts down the tracer provider installed last (this
/// one, or what a reload put in its place) when dropped.
pub struct Telemetry(());

impl Drop for Telemetry {
    fn drop(&mut self) {
        let _ = replace(None);
    }
}

/// Installs the exporter of `settings` (if any) as the process's tracer provider; the guard
/// flushes whichever is installed when the process ends, one a reload put in place too. Call
/// it outside any async runtime (its HTTP client is a blocking one, on the exporter's own
/// thread).
pub fn install(settings: Option<&TelemetrySettings>) -> Result<Telemetry, String> {
    replace(settings)?;
    Ok(Telemetry(()))
}

/// Checks `settings` as [`install`] would, without installing anything: the endpoint must be
/// `https` (`http` on loopback only).
pub fn check(settings: &TelemetrySettings) -> Result<(), String> {
    crate::oauth::fetch::secure_url(&settings.otlp_endpoint).map(|_| ()).map_err(|e| format!("otlp_endpoint: {e}"))
}

/// Makes `settings` the process's traces from the next span on (`None`: none are exported),
/// unless they are the ones installed already. The provider replaced is flushed to its own
/// endpoint and shut down. Blocking: call it outside any async runtime (`spawn_blocking`).
pub fn replace(settings: Option<&TelemetrySettings>) -> Result<(), String> {
    let mut current = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
    if current.as_ref().map(|(s, _)| s) == settings {
        return Ok(());
    }
    let next = match settings {
        Some(settings) => Some((settings.clone(), provider(settings)?)),
        None => None,
    };
    ON.store(false, Ordering::SeqCst);
    match &next {
        Some((settings, provider)) => {
            global::set_tracer_provider(provider.clone());
            RECORD_ARGUMENTS.store(settings.record_arguments, Ordering::SeqCst);
            ON.store(true, Ordering::SeqCst);
        }
        None => global::set_tracer_provider(opentelemetry::trace::noop::NoopTracerProvider::new()),
    }
    if let Some((_, old)) = std::mem::replace(&mut *current, next) {
        let _ = old.shutdown();
    }
    Ok(())
}

/// The tracer provider `settings` describe: spans batched to its endpoint's `/v1/traces`.
fn provider(settings: &TelemetrySettings) -> Result<SdkTracerProvider, String> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    check(settings)?;
    let client = crate::tls::blocking_client().map_err(|e| format!("otlp_endpoint: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(format!("{}/v1/traces", settings.otlp_endpoint.trim_end_matches('/')))
        .build()
        .map_err(|e| format!("otlp_endpoint: {e}"))?;
    let name = settings.service_name.clone().unwrap_or_else(|| "toolsearch-gateway".to_owned());
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(opentelemetry_sdk::Resource::builder().with_service_name(name).build())
        .build())
}

/// Whether traces are exported.
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
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
    if RECORD_ARGUMENTS.load(Ordering::Relaxed) {
        attributes.push(KeyValue::new("gen_ai.tool.call.arguments", arguments.to_string()));
    }
    span(&parent_of(meta), format!("tools/call {name}"), SpanKind::Server, attributes)
}
