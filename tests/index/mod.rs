//! The on-disk index: JSON Lines input, vector reuse, HNSW, integrity checks and atomic writes.

#[path = "../common/mod.rs"]
mod common;
mod integrity;
mod reuse;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use toolsearch::index::{IndexError, OpenOptions};
use toolsearch::{
    build_index, load_path, BuildOptions, Embedder, Engine, EngineOptions, PathSpec, Principal, SearchToolsRequest,
};

fn top(engine: &Engine, query: &str) -> String {
    let r = engine
        .search_tool_by_category(
            &Principal::trusted(),
            &SearchToolsRequest { query: query.into(), ..Default::default() },
        )
        .unwrap();
    r.results[0].tool_id.clone()
}

use common::copy_dir;

/// A scratch copy, named `name`, of an index of tests/data/tools.jsonl (to damage).
fn index_copy(name: &str) -> std::path::PathBuf {
    let dir = common::scratch().join(name);
    copy_dir(&common::build(&common::repo().join("tests/data/tools.jsonl"), &format!("{name}-source")), &dir);
    dir
}

#[test]
fn a_json_lines_catalogue_indexes_and_answers_with_scopes() {
    let dir = common::build(&common::repo().join("tests/data/tools.jsonl"), "jsonl");
    let engine = common::open(&dir);
    assert_eq!(top(&engine, "upcoming concerts of my favourite band"), "Music::Gigs::artist_concerts");
    let r = engine
        .search_tool_by_category(
            &Principal::trusted(),
            &SearchToolsRequest {
                query: "latest share price for a ticker".into(),
                category_path: Some(PathSpec::Joined("Finance/Stocks".into())),
                limit: Some(5),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(r.results.iter().all(|p| p.path == "Finance/Stocks"));
}

#[test]
fn hnsw_search_agrees_with_exact_scan() {
    let dir = common::scratch().join("sample-hnsw");
    copy_dir(&common::build(&common::sample_catalog(), "sample-for-hnsw"), &dir);
    let exact = common::open(&dir);
    let options =
        EngineOptions { open: OpenOptions { exact_scan_max: 0, ..OpenOptions::default() }, ..EngineOptions::default() };
    let hnsw = Engine::with_embedder(&dir, common::embedder(), options).unwrap();
    for q in [
        "rename a function",
        "send a slack message",
        "weather forecast for Oslo this week",
        "refund a payment",
        "crop an image",
    ] {
        assert_eq!(top(&exact, q), top(&hnsw, q), "{q}");
    }
}

#[test]
fn rebuilding_reuses_vectors_and_one_changed_tool_is_embedded_alone() {
    let mut catalog = load_path(&common::repo().join("tests/data/tools.jsonl"), None).unwrap();
    let out = common::scratch().join("reuse");
    let e = common::embedder();
    let first = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    assert_eq!(first.embedded, first.tools + first.nodes);
    let again = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    assert_eq!((again.embedded, again.reused), (0, first.tools + first.nodes));
    catalog.tools[2].details.description = "Live football scores, updated every minute.".into();
    let changed = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    assert_eq!(changed.embedded, 1);
    let engine = common::open(&out);
    assert_eq!(
        engine.full_tool(&catalog.tools[2].id).unwrap().unwrap().details.description,
        "Live football scores, updated every minute."
    );
    assert_eq!(
        engine.catalog().tools[2].details.description,
        "",
        "the lean catalogue leaves descriptions in the records"
    );
}

#[test]
fn a_rebuild_that_changed_few_tools_updates_the_graph_and_finds_the_changed_tool() {
    let mut catalog = load_path(&common::sample_catalog(), None).unwrap();
    let out = common::scratch().join("graph-update");
    let e = common::embedder();
    let first = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    assert!(!first.graph_updated);
    let id = catalog.tools[7].id.clone();
    catalog.tools[7].details.description = "Waters the office plants on a schedule and reports soil moisture.".into();
    let changed = build_index(&catalog, e.as_ref(), &out, &BuildOptions::default()).unwrap();
    assert!(changed.graph_updated, "one changed tool of {} updates the graph", catalog.tools.len());
    // Through the graph, not the exact scan: the changed tool was inserted and is found.
    let options =
        EngineOptions { open: OpenOptions { exact_scan_max: 0, ..OpenOptions::default() }, ..EngineOptions::default() };
    let engine = Engine::with_embedder(&out, common::embedder(), options).unwrap();
    assert_eq!(top(&engine, "water the office plants and check soil moisture"), id);
    let q = engine.tool_query("water the office plants and check soil moisture").unwrap();
    let graph: Vec<u32> = engine.index().graph_tools(&q, 10, 64).unwrap().iter().map(|h| h.ord).collect();
    let exact: Vec<u32> = engine.index().exact_tools(&q, 10).unwrap().iter().map(|h| h.ord).collect();
    assert_eq!(graph[0], exact[0]);
}

#[test]
fn building_refuses_to_replace_a_directory_that_is_not_an_index() {
    let out = common::scratch().join("precious");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "keep me").unwrap();
    let catalog = load_path(&common::repo().join("tests/data/tools.jsonl"), None).unwrap();
    let err = build_index(&catalog, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap_err();
    assert!(matches!(err, IndexError::WouldClobber(..)));
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "keep me");
    let leftovers: Vec<_> = std::fs::read_dir(common::scratch())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".precious"))
        .collect();
    assert!(leftovers.is_empty());
}

