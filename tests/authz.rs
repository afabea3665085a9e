//! Authorization: a tool the caller may not use never appears in any answer, count, hint,
//! suggestion or error text. Checked over random catalogues and random scope sets, on real
//! indexes, by searching every serialised answer for the ids and the category names of hidden
//! tools.

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;

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
            let tags: Vec<&str> = ["red", "blue", ""][i % 3].split_whitespace().collect();
            json!({
                "id": format!("tid{i:03}q"),
                "name": format!("{a}_{b}_{i}"),
                "path": [cat, sub],
                "description": format!("Works with {a} and {b} records."),
                "requires": requires,
                "tags": tags,
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
            answers.push(text_of(&engine.handle(&who, "search_tool_by_category", json!({"query": q, "limit": 50}))));
            answers.push(text_of(&engine.handle(&who, "search_nodes", json!({"query": q, "limit": 50}))));
            answers.push(text_of(&engine.handle(&who, "list", json!({"limit": 50}))));
            answers.push(text_of(&engine.handle(
                &who,
                "search_tool_by_category",
                json!({"query": "zzqx vvwk", "limit": 5}),
            )));
            for p in &node_paths {
                if hidden_paths.contains(&p) {
                    // Indistinguishable from a path that does not exist (the caller's own words
                    // are echoed, nothing else).
                    let e = engine.handle(&who, "list", json!({"path": p})).unwrap_err();
                    assert_eq!(e.code, ErrorCode::UnknownPath);
                    answers.push(serde_json::to_string(&e.hints).unwrap());
                    continue;
                }
                answers.push(text_of(&engine.handle(&who, "list", json!({"path": p, "limit": 50}))));
                answers.push(text_of(&engine.handle(&who, "list", json!({"path": p, "query": q, "limit": 50}))));
                answers.push(text_of(&engine.handle(
                    &who,
                    "search_tool_by_category",
                    json!({"query": q, "category_path": p}),
                )));
                // A mistyped path: suggestions must name only visible categories.
                answers.push(text_of(&engine.handle(&who, "list", json!({"path": format!("{p}z")}))));
            }
            for t in &tools {
                let r = engine.expand_tool(&who, &ExpandToolRequest { tool_id: t.id.clone() });
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
                let e = engine.handle(&who, "expand_tool", json!({"tool_id": format!("{}x", t.id)})).unwrap_err();
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
            let root = engine.handle(&who, "list", json!({"limit": 50})).unwrap();
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
    let e = engine.expand_tool(&who, &ExpandToolRequest { tool_id: "payments.create_charge".into() }).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotAuthorized);
    assert!(e.message.contains("payments:write"), "{}", e.message);
    let private = Principal::with_scopes(["payments:read"]);
    let e = engine.expand_tool(&private, &ExpandToolRequest { tool_id: "payments.create_charge".into() }).unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    assert!(!e.message.contains("payments:write"));
}

#[test]
fn a_category_with_no_usable_tool_is_an_unknown_path_for_that_caller() {
    let engine = common::sample();
    let who = Principal::with_scopes(["payments:read"]);
    let e = engine.handle(&who, "list", json!({"path": "Finance/Invoicing"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnknownPath);
    assert!(
        engine.handle(&Principal::trusted(), "list", json!({"path": "Finance/Invoicing"})).is_ok(),
        "a trusted caller sees it"
    );
}

#[test]
fn a_cursor_of_one_caller_is_refused_to_another() {
    let engine = common::sample();
    let a = Principal::with_scopes(["mail:send", "mail:read"]);
    let first = engine.handle(&a, "search_tool_by_category", json!({"query": "email", "limit": 1})).unwrap();
    let cursor = first["next_cursor"].as_str().expect("more pages").to_owned();
    let e = engine
        .handle(
            &Principal::with_scopes(["mail:read"]),
            "search_tool_by_category",
            json!({"query": "email", "limit": 1, "cursor": cursor}),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidCursor);
}

/// A random catalogue whose top categories declare facades (so a caller's instructions and
/// facades can be compared too).
fn catalogue_with_facades(rng: &mut Rng, n: usize) -> Value {
    let mut m = catalogue(rng, n);
    m["nodes"] = json!((0..4)
        .map(|z| json!({"path": format!("Zone{z}"), "summary": format!("Zone {z} tools for records"), "facade": true}))
        .collect::<Vec<_>>());
    m
}

/// The catalogue without the tools `held` does not allow, and without the declared categories
/// left with no tool: what the caller's answers must be computed from.
fn pruned(manifest: &Value, held: &[&str]) -> Value {
    let tools: Vec<Value> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["requires"].as_array().unwrap().iter().all(|r| held.contains(&r.as_str().unwrap())))
        .cloned()
        .collect();
    let nodes: Vec<Value> = manifest["nodes"]
        .as_array()
        .map(|ns| ns.iter().filter(|n| tools.iter().any(|t| t["path"][0] == n["path"])).cloned().collect())
        .unwrap_or_default();
    json!({ "tools": tools, "nodes": nodes })
}

/// An answer with its cursors replaced by whether there was one (cursors are keyed to each
/// index build, so two indexes never share them).
fn comparable<T: serde::Serialize, E: serde::Serialize>(r: &Result<T, E>) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                if let Some(c) = o.get_mut("next_cursor") {
                    *c = json!(!c.is_null());
                }
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = match r {
        Ok(v) => json!({"ok": serde_json::to_value(v).unwrap()}),
        Err(e) => json!({"err": serde_json::to_value(e).unwrap()}),
    };
    strip(&mut v);
    v
}

/// Every answer a caller can get, from protocol calls and from a tool set over the engine.
fn answers(
    engine: Engine,
    who: &Principal,
    queries: &[String],
    ids: &[String],
    nodes: &[String],
) -> Vec<(String, Value)> {
    use toolsearch::disclosure::{Availability, LiveCatalog, ToolSet, ToolSetConfig};
    let mut out = Vec::new();
    let mut ask = |label: String, call: &str, args: Value| {
        out.push((label, comparable(&engine.handle(who, call, args))));
    };
    for q in queries {
        ask(format!("search {q}"), "search_tool_by_category", json!({"query": q, "limit": 50}));
        ask(format!("search {q} by id"), "search_tool_by_category", json!({"query": ids[0], "limit": 5}));
        ask(format!("search {q} p1"), "search_tool_by_category", json!({"query": q, "limit": 3}));
        ask(format!("regex {q}"), "search_tool_by_category", json!({"query": q, "match": "regex", "limit": 50}));
        ask(format!("nodes {q}"), "search_nodes", json!({"query": q, "limit": 50}));
        ask(format!("list {q}"), "list", json!({"query": q, "limit": 50}));
        for tags in [json!(["red"]), json!(["!red"]), json!(["blue", "!red"])] {
            ask(
                format!("search {q} {tags}"),
                "search_tool_by_category",
                json!({"query": q, "tags": tags, "limit": 50}),
            );
            ask(format!("list {tags}"), "list", json!({"tags": tags, "limit": 50}));
        }
        for p in nodes {
            ask(format!("search {q} in {p}"), "search_tool_by_category", json!({"query": q, "category_path": p}));
            ask(format!("list {q} in {p}"), "list", json!({"query": q, "path": p, "limit": 50}));
            ask(format!("list {q} in {}", p.to_lowercase()), "list", json!({"query": q, "path": p.to_lowercase()}));
        }
    }
    for p in nodes {
        ask(format!("list {p}"), "list", json!({"path": p, "limit": 50}));
        ask(format!("list {p} red"), "list", json!({"path": p, "tags": ["red"], "limit": 50}));
        ask(
            format!("search {p} !blue"),
            "search_tool_by_category",
            json!({"query": "records", "category_path": p, "tags": ["!blue"]}),
        );
        ask(format!("list {p}z"), "list", json!({"path": format!("{p}z")}));
    }
    for id in ids {
        ask(format!("expand {id}"), "expand_tool", json!({"tool_id": id}));
        ask(format!("expand {id}x"), "expand_tool", json!({"tool_id": format!("{id}x")}));
        ask(format!("exact {id}"), "search_tool_by_category", json!({"query": id, "limit": 5}));
        ask(format!("regex {id}"), "search_tool_by_category", json!({"query": id, "match": "regex", "limit": 50}));
    }
    let live = LiveCatalog::new(engine);
    let config = ToolSetConfig { principal: who.clone(), ..ToolSetConfig::default() };
    let mut set = ToolSet::new(live, Arc::new(Availability::default()), config).expect("tool set");
    out.push(("visible".into(), serde_json::to_value(set.visible()).unwrap()));
    out.push(("prompt".into(), json!(set.system_prompt())));
    for q in queries {
        let o = set.call("search_tool_by_category", &json!({"query": q}));
        let text: Value = serde_json::from_str(&o.text).unwrap_or(json!(o.text));
        out.push((format!("set search {q}"), json!([comparable::<Value, Value>(&Ok(text)), o.is_error])));
    }
    for id in ids {
        let o = set.call("expand_tool", &json!({"tool_id": id}));
        out.push((format!("set expand {id}"), json!([o.text, o.is_error, o.added])));
    }
    let facades: Vec<String> = set.facades().iter().map(|f| f.name.clone()).collect();
    for f in facades {
        let o = set.call(&f, &json!({}));
        out.push((format!("set unfold {f}"), json!([o.text, o.is_error, o.added])));
    }
    out
}

#[test]
fn a_restricted_caller_gets_the_same_answers_as_if_hidden_tools_did_not_exist() {
    let mut rng = Rng(0x5eed_7777_abcd_0002);
    for round in 0..3 {
        let manifest = catalogue_with_facades(&mut rng, 24);
        let file = common::scratch().join(format!("view-{round}.json"));
        std::fs::write(&file, manifest.to_string()).unwrap();
        let full_dir = common::build(&file, &format!("view-{round}"));
        for case in 0..3 {
            let held: Vec<&str> = SCOPES.iter().copied().filter(|_| rng.below(2) == 0).collect();
            let view = pruned(&manifest, &held);
            if view["tools"].as_array().unwrap().is_empty() {
                continue;
            }
            let view_file = common::scratch().join(format!("view-{round}-{case}.json"));
            std::fs::write(&view_file, view.to_string()).unwrap();
            let view_dir = common::scratch().join(format!("view-{round}-{case}"));
            let catalog = toolsearch::load_path(&view_file, None).unwrap();
            let reuse = toolsearch::BuildOptions { reuse_from: Some(full_dir.clone()), ..Default::default() };
            toolsearch::build_index(&catalog, common::embedder().as_ref(), &view_dir, &reuse).unwrap();
            let who = Principal::with_scopes(held.iter().copied());
            let queries: Vec<String> =
                (0..3).map(|_| format!("{} {}", WORDS[rng.below(16)], WORDS[rng.below(16)])).collect();
            let ids: Vec<String> =
                view["tools"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
            let view_engine = common::open(&view_dir);
            let nodes: Vec<String> = view_engine.catalog().nodes.iter().map(|n| n.path.join("/")).collect();
            let full = common::open(&full_dir);
            if case > 0 {
                full.prepare_for([&who]); // its views keep every word (a server's callers), or not
            }
            let on_full = answers(full, &who, &queries, &ids, &nodes);
            let on_view = answers(view_engine, &who, &queries, &ids, &nodes);
            assert_eq!(on_full.len(), on_view.len());
            for ((label, a), (_, b)) in on_full.iter().zip(&on_view) {
                assert_eq!(a, b, "round {round}, scopes {held:?}: {label} differs with hidden tools present");
            }
        }
    }
}

#[test]
fn a_hidden_tool_does_not_lift_its_category_for_a_caller_who_cannot_see_it() {
    let dir = common::scratch().join("view-nuclear");
    std::fs::create_dir_all(&dir).unwrap();
    let tool = |id: &str, name: &str, desc: &str, requires: &[&str]| json!({"id": id, "name": name, "path": "Ops", "description": desc, "requires": requires});
    let visible = [
        tool("ops.restart", "restart_service", "Restart a service on a host.", &[]),
        tool("ops.logs", "tail_logs", "Show the latest log lines of a service.", &[]),
    ];
    let mut all = visible.to_vec();
    all.push(tool("ops.launch", "launch_nuclear_missiles", "Launch the nuclear missiles.", &["dr:strangelove"]));
    let other = json!({"id": "mail.send", "name": "send_email", "path": "Mail", "description": "Send an email."});
    all.push(other.clone());
    let mut shown = visible.to_vec();
    shown.push(other);
    let full = dir.join("full.json");
    std::fs::write(&full, json!({"tools": all}).to_string()).unwrap();
    let without = dir.join("without.json");
    std::fs::write(&without, json!({"tools": shown}).to_string()).unwrap();
    let who = Principal::with_scopes(Vec::<String>::new());
    let ask = |dir: &std::path::Path| {
        let engine = common::open(dir);
        let nodes = engine.handle(&who, "search_nodes", json!({"query": "launch nuclear missiles"})).unwrap();
        let list = engine.handle(&who, "list", json!({"query": "launch nuclear missiles"}));
        (nodes, comparable(&list))
    };
    let (with_hidden, list_with) = ask(&common::build(&full, "view-nuclear-full"));
    let (without_hidden, list_without) = ask(&common::build(&without, "view-nuclear-without"));
    assert_eq!(with_hidden, without_hidden);
    assert_eq!(list_with, list_without);
}

#[test]
fn past_the_graph_walk_threshold_a_restricted_caller_still_gets_the_answers_of_its_view() {
    // 6,000 tools in view (over the 5,000 the exact scan covers for anyone) and 1,500 hidden
    // ones on the same subjects: the view's dense side is an exact scan of what the caller may
    // see, not a graph walk filtered to it, so it ranks as the catalogue without them would.
    let mut rng = Rng(0x5eed_7777_abcd_0003);
    let tool = |i: usize, rng: &mut Rng, hidden: bool| {
        let (a, b, c) = (WORDS[rng.below(16)], WORDS[rng.below(16)], WORDS[rng.below(16)]);
        json!({"id": format!("w{i}"), "name": format!("{a}_{b}_{i}"), "path": format!("Zone{}", i % 7),
               "description": format!("Handle the {a} and {b} of a {c}, case {i}."),
               "requires": if hidden { json!(["alpha"]) } else { json!([]) }})
    };
    let tools: Vec<Value> = (0..7_500).map(|i| tool(i, &mut rng, i % 5 == 4)).collect();
    let full = json!({"tools": tools});
    let file = common::scratch().join("large-view.json");
    std::fs::write(&file, full.to_string()).unwrap();
    let full_dir = common::build(&file, "large-view");
    let view = pruned(&full, &[]);
    assert_eq!(view["tools"].as_array().unwrap().len(), 6_000);
    let view_file = common::scratch().join("large-view-seen.json");
    std::fs::write(&view_file, view.to_string()).unwrap();
    let view_dir = common::scratch().join("large-view-seen");
    let catalog = toolsearch::load_path(&view_file, None).unwrap();
    let reuse = toolsearch::BuildOptions { reuse_from: Some(full_dir.clone()), ..Default::default() };
    toolsearch::build_index(&catalog, common::embedder().as_ref(), &view_dir, &reuse).unwrap();
    let who = Principal::with_scopes(["beta"]);
    let (on_full, on_view) = (common::open(&full_dir), common::open(&view_dir));
    for q in ["refund the invoice of a user", "photo calendar", "deploy a metric chart", "password flight"] {
        let ask = |e: &Engine, path: Option<&str>| {
            comparable(&e.handle(
                &who,
                "search_tool_by_category",
                json!({"query": q, "limit": 50, "category_path": path}),
            ))
        };
        assert_eq!(ask(&on_full, None), ask(&on_view, None), "{q}: the answer moved with hidden tools present");
        assert_eq!(ask(&on_full, Some("Zone3")), ask(&on_view, Some("Zone3")), "{q} in Zone3");
    }
}
