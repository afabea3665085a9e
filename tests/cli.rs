//! The `toolsearch` command line: verbs, JSON output, exit codes and error lines.

#[path = "common/mod.rs"]
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
fn a_huge_query_is_quoted_by_its_start_and_length_in_answers_and_errors() {
    let idx = sample_index();
    let huge = "zq".repeat(50_000);
    let out = toolsearch(&["search", &idx, &huge]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: NO_MATCH_IN_CATEGORY") && err.contains("... (100000 bytes)"), "{err}");
    assert!(err.len() < 2_000, "the error echoes {} bytes of a 100,000-byte query", err.len());
    let long = "send an email to the team ".repeat(20);
    let out = toolsearch(&["search", &idx, &long]);
    let said = String::from_utf8_lossy(&out.stdout);
    let headline = said.lines().next().unwrap_or_default();
    assert!(headline.contains("... (520 bytes) in the whole catalogue") && headline.len() < 250, "{headline}");
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

#[test]
fn replay_shows_facades_groups_and_discovery_step_by_step() {
    let index = sample_index();
    let script = common::repo().join("data/replay/demo.jsonl");
    let audit = common::scratch().join("replay-audit.jsonl");
    let out = toolsearch(&["replay", &index, script.to_str().unwrap(), "--json", "--audit", audit.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let replay: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = replay["steps"].as_array().unwrap();
    let step = |line: u64| steps.iter().find(|s| s["line"] == line).unwrap_or_else(|| panic!("line {line}"));
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_owned()).collect()
    };
    assert!(names(&step(4)["added"]).contains(&"rename_symbol".to_owned()), "expand makes the tool callable");
    assert!(names(&step(7)["added"]).contains(&"github_tools".to_owned()), "fixed facade with a nested one");
    assert!(step(8)["result"].as_str().unwrap().ends_with("Prefer draft pull requests until tests pass."));
    assert!(names(&step(11)["removed"]).contains(&"create_pull_request".to_owned()), "group down after the TTL");
    assert!(step(12)["is_error"] == true && step(12)["result"].as_str().unwrap().contains("GITHUB_TOKEN"));
    assert!(names(&step(14)["added"]).contains(&"create_pull_request".to_owned()), "group back");
    assert!(names(&step(18)["added"]).contains(&"hotels_book".to_owned()), "category facade");
    assert!(names(&step(19)["added"]).contains(&"line_chart".to_owned()), "query facade");
    assert_eq!(names(&step(21)["visible"]).len(), 6, "exclusive facade");
    assert!(step(22)["is_error"] == true);
    assert!(names(&step(23)["added"]).contains(&"current".to_owned()), "fold brings the rest back");
    let trail = std::fs::read_to_string(&audit).unwrap();
    let flagged: Vec<&str> = trail.lines().filter(|l| l.contains("\"called_without_expand\":true")).collect();
    assert_eq!(flagged.len(), 1, "{trail}");
    assert!(flagged[0].contains("weather.forecast"));

    let human = toolsearch(&["replay", &index, script.to_str().unwrap(), "--render", "anthropic"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("Usage notes:") && text.contains("input_schema"), "{text}");
}

#[test]
fn replay_of_a_registration_runs_on_a_copy() {
    let index = sample_index();
    let script = common::repo().join("data/replay/register.jsonl");
    let out = toolsearch(&["replay", &index, script.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let replay: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let after = replay["steps"][2]["result"].as_str().unwrap();
    assert!(after.contains("office.water_plants"), "{after}");
    let search = toolsearch(&["search", &index, "water the office plants", "--json"]);
    assert!(!String::from_utf8_lossy(&search.stdout).contains("office.water_plants"), "the user's index is untouched");
}

#[test]
fn replay_reports_bad_scripts_by_line() {
    let index = sample_index();
    let script = common::scratch().join("bad-script.jsonl");
    std::fs::write(&script, "{\"call\": \"list\"}\n{\"teleport\": 1}\n").unwrap();
    let out = toolsearch(&["replay", &index, script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-script.jsonl:2") && err.contains("teleport"), "{err}");
}

#[test]
fn index_refuses_unusable_facade_settings_naming_the_node() {
    let file = common::scratch().join("bad-facade.json");
    std::fs::write(
        &file,
        r#"{"nodes": [{"path": "A", "summary": "a", "facade": {"select": "some"}}],
            "tools": [{"id": "t", "name": "t", "path": "A", "description": "d"}]}"#,
    )
    .unwrap();
    let out_dir = common::scratch().join("bad-facade-index");
    let out = toolsearch(&["index", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-facade.json") && err.contains("facade A") && err.contains("facade.select"), "{err}");
    assert!(!out_dir.exists(), "nothing is written");
}

#[test]
fn bench_tokens_prints_both_sides_and_the_ratio() {
    let index = sample_index();
    let queries = common::repo().join("tests/data/sample-queries.jsonl");
    let out = toolsearch(&["tokens", &index, queries.to_str().unwrap(), "--dialect", "mcp"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("up front:") && text.contains("discovery:") && text.contains("x fewer tokens"), "{text}");
    assert!(text.contains("mcp tool definitions"), "{text}");
    let out = toolsearch(&["tokens", &index, queries.to_str().unwrap(), "--dialect", "xml"]);
    assert_eq!(out.status.code(), Some(2), "a bad choice is a usage error");
}

#[test]
fn call_checks_arguments_and_runs_the_executor_command() {
    let idx = sample_index();
    let out = toolsearch(&["call", &idx, "weather.forecast", "--args", r#"{"location": "Oslo", "days": 3}"#]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("arguments are valid for weather.forecast"));

    let out = toolsearch(&["call", &idx, "weather.forecast", "--args", r#"{"days": 30}"#, "--json"]);
    assert_eq!(out.status.code(), Some(3), "a schema violation is a protocol error");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], "INVALID_ARGUMENT");
    let hints = v["hints"].to_string();
    assert!(hints.contains("/days") && hints.contains("location"), "{hints}");

    // The executor reads {"tool_id", "arguments"} on stdin and prints the result.
    let echo = ["--", "sh", "-c", r#"read -r input; printf '{"forecast": "rain", "request": %s}' "$input""#];
    let mut args = vec!["call", &idx, "weather.forecast", "--args", r#"{"location": "Oslo"}"#, "--json"];
    args.extend(echo);
    let out = toolsearch(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], false);
    assert_eq!(v["result"]["forecast"], "rain");
    assert_eq!(v["result"]["request"]["tool_id"], "weather.forecast");
    assert_eq!(v["result"]["request"]["arguments"]["location"], "Oslo");

    let out = toolsearch(&[
        "call",
        &idx,
        "weather.forecast",
        "--args",
        r#"{"location": "Oslo"}"#,
        "--",
        "sh",
        "-c",
        "echo upstream timed out >&2; exit 7",
    ]);
    assert_eq!(out.status.code(), Some(4), "the tool's own failure has its own exit code");
    assert!(String::from_utf8_lossy(&out.stderr).contains("upstream timed out"));

    let out = toolsearch(&["call", &idx, "weather.forecast", "--args", "{not json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--args: not JSON"));
    let out = toolsearch(&["call", &idx, "payments.create_charge", "--scopes", "weather:read"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("TOOL_NOT_FOUND"),
        "hidden tools do not exist for the caller"
    );
}

#[test]
fn usage_errors_exit_2_and_completions_are_printed() {
    let idx = sample_index();
    for args in [
        vec!["index", "x.json", "--out", "/tmp/never", "--format", "xml"],
        vec!["search", idx.as_str(), "q", "--limit", "0"],
        vec!["search", idx.as_str(), "q", "--min-confidence", "1.5"],
        vec!["bench", idx.as_str(), "q.jsonl", "--mode", "hybrid,sparse"],
        vec!["index", "x.json", "--out", "/tmp/never", "--scopes", "a"],
        vec!["no-such-verb"],
        vec!["search", idx.as_str(), "q", "--match", "glob"],
    ] {
        let out = toolsearch(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A gateway config given without --config is taken for a subcommand: the error says how.
    let out = toolsearch(&["gateway", "team.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("tip: a config is named with --config: `toolsearch gateway --config team.json`"), "{err}");
    let out = toolsearch(&["gateway", "aprove"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--config aprove"), "a misspelt subcommand is no config");
    let out = toolsearch(&["completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("toolsearch") && script.contains("gateway"), "{script}");
}

#[test]
fn search_match_regex_lists_matching_ids_and_a_bad_pattern_exits_3() {
    let idx = sample_index();
    let out = toolsearch(&["search", &idx, r"^git\.(commit|diff)$", "--match", "regex", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = v["results"].as_array().unwrap().iter().map(|r| r["tool_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"git.commit") && ids.contains(&"git.diff"));
    let bad = toolsearch(&["search", &idx, "(", "--match", "regex"]);
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("INVALID_ARGUMENT"));
}

#[test]
fn verify_checks_every_byte_and_the_graph_and_names_a_corrupted_file() {
    let idx = common::scratch().join("cli-verify");
    let _ = std::fs::remove_dir_all(&idx);
    let built = toolsearch(&["index", common::sample_catalog().to_str().unwrap(), "--out", idx.to_str().unwrap()]);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let idx_s = idx.to_str().unwrap();

    let out = toolsearch(&["verify", idx_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("204 tools, every tool reachable in the graph") && text.contains("ok: no fault"), "{text}");
    // What the index was built with: what a query must load.
    let built_with = format!(
        "format {}, built with {} (sha256 ",
        toolsearch::index::FORMAT_VERSION,
        toolsearch::embed::TOOLS_MODEL_ID
    );
    assert!(
        text.contains(&built_with) && text.contains("384 dimensions, mean pooling, max length 256, tokenizer "),
        "{text}"
    );
    let out = toolsearch(&["--json", "verify", idx_s]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["model"].as_str().unwrap().starts_with(toolsearch::embed::TOOLS_MODEL_ID), "{report}");
    assert_eq!((&report["calibrated"], &report["adapter"]), (&serde_json::json!(false), &serde_json::json!(false)));
    assert_eq!(report["unreachable"], 0);
    assert_eq!(report["faults"], serde_json::json!([]));
    assert!(report["bytes"].as_u64().unwrap() > 0);

    // One flipped byte in the middle of the vectors: a fault naming the file, a non-zero exit.
    let vectors = idx.join("vectors.f16");
    let mut bytes = std::fs::read(&vectors).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&vectors, bytes).unwrap();
    let out = toolsearch(&["--json", "verify", idx_s]);
    assert!(!out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let faults = report["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 1, "{report}");
    assert!(faults[0]["file"].as_str().unwrap().ends_with("vectors.f16"));
    assert!(faults[0]["problem"].as_str().unwrap().contains("checksum"));
    let out = toolsearch(&["verify", idx_s]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("vectors.f16"), "{}", String::from_utf8_lossy(&out.stderr));
    // A missing file too.
    std::fs::remove_file(idx.join("graph.bin")).unwrap();
    let out = toolsearch(&["--json", "verify", idx_s]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["faults"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["unreachable"], serde_json::Value::Null);
}

#[test]
fn bench_twins_prints_the_default_path_and_the_answerability_decision() {
    let index = sample_index();
    let queries = common::repo().join("tests/data/sample-queries.jsonl");
    let out = toolsearch(&["bench", &index, queries.to_str().unwrap(), "--mode", "hybrid", "--twins"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in ["default path (search, limit 10): nDCG@10", "twins (24 pairs): answerable AUROC", "gold first in "] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    // The latency targets' ratios, from the stage columns of the same run.
    let latency = text.lines().find(|l| l.starts_with("latency: p50 ")).unwrap_or_else(|| panic!("{text}"));
    let ratio = |after: &str| -> f64 {
        let rest = &latency[latency.find(after).unwrap_or_else(|| panic!("{latency}")) + after.len()..];
        rest.split('x').next().unwrap().parse().unwrap_or_else(|_| panic!("{latency}"))
    };
    assert!(ratio(" ms is ") >= 1.0 && ratio("p99 is ") >= 1.0, "{latency}");
    let out = toolsearch(&["bench", &index, queries.to_str().unwrap(), "--mode", "hybrid", "--twins", "--json"]);
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let twins = &reports[0]["default_path"]["twins"];
    assert_eq!(twins["pairs"], 24, "{reports}");
    let (first, ceiling) = (twins["gold_first"].as_f64().unwrap(), twins["ceiling"].as_f64().unwrap());
    assert!((ceiling - (0.5 + 0.5 * first)).abs() < 1e-9, "{twins}");
}

#[test]
fn bench_refuses_queries_labelled_with_another_catalogues_ids_and_warns_of_each_missing_gold_tool() {
    let index = sample_index();
    let dir = common::scratch().join("cli-bench-gold");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, lines: &[&str]| {
        let path = dir.join(name);
        std::fs::write(&path, lines.join("\n")).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let stderr = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();
    // Every gold id from another catalogue: refused, every verb that reads labelled queries.
    let foreign = write("foreign.jsonl", &[r#"{"id": "a", "query": "weather tomorrow", "gold": ["Weather::get"]}"#]);
    for verb in ["bench", "calibrate"] {
        let out = toolsearch(&[verb, &index, &foreign]);
        assert_eq!(out.status.code(), Some(1), "{verb}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no query's gold tools are in the index")
                && stderr(&out).contains("\"Weather::get\"")
        );
    }
    // One of two: measured, with a warning naming the query and the id.
    let one = write(
        "one.jsonl",
        &[
            r#"{"id": "a", "query": "weather tomorrow", "gold": ["weather.forecast"]}"#,
            r#"{"id": "b", "query": "weather tomorrow", "gold": ["weather.forecast", "Weather::gone"]}"#,
        ],
    );
    let out = toolsearch(&["bench", &index, &one, "--mode", "bm25"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = "1 of 2 queries name a gold tool the index";
    assert!(
        stderr(&out).contains(warning) && stderr(&out).contains("(query \"b\" names \"Weather::gone\")"),
        "{}",
        stderr(&out)
    );
    // An empty query is refused at its line, before any index is opened.
    let empty = write(
        "empty.jsonl",
        &[
            r#"{"id": "a", "query": "x", "gold": ["weather.forecast"]}"#,
            r#"{"id": "b", "query": " ", "gold": ["weather.forecast"]}"#,
        ],
    );
    let out = toolsearch(&["bench", &index, &empty]);
    assert!(stderr(&out).contains("empty.jsonl:2: field `query` is empty"), "{}", stderr(&out));
    // The sample's own queries draw no warning.
    let queries = common::repo().join("tests/data/sample-queries.jsonl");
    let out = toolsearch(&["bench", &index, queries.to_str().unwrap(), "--mode", "bm25"]);
    assert!(out.status.success() && !stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_catalogue_given_where_an_index_goes_is_said_to_be_a_file_with_the_command_that_builds_one() {
    let catalogue = common::sample_catalog();
    let out = toolsearch(&["search", catalogue.to_str().unwrap(), "send an email"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let build = format!("`toolsearch index {} --out DIR`", catalogue.display());
    assert!(err.contains("a file, not an index directory") && err.contains(&build), "{err}");
}