/// A catalogue big enough that the build spends a visible moment writing its files.
fn big_catalogue(path: &Path, tools: usize) {
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta", "theta", "lambda"];
    let mut text = String::new();
    for i in 0..tools {
        let (a, b) = (words[i % 10], words[(i / 10) % 10]);
        text.push_str(&format!(
            "{{\"id\": \"t{i}\", \"name\": \"{a}_{b}_{i}\", \"description\": \"Handles {a} {b} records, batch {i}.\", \"parameters\": {{\"type\": \"object\", \"properties\": {{\"x\": {{\"type\": \"string\"}}}}}}, \"path\": [\"{a}\", \"{b}\"]}}\n"
        ));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn an_interrupted_build_leaves_the_previous_index_intact() {
    let scratch = common::scratch().join("interrupt");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = scratch.join("idx");
    let old = common::build(&common::repo().join("tests/data/tools.jsonl"), "interrupt-old");
    copy_dir(&old, &out);
    let before = common::open(&out).index().full_catalog().unwrap();
    let big = scratch.join("big.jsonl");
    big_catalogue(&big, 4000);

    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["index", big.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .spawn()
        .unwrap();
    // Kill the build while it writes its staging directory, i.e. mid-write (the directory is
    // created before embedding; the tool records are its first file).
    let staging = scratch.join(format!(".idx.tmp-{}-0", child.id()));
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut killed_mid_write = false;
    while Instant::now() < deadline {
        if staging.join("tools.json").exists() {
            child.kill().unwrap();
            killed_mid_write = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.wait().unwrap();
    assert!(killed_mid_write, "the build finished before it could be interrupted");
    let after = common::open(&out);
    assert_eq!(after.index().full_catalog().unwrap(), before, "the previous index must still be served, whole");
    assert_eq!(top(&after, "exchange rate of the euro"), "Finance::FX::exchange_rate");

    // The next build clears the dead build's staging directory and succeeds.
    let small = load_path(&common::repo().join("tests/data/tools.jsonl"), None).unwrap();
    build_index(&small, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
    assert!(!staging.exists());
}

#[test]
fn concurrent_builds_of_one_target_both_succeed_and_leave_a_whole_index() {
    let out = common::scratch().join("concurrent");
    let catalog = load_path(&common::repo().join("tests/data/tools.jsonl"), None).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| s.spawn(|| build_index(&catalog, common::embedder().as_ref(), &out, &BuildOptions::default())))
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
    });
    assert_eq!(common::open(&out).index().full_catalog().unwrap(), catalog);
    let leftovers = std::fs::read_dir(common::scratch())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".concurrent"))
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn a_released_model_loads_again_and_embeds_the_same() {
    // Its own embedder: the shared one serves the other tests concurrently.
    let files = toolsearch::ModelFiles::locate(None).unwrap();
    let embedder = toolsearch::OnnxEmbedder::load(&files, Default::default()).unwrap();
    let before = embedder.embed_one("convert an amount between two currencies").unwrap();
    embedder.release();
    let after = embedder.embed_one("convert an amount between two currencies").unwrap();
    assert_eq!(before.len(), 384);
    assert!(before.iter().zip(&after).all(|(a, b)| (a - b).abs() < 1e-6));
    let many = embedder.embed(&["one", "two words", "and three words"]).unwrap();
    embedder.release();
    assert_eq!(embedder.embed(&["one", "two words", "and three words"]).unwrap(), many);
}

#[test]
fn a_build_that_owns_its_catalogue_writes_the_same_index() {
    // The CLI's path: the catalogue is handed over and dropped before the graph is built.
    let catalog = toolsearch::load_path(&common::sample_catalog(), None).unwrap();
    let borrowed = common::build(&common::sample_catalog(), "sample-borrowed");
    let owned = common::scratch().join("sample-owned");
    let report =
        toolsearch::build_index_owned(catalog.clone(), common::embedder().as_ref(), &owned, &Default::default())
            .unwrap();
    assert_eq!((report.tools, report.nodes), (catalog.tools.len(), catalog.nodes.len()));
    let (a, b) = (toolsearch::IndexReader::open(&borrowed).unwrap(), toolsearch::IndexReader::open(&owned).unwrap());
    assert_eq!(a.meta().catalog_hash, b.meta().catalog_hash);
    assert_eq!((a.meta().tools, a.meta().nodes), (b.meta().tools, b.meta().nodes));
    for file in ["catalog.bin", "tools.json", "vectors.f16", "hashes.bin"] {
        assert_eq!(std::fs::read(borrowed.join(file)).unwrap(), std::fs::read(owned.join(file)).unwrap(), "{file}");
    }
    let (a, b) = (common::open(&borrowed), common::open(&owned));
    for q in ["rename a function", "refund a payment", "crop an image"] {
        assert_eq!(top(&a, q), top(&b, q), "{q}");
    }
}

/// The sample catalogue's tools as a JSON Lines file (without their groups, which a line cannot
/// declare), for the streamed build.
fn sample_as_jsonl(name: &str) -> std::path::PathBuf {
    let catalog = toolsearch::load_path(&common::sample_catalog(), None).unwrap();
    let file = common::scratch().join(name);
    let lines: Vec<String> = catalog
        .tools
        .into_iter()
        .map(|mut t| {
            t.group = None;
            serde_json::to_string(&t).unwrap()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    file
}

#[test]
fn a_json_lines_catalogue_streamed_through_the_build_writes_the_same_index() {
    // The CLI's path for JSON Lines: no catalogue in memory, each tool written as it is read.
    let file = sample_as_jsonl("sample-streamed.jsonl");
    let loaded = common::build(&file, "sample-loaded");
    let streamed = common::scratch().join("sample-streamed");
    let _ = std::fs::remove_dir_all(&streamed);
    let report =
        toolsearch::build_index_jsonl(&file, common::embedder().as_ref(), &streamed, &Default::default()).unwrap();
    let catalog = toolsearch::load_path(&file, None).unwrap();
    assert_eq!((report.tools, report.nodes), (catalog.tools.len(), catalog.nodes.len()));
    let (a, b) = (toolsearch::IndexReader::open(&loaded).unwrap(), toolsearch::IndexReader::open(&streamed).unwrap());
    assert_eq!(a.meta().catalog_hash, catalog.content_hash());
    assert_eq!(a.meta().catalog_hash, b.meta().catalog_hash);
    for file in ["catalog.bin", "tools.json", "vectors.f16", "hashes.bin"] {
        assert_eq!(std::fs::read(loaded.join(file)).unwrap(), std::fs::read(streamed.join(file)).unwrap(), "{file}");
    }
    let (a, b) = (common::open(&loaded), common::open(&streamed));
    for q in ["rename a function", "refund a payment", "crop an image"] {
        assert_eq!(top(&a, q), top(&b, q), "{q}");
    }
}

#[test]
fn a_bad_line_in_a_streamed_catalogue_is_named_and_leaves_nothing_behind() {
    let dir = common::scratch().join("streamed-bad");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tools.jsonl");
    let good = r#"{"id": "a", "name": "a", "description": "first"}"#;
    // A schema that is neither an object nor a boolean is not a tool: an error (a schema that
    // is one but does not compile is indexed unvalidated, with a warning; tests/dialects.rs).
    let bad = r#"{"id": "b", "name": "b", "parameters": "object"}"#;
    std::fs::write(&file, format!("{good}\n\n{bad}\n")).unwrap();
    let out = dir.join("index");
    let err = toolsearch::build_index_jsonl(&file, common::embedder().as_ref(), &out, &Default::default()).unwrap_err();
    let toolsearch::index::IndexError::Catalog(e) = &err else { panic!("not a catalogue error: {err}") };
    assert_eq!(e.location, toolsearch::catalog::Location::Line { line: 3, column: 0 }, "{e}");
    assert!(e.to_string().contains("field `parameters`"), "{e}");
    // Nothing was written: no index, no staging directory beside it.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("tools.jsonl")]);
    // A duplicate id is found across lines too, naming both.
    std::fs::write(&file, format!("{good}\n{good}\n")).unwrap();
    let err = toolsearch::build_index_jsonl(&file, common::embedder().as_ref(), &out, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("duplicate tool id \"a\" (first defined at line 1)"), "{err}");
    assert!(!out.exists());
}
