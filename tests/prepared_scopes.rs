//! A restricted caller's first request pays for nothing its scopes hide: what each scope set
//! known in advance may see (a server's default caller, its tokens' scopes) is worked out before
//! anyone asks, and an engine that replaces another after a rebuild is prepared for every scope
//! set the one before had met (docs/protocol.md, "Timing"). A set is kept by the scopes in it
//! some tool requires, and a host preparing a restricted caller (or taking an identity
//! provider's tokens) prepares every set those scopes make when they are few.

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

/// Four tools anyone may see, and tools 4 to 9 each requiring a scope of its own, `s0` to `s5`:
/// too many scopes for every set of them to be prepared ahead (64 sets, 16 prepared).
fn wide_index(name: &str) -> std::path::PathBuf {
    let tools: Vec<_> = (0..10)
        .map(|i| {
            let requires: Vec<String> = if i < 4 { vec![] } else { vec![format!("s{}", i - 4)] };
            json!({"id": format!("t{i}"), "name": format!("tool_{i}"), "path": format!("Cat{}", i % 2),
                   "description": format!("Handles record kind {i}."), "requires": requires})
        })
        .collect();
    let file = common::scratch().join(format!("{name}.json"));
    std::fs::write(&file, json!({ "tools": tools }).to_string()).unwrap();
    common::build(&file, name)
}

