//! Per-term coverage in `NO_MATCH_IN_CATEGORY`: the answer names what the request mentions that
//! no tool the caller may see does ("nothing here mentions \"weread\""), counted over the
//! caller's own view, so a hidden tool that mentions the word changes nothing for a caller who
//! cannot see it. Real index, real model, through the protocol and the CLI.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;

use serde_json::{json, Value};
use toolsearch::Principal;

fn catalogue() -> Value {
    let tool = |id: &str, path: [&str; 1], description: &str, requires: &[&str]| {
        json!({
            "id": id, "name": id.split('.').nth(1).unwrap(), "path": path, "description": description,
            "requires": requires, "args_schema": {"type": "object", "properties": {"x": {"type": "string"}}}
        })
    };
    json!({"tools": [
        tool("pay.refund", ["Finance"], "Refund a card payment, in whole or in part.", &[]),
        tool("pay.invoice", ["Finance"], "Create an invoice for a customer and email it.", &[]),
        tool("notes.export", ["Notes"], "Export notes to a markdown file.", &[]),
        tool("books.weread_sync", ["Books"], "Sync WeRead highlights and reading notes.", &["books"]),
    ]})
}

/// The hints of a search answered `NO_MATCH_IN_CATEGORY`.
fn no_match_hints(engine: &toolsearch::Engine, who: &Principal, query: &str, path: &str) -> Vec<String> {
    let args = json!({"query": query, "category_path": path});
    let err = engine.handle(who, "search_tool_by_category", args).expect_err("NO_MATCH_IN_CATEGORY");
    let err = serde_json::to_value(&err).unwrap();
    assert_eq!(err["code"], "NO_MATCH_IN_CATEGORY", "{err}");
    err["hints"].as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_owned()).collect()
}

#[test]
fn no_match_names_the_terms_nothing_the_caller_may_see_mentions() {
    let file = common::scratch().join("unmatched.json");
    std::fs::write(&file, catalogue().to_string()).unwrap();
    let dir = common::build(&file, "unmatched");
    let engine = common::open(&dir);
    let query = "sync my weread highlights to a kindle";

    // A caller that cannot see the WeRead tool: nothing it may see mentions any of the terms.
    let outsider = Principal::with_scopes(Vec::<String>::new());
    let hints = no_match_hints(&engine, &outsider, query, "Finance");
    let named = r#"nothing here mentions "sync", "weread", "highlights" or "kindle""#;
    assert!(hints.contains(&named.to_owned()), "{hints:?}");

    // A caller that may see it: only "kindle" is unmatched, and the WeRead tool is where the
    // request fits.
    let reader = Principal::with_scopes(["books"]);
    let hints = no_match_hints(&engine, &reader, query, "Finance");
    assert!(hints[0].starts_with("\"Books\" matches"), "{hints:?}");
    assert!(hints.contains(&r#"nothing here mentions "kindle""#.to_owned()), "{hints:?}");

    // Request words are never named; a request every word of which is mentioned names none.
    let hints = no_match_hints(&engine, &outsider, "I want a tool to export notes", "Finance");
    assert!(!hints.iter().any(|h| h.starts_with("nothing here mentions")), "{hints:?}");

    // The CLI says the same (a search with no scopes given sees every tool).
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["search", dir.to_str().unwrap(), "transcribe a podcast episode", "--path", "Finance"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains(r#"nothing here mentions "transcribe", "podcast" or "episode""#), "{stderr}");
}
