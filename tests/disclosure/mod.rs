//! The disclosure runtime end to end: real model, real index of the sample catalogue, the
//! facades and groups its manifest declares.

#[path = "../common/mod.rs"]
mod common;
mod discovery;
mod rendering;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use toolsearch::disclosure::{
    render, AuditEvent, Availability, Detail, DisclosureError, DiscoveryConfig, DiscoveryMode, Facade, Item,
    LiveCatalog, ManualClock, Select, ToolSet, ToolSetConfig,
};
use toolsearch::{Executor, Principal, Tool};

/// The sample index, built once; each test opens its own engine on it.
fn sample_dir() -> &'static std::path::Path {
    static D: OnceLock<std::path::PathBuf> = OnceLock::new();
    D.get_or_init(|| common::build(&common::sample_catalog(), "disclosure-sample"))
}

struct Echo(AtomicUsize);

impl Executor for Echo {
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, toolsearch::ToolFailure> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"ran": tool.id, "with": arguments}))
    }
}

struct Fixture {
    live: Arc<LiveCatalog>,
    clock: Arc<ManualClock>,
    availability: Arc<Availability>,
    github_up: Arc<AtomicBool>,
    github_checks: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    fixture_at(sample_dir())
}

fn fixture_at(dir: &std::path::Path) -> Fixture {
    let live = LiveCatalog::new(common::open(dir));
    live.set_executor(Arc::new(Echo(AtomicUsize::new(0))));
    let clock = Arc::new(ManualClock::default());
    let availability = Arc::new(Availability::new(clock.clone()));
    let github_up = Arc::new(AtomicBool::new(true));
    let github_checks = Arc::new(AtomicUsize::new(0));
    let (up, runs) = (github_up.clone(), github_checks.clone());
    availability.register("github_reachable", move || {
        runs.fetch_add(1, Ordering::SeqCst);
        up.load(Ordering::SeqCst)
    });
    availability.register("slack_connected", || true);
    Fixture { live, clock, availability, github_up, github_checks }
}

impl Fixture {
    fn set(&self, config: ToolSetConfig) -> ToolSet {
        ToolSet::new(self.live.clone(), self.availability.clone(), config).expect("tool set builds")
    }
}

fn has(set: &ToolSet, name: &str) -> bool {
    set.visible_names().iter().any(|n| n == name)
}

#[test]
fn initial_set_is_pinned_tools_top_level_facades_and_discovery() {
    let f = fixture();
    let set = f.set(ToolSetConfig { pinned: vec!["weather.current".into()], ..ToolSetConfig::default() });
    let names = set.visible_names();
    assert_eq!(names[0], "current", "pinned first: {names:?}");
    for facade in ["git_tools", "travel", "data_tools", "incident_mode", "payments"] {
        assert!(names.contains(&facade.to_owned()), "{facade} missing from {names:?}");
    }
    assert!(!names.contains(&"github_tools".to_owned()), "nested facades wait for their parent");
    for d in ["search_tool_by_category", "search_nodes", "list", "expand_tool"] {
        assert!(names.contains(&d.to_owned()));
    }
    assert!(!names.contains(&"call_tool".to_owned()), "call_tool is opt-in");
    assert!(!names.contains(&"git_commit".to_owned()) && !names.contains(&"commit".to_owned()));
    assert_eq!(names.len(), 1 + 5 + 4, "{names:?}");
    // docs/disclosure.md shows this set, in this order.
    let page = std::fs::read_to_string(common::repo().join("docs/disclosure.md")).unwrap();
    let shown = format!("visible ({}): {}", names.len(), names.join(", "));
    assert!(page.lines().any(|line| line == shown), "docs/disclosure.md does not show `{shown}`");
}

