//! What the model is shown, rendered in each dialect against reviewed golden files, and its
//! token accounting with a real tokenizer.

use super::*;

/// The visible set of a fixed configuration, in each format, against reviewed golden files
/// (`UPDATE_GOLDEN=1 cargo test --release --test disclosure` rewrites them).
#[test]
fn rendering_matches_the_golden_files_and_each_documented_shape() {
    use toolsearch::disclosure::Dialect;
    let f = fixture();
    let config = ToolSetConfig {
        pinned: vec!["weather.current".into()],
        discovery: DiscoveryConfig { call_tool: true, ..DiscoveryConfig::default() },
        ..ToolSetConfig::default()
    };
    let mut set = f.set(config);
    set.call("travel", &json!({"category": "Flights"}));
    let defs = set.visible();
    let name_ok = |n: &str| {
        !n.is_empty() && n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let dialects = [
        (Dialect::OpenAi, "openai"),
        (Dialect::OpenAiResponses, "openai-responses"),
        (Dialect::Anthropic, "anthropic"),
        (Dialect::Gemini, "gemini"),
        (Dialect::Mcp, "mcp"),
    ];
    for (dialect, file) in dialects {
        assert_eq!((dialect.name(), Dialect::from_name(file)), (file, Some(dialect)));
        let rendered = render(&defs, dialect);
        let tools = match dialect {
            Dialect::Mcp => {
                assert_eq!(rendered.as_object().unwrap().len(), 1, "a tools/list result holds `tools`");
                rendered["tools"].as_array().unwrap().clone()
            }
            Dialect::Gemini => {
                assert_eq!(rendered.as_array().unwrap().len(), 1, "one tool object holds the declarations");
                rendered[0]["functionDeclarations"].as_array().unwrap().clone()
            }
            _ => rendered.as_array().unwrap().clone(),
        };
        assert_eq!(tools.len(), defs.len());
        for t in &tools {
            let (name, description, schema) = match dialect {
                Dialect::OpenAi => {
                    assert_eq!(t["type"], "function");
                    assert_eq!(t.as_object().unwrap().len(), 2);
                    (&t["function"]["name"], &t["function"]["description"], &t["function"]["parameters"])
                }
                Dialect::OpenAiResponses => {
                    let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
                    assert_eq!(keys, ["description", "name", "parameters", "type"], "flat, as the Responses API wants");
                    assert_eq!(t["type"], "function");
                    (&t["name"], &t["description"], &t["parameters"])
                }
                Dialect::Anthropic => (&t["name"], &t["description"], &t["input_schema"]),
                Dialect::Gemini => (&t["name"], &t["description"], &t["parametersJsonSchema"]),
                Dialect::Mcp => (&t["name"], &t["description"], &t["inputSchema"]),
            };
            assert!(name.as_str().is_some_and(name_ok), "{name}");
            assert!(description.as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(schema["type"], "object", "{t}");
        }
        let golden = common::repo().join(format!("tests/golden/{file}.json"));
        let text = serde_json::to_string_pretty(&rendered).unwrap() + "\n";
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &text).unwrap();
        }
        let expected = std::fs::read_to_string(&golden).expect("golden file (UPDATE_GOLDEN=1 to create)");
        assert_eq!(text, expected, "{file} rendering changed; review and UPDATE_GOLDEN=1 if intended");
    }
}