#[test]
fn scope_sets_given_are_prepared_and_a_rebuild_keeps_every_one_prepared() {
    let engine = common::open(&index("prepared"));
    assert!(engine.kept_callers().is_empty(), "nothing is worked out before it is asked for");
    engine.handle(&who(&["admin"]), "list", json!({})).unwrap();
    assert!(!engine.is_prepared_for(&who(&["admin"])), "a set first met at a request is kept without its words");
    assert!(!engine.keeps_every_word_for(&who(&["admin"])));
    let (user, billing) = (who(&["user"]), who(&["user", "billing"]));
    engine.prepare_for([&user, &Principal::trusted(), &billing, &user]);
    // Kept by the scopes some tool requires (no tool requires `user`): the four sets `admin`
    // and `billing` make, worked out whole, and those named last (a trusted caller needs none),
    // each followed by the callers' own sets met with it.
    let (user_billing, admin_billing) = (who(&["billing", "user"]), who(&["admin", "billing"]));
    let sets = [who(&["admin"]), admin_billing, who(&["billing"]), user_billing, who(&[]), user.clone()];
    assert_eq!(engine.kept_callers(), sets);
    for p in [who(&["admin"]), who(&["openid", "admin"]), user.clone(), who(&["billing", "profile"])] {
        assert!(engine.is_prepared_for(&p), "{p:?} is prepared whole, though no host named it");
    }
    assert!(engine.keeps_every_word_for(&user), "a caller with hidden tools keeps its view's words");
    engine.handle(&who(&["openid"]), "list", json!({})).unwrap();
    assert_eq!(engine.kept_callers().len(), 7, "a request of a set no tool tells apart adds no set, only its caller");
    let before = engine.kept_callers();
    assert_eq!(before[4..], [who(&[]), user.clone(), who(&["openid"])], "it used the set of none of them");

    let live = LiveCatalog::new(engine);
    let generation = live.generation();
    let added = json!({"tools": [{"id": "t8", "name": "refund_payment", "path": "Cat0",
                                   "description": "Refunds a payment.", "requires": ["billing"]}]});
    assert_eq!(live.register_tools(&added).unwrap(), 1);
    assert_ne!(live.generation(), generation, "the index was rebuilt and a new engine serves");
    assert_eq!(live.engine().kept_callers(), before, "prepared for the same sets, in the same order");
    assert!(live.engine().keeps_every_word_for(&user), "with every word of the new index");
    assert!(live.engine().is_prepared_for(&who(&["admin"])), "and each of them whole");
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
    assert_eq!(live.engine().kept_callers().len(), 4, "every set `admin` and `billing` make");
    assert_eq!(live.engine().kept_callers().last(), Some(&who(&[])), "its default caller's last");
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
fn a_hub_taking_an_identity_providers_tokens_prepares_the_sets_its_tools_make() {
    let runner = || Arc::new(NoRunner("no tools run here".into()));
    let hub = |live: &Arc<LiveCatalog>, who: Principal| {
        Hub::new(live.clone(), Arc::new(Availability::default()), ToolSetConfig::default(), who, runner())
    };
    // A restricted default caller prepares them ...
    let live = LiveCatalog::new(common::open(&wide_index("prepared-unnamed")));
    let _restricted = hub(&live, who(&[]));
    assert_eq!(live.engine().kept_callers().len(), 16, "none of s0-s5, each alone, nine pairs");
    // ... a trusted one none, until the hub takes an identity provider's tokens.
    let live = LiveCatalog::new(common::open(&wide_index("prepared-unnamed")));
    let trusted = hub(&live, Principal::trusted());
    assert!(live.engine().kept_callers().is_empty(), "a trusted default caller prepares nothing");
    let oauth = serde_json::from_value(json!({"resource": "https://gateway.example/mcp", "issuers": []})).unwrap();
    let access = HttpAccess { oauth: Some(oauth), ..HttpAccess::default() };
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert!(runtime.block_on(trusted.set_http_access(access)).unwrap().is_none(), "no HTTP endpoint here");
    let kept = live.engine().kept_callers();
    assert_eq!(kept.len(), 16, "prepared for callers no host names: {kept:?}");
    for p in [who(&["openid"]), who(&["s5", "email"]), who(&["s0", "s1"])] {
        assert!(live.engine().is_prepared_for(&p), "{p:?} is prepared whole");
    }
    assert!(!live.engine().is_prepared_for(&who(&["s3", "s4", "s5"])), "three of six: past the 16 sets");
}

#[test]
fn a_hub_prepares_a_caller_first_met_at_a_request_behind_it() {
    let live = LiveCatalog::new(common::open(&wide_index("prepared-behind")));
    let runner = Arc::new(NoRunner("no tools run here".into()));
    let hub = Hub::new(live.clone(), Arc::new(Availability::default()), ToolSetConfig::default(), who(&[]), runner);
    // A token of an identity provider: its scopes arrive with its first request, and three of
    // the six scopes tools require make a set not prepared ahead.
    let newcomer = who(&["user", "s3", "s4", "s5"]);
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
    assert!(!found.to_string().contains("\"t4\""), "a tool requiring s0 answered: {found}");
}

#[test]
fn a_rebuild_requiring_a_scope_no_tool_required_finds_its_holders_prepared() {
    let live = LiveCatalog::new(common::open(&wide_index("prepared-new-scope")));
    // Three of the six scopes tools require, and `team`, which none requires yet: kept by the
    // first three, a set not among the 16 prepared ahead.
    let member = who(&["s3", "s4", "s5", "team"]);
    live.engine().handle(&member, "list", json!({})).unwrap();
    live.engine().prepare_for([&member]);
    let added = json!({"tools": [{"id": "t10", "name": "team_roster", "path": "Cat0",
                                   "description": "Lists the team's members.", "requires": ["team"]}]});
    assert_eq!(live.register_tools(&added).unwrap(), 1);
    // Now kept by all four, a set of four of seven scopes no host named: prepared with the rest.
    assert!(live.engine().is_prepared_for(&member), "prepared under its new key");
    assert!(!live.engine().is_prepared_for(&who(&["s2", "s3", "s4", "team"])), "a set no caller was met with is not");
    let found = live.engine().handle(&member, "search_tool_by_category", json!({"query": "team members"})).unwrap();
    assert_eq!(found["results"][0]["tool_id"], "t10", "and it sees the new tool");
}
