//! `toolsearch learn`: a query adapter fitted to an index's own labels, stored in the index,
//! used by search and bench, refused when labels are too few, removable.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Output};

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().expect("binary runs")
}

/// A made-up word for tool `i`: no model or BM25 index knows what it means.
fn code_word(i: usize) -> String {
    const SYL: [&str; 8] = ["ka", "lo", "mi", "zu", "re", "ta", "no", "vi"];
    format!("{}{}{}x", SYL[i % 8], SYL[(i / 8) % 8], SYL[(i / 64) % 8])
}

fn top(index: &str, query: &str) -> String {
    let out = toolsearch(&["search", index, query, "--json", "--min-confidence", "0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["results"][0]["tool_id"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn learn_fits_an_adapter_that_search_uses_and_remove_takes_away() {
    let dir = common::scratch().join("learn");
    let index = dir.join("index");
    let out = toolsearch(&["index", common::sample_catalog().to_str().unwrap(), "--out", index.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let index = index.to_str().unwrap();
    let catalog: Vec<String> =
        toolsearch::load_path(&common::sample_catalog(), None).unwrap().tools.iter().map(|t| t.id.clone()).collect();
    // Each tool is asked for by its own code word, in several phrasings.
    let mut lines = Vec::new();
    for (i, id) in catalog.iter().enumerate() {
        for (k, phrase) in ["{} please", "run {} now", "I need {}", "do the {} thing", "{} for me"].iter().enumerate() {
            let query = phrase.replace("{}", &code_word(i));
            lines.push(serde_json::json!({"id": format!("q{i}-{k}"), "query": query, "gold": [id]}).to_string());
        }
    }
    let labels = dir.join("labels.jsonl");
    std::fs::write(&labels, lines.join("\n")).unwrap();

    let probe: Vec<usize> = (0..catalog.len()).step_by(17).collect();
    let hits =
        |index: &str| probe.iter().filter(|&&i| top(index, &format!("{} asap", code_word(i))) == catalog[i]).count();
    let before = hits(index);

    let out = toolsearch(&["learn", index, labels.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("stored in the index"), "{text}");
    let after = hits(index);
    assert!(
        after > before + probe.len() / 3,
        "code words found first: {before} before, {after} after, of {}",
        probe.len()
    );

    // bench reports the ranking with and without the adapter.
    let out = toolsearch(&["bench", index, labels.to_str().unwrap(), "--mode", "hybrid", "--sample", "60", "--json"]);
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let modes: Vec<&str> = reports.as_array().unwrap().iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["hybrid", "hybrid-no-adapter"]);

    // A rebuild of the same catalogue keeps it; --remove takes it away.
    let out = toolsearch(&["index", common::sample_catalog().to_str().unwrap(), "--out", index]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(hits(index), after);
    let out = toolsearch(&["learn", index, "--remove"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stderr).contains("removed the query adapter"),
        "{out:?}"
    );
    assert_eq!(hits(index), before);
    let out = toolsearch(&["learn", index, "--remove"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no query adapter (nothing changed)"), "{out:?}");
}

#[test]
fn learn_refuses_too_few_labels_and_stores_nothing() {
    let dir = common::scratch().join("learn-few");
    let index = dir.join("index");
    let out = toolsearch(&["index", common::sample_catalog().to_str().unwrap(), "--out", index.to_str().unwrap()]);
    assert!(out.status.success());
    let labels = dir.join("few.jsonl");
    let lines: Vec<String> = (0..10)
        .map(|i| {
            serde_json::json!({"id": format!("q{i}"), "query": "commit my work", "gold": ["git.commit"]}).to_string()
        })
        .collect();
    std::fs::write(&labels, lines.join("\n")).unwrap();
    let out = toolsearch(&["learn", index.to_str().unwrap(), labels.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("few.jsonl") && err.contains("at least"), "{err}");
    let meta = toolsearch::index::IndexMeta::read(&index).unwrap();
    assert!(meta.adapter.is_none());
}

/// A gateway's learning run whose `learn` settings a reload replaced while it fitted (say, a
/// principal taken out of `learn.from`) stores nothing; the same run under settings still in
/// force swaps its fit in.
#[test]
fn a_fit_under_learn_settings_replaced_during_it_is_not_swapped_in() {
    use toolsearch::gateway::learner::{learn_once, LearnSettings, Trail};
    let index = common::build(&common::sample_catalog(), "learn-replaced");
    let catalog = toolsearch::load_path(&common::sample_catalog(), None).unwrap();
    // A trail in which each tool is searched for by its own code word, then called.
    let mut trail = String::new();
    for (i, tool) in catalog.tools.iter().enumerate() {
        for (k, phrase) in ["{} please", "run {} now", "I need {}", "do the {} thing", "{} for me"].iter().enumerate() {
            let (step, session) = (2 * (i * 5 + k) + 1, "replay-1");
            let query = phrase.replace("{}", &code_word(i));
            for line in [
                serde_json::json!({"step": step, "event": "search", "tool": "search_tool_by_category", "query": query,
                                   "category_path": "", "results": [tool.id], "session": session, "token": "replay"}),
                serde_json::json!({"step": step + 1, "event": "call", "tool_id": tool.id, "via": "call_tool",
                                   "arguments": null, "outcome": "ok", "session": session, "token": "replay"}),
            ] {
                trail.push_str(&format!("{line}\n"));
            }
        }
    }
    let dir = common::scratch().join("learn-replaced-trail");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("trail.jsonl"), trail).unwrap();
    let live = toolsearch::disclosure::LiveCatalog::new(common::open(&index));
    let settings = LearnSettings { from: vec!["replay".into()], max_moved: 1.0, ..LearnSettings::default() };
    let writer = Default::default();
    let run = |current: &dyn Fn() -> bool| learn_once(&live, Trail::Dir(&dir), &writer, 0, &settings, current).unwrap();

    let replaced = run(&|| false);
    assert!(!replaced.swapped, "{replaced:?}");
    assert!(replaced.skipped.as_deref().is_some_and(|s| s.contains("settings changed during the fit")), "{replaced:?}");
    assert!(toolsearch::index::IndexMeta::read(&index).unwrap().adapter.is_none(), "nothing stored");

    let kept = run(&|| true);
    assert!(kept.swapped, "{kept:?}");
    assert!(toolsearch::index::IndexMeta::read(&index).unwrap().adapter.is_some());
}
