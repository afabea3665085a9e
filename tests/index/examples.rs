//! A tool's example requests as vectors of their own: what they find, what a rebuild reuses,
//! what a caller without the scopes never sees, and a damaged example file.

use std::path::{Path, PathBuf};

use serde_json::json;
use toolsearch::index::IndexError;
use toolsearch::{build_index, load_path, BuildOptions, Engine, EngineOptions, Principal, SearchToolsRequest};

use super::common;

/// The npm memory server's tools as a catalogue (their own descriptions), `create_entities`
/// with `examples`, and one tool only `vault:read` callers see.
fn memory_catalogue(dir: &Path, examples: &[&str]) -> PathBuf {
    let tool = |name: &str, description: &str| json!({"id": format!("memory.{name}"), "name": name, "paths": ["memory"], "description": description});
    let mut create = tool("create_entities", "Create multiple new entities in the knowledge graph");
    create["examples"] = json!(examples);
    let mut secret = tool("archive_person", "Archive a record in the vault");
    secret["requires"] = json!(["vault:read"]);
    secret["examples"] = json!(["remember that someone wrote something"]);
    let catalogue = json!({"name": "memory", "tools": [
        create,
        tool("create_relations", "Create multiple new relations between entities in the knowledge graph"),
        tool("add_observations", "Add new observations to existing entities in the knowledge graph"),
        tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph"),
        tool("read_graph", "Read the entire knowledge graph"),
        tool("search_nodes", "Search for nodes in the knowledge graph based on a query"),
        tool("open_nodes", "Open specific nodes in the knowledge graph by their names"),
        secret,
    ]});
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("memory.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&catalogue).unwrap()).unwrap();
    path
}

/// The engine over `dir` showing every result, however unsure.
fn open(dir: &Path) -> Engine {
    Engine::with_embedder(dir, common::embedder(), EngineOptions { min_confidence: Some(0.0), ..Default::default() })
        .unwrap()
}

fn ranked(engine: &Engine, who: &Principal, query: &str) -> Vec<(String, f32)> {
    let request = SearchToolsRequest { query: query.into(), ..Default::default() };
    let r = engine.search_tool_by_category(who, &request).unwrap();
    r.results.iter().map(|p| (p.tool_id.clone(), p.confidence)).collect()
}

#[test]
fn a_request_close_to_an_example_finds_its_tool_when_the_tools_own_words_do_not() {
    let dir = common::scratch().join("examples-find");
    let caller = Principal::with_scopes(["memory"]);
    let plain = common::build(&memory_catalogue(&dir.join("plain"), &[]), "examples-find-plain");
    let before = ranked(&open(&plain), &caller, "remember that Ada wrote the first program");
    assert_eq!(before[0].0, "memory.read_graph", "{before:?}");
    let taught = common::build(
        &memory_catalogue(&dir.join("taught"), &["remember a new fact about someone"]),
        "examples-find-taught",
    );
    let engine = open(&taught);
    let after = ranked(&engine, &caller, "remember that Ada wrote the first program");
    // Measured: read_graph .07 first before; with the example only in the tool's text it ties
    // (.057 / .058); as a vector of its own, create_entities .27.
    assert_eq!(after[0].0, "memory.create_entities", "{after:?}");
    assert!(after[0].1 > 2.0 * after[1].1, "a clear first, not a tie: {after:?}");
    // A request the example says nothing of keeps its tool.
    assert_eq!(ranked(&engine, &caller, "show me the whole graph")[0].0, "memory.read_graph");
    // The hidden tool's example is as close, and a caller without its scope never meets it.
    for who in [&caller, &Principal::with_scopes(["memory", "nothing:else"])] {
        let seen = ranked(&engine, who, "remember that someone wrote something");
        assert!(seen.iter().all(|(id, _)| id != "memory.archive_person"), "{seen:?}");
    }
    let admin = ranked(&engine, &Principal::trusted(), "remember that someone wrote something");
    assert_eq!(admin[0].0, "memory.archive_person", "{admin:?}");
}

#[test]
fn a_rebuild_embeds_only_the_examples_that_changed() {
    let dir = common::scratch().join("examples-reuse");
    let path = memory_catalogue(&dir, &["remember a new fact about someone", "save what we learned about a person"]);
    let mut catalog = load_path(&path, None).unwrap();
    let out = dir.join("index");
    let e = common::embedder();
    let first = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    let documents = first.tools + first.nodes;
    assert_eq!(first.embedded, documents + 3, "two examples on one tool, one on another");
    let again = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    assert_eq!((again.embedded, again.reused), (0, documents + 3));
    let create = catalog.tools.iter_mut().find(|t| t.name == "create_entities").unwrap();
    create.details.examples[1] = "note down a detail about a friend".into();
    let changed = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    // The tool's text holds its examples too: its document and the one new example.
    assert_eq!(changed.embedded, 2);
    let engine = open(&out);
    assert_eq!(
        ranked(&engine, &Principal::trusted(), "note down a detail about a friend")[0].0,
        "memory.create_entities"
    );
}

#[test]
fn a_damaged_example_file_is_refused_naming_it() {
    let dir = common::scratch().join("examples-damaged");
    let index =
        common::build(&memory_catalogue(&dir, &["remember a new fact about someone"]), "examples-damaged-index");
    let file = index.join("examples.f16");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[7] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();
    let err = Engine::with_embedder(&index, common::embedder(), Default::default()).err().expect("refused");
    assert!(err.to_string().contains("examples.f16"), "{err}");
    match toolsearch::index::IndexReader::open(&index) {
        Err(IndexError::Corrupted(path, _)) => assert!(path.ends_with("examples.f16"), "{path:?}"),
        other => panic!("{other:?}"),
    }
    let verify =
        std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch")).arg("verify").arg(&index).output().unwrap();
    assert!(!verify.status.success());
    assert!(String::from_utf8_lossy(&verify.stderr).contains("examples.f16"), "{verify:?}");
}
