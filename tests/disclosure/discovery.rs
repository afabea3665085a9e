//! Discovery exposed as tools, end to end: search, expand and call with the audit trail,
//! detail levels, per-domain tools, the system prompt, refusals that point the way, scopes,
//! run-time registration, and the tools' own argument checks, paging and regexes.

use super::*;

#[test]
fn discovery_search_expand_call_with_an_audit_trail() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let found = set.call("search_tool_by_category", &json!({"query": "rename a function everywhere", "limit": 3}));
    assert!(!found.is_error, "{}", found.text);
    let answer: Value = serde_json::from_str(&found.text).unwrap();
    let results = answer["results"].as_array().unwrap();
    assert!(results.len() <= 3 && results[0]["tool_id"] == "refactor.rename_symbol", "{answer}");
    assert!(results[0].get("summary").is_some() && results[0].get("args_schema").is_none(), "summaries level");
    assert!(found.added.is_empty());

    let expanded = set.call("expand_tool", &json!({"tool_id": "refactor.rename_symbol"}));
    let body: Value = serde_json::from_str(&expanded.text).unwrap();
    assert!(body["args_schema"].is_object() && body["callable_as"] == "rename_symbol");
    assert_eq!(expanded.added, vec!["rename_symbol"], "an expanded tool becomes callable");
    let called = set.call("rename_symbol", &json!({"file": "src/lib.rs", "symbol": "foo", "new_name": "bar"}));
    assert!(!called.is_error, "{}", called.text);
    assert!(called.text.contains("\"ran\":\"refactor.rename_symbol\""));
    let bad = set.call("rename_symbol", &json!({"symbol": 3}));
    assert!(bad.is_error && bad.text.contains("INVALID_ARGUMENT"));

    let events: Vec<&str> = set
        .audit()
        .entries()
        .iter()
        .map(|e| match e.event {
            AuditEvent::Search { .. } => "search",
            AuditEvent::Choose { .. } => "choose",
            AuditEvent::Expand { .. } => "expand",
            AuditEvent::Call { .. } => "call",
            _ => "other",
        })
        .collect();
    assert_eq!(events, ["search", "choose", "expand", "call", "call"]);
    assert!(set.audit().violations().is_empty());
    let jsonl = set.audit().to_jsonl();
    let lines: Vec<Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[1]["event"], "choose");
    assert_eq!(lines[1]["rank"], 1);
    assert_eq!(lines[3]["step"], 4);
}

#[test]
fn a_call_without_expand_is_flagged() {
    let f = fixture();
    let config = ToolSetConfig {
        discovery: DiscoveryConfig { call_tool: true, ..DiscoveryConfig::default() },
        ..ToolSetConfig::default()
    };
    let mut set = f.set(config);
    set.call("search_tool_by_category", &json!({"query": "current weather"}));
    let out = set.call("call_tool", &json!({"tool_id": "weather.current", "arguments": {"location": "Oslo"}}));
    assert!(!out.is_error, "{}", out.text);
    let violations = set.audit().violations();
    assert_eq!(violations.len(), 1);
    assert!(set.audit().to_jsonl().contains("\"called_without_expand\":true"));
    // Found by a search and expanded first: not flagged.
    let found = set.call("search_tool_by_category", &json!({"query": "weather forecast for the next days"}));
    assert!(found.text.contains("weather.forecast"), "{}", found.text);
    set.call("expand_tool", &json!({"tool_id": "weather.forecast"}));
    set.call("call_tool", &json!({"tool_id": "weather.forecast", "arguments": {"location": "Oslo", "days": 2}}));
    assert_eq!(set.audit().violations().len(), 1);
}

#[test]
fn expanding_an_id_no_search_showed_is_flagged_as_assumed() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    // A guessed id: no search, listing or unfold showed it.
    let out = set.call("expand_tool", &json!({"tool_id": "payments.create_charge"}));
    assert!(!out.is_error, "{}", out.text);
    let violations = set.audit().violations();
    assert_eq!(violations.len(), 1);
    assert!(
        matches!(&violations[0].event, AuditEvent::Expand { tool_id, without_discovery: true } if tool_id == "payments.create_charge")
    );
    assert!(set.audit().to_jsonl().contains("\"without_discovery\":true"));
    // Listed first, then expanded: not flagged.
    let listed = set.call("list", &json!({"path": "Weather"}));
    assert!(listed.text.contains("weather.severe_alerts"), "{}", listed.text);
    set.call("expand_tool", &json!({"tool_id": "weather.severe_alerts"}));
    // Revealed by an unfold, then expanded: not flagged either.
    set.call("git_tools", &json!({}));
    set.call("expand_tool", &json!({"tool_id": "git.commit"}));
    assert_eq!(set.audit().violations().len(), 1, "{}", set.audit().to_jsonl());
}

