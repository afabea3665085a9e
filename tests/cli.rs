//! The `toolsearch` command line: verbs, JSON output, exit codes and error lines.

mod common;

use std::process::{Command, Output};

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().expect("binary runs")
}

fn sample_index() -> String {
    let dir = common::scratch().join("cli-sample");
    if !dir.exists() {
        let out = toolsearch(&["index", common::sample_catalog().to_str().unwrap(), "--out", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("indexed 204 tools"));
    }
    dir.to_str().unwrap().to_owned()
}

#[test]
fn search_json_prints_exactly_the_protocol_answer() {
    let idx = sample_index();
    let out = toolsearch(&[
        "search",
        &idx,
        "post a message in a slack channel",
        "--path",
        "Communication",
        "--limit",
        "3",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["category_path"], "Communication");
    assert_eq!(v["results"][0]["tool_id"], "slack.post_message");
    assert_eq!(v["results"].as_array().unwrap().len(), 3);
}

#[test]
fn a_bad_path_is_one_line_on_stderr_and_a_non_zero_exit() {
    let idx = sample_index();
    let out = toolsearch(&["search", &idx, "upload", "--path", "Storag"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: UNKNOWN_PATH") && err.contains("Storage"), "{err}");
    let out = toolsearch(&["search", &idx, "upload", "--path", "Storag", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], "UNKNOWN_PATH");
    assert!(v["hints"][0].as_str().unwrap().contains("Storage"));
}

#[test]
fn nodes_list_and_expand_print_readable_text() {
    let idx = sample_index();
    let nodes = String::from_utf8_lossy(&toolsearch(&["nodes", &idx, "charts and dashboards", "--limit", "2"]).stdout)
        .into_owned();
    assert!(nodes.contains("Data/Visualization"), "{nodes}");
    let list = String::from_utf8_lossy(&toolsearch(&["list", &idx, "--path", "Coding/Git"]).stdout).into_owned();
    assert!(list.contains("GitHub/") && list.contains("git.commit"), "{list}");
    let expand = String::from_utf8_lossy(&toolsearch(&["expand", &idx, "flights.search"]).stdout).into_owned();
    assert!(expand.contains("\"origin\"") && expand.contains("Travel/Flights"), "{expand}");
}

#[test]
fn a_malformed_catalogue_fails_with_file_and_line() {
    let bad = common::scratch().join("bad.json");
    std::fs::write(&bad, "{\"tools\": [\n  {\"id\": 1}\n]}\n").unwrap();
    let out = toolsearch(&["index", bad.to_str().unwrap(), "--out", common::scratch().join("never").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("/tools/0"), "{err}");
    assert!(!common::scratch().join("never").exists());
}

#[test]
fn a_missing_index_is_a_clear_error() {
    let out = toolsearch(&["search", "/nonexistent/index", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/index"));
}