#[test]
fn fixed_facade_unfolds_into_its_tools_and_a_nested_facade() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let out = set.call("git_tools", &json!({}));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.removed, vec!["git_tools"], "remove_on_invoke is the default");
    assert!(out.added.contains(&"commit".to_owned()) && out.added.contains(&"github_tools".to_owned()));
    assert!(out.added.contains(&"create_merge_request".to_owned()), "GitLab has no facade: its tools come along");
    assert!(!out.added.contains(&"create_pull_request".to_owned()), "GitHub's tools stay behind its facade");
    assert!(out.text.contains("Version control"), "the unfold message names the parent's purpose: {}", out.text);
    assert!(!out.text.contains("owner/name"), "GitHub's usage notes belong to GitHub's unfold only");

    let out = set.call("github_tools", &json!({}));
    assert!(!out.is_error, "{}", out.text);
    assert!(out.added.contains(&"create_pull_request".to_owned()));
    assert_eq!(out.removed, vec!["github_tools"]);
    let notes = "Repository names are owner/name. Prefer draft pull requests until tests pass.";
    assert!(out.text.ends_with(notes), "usage notes close the unfold message verbatim: {}", out.text);
    let list_at = out.text.find("- create_pull_request").expect("the list of revealed tools");
    assert!(list_at < out.text.find(notes).unwrap(), "notes come after the list");
    let everything = serde_json::to_string(&render(&set.visible(), toolsearch::disclosure::Dialect::OpenAi)).unwrap();
    assert!(!everything.contains("owner/name. Prefer draft"), "usage notes appear in no definition");
    assert_eq!(set.audit().entries().iter().filter(|e| matches!(e.event, AuditEvent::Unfold { .. })).count(), 2);
}

#[test]
fn folding_back_restores_the_facade_and_hides_nested_unfolds() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let start = set.visible_names();
    set.call("git_tools", &json!({}));
    set.call("github_tools", &json!({}));
    assert!(has(&set, "create_pull_request"));
    let change = set.fold("git_tools").expect("git_tools is unfolded");
    assert!(change.added == vec!["git_tools"], "{change:?}");
    assert!(
        change.removed.contains(&"create_pull_request".to_owned()) && change.removed.contains(&"commit".to_owned())
    );
    let mut now = set.visible_names();
    now.sort();
    let mut before = start.clone();
    before.sort();
    assert_eq!(now, before, "folding returns to the starting set");
    assert!(matches!(set.fold("git_tools"), Err(DisclosureError::NotUnfolded(_))), "not unfolded any more");
}

#[test]
fn category_facade_reveals_the_chosen_category_only() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let def = set.definition_of("travel").unwrap();
    assert_eq!(def.input_schema["properties"]["category"]["enum"], json!(["Flights", "Hotels", "Maps"]));
    assert_eq!(def.input_schema["required"], json!(["category"]));
    let bad = set.call("travel", &json!({"category": "Trains"}));
    assert!(bad.is_error && bad.text.contains("Flights, Hotels, Maps"), "{}", bad.text);
    assert!(bad.added.is_empty() && bad.removed.is_empty());
    let out = set.call("travel", &json!({"category": "hotels"}));
    assert!(!out.is_error, "{}", out.text);
    let engine = f.live.engine();
    let hotel_names: Vec<String> = engine
        .catalog()
        .tools
        .iter()
        .filter(|t| t.paths.iter().any(|p| p.join("/") == "Travel/Hotels"))
        .map(|t| name_of(&set, &t.id))
        .collect();
    let mut added = out.added.clone();
    added.sort();
    let mut expected = hotel_names;
    expected.sort();
    assert_eq!(added, expected);
}

fn name_of(set: &ToolSet, id: &str) -> String {
    set.tool_name(id).unwrap_or_else(|| panic!("{id} has no name"))
}

#[test]
fn query_facade_ranks_inside_its_category_and_can_stay_for_another_call() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let missing = set.call("data_tools", &json!({}));
    assert!(missing.is_error && missing.text.contains("query"));
    let out = set.call("data_tools", &json!({"query": "draw a bar chart of sales"}));
    assert!(!out.is_error, "{}", out.text);
    let revealed: Vec<&String> = out.added.iter().collect();
    assert!(!revealed.is_empty() && revealed.len() <= 4, "{revealed:?}");
    let engine = f.live.engine();
    for name in &revealed {
        let id = engine.catalog().tools.iter().find(|t| &&name_of(&set, &t.id) == name).map(|t| t.id.clone());
        let tool = engine.tool(id.as_deref().unwrap()).unwrap();
        assert!(tool.paths.iter().any(|p| p[0] == "Data"), "{} is outside Data", tool.id);
    }
    assert!(out.text.contains("draw a bar chart"), "the selection is named: {}", out.text);

    // remove_on_invoke: false keeps the facade for another query.
    let first = set.call("payments", &json!({"query": "refund a customer"}));
    assert!(first.removed.is_empty() && has(&set, "payments"), "{first:?}");
    assert!(first.added.contains(&"refund".to_owned()), "{first:?}");
    let second = set.call("payments", &json!({"query": "convert euros to dollars"}));
    assert!(second.added.contains(&"convert_currency".to_owned()), "{second:?}");
    assert!(!second.added.contains(&"refund".to_owned()), "already visible tools are not added twice");
}

