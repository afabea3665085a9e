//! Real-world schemas (issue: catalogues index whole): one catalogue per importer holding the
//! forms real MCP, OpenAI and OpenAPI tools use (tests/data/dialects, written by its make.py).
//! Every tool indexes and is found by its exact name; calls that the dialect allows pass and
//! calls it forbids are refused with the field named; a schema that cannot compile is indexed
//! with a warning, and its calls pass unchecked.

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;

use serde_json::{json, Value};
use toolsearch::catalog::WarningKind;
use toolsearch::{
    build_index, load_path, BuildOptions, CallToolRequest, ExpandToolRequest, Principal, SearchToolsRequest,
};

fn data(name: &str) -> PathBuf {
    common::repo().join("tests/data/dialects").join(name)
}

fn cases() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("cases.json")).unwrap()).unwrap()
}

/// The id each importer gives a tool of the fixture.
fn id_of(file: &str, name: &str) -> String {
    match file {
        "openai.json" | "anthropic.json" => name.to_owned(),
        _ => format!("realworld.{name}"),
    }
}

#[test]
fn every_importer_indexes_every_form_and_validates_exactly_where_understood() {
    let cases = cases();
    let who = Principal::trusted();
    for file in ["mcp.json", "openai.json", "anthropic.json", "manifest.json"] {
        let catalog = load_path(&data(file), None).unwrap_or_else(|e| panic!("{file}: {e}"));
        let all = cases["cases"].as_array().unwrap();
        assert_eq!(catalog.tools.len(), all.len(), "{file}: no tool dropped but the duplicate");
        // Warnings: the remote $ref (unvalidated) and, where the format has servers, the duplicate.
        let unvalidated: Vec<_> = catalog.warnings.iter().filter(|w| w.kind == WarningKind::Unvalidated).collect();
        assert_eq!(unvalidated.len(), 1, "{file}: {:?}", catalog.warnings);
        assert_eq!(unvalidated[0].tool.as_deref(), Some(id_of(file, "fetch_remote").as_str()));
        // Each format's own name for the schema, as its file writes it.
        let key = match file {
            "mcp.json" => "inputSchema",
            "openai.json" => "parameters",
            "anthropic.json" => "input_schema",
            _ => "args_schema",
        };
        assert!(unvalidated[0].at.contains(&format!("{key}/properties/doc")), "{}", unvalidated[0].at);
        let duplicates = catalog.warnings.iter().filter(|w| w.kind == WarningKind::DuplicateName).count();
        assert_eq!(duplicates, usize::from(file != "manifest.json"), "{file}: {:?}", catalog.warnings);

        let out = common::scratch().join(format!("dialects-{file}"));
        let report = build_index(&catalog, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
        assert_eq!(report.warnings, catalog.warnings, "{file}: the build report lists the loader's warnings");
        let engine = common::open(&out);
        for case in all {
            let name = case["name"].as_str().unwrap();
            let id = id_of(file, name);
            // Found by its exact name, first.
            let found = engine
                .search_tool_by_category(&who, &SearchToolsRequest { query: name.into(), ..Default::default() })
                .unwrap_or_else(|e| panic!("{file}: search {name:?}: {e:?}"));
            assert_eq!(found.results[0].tool_id, id, "{file}: {name:?} by its exact name");
            let expanded = engine.expand_tool(&who, &ExpandToolRequest { tool_id: id.clone() }).unwrap();
            let validated = case["validated"].as_bool().unwrap();
            if validated {
                assert!(expanded.validation.starts_with("on ("), "{file} {name}: {}", expanded.validation);
            } else if name == "fetch_remote" {
                assert!(expanded.validation.starts_with("off: "), "{file} {name}: {}", expanded.validation);
            }
            for args in case["pass"].as_array().unwrap() {
                let req = CallToolRequest { tool_id: id.clone(), arguments: args.clone() };
                if let Err(e) = engine.check_call(&who, &req) {
                    panic!("{file} {name}: {args} should pass: {e:?}");
                }
            }
            for fail in case["fail"].as_array().unwrap() {
                let req = CallToolRequest { tool_id: id.clone(), arguments: fail["args"].clone() };
                let e =
                    engine.check_call(&who, &req).expect_err(&format!("{file} {name}: {} should fail", fail["args"]));
                assert_eq!(e.code, toolsearch::ErrorCode::InvalidArgument, "{file} {name}");
                let field = fail["field"].as_str().unwrap();
                assert!(
                    e.hints.iter().any(|h| h.starts_with(&format!("{field}:")) || h.starts_with(&format!("{field}/"))),
                    "{file} {name}: {} should name {field}: {:?}",
                    fail["args"],
                    e.hints
                );
            }
        }
    }
}

#[test]
fn the_cli_prints_warnings_and_lists_them_in_its_json_report() {
    let out = common::scratch().join("dialects-cli");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["index", "--json", "--quiet", "--out"])
        .arg(&out)
        .arg(data("mcp.json"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("warning: ") && stderr.contains("realworld.fetch_remote"), "{stderr}");
    let report: Value = serde_json::from_slice(&run.stdout).unwrap();
    let warnings = report["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w["kind"] == "unvalidated" && w["tool"] == "realworld.fetch_remote"), "{report}");
    assert!(warnings.iter().any(|w| w["kind"] == "duplicate_name" && w["tool"] == "realworld.read_pdf"), "{report}");
    let expand = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["expand", "--json"])
        .arg(&out)
        .arg("realworld.fetch_remote")
        .output()
        .unwrap();
    let expanded: Value = serde_json::from_slice(&expand.stdout).unwrap();
    assert!(expanded["validation"].as_str().unwrap().starts_with("off: "), "{expanded}");
}

#[test]
fn what_is_not_a_tool_is_still_an_error_naming_the_file_and_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"tools":[{"id":"a","name":"a","args_schema":"object"}]}"#).unwrap();
    let e = load_path(&bad, None).unwrap_err().to_string();
    assert!(e.contains("bad.json") && e.contains("/tools/0/args_schema") && e.contains("object or a boolean"), "{e}");
    std::fs::write(&bad, r#"{"tools":[{"id":"a","description":"no name"}]}"#).unwrap();
    let e = load_path(&bad, None).unwrap_err().to_string();
    assert!(e.contains("/tools/0/name"), "{e}");
}

