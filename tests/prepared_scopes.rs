//! A restricted caller's first request pays for nothing its scopes hide: what each scope set
//! known in advance may see (a server's default caller, its tokens' scopes) is worked out before
//! anyone asks, and an engine that replaces another after a rebuild is prepared for every scope
//! set the one before had met (docs/protocol.md, "Timing").

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use toolsearch::disclosure::{Availability, LiveCatalog, ToolSetConfig};
use toolsearch::mcp::{Grant, HttpAccess, Hub, NoRunner};
use toolsearch::Principal;

#[path = "common/mod.rs"]
mod common;

fn who(scopes: &[&str]) -> Principal {
    Principal::with_scopes(scopes.iter().copied())
}

/// Four tools anyone may see, three that require `billing`, one `admin`; built once.
fn index(name: &str) -> std::path::PathBuf {
    let tool = |i: usize, requires: &[&str]| {
        json!({"id": format!("t{i}"), "name": format!("tool_{i}"), "path": format!("Cat{}", i % 2),
               "description": format!("Handles record kind {i}."), "requires": requires})
    };
    let mut tools: Vec<_> = (0..4).map(|i| tool(i, &[])).collect();
    tools.extend((4..7).map(|i| tool(i, &["billing"])));
    tools.push(tool(7, &["admin"]));
    let file = common::scratch().join(format!("{name}.json"));
    std::fs::write(&file, json!({ "tools": tools }).to_string()).unwrap();
    common::build(&file, name)
}

#[test]
fn scope_sets_given_are_prepared_and_a_rebuild_keeps_every_one_prepared() {
    let engine = common::open(&index("prepared"));
    assert!(engine.kept_callers().is_empty(), "nothing is worked out before it is asked for");
    let (user, billing) = (who(&["user"]), who(&["user", "billing"]));
    engine.prepare_for([&user, &Principal::trusted(), &billing, &user]);
    assert_eq!(engine.kept_callers(), [billing.clone(), user.clone()], "a trusted caller needs nothing");
    assert!(engine.keeps_every_word_for(&user), "a caller with hidden tools keeps its view's words");
    engine.handle(&billing, "list", json!({})).unwrap();
    assert_eq!(engine.kept_callers(), [user.clone(), billing.clone()], "a prepared set's request adds none");
    engine.handle(&who(&["admin"]), "list", json!({})).unwrap();
    assert!(!engine.is_prepared_for(&who(&["admin"])), "a set first met at a request is kept without its words");
    assert!(!engine.keeps_every_word_for(&who(&["admin"])));
    let before = engine.kept_callers();
    assert_eq!(before, [user.clone(), billing.clone(), who(&["admin"])]);

    let live = LiveCatalog::new(engine);
    let generation = live.generation();
    let added = json!({"tools": [{"id": "t8", "name": "refund_payment", "path": "Cat0",
                                   "description": "Refunds a payment.", "requires": ["billing"]}]});
    assert_eq!(live.register_tools(&added).unwrap(), 1);
    assert_ne!(live.generation(), generation, "the index was rebuilt and a new engine serves");
    assert_eq!(live.engine().kept_callers(), before, "prepared for the same sets, in the same order");
    assert!(live.engine().keeps_every_word_for(&user), "with every word of the new index");
    assert!(live.engine().is_prepared_for(&who(&["admin"])), "and the set first met at a request, whole");
    let ids = |p: &Principal| match live.engine().handle(
        p,
        "search_tool_by_category",
        json!({"query": "refund a payment"}),
    ) {
        Ok(found) => {
            found["results"].as_array().unwrap().iter().map(|t| t["tool_id"].as_str().unwrap().to_owned()).collect()
        }
        Err(e) => vec![format!("{:?}", e.code)],
    };
    assert_eq!(ids(&user), ["NoMatchInCategory"], "the prepared view hides the new tool");
    assert_eq!(ids(&billing)[0], "t8", "and shows it to whom it allows");
    assert!(!live.engine().keeps_every_word_for(&who(&["user", "billing", "admin"])), "nothing hidden, none kept");
    assert!(!live.engine().keeps_every_word_for(&Principal::trusted()));
}

#[test]
fn a_hub_prepares_for_its_default_caller_and_its_tokens() {
    let live = LiveCatalog::new(common::open(&index("prepared-hub")));
    let runner = Arc::new(NoRunner("no tools run here".into()));
    let hub = Hub::new(live.clone(), Arc::new(Availability::default()), ToolSetConfig::default(), who(&[]), runner);
    assert_eq!(live.engine().kept_callers(), [who(&[])]);
    let grant = |scopes: &[&str]| Grant { name: String::new(), scopes: scopes.iter().map(|s| s.to_string()).collect() };
    let tokens =
        BTreeMap::from([("a".repeat(32), grant(&["billing"])), ("b".repeat(32), grant(&["admin", "billing"]))]);
    let access = HttpAccess { tokens, ..HttpAccess::default() };
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert!(runtime.block_on(hub.set_http_access(access)).unwrap().is_none(), "no HTTP endpoint here");
    let kept = live.engine().kept_callers();
    for p in [who(&[]), who(&["billing"]), who(&["admin", "billing"])] {
        assert!(kept.contains(&p), "{p:?} is prepared: {kept:?}");
        assert!(live.engine().is_prepared_for(&p), "{p:?} is prepared whole");
    }
    assert!(live.engine().keeps_every_word_for(&who(&["billing"])), "with its view's words");
}

#[test]
fn a_hub_prepares_a_caller_first_met_at_a_request_behind_it() {
    let live = LiveCatalog::new(common::open(&index("prepared-behind")));
    let runner = Arc::new(NoRunner("no tools run here".into()));
    let hub = Hub::new(live.clone(), Arc::new(Availability::default()), ToolSetConfig::default(), who(&[]), runner);
    // A token of an identity provider: its scopes arrive with its first request.
    let newcomer = who(&["user", "admin"]);
    assert!(!live.engine().is_prepared_for(&newcomer));
    hub.fresh_tool_set(newcomer.clone()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !live.engine().is_prepared_for(&newcomer) {
        assert!(std::time::Instant::now() < deadline, "the caller was not prepared behind its request");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(live.engine().keeps_every_word_for(&newcomer), "its view keeps every word");
    let found = live.engine().handle(&newcomer, "search_tool_by_category", json!({"query": "record kind 7"})).unwrap();
    assert_eq!(found["results"][0]["tool_id"], "t7", "and answers as before");
    assert!(!found.to_string().contains("\"t4\""), "a billing tool answered: {found}");
}