#[test]
fn while_an_exclusive_facade_is_unfolded_no_hint_points_at_call_tool() {
    let f = fixture();
    let discovery = DiscoveryConfig { call_tool: true, ..DiscoveryConfig::default() };
    let mut set = f.set(ToolSetConfig { discovery, ..ToolSetConfig::default() });
    // Without an exclusive unfold, a missing name gets the closest tools to reach by call_tool.
    let open = set.call("search_weather", &json!({}));
    assert!(open.is_error && open.text.contains("call_tool with one as tool_id"), "{}", open.text);
    assert!(!set.call("incident_mode", &json!({})).is_error);
    for name in ["search_tool_by_category", "search_weather", "call_tool"] {
        let blocked = set.call(name, &json!({"query": "weather in Oslo"}));
        assert!(blocked.is_error && blocked.text.contains("fold_incident_mode"), "{}", blocked.text);
        assert!(!blocked.text.contains("call_tool with"), "call_tool is held back too: {}", blocked.text);
    }
}

#[test]
fn exclusive_facade_hides_everything_else_until_folded_or_the_interaction_ends() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig { pinned: vec!["weather.current".into()], ..ToolSetConfig::default() });
    let before = set.visible_names();
    let out = set.call("incident_mode", &json!({}));
    assert!(!out.is_error);
    let mut visible = set.visible_names();
    visible.sort();
    assert_eq!(
        visible,
        vec![
            "create_incident",
            "fold_incident_mode",
            "page_oncall",
            "update_status_page",
            "who_is_oncall",
            "write_postmortem"
        ]
    );
    assert!(out.removed.contains(&"current".to_owned()), "even pinned tools hide");
    assert!(out.text.contains("Only these tools") && out.text.contains("Acknowledge the page"));
    let blocked = set.call("search_tool_by_category", &json!({"query": "weather"}));
    assert!(blocked.is_error && blocked.text.contains("fold_incident_mode"), "{}", blocked.text);
    let back = set.call("fold_incident_mode", &json!({}));
    assert!(!back.is_error);
    let (mut a, mut b) = (set.visible_names(), before.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b, "folding brings every other tool back");

    set.call("incident_mode", &json!({}));
    let change = set.end_interaction();
    assert!(change.added.contains(&"current".to_owned()) && change.added.contains(&"incident_mode".to_owned()));
    assert!(!has(&set, "page_oncall"));
}

