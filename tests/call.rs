//! call_tool: schema validation with JSON pointers, the host's executor, authorization, and the
//! record of calls.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolsearch::disclosure::{AuditEvent, Availability, DiscoveryConfig, LiveCatalog, ToolSet, ToolSetConfig};
use toolsearch::{CallToolRequest, Engine, ErrorCode, Executor, Principal, Tool, ToolFailure};

/// The host side: records what it was asked to run, fails on demand.
#[derive(Default)]
struct Recorder(Mutex<Vec<(String, Value)>>);

impl Executor for Recorder {
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, ToolFailure> {
        self.0.lock().unwrap().push((tool.id.clone(), arguments.clone()));
        if arguments.get("city") == Some(&json!("Atlantis")) {
            return Err(ToolFailure::Failed("unknown city".into()));
        }
        Ok(json!({"ok": true, "tool": tool.name}))
    }
}

fn engine_with_recorder() -> (Engine, Arc<Recorder>) {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let engine = common::open(DIR.get_or_init(|| common::build(&common::sample_catalog(), "call")));
    let recorder = Arc::new(Recorder::default());
    engine.set_executor(recorder.clone());
    (engine, recorder)
}

fn call(
    engine: &Engine,
    id: &str,
    arguments: Value,
) -> Result<toolsearch::CallToolResponse, toolsearch::ProtocolError> {
    engine.call_tool(&Principal::trusted(), &CallToolRequest { tool_id: id.into(), arguments })
}

#[test]
fn valid_arguments_reach_the_executor_and_its_result_comes_back() {
    let (engine, recorder) = engine_with_recorder();
    let r =
        call(&engine, "payments.create_charge", json!({"customer_id": "c1", "amount_cents": 1250, "currency": "EUR"}))
            .unwrap();
    assert_eq!((r.is_error, &r.result["tool"]), (false, &json!("create_charge")));
    assert_eq!(
        recorder.0.lock().unwrap()[0],
        ("payments.create_charge".to_string(), json!({"customer_id": "c1", "amount_cents": 1250, "currency": "EUR"}))
    );
}

#[test]
fn invalid_arguments_name_the_failing_json_pointer_and_never_run() {
    let (engine, recorder) = engine_with_recorder();
    let e = call(
        &engine,
        "payments.create_charge",
        json!({"customer_id": "c1", "amount_cents": "12.50", "currency": "euro"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.hints.iter().any(|h| h.starts_with("/amount_cents:")), "{:?}", e.hints);
    assert!(e.hints.iter().any(|h| h.starts_with("/currency:")), "{:?}", e.hints);
    assert_eq!(e.next_action.unwrap().call.as_str(), "expand_tool");
    let e = call(&engine, "payments.create_charge", json!({"customer_id": "c1"})).unwrap_err();
    assert!(e.message.contains("amount_cents"), "{}", e.message);
    assert!(recorder.0.lock().unwrap().is_empty());
}

#[test]
fn a_failing_tool_is_a_result_with_is_error() {
    let (engine, _) = engine_with_recorder();
    let r = call(&engine, "weather.current", json!({"location": "x", "city": "Atlantis"}));
    // `city` is not in the schema but extra properties are allowed by it.
    let r = r.unwrap();
    assert!(r.is_error);
    assert_eq!(r.result, json!({"error": "unknown city"}));
}

#[test]
fn hidden_and_unknown_tools_are_refused_like_expand_tool() {
    let (engine, recorder) = engine_with_recorder();
    let who = Principal::with_scopes(["payments:read"]);
    let e = engine
        .call_tool(&who, &CallToolRequest { tool_id: "payments.refund".into(), arguments: json!({"charge_id": "x"}) })
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    let e = engine
        .call_tool(
            &who.clone().with_public_catalog(true),
            &CallToolRequest { tool_id: "payments.refund".into(), arguments: json!({"charge_id": "x"}) },
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotAuthorized);
    assert_eq!(call(&engine, "no.such.tool", json!({})).unwrap_err().code, ErrorCode::ToolNotFound);
    assert!(recorder.0.lock().unwrap().is_empty());
}

#[test]
fn every_call_is_recorded_in_order_with_its_outcome() {
    // The disclosure runtime's audit trail is the one record of calls.
    let engine = common::open(&common::build(&common::sample_catalog(), "call-audit"));
    let live = LiveCatalog::new(engine);
    live.set_executor(Arc::new(Recorder::default()));
    let config = ToolSetConfig {
        discovery: DiscoveryConfig { call_tool: true, ..DiscoveryConfig::default() },
        ..ToolSetConfig::default()
    };
    let mut set = ToolSet::new(live, Arc::new(Availability::default()), config).unwrap();
    set.call("call_tool", &json!({"tool_id": "weather.forecast", "arguments": {"location": "Oslo", "days": 3}}));
    set.call("call_tool", &json!({"tool_id": "weather.forecast", "arguments": {"location": "Oslo", "days": 30}}));
    set.call("call_tool", &json!({"tool_id": "weather.current", "arguments": {"location": "Rome"}}));
    let outcomes: Vec<(String, String)> = set
        .audit()
        .entries()
        .iter()
        .filter_map(|e| match &e.event {
            AuditEvent::Call { tool_id, outcome, .. } => Some((tool_id.clone(), outcome.as_string())),
            _ => None,
        })
        .collect();
    let expected = [("weather.forecast", "ok"), ("weather.forecast", "invalid_argument"), ("weather.current", "ok")];
    assert_eq!(outcomes, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
}

#[test]
fn without_an_executor_the_call_is_refused_clearly() {
    let engine = common::open(&common::build(&common::sample_catalog(), "call-no-exec"));
    let e = call(&engine, "weather.current", json!({"location": "Rome"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::Internal);
    assert!(e.message.contains("set_executor"));
}