#[test]
fn detail_levels_names_and_full() {
    let f = fixture();
    let names = ToolSetConfig {
        discovery: DiscoveryConfig { detail: Detail::Names, ..DiscoveryConfig::default() },
        ..ToolSetConfig::default()
    };
    let mut set = f.set(names);
    let out = set.call("search_tool_by_category", &json!({"query": "send an email"}));
    let body: Value = serde_json::from_str(&out.text).unwrap();
    assert!(body["tool_ids"].as_array().is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string)), "{body}");
    assert!(!out.text.contains("summary"));

    let full = ToolSetConfig {
        discovery: DiscoveryConfig { detail: Detail::Full, limit: 2, ..DiscoveryConfig::default() },
        ..ToolSetConfig::default()
    };
    let mut set = f.set(full);
    let out = set.call("search_tool_by_category", &json!({"query": "send an email"}));
    let body: Value = serde_json::from_str(&out.text).unwrap();
    let results = body["results"].as_array().unwrap();
    assert!(results.iter().all(|r| r["args_schema"].is_object()), "{body}");
    assert_eq!(out.added.len(), results.len(), "full answers make the tools callable");
}

#[test]
fn per_domain_discovery_tools_search_only_their_category() {
    let f = fixture();
    let config = ToolSetConfig {
        discovery: DiscoveryConfig {
            mode: DiscoveryMode::Domains,
            domains: vec!["Coding/Git".into(), "Travel".into()],
            ..DiscoveryConfig::default()
        },
        node_facades: false,
        pinned: vec!["weather.current".into()],
        ..ToolSetConfig::default()
    };
    let mut set = f.set(config);
    assert_eq!(
        set.visible_names(),
        vec!["current", "discover_git_tools", "discover_travel_tools", "expand_tool"],
        "pinned core tools stay beside the discovery tools"
    );
    let out = set.call("discover_git_tools", &json!({"query": "book a hotel"}));
    let text = out.text;
    assert!(!text.contains("hotels."), "a domain search stays in its domain: {text}");
    let out = set.call("discover_travel_tools", &json!({"query": "book a hotel"}));
    assert!(out.text.contains("hotels.book"), "{}", out.text);
    let prompt = set.system_prompt();
    assert!(prompt.contains("discover_git_tools") && prompt.contains("expand_tool"), "{prompt}");
    assert!(!prompt.contains("search_nodes"), "the prompt names only tools the set has");
    let err = ToolSet::new(
        f.live.clone(),
        f.availability.clone(),
        ToolSetConfig {
            discovery: DiscoveryConfig {
                mode: DiscoveryMode::Domains,
                domains: vec!["Nowhere".into()],
                ..DiscoveryConfig::default()
            },
            ..ToolSetConfig::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("Nowhere"));
}

#[test]
fn system_prompt_follows_the_configuration() {
    let f = fixture();
    let set = f.set(ToolSetConfig::default());
    let prompt = set.system_prompt();
    for needle in
        ["search_tool_by_category", "expand_tool", "git_tools", "fold_", "UNAVAILABLE", "NO_MATCH_IN_CATEGORY"]
    {
        assert!(prompt.contains(needle), "{needle} missing from:\n{prompt}");
    }
    let off = f.set(ToolSetConfig {
        discovery: DiscoveryConfig { mode: DiscoveryMode::Off, ..DiscoveryConfig::default() },
        node_facades: false,
        ..ToolSetConfig::default()
    });
    let prompt = off.system_prompt();
    assert!(!prompt.contains("search_tool_by_category") && !prompt.contains("git_tools"), "{prompt}");
}

#[test]
fn unknown_and_hidden_names_get_errors_that_point_the_way() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let out = set.call("frobnicate", &json!({}));
    assert!(out.is_error && out.text.contains("no tool called") && out.text.contains("search_tool_by_category"));
    let out = set.call("commit", &json!({"message": "x"}));
    assert!(out.is_error && out.text.contains("not one of the tools available now"), "{}", out.text);
    assert!(matches!(set.audit().entries().last().unwrap().event, AuditEvent::Rejected { .. }));
}

