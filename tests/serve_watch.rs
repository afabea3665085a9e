//! `toolsearch serve --watch`: an index rebuilt on disk by another process is served without a
//! restart, the client told `list_changed`; one that does not open leaves the one before
//! serving; an edited configuration's tool set, executor and checks apply. Driven by the official Python MCP SDK client (`tests/mcp/serve_watch.py`).

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

const QUERY: &str = "feed the fish in my aquarium";
const NEW_TOOL: &str = "aquarium.feed_fish";

/// The sample catalogue with one tool more, the one `QUERY` asks for.
fn grown_catalogue(dir: &Path) -> PathBuf {
    grown_catalogue_requiring(dir, &[])
}

/// [`grown_catalogue`] with the new tool requiring `scopes`.
fn grown_catalogue_requiring(dir: &Path, scopes: &[&str]) -> PathBuf {
    let mut catalogue: Value = serde_json::from_slice(&std::fs::read(common::sample_catalog()).unwrap()).unwrap();
    catalogue["tools"].as_array_mut().unwrap().push(json!({
        "id": NEW_TOOL,
        "name": "feed_fish",
        "paths": ["Home/Aquarium"],
        "summary": "Feed the fish in a smart aquarium.",
        "description": "Drop a portion of food into a connected aquarium's feeder, now or at a set time.",
        "args_schema": {"type": "object", "properties": {"portions": {"type": "integer"}}},
        "requires": scopes,
    }));
    let path = dir.join(format!("grown-catalog-{}.json", scopes.len()));
    std::fs::write(&path, catalogue.to_string()).unwrap();
    path
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

/// Runs `tests/mcp/serve_watch.py ARGS`; what it observed.
fn client(args: &[&str]) -> Value {
    let out = Command::new(common::python())
        .arg(common::repo().join("tests/mcp/serve_watch.py"))
        .args(args)
        .env("TOOLSEARCH_BIN", env!("CARGO_BIN_EXE_toolsearch"))
        .output()
        .expect("python runs");
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("client prints JSON")
}

#[test]
fn a_rebuilt_index_is_served_without_a_restart_and_a_broken_one_is_not() {
    let dir = common::scratch().join("serve-watch");
    std::fs::create_dir_all(&dir).unwrap();
    let grown = grown_catalogue(&dir);
    let index = dir.join("index");
    let base = common::sample_catalog();
    let stderr = dir.join("serve.stderr");
    let seen = client(&["index", &path(&index), &path(&base), &path(&grown), QUERY, &path(&stderr)]);
    let log = seen["stderr"].as_str().unwrap();

    assert_ne!(seen["before"], NEW_TOOL, "{seen}");
    assert_eq!(seen["told_after_rebuild"], true, "the client was not told: {seen}");
    assert_eq!(seen["after_rebuild"], NEW_TOOL, "{seen}");
    assert!(log.contains("the index changed on disk; serving it now (205 tools, model "), "{log}");

    // Garbage in the metadata: a warning naming the index, and the rebuilt index goes on serving.
    assert_eq!(seen["warned"], true, "{seen}");
    assert_eq!(seen["while_broken"], NEW_TOOL, "{seen}");
    assert!(log.contains("changed on disk but does not open"), "{log}");
    assert!(log.contains(index.to_str().unwrap()), "{log}");

    assert_eq!(seen["told_after_second_rebuild"], true, "{seen}");
    assert_ne!(seen["after_second_rebuild"], NEW_TOOL, "{seen}");
    assert!(log.contains("serving it now (204 tools, model toolsearch/all-MiniLM-L6-v2-tools"), "{log}");

    // Rebuilt with the stock model: that model is loaded and the index served with it.
    assert_eq!(seen["told_after_model_change"], true, "{seen}");
    assert_eq!(seen["after_model_change"], NEW_TOOL, "{seen}");
    assert!(log.contains("serving it now (205 tools, model sentence-transformers/all-MiniLM-L6-v2"), "{log}");
}

#[test]
fn an_edited_configuration_changes_the_tool_set_and_one_that_does_not_load_changes_nothing() {
    let dir = common::scratch().join("serve-watch-config");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.json");
    std::fs::write(&config, json!({"toolset": {"pinned": ["weather.current"]}}).to_string()).unwrap();
    let index = common::build(&common::sample_catalog(), "serve-watch-config-index");
    let stderr = dir.join("serve.stderr");
    let mut less: Value = serde_json::from_slice(&std::fs::read(common::sample_catalog()).unwrap()).unwrap();
    less["tools"].as_array_mut().unwrap().retain(|t| t["id"] != "git.status");
    let less_path = dir.join("less-catalog.json");
    std::fs::write(&less_path, less.to_string()).unwrap();
    let seen = client(&["config", &path(&index), &path(&config), &path(&less_path), &path(&stderr)]);
    let log = seen["stderr"].as_str().unwrap();
    let has = |key: &str, name: &str| seen[key].as_array().unwrap().iter().any(|n| n == name);

    assert!(has("at_start", "current") && !has("at_start", "git_status"), "{seen}");
    assert_eq!(seen["told_after_pin"], true, "{seen}");
    assert!(has("after_pin", "current") && has("after_pin", "git_status"), "{seen}");
    assert!(
        log.contains(&format!("toolsearch serve: {} changed; serving its tool set and scopes now", config.display())),
        "{log}"
    );

    // Unparsable, then pinning a tool the catalogue lacks: each named, neither served.
    assert_eq!(seen["warned_unparsable"], true, "{log}");
    assert_eq!(seen["warned_unknown_pin"], true, "{log}");
    assert!(log.contains(&format!("warning: {}:", config.display())), "{log}");
    // The executor applied, said so; the tool set, unchanged, stays and nobody is told.
    assert_eq!(seen["applied_executor"], true, "{log}");
    assert_eq!(seen["after_bad_edits"], seen["after_pin"], "{seen}");
    assert_eq!(seen["list_changed"], 1, "{seen}");

    // The index rebuilt without a pinned tool: the client stops seeing it, and stderr says why.
    assert_eq!(seen["told_after_less"], true, "{seen}");
    assert_eq!(seen["warned_less"], true, "{log}");
    assert!(log.contains("pinned tool \"git.status\" is not in the catalogue"), "{log}");
    assert!(has("after_less", "current") && !has("after_less", "git_status"), "{seen}");
}

#[test]
fn a_rebuild_adding_a_tool_a_caller_may_not_see_tells_that_caller_nothing() {
    let dir = common::scratch().join("serve-watch-hidden");
    std::fs::create_dir_all(&dir).unwrap();
    let hidden = grown_catalogue_requiring(&dir, &["aquarium:admin"]);
    let shown = grown_catalogue(&dir);
    let index = common::build(&common::sample_catalog(), "serve-watch-hidden-index");
    let stderr = dir.join("serve.stderr");
    let seen = client(&["hidden", &path(&index), &path(&hidden), &path(&shown), QUERY, &path(&stderr)]);

    assert_eq!(seen["served_hidden"], true, "{seen}");
    assert_eq!(seen["told_after_hidden"], 0, "a caller without the scope was told: {seen}");
    assert_eq!(seen["after_hidden"], seen["before"], "{seen}");
    assert_eq!(seen["told_after_shown"], true, "{seen}");
    assert_eq!(seen["after_shown"], NEW_TOOL, "{seen}");
}

#[test]
fn an_edited_executor_runs_the_next_call_and_edited_checks_move_their_groups() {
    let dir = common::scratch().join("serve-watch-runners");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.json");
    let index = common::build(&common::sample_catalog(), "serve-watch-runners-index");
    let stderr = dir.join("serve.stderr");
    let seen = client(&["runners", &path(&index), &path(&config), &path(&dir), &path(&stderr)]);
    let log = seen["stderr"].as_str().unwrap();
    let has = |key: &str, name: &str| seen[key].as_array().unwrap().iter().any(|n| n == name);
    let answer = |key: &str| (seen[key]["text"].as_str().unwrap().to_owned(), seen[key]["error"] == true);

    // At start the check fails: the pinned GitHub tool is hidden; the executor answers.
    assert!(has("at_start", "current") && !has("at_start", "create_issue"), "{seen}");
    assert_eq!(answer("first"), ("first".into(), false), "{seen}");

    // Both edited: said, the group up (list_changed), the next call run by the new executor.
    assert_eq!(seen["applied_both"], true, "{log}");
    assert!(log.contains("changed; running with its \"executor\" now"), "{log}");
    assert!(log.contains("changed; running with its \"checks\" now"), "{log}");
    assert_eq!(seen["told_after_check"], true, "{seen}");
    assert!(has("after_check", "create_issue"), "{seen}");
    assert_eq!(answer("second"), ("second".into(), false), "{seen}");

    // A call under way keeps its executor to the end; one made after the edit runs the new.
    assert_eq!(seen["applied_slow"], true, "{log}");
    assert_eq!(seen["applied_during_call"], true, "{log}");
    assert_eq!(answer("slow"), ("slow".into(), false), "{seen}");
    assert_eq!(answer("during"), ("fast".into(), false), "{seen}");

    // A check slow to first answer holds nothing up: the executor edited with it ran at once
    // while the old check still served; the group went down once the new one had run.
    assert_eq!(seen["applied_third"], true, "{log}");
    assert_eq!(answer("third"), ("third".into(), false), "{seen}");
    assert!(seen["third_secs"].as_f64().unwrap() < 8.0, "{seen}");
    assert!(has("while_checking", "create_issue") && seen["checks_said_while_checking"] == 1, "{seen}");
    assert_eq!(seen["applied_slow_check"], true, "{log}");
    assert_eq!(seen["told_after_slow_check"], true, "{seen}");
    assert!(!has("after_slow_check", "create_issue"), "{seen}");

    // Checks a later edit replaced before their first run ended never take over.
    assert_eq!(seen["applied_b1"], true, "{log}");
    assert_eq!(seen["applied_b2"], true, "{log}");
    assert!(has("after_superseded", "create_issue"), "{seen}");
    assert_eq!(seen["checks_said_after_superseded"], 3, "{seen}");

    // Neither named: the check forgotten (its group down again), calls say what to configure.
    assert_eq!(seen["told_after_none"], true, "{seen}");
    assert!(has("after_none", "current") && !has("after_none", "create_issue"), "{seen}");
    let (text, error) = answer("none");
    let said: Value = serde_json::from_str(&text).unwrap_or_default();
    assert!(error && said["code"] == "NOT_CONFIGURED", "{seen}");
    assert!(said["message"].as_str().is_some_and(|m| m.contains("names no \"executor\" command")), "{seen}");
}
