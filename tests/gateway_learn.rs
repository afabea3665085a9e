//! The gateway learning from its own traffic (`toolsearch.learn`): a replayed audit trail in
//! which each tool is asked for by a made-up code word teaches the running gateway those words
//! (its searches through the official Python MCP client find the tools afterwards), the run is
//! shown in the status, `/readyz` and `/metrics`; and a later trail whose labels would make the
//! ranking worse on held-out labels is fitted, judged and never swapped in.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::gateway::{client_steps, http_get, reference_server, HttpGateway};
use common::write_config;
use serde_json::{json, Value};

/// A made-up word for tool `i`: no model or BM25 index knows what it means.
fn code_word(i: usize) -> String {
    const SYL: [&str; 8] = ["ka", "lo", "mi", "zu", "re", "ta", "no", "vi"];
    format!("{}{}{}x", SYL[i % 8], SYL[(i / 8) % 8], SYL[(i / 64) % 8])
}

const PHRASES: [&str; 6] = ["{} please", "run {} now", "I need {}", "do the {} thing", "{} for me", "start {}"];

/// Audit lines of one session: for each (query, tool), a search that showed the tool and a
/// successful call of it.
fn trail(session: &str, pairs: &[(String, String)]) -> String {
    trail_of("replay", session, pairs)
}

