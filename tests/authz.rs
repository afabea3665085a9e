//! Authorization: a tool the caller may not use never appears in any answer, count, hint,
//! suggestion or error text. Checked over random catalogues and random scope sets, on real
//! indexes, by searching every serialised answer for the ids and the category names of hidden
//! tools.

mod common;

use serde_json::{json, Value};
use toolsearch::{Engine, ErrorCode, ExpandToolRequest, Principal};

/// A small deterministic pseudo-random generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: [&str; 16] = [
    "invoice",
    "weather",
    "email",
    "bucket",
    "deploy",
    "photo",
    "calendar",
    "refund",
    "search",
    "report",
    "user",
    "password",
    "flight",
    "metric",
    "chart",
    "translate",
];
const SCOPES: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

/// A random catalogue: tools with distinctive ids, random categories, random `requires`.
fn catalogue(rng: &mut Rng, n: usize) -> Value {
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            let (a, b) = (WORDS[rng.below(16)], WORDS[rng.below(16)]);
            let requires: Vec<&str> = SCOPES.iter().copied().filter(|_| rng.below(3) == 0).collect();
            let cat = format!("Zone{}", rng.below(4));
            let sub = format!("Sect{}x{}", rng.below(3), i % 2);
            json!({
                "id": format!("tid{i:03}q"),
                "name": format!("{a}_{b}_{i}"),
                "path": [cat, sub],
                "description": format!("Works with {a} and {b} records."),
                "requires": requires,
                "args_schema": {"type": "object", "properties": {"x": {"type": "string"}}}
            })
        })
        .collect();
    json!({ "tools": tools })
}

fn text_of<T: serde::Serialize, E: serde::Serialize>(r: &Result<T, E>) -> String {
    match r {
        Ok(v) => serde_json::to_string(v).unwrap(),
        Err(e) => serde_json::to_string(e).unwrap(),
    }
}