#[test]
fn nesting_is_bounded_and_cycles_are_rejected() {
    let f = fixture();
    let a = Facade::new("a", "A.", vec![Item::Facade("b".into())]);
    let b = Facade::new("b", "B.", vec![Item::Facade("a".into())]);
    let cyclic = ToolSetConfig { facades: vec![a, b], ..ToolSetConfig::default() };
    match ToolSet::new(f.live.clone(), f.availability.clone(), cyclic) {
        Err(DisclosureError::FacadeCycle(path)) => assert!(path.len() >= 3, "{path:?}"),
        other => panic!("expected a cycle error, got {other:?}"),
    }
    let chain: Vec<Facade> = (0..6)
        .map(|i| {
            let items = if i < 5 {
                vec![Item::Facade(format!("level{}", i + 1))]
            } else {
                vec![Item::Tool("git.commit".into())]
            };
            Facade::new(&format!("level{i}"), "A level.", items)
        })
        .collect();
    let deep = ToolSetConfig { facades: chain.clone(), ..ToolSetConfig::default() };
    match ToolSet::new(f.live.clone(), f.availability.clone(), deep) {
        Err(DisclosureError::FacadeTooDeep { depth: 6, max: 4, .. }) => {}
        other => panic!("expected a depth error, got {other:?}"),
    }
    let allowed = ToolSetConfig { facades: chain, max_depth: 6, ..ToolSetConfig::default() };
    let mut set = ToolSet::new(f.live.clone(), f.availability.clone(), allowed).expect("6 levels allowed");
    for i in 0..6 {
        let out = set.call(&format!("level{i}"), &json!({}));
        assert!(!out.is_error, "{}", out.text);
    }
    assert!(has(&set, "commit"));
    let unknown = Facade::new("x", "X.", vec![Item::Tool("no.such.tool".into())]);
    let err = ToolSet::new(
        f.live.clone(),
        f.availability.clone(),
        ToolSetConfig { facades: vec![unknown], ..Default::default() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("no.such.tool"));
}

#[test]
fn code_built_query_facade_ranks_among_its_listed_tools() {
    let f = fixture();
    let tools = ["git.commit", "git.diff", "git.log", "hotels.search", "hotels.book"];
    let facade = Facade::new("mixed", "A few tools.", tools.iter().map(|t| Item::Tool((*t).into())).collect())
        .select(Select::Query { limit: 2 });
    let mut set = f.set(ToolSetConfig { facades: vec![facade], ..ToolSetConfig::default() });
    let out = set.call("mixed", &json!({"query": "book a hotel room"}));
    assert!(!out.is_error, "{}", out.text);
    assert!(out.added.contains(&name_of(&set, "hotels.book")), "{out:?}");
    assert!(out.added.len() <= 2);
}

#[test]
fn conditional_group_checks_are_cached_and_shared_across_tool_sets() {
    let f = fixture();
    let mut sets: Vec<ToolSet> = (0..7).map(|_| f.set(ToolSetConfig::default())).collect();
    let runs_after_build = f.github_checks.load(Ordering::SeqCst);
    for set in &mut sets {
        set.call("git_tools", &json!({}));
        set.call("github_tools", &json!({}));
        for _ in 0..10 {
            assert!(has(set, "create_pull_request"));
        }
    }
    assert!(runs_after_build <= 1, "one check for 7 sets being built");
    assert_eq!(f.github_checks.load(Ordering::SeqCst), 1, "7 apps x many asks = one check inside the TTL");

    // The group goes down: after the TTL the tools disappear, with a clear error if called anyway.
    f.github_up.store(false, Ordering::SeqCst);
    f.clock.advance(Duration::from_secs(5));
    assert!(sets[0].refresh().removed.is_empty(), "still cached");
    f.clock.advance(Duration::from_secs(5));
    let change = sets[0].refresh();
    assert!(change.removed.contains(&"create_pull_request".to_owned()), "{change:?}");
    assert!(!has(&sets[1], "merge_pull_request"));
    let out = sets[0].call("create_pull_request", &json!({"repo": "a/b"}));
    assert!(out.is_error && out.text.contains("UNAVAILABLE") && out.text.contains("GITHUB_TOKEN"), "{}", out.text);
    // Hidden from discovery too (a search names them as held back: `discovery::held_back_best_matches_...`).
    let search = sets[0].call("search_tool_by_category", &json!({"query": "open a pull request on github"}));
    let body: Value = serde_json::from_str(&search.text).unwrap();
    assert!(!body["results"].to_string().contains("github."), "{body}");
    let expand = sets[0].call("expand_tool", &json!({"tool_id": "github.create_pull_request"}));
    assert!(expand.is_error && expand.text.contains("GITHUB_TOKEN"));

    // And comes back.
    f.github_up.store(true, Ordering::SeqCst);
    f.clock.advance(Duration::from_secs(10));
    assert!(sets[0].refresh().added.contains(&"create_pull_request".to_owned()));
    assert_eq!(f.github_checks.load(Ordering::SeqCst), 3);
}

#[test]
fn duplicate_names_are_reported_and_disambiguated() {
    let f = fixture();
    let set = f.set(ToolSetConfig::default());
    let status = set
        .diagnostics()
        .iter()
        .find(|d| d.to_string().contains("\"status\""))
        .unwrap_or_else(|| panic!("{:?}", set.diagnostics()));
    let text = status.to_string();
    assert!(text.contains("git.status") && text.contains("git_status"), "{text}");
    let toolsearch::disclosure::Diagnostic::DuplicateName { tools, .. } = status;
    let mut called: Vec<&str> = tools.iter().map(|t| t.called.as_str()).collect();
    called.dedup();
    assert_eq!(called.len(), tools.len(), "every clashing tool gets its own name");
}

#[test]
fn always_loaded_tools_come_first_by_id_are_never_repeated_and_respect_scopes() {
    let f = fixture();
    let config = ToolSetConfig {
        always_load: vec!["weather.*".into(), "github.list_pull_requests".into(), "github.create_pull_request".into()],
        pinned: vec!["git.status".into()],
        principal: Principal::with_scopes(["github:read"]),
        ..ToolSetConfig::default()
    };
    let mut set = f.set(config);
    let names = set.visible_names();
    // By id: github.list_pull_requests, then weather.{air_quality, current, forecast, severe_alerts};
    // github.create_pull_request needs github:write, which the caller does not hold.
    assert_eq!(names[..5], ["list_pull_requests", "air_quality", "current", "forecast", "severe_alerts"], "{names:?}");
    assert_eq!(names[5], "git_status", "pinned tools follow: {names:?}");
    assert!(!names.contains(&"create_pull_request".to_owned()));
    assert!(set.always_loaded("weather.current") && !set.always_loaded("git.status"));
    assert!(!set.always_loaded("github.create_pull_request"), "a tool the caller may not use is not loaded");
    // Revealing an always-loaded tool again (its facade unfolds) lists it once, in its place.
    set.call("git_tools", &json!({}));
    set.call("github_tools", &json!({}));
    let after = set.visible_names();
    assert_eq!(after.iter().filter(|n| *n == "list_pull_requests").count(), 1, "{after:?}");
    assert_eq!(after[..6], names[..6], "the up-front part never moves: {after:?}");
    // An exclusive unfold hides them as it hides pinned tools; folding brings them back first.
    set.call("incident_mode", &json!({}));
    assert!(!has(&set, "current"));
    set.call("fold_incident_mode", &json!({}));
    assert_eq!(set.visible_names()[..5], names[..5]);
}

#[test]
fn with_call_tool_offered_an_unrevealed_tool_runs_by_any_spelling_and_a_missing_one_points_to_the_closest() {
    let f = fixture();
    let config = ToolSetConfig {
        discovery: DiscoveryConfig { call_tool: true, ..DiscoveryConfig::default() },
        principal: Principal::with_scopes(["github:read"]),
        ..ToolSetConfig::default()
    };
    let mut set = f.set(config);
    assert!(!has(&set, "list_pull_requests") && !has(&set, "github.list_pull_requests"));
    // Never revealed, called by the names clients use: each runs, as call_tool would run it.
    for spelling in [
        "list_pull_requests",
        "GitHub.List_Pull_Requests",
        "github__list_pull_requests",
        "mcp__github__list_pull_requests",
    ] {
        let out = set.call(spelling, &json!({"repo": "o/r"}));
        assert!(!out.is_error, "{spelling}: {}", out.text);
        assert!(out.text.contains("\"ran\":\"github.list_pull_requests\""), "{spelling}: {}", out.text);
    }
    // With every check call_tool makes: a wrong argument is refused, naming it.
    let wrong = set.call("list_pull_requests", &json!({"repo": 5}));
    assert!(wrong.is_error && wrong.text.contains("INVALID_ARGUMENT"), "{}", wrong.text);
    // A tool the caller may not use answers as one that does not exist, and is never named.
    let hidden = set.call("create_pull_request", &json!({}));
    assert!(hidden.is_error && hidden.text.contains("no tool called"), "{}", hidden.text);
    assert!(!hidden.text.contains("github.create_pull_request"), "{}", hidden.text);
    // A name no tool has: the closest tools the caller may use.
    let missing = set.call("git_commit_changes", &json!({}));
    assert!(missing.is_error && missing.text.contains("closest tools you may use: "), "{}", missing.text);
    assert!(missing.text.contains("git.commit"), "{}", missing.text);
    // An exclusive unfold holds everything else back, by any name.
    set.call("incident_mode", &json!({}));
    let held = set.call("list_pull_requests", &json!({"repo": "o/r"}));
    assert!(held.is_error, "{}", held.text);
}