/// As [`trail`], for the principal (token name) `token`.
fn trail_of(token: &str, session: &str, pairs: &[(String, String)]) -> String {
    let mut out = String::new();
    for (k, (query, tool)) in pairs.iter().enumerate() {
        let who = json!({"session": session, "token": token, "time": 1_700_000_000_000u64 + k as u64});
        let mut search = json!({"step": 2 * k + 1, "event": "search", "tool": "search_tool_by_category",
            "query": query, "category_path": "", "results": [tool]});
        let mut call = json!({"step": 2 * k + 2, "event": "call", "tool_id": tool, "via": "call_tool",
            "arguments": null, "outcome": "ok"});
        for line in [&mut search, &mut call] {
            line.as_object_mut().unwrap().extend(who.as_object().unwrap().clone());
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    out
}

fn learned_runs(gateway: &HttpGateway) -> Vec<Value> {
    let lines = gateway.status.lock().unwrap().clone();
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "learned" && v["skipped"].is_null())
        .collect()
}

fn wait_for_run(gateway: &HttpGateway, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(run) = learned_runs(gateway).get(n - 1) {
            return run.clone();
        }
        assert!(Instant::now() < deadline, "no learning run {n}: {:?}", gateway.status.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The tools each probe query's search puts first, through the gateway.
fn firsts(gateway: &HttpGateway, probes: &[(String, String)]) -> usize {
    let steps: Vec<Value> =
        probes.iter().map(|(q, _)| json!(["search_tool_by_category", {"query": q, "limit": 1}])).collect();
    let out = client_steps(&gateway.url(), "-", &json!(steps));
    out.iter()
        .zip(probes)
        .filter(|(r, (_, tool))| {
            let a: Value = serde_json::from_str(r["text"].as_str().unwrap_or("{}")).unwrap_or_default();
            a["results"][0]["tool_id"].as_str() == Some(tool.as_str())
        })
        .count()
}

fn tool_ids(state: &Path) -> Vec<String> {
    // The index's own catalogue, whatever model it was built with.
    let index = toolsearch::index::IndexReader::open(&state.join("index")).expect("index opens");
    index.catalog().tools.iter().map(|t| t.id.clone()).collect()
}

/// A learning gateway over the memory and everything servers, its state dir, tool ids, the
/// code-word labels that teach each tool its word, and one probe per word.
struct CodeWords {
    gateway: HttpGateway,
    state: std::path::PathBuf,
    ids: Vec<String>,
    right: Vec<(String, String)>,
    probes: Vec<(String, String)>,
}

fn code_words(name: &str, max_moved: f64) -> CodeWords {
    let learn = json!({"every_secs": 1, "min_new_labels": 20, "from": ["replay"], "max_moved": max_moved});
    code_words_learning(name, Some(learn))
}

/// The config of a gateway over the memory and everything servers in `dir`, learning as
/// `learn` says (`None`: not at all).
fn code_words_config(dir: &Path, learn: Option<Value>) -> std::path::PathBuf {
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let toolsearch = learn.map_or_else(|| json!({}), |l| json!({ "learn": l }));
    write_config(dir, &json!({"mcpServers": {"memory": memory, "everything": everything}, "toolsearch": toolsearch}))
}

fn code_words_learning(name: &str, learn: Option<Value>) -> CodeWords {
    let dir = common::scratch().join(name);
    let state = dir.join("state");
    let config = code_words_config(&dir, learn);
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let ids = tool_ids(&state);
    assert!(ids.len() >= 20, "{ids:?}");
    let (right, probes) = lessons(&ids);
    CodeWords { gateway, state, ids, right, probes }
}

/// The labels that teach each tool its code word (six phrasings), and one probe per word.
#[allow(clippy::type_complexity)]
fn lessons(ids: &[String]) -> (Vec<(String, String)>, Vec<(String, String)>) {
    let right = ids
        .iter()
        .enumerate()
        .flat_map(|(i, id)| PHRASES.iter().map(move |p| (p.replace("{}", &code_word(i)), id.clone())))
        .collect();
    let probes = ids.iter().enumerate().map(|(i, id)| (format!("{} asap", code_word(i)), id.clone())).collect();
    (right, probes)
}

#[test]
fn a_replayed_trail_teaches_the_running_gateway_and_a_worse_fit_is_never_swapped_in() {
    // Teaching every tool a made-up name is a deliberately extreme relabelling: the fit takes
    // first place from 7 of these 28 tools' own texts (measured), over the default
    // `max_moved` 0.2, so this operator accepts up to 0.3, as docs/gateway-operations.md tells one to.
    let CodeWords { gateway, state, ids, right, probes } = code_words("gateway-learn", 0.3);
    let before = firsts(&gateway, &probes);

    // The replayed trail, as a rotated file beside the one the gateway writes.
    std::fs::write(state.join("audit/trail.1.jsonl"), trail("replay-1", &right)).unwrap();
    let first = wait_for_run(&gateway, 1);
    assert_eq!(first["swapped"], true, "{first}");
    assert!(first["labels"].as_u64().unwrap() >= right.len() as u64, "{first}");
    assert!(first["gain"].as_f64().unwrap() > 0.0, "{first}");
    let after = firsts(&gateway, &probes);
    assert!(after > before + probes.len() / 3, "code words found first: {before} before, {after} after");

    let (_, metrics) = http_get(&gateway.addr, "/metrics", &[]);
    assert!(metrics.contains("toolsearch_learn_swaps 1"), "{metrics}");
    assert!(metrics.contains(&format!("toolsearch_learn_labels {}", first["labels"])), "{metrics}");
    assert!(!metrics.contains("toolsearch_learn_last_swap_timestamp_seconds 0\n"), "{metrics}");
    let (_, ready) = http_get(&gateway.addr, "/readyz", &[]);
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!((ready["learn"]["swaps"].as_u64(), &ready["learn"]["labels"]), (Some(1), &first["labels"]), "{ready}");

    // Labels that would teach the wrong tool for every word, except on the held-out part,
    // which keeps the right ones: the fit is judged there, loses to the adapter in force, and
    // is not swapped in.
    let n = ids.len();
    let worse: Vec<(String, String)> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, id)| {
            ["{} right away", "quick {}", "{} again", "please {} it", "{} today", "the {} one"].map(|p| {
                let query = p.replace("{}", &code_word(i));
                let wrong = ids[(i + 7) % n].clone();
                let tool = if toolsearch::eval::judged(&query) { id.clone() } else { wrong };
                (query, tool)
            })
        })
        .collect();
    std::fs::write(state.join("audit/trail.2.jsonl"), trail("replay-2", &worse)).unwrap();
    let second = wait_for_run(&gateway, 2);
    assert_eq!(second["swapped"], false, "{second}");
    assert!(second["ndcg_new"].as_f64() < second["ndcg_in_force"].as_f64(), "{second}");
    assert_eq!(firsts(&gateway, &probes), after, "the adapter in force still serves");
    let (_, metrics) = http_get(&gateway.addr, "/metrics", &[]);
    assert!(metrics.contains("toolsearch_learn_swaps 1"), "{metrics}");
}

/// `learn` edited while the gateway runs applies from its next run, without a restart: a
/// token `learn.from` does not name teaches nothing; once named, it teaches at the next run;
/// with the section removed, no run follows, whatever the trail gains.
#[test]
fn learn_edited_in_the_config_applies_to_the_next_run() {
    let learn = |from: &str| json!({"every_secs": 1, "min_new_labels": 20, "from": [from], "max_moved": 0.3});
    let CodeWords { gateway, state, right, probes, .. } =
        code_words_learning("gateway-learn-reload", Some(learn("operator")));
    let dir = state.parent().unwrap().to_path_buf();
    let before = firsts(&gateway, &probes);
    std::fs::write(state.join("audit/trail.1.jsonl"), trail("replay-1", &right)).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(learned_runs(&gateway).is_empty(), "replay is not named: {:?}", gateway.status.lock().unwrap());
    assert_eq!(firsts(&gateway, &probes), before);

    code_words_config(&dir, Some(learn("replay")));
    gateway.wait_for_status("\"event\":\"learn_on\"", Duration::from_secs(60));
    let run = wait_for_run(&gateway, 1);
    assert_eq!(run["swapped"], true, "{run}");
    let after = firsts(&gateway, &probes);
    assert!(after > before + probes.len() / 3, "code words found first: {before} before, {after} after");

    code_words_config(&dir, None);
    let off = gateway.wait_for_status("\"event\":\"learn_off\"", Duration::from_secs(60));
    assert!(off.contains("no toolsearch.learn"), "{off}");
    let events = |g: &HttpGateway| g.status.lock().unwrap().iter().filter(|l| l.contains("\"learned\"")).count();
    // A run under way when the edit landed ends first.
    std::thread::sleep(Duration::from_millis(1500));
    let runs = events(&gateway);
    let more: Vec<(String, String)> = right.iter().map(|(q, t)| (format!("{q} again"), t.clone())).collect();
    std::fs::write(state.join("audit/trail.2.jsonl"), trail("replay-2", &more)).unwrap();
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(events(&gateway), runs, "no run once learn is removed: {:?}", gateway.status.lock().unwrap());
    let status = gateway.status.lock().unwrap().join("\n");
    assert!(!status.contains("config_restart_needed") && !status.contains("config_error"), "{status}");
}

/// #60 T2: a token that labels "remember / store" queries with `memory.delete_entities` over
/// and over, beside an honest operator's few labels. Its labels are fitted, but judged on the
/// operator's (another principal's): not swapped in, and the operator's own searches are
/// untouched. A token `learn.from` does not name teaches nothing at all.
#[test]
fn a_token_that_poisons_its_labels_does_not_move_anyone_elses_ranking() {
    poisoned("gateway-learn-poison", json!({"learn": {"every_secs": 1, "min_new_labels": 20, "from": ["*"]}}));
}

/// The same attack under the tool-trained model, where the poisoned fit happens to score
/// better on the operator's unrelated labels than the ranking in force: it is held for review
/// because it would change the first tool of most of what the principals it did not learn
/// from searched (the operator's code words and the other caller's "remember ..." requests).
#[test]
fn a_poisoned_fit_that_wins_its_judge_is_held_for_re_ranking_everyone_elses_searches() {
    let toolsearch = json!({"model": "tools", "learn": {"every_secs": 1, "min_new_labels": 20, "from": ["*"]}});
    let run = poisoned("gateway-learn-poison-tools", toolsearch);
    assert!(run["ndcg_new"].as_f64() > run["ndcg_in_force"].as_f64(), "the judge alone would swap: {run}");
    let why = run["skipped"].as_str().unwrap_or_default();
    eprintln!("held: {run}");
    assert!(why.contains("searches by principals it did not learn from change their first tool"), "{run}");
}

/// The first learning run's outcome, swapped or not (a run held for review included).
fn first_outcome(gateway: &HttpGateway) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let lines = gateway.status.lock().unwrap().clone();
        let run = lines.iter().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| {
            v["event"] == "learned"
                && (v["skipped"].is_null() || v["skipped"].as_str().is_some_and(|s| s.starts_with("held for review")))
        });
        if let Some(run) = run {
            return run;
        }
        assert!(Instant::now() < deadline, "no learning run: {lines:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An intruder's 120 labels sending "remember / store ..." requests to
/// `memory.delete_entities`, beside an operator's honest code-word labels; another caller's
/// "remember ..." searches keep their first tools. Returns the learning run.
fn poisoned(name: &str, toolsearch: Value) -> Value {
    let dir = common::scratch().join(name);
    let state = dir.join("state");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let config = write_config(&dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": toolsearch}));
    let gateway = HttpGateway::start(&config, &state, &["--json"]);
    let ids = tool_ids(&state);
    let asked = [
        "store facts about a person",
        "remember that Ada wrote the first program",
        "save a note about Bob",
        "record what I told you about Paris",
        "keep in mind my favourite colour",
    ];
    let target = "memory.delete_entities";
    let honest: Vec<(String, String)> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, id)| PHRASES[..3].iter().map(move |p| (p.replace("{}", &code_word(i)), id.clone())))
        .collect();
    let subjects = ["Ada", "Bob", "Paris", "my cat", "the project", "our meeting", "the budget", "my sister"];
    let verbs = ["remember", "store", "save", "keep", "note", "memorise", "record", "log"];
    let poison: Vec<(String, String)> =
        (0..120).map(|k| (format!("{} {} fact {k}", verbs[k % 8], subjects[(k / 8) % 8]), target.to_owned())).collect();
    let first_of = |q: &str| {
        let out = client_steps(&gateway.url(), "-", &json!([["search_tool_by_category", {"query": q, "limit": 1}]]));
        let a: Value = serde_json::from_str(out[0]["text"].as_str().unwrap()).unwrap();
        a["results"][0]["tool_id"].as_str().unwrap_or_default().to_owned()
    };
    let before: Vec<String> = asked.iter().map(|q| first_of(q)).collect();
    std::fs::write(state.join("audit/trail.1.jsonl"), trail_of("admin", "admin-1", &honest)).unwrap();
    std::fs::write(state.join("audit/trail.2.jsonl"), trail_of("intruder", "intruder-1", &poison)).unwrap();
    let run = first_outcome(&gateway);
    assert_eq!(run["swapped"], false, "{run}");
    let after: Vec<String> = asked.iter().map(|q| first_of(q)).collect();
    assert_eq!(after, before, "{run}");
    assert!(!after.iter().any(|t| t == target), "{after:?}");
    run
}