#[test]
fn a_very_long_description_is_cut_with_a_warning_and_indexed_by_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.json");
    let limit = toolsearch::catalog::limits::MAX_DESCRIPTION_BYTES;
    let description = format!("Convert currencies at today's rate. {}", "Details follow. ".repeat(limit / 16 + 10));
    let manifest = json!({"tools": [{"id": "fx", "name": "convert_currency", "description": description}]});
    std::fs::write(&file, manifest.to_string()).unwrap();
    let catalog = load_path(&file, None).unwrap();
    assert_eq!(catalog.tools[0].details.description.len(), limit);
    assert_eq!(catalog.warnings.len(), 1);
    assert_eq!(catalog.warnings[0].kind, WarningKind::Truncated);
    let under = json!({"tools": [{"id": "fx", "name": "convert_currency", "description": "x".repeat(300_000)}]});
    std::fs::write(&file, under.to_string()).unwrap();
    let catalog = load_path(&file, None).unwrap();
    assert_eq!(catalog.tools[0].details.description.len(), 300_000, "kept whole under the limit");
    assert!(catalog.warnings.is_empty());
}

/// Names that are not identifiers keep distinct ids, and a server name with a dot cannot make
/// two tools share one.
#[test]
fn ids_stay_unambiguous_whatever_the_names() {
    assert_eq!(toolsearch::catalog::tool_id("fs", "files.read"), "fs.files.read");
    assert_ne!(toolsearch::catalog::tool_id("a.b", "c"), toolsearch::catalog::tool_id("a", "b.c"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    let servers = json!({
        "a.b": {"tools": [{"name": "c", "inputSchema": {"type": "object"}}]},
        "a": {"tools": [{"name": "b.c", "inputSchema": {"type": "object"}}]},
    });
    std::fs::write(&file, servers.to_string()).unwrap();
    let catalog = load_path(&file, None).unwrap();
    let ids: Vec<&str> = catalog.tools.iter().map(|t| t.id.as_str()).collect();
    assert!(ids.contains(&"a%2Eb.c") && ids.contains(&"a.b.c"), "{ids:?}");
}

/// A small deterministic generator (xorshift), so the property test is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// Property: any catalogue the importer accepts indexes without error, and every tool in it is
/// found by its exact name (the first result carries that name). Catalogues are drawn from the
/// fixture's schemas and from names with dots, slashes, spaces, non-ASCII letters and clashes
/// across servers, for several seeds.
#[test]
fn any_accepted_catalogue_indexes_and_finds_every_tool_by_its_exact_name() {
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(data("mcp.json")).unwrap()).unwrap();
    let forms = fixture["realworld"]["tools"].as_array().unwrap().clone();
    let words = ["get", "list", "files.read", "docs/search", "send mail", "météo", "Ünïcode", "a-b_c", "x", "数据"];
    let who = Principal::trusted();
    for seed in 1..=4u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
        let mut servers = serde_json::Map::new();
        for s in 0..3 {
            let mut tools = Vec::new();
            for _ in 0..(4 + rng.next() % 6) {
                let mut t = rng.pick(&forms).clone();
                let name = format!(
                    "{}{}",
                    rng.pick(&words),
                    if rng.next().is_multiple_of(3) { String::new() } else { format!("_{}", rng.next() % 50) }
                );
                t["name"] = json!(name);
                if rng.next().is_multiple_of(4) {
                    t.as_object_mut().unwrap().remove("description");
                }
                tools.push(t);
            }
            servers.insert(format!("server{s}"), json!({"tools": tools}));
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("servers.json");
        std::fs::write(&file, Value::Object(servers).to_string()).unwrap();
        let Ok(catalog) = load_path(&file, None) else { continue };
        let out = dir.path().join("index");
        build_index(&catalog, common::embedder().as_ref(), &out, &BuildOptions::default())
            .unwrap_or_else(|e| panic!("seed {seed}: an accepted catalogue must index: {e}"));
        let engine = common::open(&out);
        for tool in &catalog.tools {
            let found = engine
                .search_tool_by_category(&who, &SearchToolsRequest { query: tool.name.clone(), ..Default::default() })
                .unwrap_or_else(|e| panic!("seed {seed}: {:?}: {e:?}", tool.name));
            let first =
                engine.expand_tool(&who, &ExpandToolRequest { tool_id: found.results[0].tool_id.clone() }).unwrap();
            assert_eq!(first.name, tool.name, "seed {seed}: {:?} first by its exact name", tool.name);
        }
    }
}