#[test]
fn hidden_tools_never_leak_across_random_catalogues_and_scope_sets() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for round in 0..4 {
        let manifest = catalogue(&mut rng, 24);
        let file = common::scratch().join(format!("authz-{round}.json"));
        std::fs::write(&file, serde_json::to_string(&manifest).unwrap()).unwrap();
        let engine: Engine = common::open(&common::build(&file, &format!("authz-{round}")));
        let tools = engine.catalog().tools.clone();
        let node_paths: Vec<String> = engine.catalog().nodes.iter().map(|n| n.path.join("/")).collect();
        for _ in 0..6 {
            let held: Vec<&str> = SCOPES.iter().copied().filter(|_| rng.below(2) == 0).collect();
            let who = Principal::with_scopes(held.iter().copied());
            let hidden: Vec<&str> = tools.iter().filter(|t| !who.may_use(t)).map(|t| t.id.as_str()).collect();
            let visible_paths: Vec<String> = tools
                .iter()
                .filter(|t| who.may_use(t))
                .flat_map(|t| (1..=2).map(|d| t.paths[0][..d].join("/")))
                .collect();
            let hidden_paths: Vec<&String> = node_paths.iter().filter(|p| !visible_paths.contains(p)).collect();
            let mut answers: Vec<String> = Vec::new();
            let q = format!("{} {}", WORDS[rng.below(16)], WORDS[rng.below(16)]);
            answers.push(text_of(&engine.handle_as(&who, "search_tool_by_category", json!({"query": q, "limit": 50}))));
            answers.push(text_of(&engine.handle_as(&who, "search_nodes", json!({"query": q, "limit": 50}))));
            answers.push(text_of(&engine.handle_as(&who, "list", json!({"limit": 50}))));
            answers.push(text_of(&engine.handle_as(
                &who,
                "search_tool_by_category",
                json!({"query": "zzqx vvwk", "limit": 5}),
            )));
            for p in &node_paths {
                if hidden_paths.contains(&p) {
                    // Indistinguishable from a path that does not exist (the caller's own words
                    // are echoed, nothing else).
                    let e = engine.handle_as(&who, "list", json!({"path": p})).unwrap_err();
                    assert_eq!(e.code, ErrorCode::UnknownPath);
                    answers.push(serde_json::to_string(&e.hints).unwrap());
                    continue;
                }
                answers.push(text_of(&engine.handle_as(&who, "list", json!({"path": p, "limit": 50}))));
                answers.push(text_of(&engine.handle_as(&who, "list", json!({"path": p, "query": q, "limit": 50}))));
                answers.push(text_of(&engine.handle_as(
                    &who,
                    "search_tool_by_category",
                    json!({"query": q, "category_path": p}),
                )));
                // A mistyped path: suggestions must name only visible categories.
                answers.push(text_of(&engine.handle_as(&who, "list", json!({"path": format!("{p}z")}))));
            }
            for t in &tools {
                let r = engine.expand_tool_as(&who, &ExpandToolRequest { tool_id: t.id.clone() });
                if who.may_use(t) {
                    assert!(r.is_ok(), "a visible tool expands");
                } else {
                    let e = r.as_ref().unwrap_err();
                    assert_eq!(e.code, ErrorCode::ToolNotFound, "hidden = not found, by default");
                }
                // Errors echo the caller's own id; what the engine adds is hints and next_action.
                if let Err(e) = &r {
                    answers.push(serde_json::to_string(&(&e.hints, &e.next_action)).unwrap());
                }
                // A near miss of the id: suggestions must name only visible tools.
                let e = engine.handle_as(&who, "expand_tool", json!({"tool_id": format!("{}x", t.id)})).unwrap_err();
                assert_eq!(e.message, format!("no tool has id \"{}x\"", t.id));
                answers.push(serde_json::to_string(&(&e.hints, &e.next_action)).unwrap());
            }
            for a in &answers {
                for h in &hidden {
                    assert!(!a.contains(h), "hidden tool {h} leaked to {held:?} in {a}");
                }
                for p in &hidden_paths {
                    assert!(
                        !a.contains(&format!("\"{p}\"")) && !a.contains(&format!("\\\"{p}\\\"")),
                        "hidden category {p} leaked to {held:?} in {a}"
                    );
                }
            }
            // Counts: every listed category counts only the tools the caller may use.
            let root = engine.handle_as(&who, "list", json!({"limit": 50})).unwrap();
            for n in root["nodes"].as_array().unwrap() {
                let path = n["path"].as_str().unwrap();
                let expected = tools.iter().filter(|t| who.may_use(t) && t.paths[0][0] == path).count();
                assert_eq!(n["tool_count"], expected, "count of {path} for {held:?}");
            }
        }
    }
}

#[test]
fn a_public_catalogue_answers_not_authorized_with_the_missing_scopes() {
    let engine = common::sample();
    let who = Principal::with_scopes(["payments:read"]).with_public_catalog(true);
    let e = engine.expand_tool_as(&who, &ExpandToolRequest { tool_id: "payments.create_charge".into() }).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotAuthorized);
    assert!(e.message.contains("payments:write"), "{}", e.message);
    let private = Principal::with_scopes(["payments:read"]);
    let e =
        engine.expand_tool_as(&private, &ExpandToolRequest { tool_id: "payments.create_charge".into() }).unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    assert!(!e.message.contains("payments:write"));
}

#[test]
fn a_category_with_no_usable_tool_is_an_unknown_path_for_that_caller() {
    let engine = common::sample();
    let who = Principal::with_scopes(["payments:read"]);
    let e = engine.handle_as(&who, "list", json!({"path": "Finance/Invoicing"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnknownPath);
    assert!(engine.handle("list", json!({"path": "Finance/Invoicing"})).is_ok(), "a trusted caller sees it");
}

#[test]
fn a_cursor_of_one_caller_is_refused_to_another() {
    let engine = common::sample();
    let a = Principal::with_scopes(["mail:send", "mail:read"]);
    let first = engine.handle_as(&a, "search_tool_by_category", json!({"query": "email", "limit": 1})).unwrap();
    let cursor = first["next_cursor"].as_str().expect("more pages").to_owned();
    let e = engine
        .handle_as(
            &Principal::with_scopes(["mail:read"]),
            "search_tool_by_category",
            json!({"query": "email", "limit": 1, "cursor": cursor}),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidCursor);
}