/// `learn.max_moved`: the same honest code-word fit, under a bound it exceeds (it takes first
/// place from 7 of 28 tools' own texts), is held for review and the ranking in force serves.
#[test]
fn a_fit_that_moves_more_than_max_moved_is_held_for_review() {
    let CodeWords { gateway, state, right, probes, .. } = code_words("gateway-learn-held", 0.1);
    let before = firsts(&gateway, &probes);
    std::fs::write(state.join("audit/trail.1.jsonl"), trail("replay-1", &right)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let held = loop {
        let lines = gateway.status.lock().unwrap().clone();
        let held = lines.iter().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| {
            v["event"] == "learned" && v["skipped"].as_str().is_some_and(|s| s.starts_with("held for review"))
        });
        if let Some(h) = held {
            break h;
        }
        assert!(Instant::now() < deadline, "no held run: {lines:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let (moved, probed) = (held["moved"]["tools"].as_u64().unwrap(), held["moved"]["probed"].as_u64().unwrap());
    assert!(moved as f64 > 0.1 * probed as f64, "{held}");
    assert_eq!(held["swapped"], false, "{held}");
    assert_eq!(firsts(&gateway, &probes), before, "the ranking in force still serves");
}

/// #62: learning in a fleet. Two replicas on one PostgreSQL, each with a state dir of its own;
/// the code-word trail is in the second replica's dir only (it ships it to the store). One
/// replica at a time fits from the whole fleet's trail and publishes what it swapped in; the
/// other stores it in its own index: both then find the code words' tools, and the replica
/// that never saw the trail holds the very adapter the fitting one does.
#[test]
fn a_fleet_learns_from_every_replicas_trail_and_each_replica_serves_what_was_learned() {
    let dir = common::scratch().join("gateway-learn-fleet");
    let pg = common::postgres::Postgres::start("learn");
    let url = pg.url();
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let everything = json!({"command": "node", "args": [reference_server("everything"), "stdio"]});
    let learn = json!({"every_secs": 1, "min_new_labels": 20, "from": ["replay"], "max_moved": 0.3});
    let config = write_config(
        &dir,
        &json!({"mcpServers": {"memory": memory, "everything": everything},
                "toolsearch": {"learn": learn, "state": {"store": "${TS_STATE_URL}"}}}),
    );
    let env = [("TS_STATE_URL", url.as_str())];
    let (state_a, state_b) = (dir.join("a"), dir.join("b"));
    let a = HttpGateway::start_env(&config, &state_a, &["--json"], &env);
    let (right, probes) = lessons(&tool_ids(&state_a));
    let before = firsts(&a, &probes);

    std::fs::create_dir_all(state_b.join("audit")).unwrap();
    std::fs::write(state_b.join("audit/trail.1.jsonl"), trail("replay-1", &right)).unwrap();
    let b = HttpGateway::start_env(&config, &state_b, &["--json"], &env);
    let deadline = Instant::now() + Duration::from_secs(120);
    let swapped = |g: &HttpGateway| learned_runs(g).into_iter().filter(|r| r["swapped"] == true).count();
    while swapped(&a) + swapped(&b) == 0 {
        assert!(Instant::now() < deadline, "no swap: {:?} {:?}", learned_runs(&a), learned_runs(&b));
        std::thread::sleep(Duration::from_millis(200));
    }
    // In force on the other replica within 2 s of the swap being seen.
    let swapped_at = Instant::now();
    let adapter = |state: &Path| toolsearch::index::IndexMeta::read(&state.join("index")).unwrap().adapter;
    while adapter(&state_a).is_none() || adapter(&state_a) != adapter(&state_b) {
        assert!(swapped_at.elapsed() < Duration::from_secs(2), "the replicas' adapters still differ after 2 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    for (name, g) in [("a", &a), ("b", &b)] {
        let after = firsts(g, &probes);
        assert!(after > before + probes.len() / 3, "{name}: code words found first: {before} before, {after} after");
    }
    // The replica that did not fit took the adapter from the store.
    let other = if swapped(&a) > 0 { &b } else { &a };
    let adopted = other.status.lock().unwrap().iter().any(|l| l.contains("\"adapter_adopted\""));
    assert!(adopted && swapped(other) == 0, "{:?}", other.status.lock().unwrap());
}