#[test]
fn scopes_limit_what_facades_and_discovery_reveal() {
    let f = fixture();
    let config = ToolSetConfig { principal: Principal::with_scopes(["github:read"]), ..ToolSetConfig::default() };
    let mut set = f.set(config);
    set.call("git_tools", &json!({}));
    let out = set.call("github_tools", &json!({}));
    assert!(out.added.contains(&"list_pull_requests".to_owned()));
    assert!(!out.added.contains(&"create_pull_request".to_owned()), "github:write is not held");
    assert!(!has(&set, "create_merge_request"), "gitlab tools need gitlab scopes");
    let search = set.call("search_tool_by_category", &json!({"query": "create a pull request"}));
    assert!(!search.text.contains("github.create_pull_request"));
}

#[test]
fn tools_registered_at_run_time_are_found_by_the_next_search() {
    let dir = common::scratch().join("disclosure-live");
    let catalog = toolsearch::load_path(&common::sample_catalog(), None).unwrap();
    toolsearch::build_index(&catalog, common::embedder().as_ref(), &dir, &Default::default()).unwrap();
    let f = fixture_at(&dir);
    let mut set = f.set(ToolSetConfig::default());
    let query = json!({"query": "water the office plants on a schedule"});
    let before = set.call("search_tool_by_category", &query);
    assert!(!before.text.contains("plants.water"));
    let added = f
        .live
        .register_tools(&json!({"tools": [{
            "id": "plants.water", "name": "water_plants", "path": "Office/Plants",
            "description": "Waters the office plants on a schedule, with an amount of water per plant.",
            "args_schema": {"type": "object", "properties": {"plant": {"type": "string"}}, "required": ["plant"]}
        }]}))
        .expect("registers");
    assert_eq!(added, 1);
    let after = set.call("search_tool_by_category", &query);
    let body: Value = serde_json::from_str(&after.text).unwrap();
    assert_eq!(body["results"][0]["tool_id"], "plants.water", "{body}");
    let expanded = set.call("expand_tool", &json!({"tool_id": "plants.water"}));
    assert_eq!(expanded.added, vec!["water_plants"]);
    let dup = f.live.register_tools(&json!({"tools": [{"id": "plants.water", "name": "again", "description": "x"}]}));
    assert!(dup.unwrap_err().to_string().contains("already in the catalogue"));
    let bad_group =
        f.live.register_tools(&json!({"tools": [{"id": "p2", "name": "p2", "description": "x", "group": "nope"}]}));
    assert!(bad_group.is_err());
}

#[test]
fn discovery_tools_check_their_arguments_against_their_own_schemas() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let error = |o: &toolsearch::disclosure::Outcome| -> Value {
        assert!(o.is_error, "{}", o.text);
        serde_json::from_str(&o.text).unwrap()
    };
    let e = error(&set.call("search_tool_by_category", &json!({"query": 5})));
    assert_eq!(e["code"], "INVALID_ARGUMENT");
    assert!(e["message"].as_str().unwrap().contains("`query`"), "{e}");
    let e = error(&set.call("search_tool_by_category", &json!({"query": "weather", "colour": "blue"})));
    assert!(e["message"].as_str().unwrap().contains("`colour`"), "{e}");
    let e = error(&set.call("list", &json!({"limit": "ten"})));
    assert!(e["message"].as_str().unwrap().contains("`limit`"), "{e}");
    let e = error(&set.call("expand_tool", &json!({})));
    assert!(e["message"].as_str().unwrap().contains("tool_id"), "{e}");
}

#[test]
fn discovery_list_and_search_page_with_cursors_and_take_tags() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let page = |set: &mut ToolSet, args: Value| -> Value {
        let o = set.call("list", &args);
        assert!(!o.is_error, "{}", o.text);
        serde_json::from_str(&o.text).unwrap()
    };
    let first = page(&mut set, json!({"limit": 3}));
    let cursor = first["next_cursor"].as_str().expect("the root has more than 3 entries").to_owned();
    let second = page(&mut set, json!({"limit": 3, "cursor": cursor}));
    assert_ne!(first["nodes"], second["nodes"], "the second page goes on");
    let o = set.call("search_tool_by_category", &json!({"query": "bucket", "limit": 1}));
    let v: Value = serde_json::from_str(&o.text).unwrap();
    let next = v["next_cursor"].as_str().expect("more than one bucket tool").to_owned();
    let o = set.call("search_tool_by_category", &json!({"query": "bucket", "limit": 1, "cursor": next}));
    let w: Value = serde_json::from_str(&o.text).unwrap();
    assert_ne!(v["results"][0]["tool_id"], w["results"][0]["tool_id"]);
    let o = set.call("search_tool_by_category", &json!({"query": "bucket", "tags": ["s3"], "limit": 50}));
    let tagged: Value = serde_json::from_str(&o.text).unwrap();
    assert!(!tagged["results"].as_array().unwrap().is_empty(), "{tagged}");
}

