//! docs/protocol.md's examples are real: each call's request is sent, as the page prints it,
//! to the engine over the catalogue the page names (`tests/data/protocol-examples.json`), and
//! the answer must be the one the page shows. A field renamed, added or dropped, a hint
//! reworded or a default changed would otherwise leave the protocol's reference page wrong
//! while every other test passes.
//!
//! In the page's answer, `"..."` stands for any text and a fractional number for any
//! confidence in [0, 1] (the model decides those); everything else (keys, ids, paths, tags,
//! counts, cursors, messages, hints, next actions) must be as shown.

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolsearch::Principal;
use toolsearch_exec::CommandExecutor;

/// One example of the page: the call (its section's heading, `Errors` for the error example),
/// the request and the answer as printed.
#[derive(Debug)]
struct Example {
    call: String,
    request: Value,
    answer: Value,
}

/// Each section of the page with a request block followed by an answer block.
fn examples(page: &str) -> Vec<Example> {
    let mut found = Vec::new();
    for section in page.split("\n## ").skip(1) {
        let heading = section.lines().next().unwrap_or_default().trim_matches('`').to_owned();
        let blocks: Vec<&str> =
            section.split("```json\n").skip(1).filter_map(|b| b.split("\n```").next()).take(2).collect();
        if let [request, answer] = blocks[..] {
            let parse = |text: &str| -> Value {
                serde_json::from_str(text).unwrap_or_else(|e| panic!("docs/protocol.md, {heading}: {e}\n{text}"))
            };
            found.push(Example { call: heading.clone(), request: parse(request), answer: parse(answer) });
        }
    }
    found
}

/// Where `got` differs from what the page shows (`None` when it fits), as a JSON pointer.
fn misfit(page: &Value, got: &Value, at: &str) -> Option<String> {
    match (page, got) {
        (Value::String(p), Value::String(_)) if p == "..." => None,
        (Value::Number(p), Value::Number(g)) if p.is_f64() => {
            let g = g.as_f64().unwrap_or(-1.0);
            (!(0.0..=1.0).contains(&g)).then(|| format!("{at}: {g} is not a confidence"))
        }
        (Value::Object(p), Value::Object(g)) => {
            let (pk, gk): (Vec<_>, Vec<_>) = (p.keys().collect(), g.keys().collect());
            if pk != gk {
                return Some(format!("{at}: the page shows fields {pk:?}, the engine answers {gk:?}"));
            }
            p.iter().find_map(|(k, v)| misfit(v, &g[k], &format!("{at}/{k}")))
        }
        (Value::Array(p), Value::Array(g)) if p.len() == g.len() => {
            p.iter().zip(g).enumerate().find_map(|(i, (p, g))| misfit(p, g, &format!("{at}/{i}")))
        }
        _ => (page != got).then(|| format!("{at}: the page shows {page}, the engine answers {got}")),
    }
}

#[test]
fn every_request_of_the_protocol_page_gets_the_answer_it_shows() {
    let page = std::fs::read_to_string(common::repo().join("docs/protocol.md")).unwrap();
    let examples = examples(&page);
    let calls: Vec<&str> = examples.iter().map(|e| e.call.as_str()).collect();
    assert_eq!(
        calls,
        ["search_tool_by_category", "search_nodes", "list", "expand_tool", "call_tool", "Errors"],
        "the page's examples, in order"
    );
    let catalogue = common::repo().join("tests/data/protocol-examples.json");
    let engine = common::open(&common::build(&catalogue, "protocol-examples"));
    // The executor is a real command, as `toolsearch call ... -- COMMAND` runs one.
    engine.set_executor(Arc::new(CommandExecutor {
        argv: ["sh", "-c", r#"cat >/dev/null; echo '{"id": "ch_1"}'"#].map(String::from).to_vec(),
        timeout: Duration::from_secs(30),
    }));
    let mut wrong = Vec::new();
    for example in &examples {
        let call = if example.call == "Errors" { "search_tool_by_category" } else { example.call.as_str() };
        let got = match engine.handle(&Principal::trusted(), call, example.request.clone()) {
            Ok(answer) => answer,
            Err(error) => serde_json::to_value(&error).unwrap(),
        };
        if let Some(why) = misfit(&example.answer, &got, "") {
            wrong.push(format!("{}: {why}\n  the engine's answer: {got}", example.call));
        }
    }
    assert!(wrong.is_empty(), "docs/protocol.md shows answers the engine does not give:\n{}", wrong.join("\n"));
}

#[test]
fn the_page_matcher_tells_a_renamed_field_a_changed_value_and_a_missing_result() {
    let page: Value = serde_json::from_str(
        r#"{"results": [{"tool_id": "a.b", "summary": "...", "confidence": 0.9}], "next_cursor": null, "count": 8}"#,
    )
    .unwrap();
    let fits = serde_json::json!({"results": [{"tool_id": "a.b", "summary": "any text", "confidence": 0.41}],
                                  "next_cursor": null, "count": 8});
    assert_eq!(misfit(&page, &fits, ""), None);
    let mut renamed = fits.clone();
    renamed["results"][0] = serde_json::json!({"id": "a.b", "summary": "x", "confidence": 0.4});
    assert!(misfit(&page, &renamed, "").unwrap().starts_with("/results/0: the page shows fields"));
    let mut changed = fits.clone();
    changed["count"] = 7.into();
    assert_eq!(misfit(&page, &changed, "").unwrap(), "/count: the page shows 8, the engine answers 7");
    let mut missing = fits.clone();
    missing["results"] = serde_json::json!([]);
    assert!(misfit(&page, &missing, "").unwrap().starts_with("/results: the page shows"));
    let mut no_confidence = fits;
    no_confidence["results"][0]["confidence"] = 3.5.into();
    assert!(misfit(&page, &no_confidence, "").unwrap().contains("is not a confidence"));
}