#[test]
fn token_accounting_counts_both_sides_with_a_real_tokenizer() {
    use toolsearch::disclosure::{Dialect, TokenCounter};
    let f = fixture();
    let queries =
        toolsearch::eval::load_queries(&common::repo().join("tests/data/sample-queries.jsonl"), None, None).unwrap();
    let report = toolsearch::eval::token_report(&f.live, &queries, Dialect::OpenAi);
    assert_eq!(report.queries, queries.len());
    assert_eq!(report.tools, 204);
    // Up front is every definition, counted over the exact rendered JSON.
    let set = f.set(ToolSetConfig { node_facades: false, ..ToolSetConfig::default() });
    let engine = f.live.engine();
    let all: Vec<_> =
        engine.catalog().tools.iter().map(|t| set.definition_of(&set.tool_name(&t.id).unwrap()).unwrap()).collect();
    let counter = TokenCounter::new();
    assert_eq!(report.upfront_definitions, counter.count(&render(&all, Dialect::OpenAi).to_string()));
    assert!(report.upfront_definitions > 10_000, "{}", report.upfront_definitions);
    assert!(report.discovery_per_query > report.discovery_definitions as f64 * 3.0, "three turns at least");
    assert!(report.ratio > 2.0 && report.reached > 0.8, "{report:?}");
    // Search, expand, call: three turns, four when a second, longer search is needed. A query
    // whose matching tools are all in the fixture's unavailable group finds nothing and stops
    // after its two searches (one of the 24 does).
    assert!(report.turns >= 2.9 && report.turns <= 4.0, "{report:?}");
}

/// A model's response as each API gives it: its tool calls handled in order, its other items
/// passed over, the answers in that API's shape with the call's id; arguments that do not
/// parse answered with an error, unrun.
#[test]
fn a_models_calls_in_each_apis_shape_are_handled_and_answered_in_it() {
    use toolsearch::disclosure::Dialect;
    let f = fixture();
    let mut set = f.set(ToolSetConfig { pinned: vec!["weather.current".into()], ..ToolSetConfig::default() });
    let args = json!({"location": "Oslo"});
    let (good, bad) = (args.to_string(), "{not json");
    let cases = [
        (
            Dialect::OpenAi,
            "tool_call_id",
            "content",
            json!([
            {"id": "c1", "type": "function", "function": {"name": "current", "arguments": good}},
            {"id": "c2", "type": "function", "function": {"name": "current", "arguments": bad}}]),
        ),
        (
            Dialect::OpenAiResponses,
            "call_id",
            "output",
            json!([
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "current", "arguments": good},
            {"type": "function_call", "call_id": "c2", "name": "current", "arguments": "[1]"}]),
        ),
        (
            Dialect::Anthropic,
            "tool_use_id",
            "content",
            json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "c1", "name": "current", "input": args},
            {"type": "tool_use", "id": "c2", "name": "current", "input": bad}]),
        ),
    ];
    for (dialect, id, text, items) in cases {
        let answers = set.handle_calls(items.as_array().unwrap(), dialect).unwrap();
        assert_eq!(answers.len(), 2, "{dialect:?}: {answers:?}");
        assert_eq!((answers[0][id].as_str(), answers[1][id].as_str()), (Some("c1"), Some("c2")), "{answers:?}");
        let ran: Value = serde_json::from_str(answers[0][text].as_str().unwrap()).unwrap();
        assert_eq!(ran, json!({"ran": "weather.current", "with": args}), "{dialect:?}");
        assert!(answers[1][text].as_str().unwrap().starts_with("the arguments could not be read"), "{answers:?}");
    }
    let parts = json!([{"text": "Let me look."}, {"functionCall": {"id": "c1", "name": "current", "args": args}},
        {"functionCall": {"name": "current", "args": [1]}}]);
    let answers = set.handle_calls(parts.as_array().unwrap(), Dialect::Gemini).unwrap();
    let response = &answers[0]["functionResponse"];
    assert_eq!((&response["id"], &response["name"]), (&json!("c1"), &json!("current")));
    assert_eq!(response["response"]["output"], json!({"ran": "weather.current", "with": args}), "JSON as its value");
    assert!(answers[1]["functionResponse"].get("id").is_none(), "no id given, none sent back");
    assert!(answers[1]["functionResponse"]["response"]["error"].as_str().unwrap().contains("not a JSON object"));
    let ran = set.audit().entries().iter().filter(|e| matches!(e.event, AuditEvent::Call { .. })).count();
    assert_eq!(ran, 4, "one run per dialect; the unreadable ones never ran");
    let e = set.handle_calls(&[], Dialect::Mcp).unwrap_err().to_string();
    assert!(e.starts_with("dialect mcp: tool calls come from a model API"), "{e}");
}