#[test]
fn discovery_search_takes_match_regex_and_checks_it_against_its_schema() {
    let f = fixture();
    let mut set = f.set(ToolSetConfig::default());
    let found = set.call("search_tool_by_category", &json!({"query": "^refactor\\.", "match": "regex", "limit": 50}));
    assert!(!found.is_error, "{}", found.text);
    let answer: Value = serde_json::from_str(&found.text).unwrap();
    let ids: Vec<&str> = answer["results"].as_array().unwrap().iter().map(|r| r["tool_id"].as_str().unwrap()).collect();
    assert!(ids.len() > 2 && ids.iter().all(|id| id.starts_with("refactor.")), "{ids:?}");
    let bad = set.call("search_tool_by_category", &json!({"query": "x", "match": "glob"}));
    assert!(bad.is_error && bad.text.contains("INVALID_ARGUMENT"), "{}", bad.text);
}

/// A search whose best matches are held back (their group is down) says which and why, rather
/// than offering the next best as if nothing better existed; a list too. A caller who may not
/// use a held tool learns nothing of it, and an unrelated search says nothing.
#[test]
fn held_back_best_matches_are_named_with_why_and_only_to_callers_who_may_use_them() {
    let f = fixture();
    f.github_up.store(false, Ordering::SeqCst);
    let mut set = f.set(ToolSetConfig::default());
    let search = set.call("search_tool_by_category", &json!({"query": "open a pull request on github"}));
    let body: Value = serde_json::from_str(&search.text).unwrap();
    assert!(!body["results"].to_string().contains("github."), "{body}");
    let held = &body["unavailable"];
    assert_eq!(held.as_array().unwrap().len(), 1, "one entry per group: {body}");
    assert!(held[0]["tool_ids"].as_array().unwrap().contains(&json!("github.create_pull_request")), "{body}");
    assert!(held[0]["reason"].as_str().unwrap().contains("GITHUB_TOKEN"), "{body}");
    let listed = set.call("list", &json!({"path": "Coding/Git/GitHub"}));
    let listed: Value = serde_json::from_str(&listed.text).unwrap();
    assert!(listed["tools"].as_array().unwrap().is_empty(), "{listed}");
    assert_eq!(listed["unavailable"][0]["tool_ids"].as_array().unwrap().len(), 5, "the page's five: {listed}");

    let config = ToolSetConfig { principal: Principal::with_scopes(["github:read"]), ..ToolSetConfig::default() };
    let mut reader = f.set(config);
    let search = reader.call("search_tool_by_category", &json!({"query": "open a pull request on github"}));
    assert!(!search.text.contains("create_pull_request"), "{}", search.text);
    let held = reader.call("search_tool_by_category", &json!({"query": "list the open pull requests"}));
    assert!(held.text.contains("\"github.list_pull_requests\""), "{}", held.text);

    let weather = set.call("search_tool_by_category", &json!({"query": "current weather in Oslo", "limit": 3}));
    assert!(!weather.text.contains("unavailable"), "{}", weather.text);
}

/// A pending group (its tools not listed yet, as a gateway server on a first start): while it
/// is down, a call or expand of an id under its prefix says why instead of "no such tool", and
/// a search or list not narrowed to a category names it. A caller without its scopes gets what
/// an unknown id gets and no note; once it is up, the id is as unknown as any other.
#[test]
fn a_pending_groups_unlisted_tools_answer_with_why_only_to_callers_it_may_tell() {
    let extra = common::scratch().join("pending-group.json");
    let group = json!({"id": "alarms", "visibility": "conditional", "check": "alarms_up",
        "suggestion": "Start the alarms server.", "pending": {"prefix": "alarms.", "requires": ["clock"]}});
    let now = json!({"id": "clock.now", "name": "now", "description": "The current time of day."});
    // Another server's tool of the same bare name, one named like a spelling of an id under
    // the prefix, and a tool under the prefix only `admin` may use.
    let other = json!({"id": "clock.set_alarm", "name": "set_alarm", "description": "Sets the desk clock's alarm."});
    let snooze =
        json!({"id": "clock.alarms__snooze", "name": "alarms__snooze", "description": "Snoozes the desk clock."});
    let hidden = json!({"id": "alarms.audit", "name": "audit", "description": "Audit log.", "requires": ["admin"]});
    let tools = [now, other, snooze, hidden];
    std::fs::write(&extra, json!({"groups": [group], "tools": tools}).to_string()).unwrap();
    let catalog = toolsearch::catalog::load_paths(&[common::sample_catalog(), extra], None).unwrap();
    let dir = common::scratch().join("disclosure-pending");
    toolsearch::build_index(&catalog, common::embedder().as_ref(), &dir, &Default::default()).unwrap();
    let f = fixture_at(&dir);
    let up = Arc::new(AtomicBool::new(false));
    let flag = up.clone();
    f.availability.register("alarms_up", move || flag.load(Ordering::SeqCst));
    let with = |scopes: &[&str]| ToolSetConfig {
        principal: Principal::with_scopes(scopes.iter().copied()),
        discovery: DiscoveryConfig { call_tool: true, ..DiscoveryConfig::default() },
        ..ToolSetConfig::default()
    };
    let call = json!({"tool_id": "alarms.set_alarm", "arguments": {"at": "07:00"}});
    let search = json!({"query": "set an alarm clock for seven in the morning"});

    let mut told = f.set(with(&["clock"]));
    // Called in any spelling a client uses: never read as clock's `set_alarm`.
    let args = json!({"at": "07:00"});
    for answer in [
        told.call("call_tool", &call),
        told.call("alarms.set_alarm", &args),
        told.call("expand_tool", &json!({"tool_id": "alarms.set_alarm"})),
        told.call("alarms__set_alarm", &args),
        told.call("mcp__alarms__set_alarm", &args),
        told.call("mcp__gw__alarms.set_alarm", &args),
        told.call("ALARMS.set_alarm", &args),
    ] {
        assert!(answer.is_error && answer.text.contains("UNAVAILABLE"), "{}", answer.text);
        let said = answer.text.to_lowercase();
        assert!(said.contains("alarms.set_alarm") && said.contains("is listed yet"), "{}", answer.text);
        assert!(answer.text.contains("Start the alarms server."), "{}", answer.text);
    }
    // A tool under the prefix the caller may not use answers as any id under it, in any
    // spelling: nothing tells it from one that does not exist. To a caller who may use it, it
    // is that tool; so is a tool whose own name is what was called.
    let audit = json!({"tool_id": "alarms.audit", "arguments": {}});
    for answer in [told.call("call_tool", &audit), told.call("alarms__audit", &json!({}))] {
        assert!(answer.is_error && answer.text.contains("UNAVAILABLE"), "{}", answer.text);
        assert!(answer.text.contains("alarms.audit") && answer.text.contains("is listed yet"), "{}", answer.text);
    }
    let ran = f.set(with(&["clock", "admin"])).call("call_tool", &audit);
    assert!(!ran.is_error && ran.text.contains("\"ran\":\"alarms.audit\""), "{}", ran.text);
    let ran = told.call("alarms__snooze", &json!({}));
    assert!(!ran.is_error && ran.text.contains("\"ran\":\"clock.alarms__snooze\""), "{}", ran.text);
    let body: Value = serde_json::from_str(&told.call("search_tool_by_category", &search).text).unwrap();
    assert_eq!(
        body["unavailable"],
        json!([{"unlisted_tools": "alarms.*", "reason": body["unavailable"][0]["reason"]}])
    );
    assert!(body["unavailable"][0]["reason"].as_str().unwrap().contains("Start the alarms server."), "{body}");
    let root: Value = serde_json::from_str(&told.call("list", &json!({})).text).unwrap();
    assert_eq!(root["unavailable"][0]["unlisted_tools"], "alarms.*", "{root}");
    for narrowed in [
        told.call("search_tool_by_category", &json!({"query": "set an alarm", "category_path": "Coding"})),
        told.call("list", &json!({"path": "Coding"})),
    ] {
        assert!(!narrowed.text.contains("alarms"), "{}", narrowed.text);
    }

    let mut untold = f.set(with(&[]));
    let refused = untold.call("call_tool", &call);
    assert!(refused.is_error && refused.text.contains("TOOL_NOT_FOUND"), "{}", refused.text);
    for answer in [refused, untold.call("search_tool_by_category", &search), untold.call("list", &json!({}))] {
        assert!(!answer.text.contains("listed yet") && !answer.text.contains("alarms server"), "{}", answer.text);
        assert!(!answer.text.contains("unavailable"), "{}", answer.text);
    }

    up.store(true, Ordering::SeqCst);
    f.clock.advance(Duration::from_secs(11));
    let gone = told.call("call_tool", &call);
    assert!(gone.is_error && gone.text.contains("TOOL_NOT_FOUND"), "{}", gone.text);
    assert!(!told.call("search_tool_by_category", &search).text.contains("unavailable"));
}
