//! Regression tests for what an attacker's pass broke (one test, or a few, per finding; each
//! fails on the code before its fix). docs/robustness.md maps every guarantee to its test.

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolsearch::index::IndexError;
use toolsearch::{build_index, load_path, BuildOptions, Embedder, Principal};

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().expect("binary runs")
}

fn small_catalogue() -> PathBuf {
    common::repo().join("tests/data/tools.jsonl")
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

// ---- 1. `index --out` never destroys what it did not write ----

#[test]
fn a_forged_meta_file_does_not_make_a_project_an_index() {
    let proj = common::scratch().join("sec-proj");
    write(&proj.join("src/main.rs"), "fn main(){}");
    write(&proj.join("meta.bin"), &"x".repeat(100));
    let catalog = load_path(&small_catalogue(), None).unwrap();
    let err = build_index(&catalog, common::embedder().as_ref(), &proj, &BuildOptions::default()).unwrap_err();
    assert!(matches!(err, IndexError::WouldClobber(..)), "{err}");
    assert_eq!(std::fs::read_to_string(proj.join("src/main.rs")).unwrap(), "fn main(){}");
    // The CLI says so and exits non-zero.
    let out = toolsearch(&["index", small_catalogue().to_str().unwrap(), "--out", proj.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to replace"));
    assert!(proj.join("src/main.rs").exists());
}

#[test]
fn rebuilding_an_index_whose_folder_holds_the_catalogue_keeps_the_catalogue() {
    let idx = common::scratch().join("sec-idx-with-source");
    let catalog = load_path(&small_catalogue(), None).unwrap();
    build_index(&catalog, common::embedder().as_ref(), &idx, &BuildOptions::default()).unwrap();
    let source = idx.join("my-catalog.jsonl");
    std::fs::copy(small_catalogue(), &source).unwrap();
    let err = build_index(&catalog, common::embedder().as_ref(), &idx, &BuildOptions::default()).unwrap_err();
    assert!(err.to_string().contains("my-catalog.jsonl"), "{err}");
    assert!(source.exists(), "the catalogue beside the index is kept");
    std::fs::remove_file(&source).unwrap();
    build_index(&catalog, common::embedder().as_ref(), &idx, &BuildOptions::default()).expect("a pure index rebuilds");
}

#[test]
fn a_symlinked_out_stays_a_symlink() {
    let base = common::scratch().join("sec-symlink");
    std::fs::create_dir_all(base.join("releases")).unwrap();
    let v1 = base.join("releases/v1");
    let current = base.join("current");
    let catalog = load_path(&small_catalogue(), None).unwrap();
    build_index(&catalog, common::embedder().as_ref(), &v1, &BuildOptions::default()).unwrap();
    std::os::unix::fs::symlink(&v1, &current).unwrap();
    build_index(&catalog, common::embedder().as_ref(), &current, &BuildOptions::default()).unwrap();
    assert!(std::fs::symlink_metadata(&current).unwrap().file_type().is_symlink(), "still a symlink");
    assert_eq!(std::fs::read_link(&current).unwrap(), v1);
    toolsearch::IndexReader::open(&current).expect("the link's target is a whole index");
}

// ---- 5. an open sees the old index or the new one, never a mix ----

#[test]
fn opening_while_rebuilding_never_sees_a_mix_of_two_builds() {
    let dir = common::scratch().join("sec-mix");
    std::fs::create_dir_all(&dir).unwrap();
    // Two catalogues that differ by one tool: after the first build every rebuild reuses
    // vectors and spends its time writing files, which is when a reader could see a mix.
    let mut a = String::new();
    for i in 0..1500 {
        a.push_str(&format!(
            "{{\"id\": \"t{i}\", \"name\": \"tool_{i}\", \"description\": \"Handles record batch {i} of the ledger.\", \"path\": [\"Zone{}\"]}}\n",
            i % 7
        ));
    }
    let b = a.replace("batch 7 of", "batch seven of");
    let (fa, fb) = (write(&dir.join("a.jsonl"), &a), write(&dir.join("b.jsonl"), &b));
    let (ca, cb) = (load_path(&fa, None).unwrap(), load_path(&fb, None).unwrap());
    let out = dir.join("idx");
    build_index(&ca, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
    build_index(&cb, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (opens, failures) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let (mut opens, mut failures) = (0, Vec::new());
            while !done.load(Ordering::SeqCst) {
                match toolsearch::IndexReader::open(&out) {
                    Ok(r) => assert!(r.catalog().tools.len() == 1500),
                    Err(e) => failures.push(e.to_string()),
                }
                opens += 1;
            }
            (opens, failures)
        });
        for round in 0..12 {
            let c = if round % 2 == 0 { &ca } else { &cb };
            build_index(c, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
        }
        done.store(true, Ordering::SeqCst);
        reader.join().unwrap()
    });
    assert!(opens > 5, "the reader opened {opens} times");
    assert!(failures.is_empty(), "{} of {opens} opens failed: {:?}", failures.len(), failures.first());
}

// ---- 8. every file of an index is as readable as the rest ----

#[test]
fn every_file_of_an_index_has_the_same_permissions() {
    let idx = common::build(&small_catalogue(), "sec-perms");
    let want = std::fs::metadata(idx.join("meta.bin")).unwrap().permissions().mode() & 0o777;
    fn walk(dir: &Path, want: u32) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, want);
            } else {
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, want, "{} is {mode:o}, the index is {want:o}", p.display());
            }
        }
    }
    walk(&idx, want);
}

// ---- 17. an unwritable --out is reported first, by the name the user gave ----

struct Counting(Arc<toolsearch::OnnxEmbedder>, AtomicUsize);

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn model_sha256(&self) -> &str {
        self.0.model_sha256()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, toolsearch::embed::EmbedError> {
        self.1.fetch_add(texts.len(), Ordering::SeqCst);
        self.0.embed(texts)
    }
}

#[test]
fn an_unwritable_out_is_reported_before_embedding_by_its_given_name() {
    let file = write(&common::scratch().join("sec-not-a-dir"), "a file");
    let out = file.join("idx");
    let embedder = Counting(common::embedder(), AtomicUsize::new(0));
    let catalog = load_path(&small_catalogue(), None).unwrap();
    let err = build_index(&catalog, &embedder, &out, &BuildOptions::default()).unwrap_err();
    assert_eq!(embedder.1.load(Ordering::SeqCst), 0, "nothing was embedded");
    let text = err.to_string();
    assert!(text.contains(out.to_str().unwrap()) && !text.contains(".tmp-"), "{text}");
}

// ---- 9. size limits hold for pipes and devices ----

#[test]
fn devices_and_pipes_are_read_through_a_bounded_reader() {
    let started = Instant::now();
    let out = toolsearch(&["index", "/dev/zero", "--out", common::scratch().join("sec-z").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/dev/zero"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(20));
    // A pipe works like a file.
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args([
            "index",
            "/dev/stdin",
            "--format",
            "jsonl",
            "--out",
            common::scratch().join("sec-pipe").to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&std::fs::read(small_catalogue()).unwrap()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// ---- 10. facade names are checked at index time ----

#[test]
fn a_facade_may_not_take_a_discovery_name_nor_another_facades_name() {
    let dir = common::scratch().join("sec-facades");
    let tool = |id: &str, path: &str| json!({"id": id, "name": id, "path": path, "description": "Does a thing."});
    let shadow = json!({
        "nodes": [{"path": "Ops", "summary": "Ops tools", "facade": {"name": "expand_tool"}}],
        "tools": [tool("a", "Ops")]
    });
    let f = write(&dir.join("shadow.json"), &shadow.to_string());
    let out = toolsearch(&["index", f.to_str().unwrap(), "--out", dir.join("i1").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("Ops") && err.contains("expand_tool"), "{err}");
    let twice = json!({
        "nodes": [
            {"path": "Ops", "summary": "Ops tools", "facade": {"name": "tools"}},
            {"path": "Dev", "summary": "Dev tools", "facade": {"name": "tools"}}
        ],
        "tools": [tool("a", "Ops"), tool("b", "Dev")]
    });
    let f = write(&dir.join("twice.json"), &twice.to_string());
    let out = toolsearch(&["index", f.to_str().unwrap(), "--out", dir.join("i2").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("Ops") && err.contains("Dev"), "{err}");
    assert!(!dir.join("i1").exists() && !dir.join("i2").exists(), "nothing written");
}

// ---- 11, 14, 15, 16. the catalogue refuses what would fail or mislead later ----

fn load_error(name: &str, tool: Value) -> String {
    let f = write(&common::scratch().join(format!("sec-cat/{name}.json")), &json!({"tools": [tool]}).to_string());
    load_path(&f, None).unwrap_err().to_string()
}

/// The warnings of a catalogue that loads.
fn load_warnings(name: &str, tool: Value) -> Vec<toolsearch::catalog::CatalogWarning> {
    let f = write(&common::scratch().join(format!("sec-cat/{name}.json")), &json!({"tools": [tool]}).to_string());
    load_path(&f, None).unwrap().warnings
}

#[test]
fn schemas_that_cannot_compile_are_kept_unvalidated_with_a_pointer_never_half_checked() {
    // Real clients list and call such tools; the catalogue keeps them, says where the schema
    // fails, and leaves validation to the upstream (tests/dialects.rs checks the calls).
    let with_args = |schema: Value| json!({"id": "t", "name": "t", "args_schema": schema});
    for (name, schema, at) in [
        (
            "pattern",
            json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "(unclosed"}}}),
            "/args_schema/properties/q/pattern",
        ),
        (
            "minimum",
            json!({"type": "object", "properties": {"n": {"minimum": "abc"}}}),
            "/args_schema/properties/n/minimum",
        ),
        (
            "ref",
            json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/nope"}}}),
            "/args_schema/properties/n/$ref",
        ),
        ("remote", json!({"$ref": "https://example.com/schema.json"}), "/args_schema/$ref"),
    ] {
        let w = load_warnings(name, with_args(schema));
        assert_eq!(w.len(), 1, "{name}: {w:?}");
        assert_eq!(w[0].kind, toolsearch::catalog::WarningKind::Unvalidated, "{name}");
        assert!(w[0].at.ends_with(at) && w[0].message.contains("does not compile"), "{name}: {}", w[0]);
    }
    // `required` naming an undeclared property is valid JSON Schema: no warning at all.
    let w = load_warnings("required", with_args(json!({"type": "object", "properties": {"a": {}}, "required": ["b"]})));
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn ids_with_control_characters_and_oversized_fields_are_refused() {
    let e = load_error("esc", json!({"id": "evil\u{1b}[2J", "name": "t"}));
    assert!(e.contains("control character"), "{e}");
    let e = load_error("meta", json!({"id": "t", "name": "t", "meta": {"blob": "x".repeat(200_000)}}));
    assert!(e.contains("meta") && e.contains("limit"), "{e}");
    let e = load_error("tags", json!({"id": "t", "name": "t", "tags": vec!["tag"; 1000]}));
    assert!(e.contains("tags") && e.contains("limit"), "{e}");
    let e = load_error("examples", json!({"id": "t", "name": "t", "examples": ["x".repeat(100_000)]}));
    assert!(e.contains("examples") && e.contains("limit"), "{e}");
}

#[test]
fn one_rule_for_paths_at_load_and_in_requests() {
    let e = load_error("double-slash", json!({"id": "t", "name": "t", "path": "A//B"}));
    assert!(e.contains("empty"), "{e}");
    // A segment holding `/` is kept, and reachable by its escaped display form.
    let f = write(
        &common::scratch().join("sec-cat/slash-segment.json"),
        &json!({"tools": [{"id": "t", "name": "t", "path": ["Finance", "BIN/IIN Lookup"], "description": "Look up a card's issuer."}]}).to_string(),
    );
    let idx = common::build(&f, "sec-slash-segment");
    let engine = common::open(&idx);
    let listed = engine.handle(&Principal::trusted(), "list", json!({"path": "Finance"})).unwrap();
    assert_eq!(listed["nodes"][0]["path"], "Finance/BIN\\/IIN Lookup");
    let inside = engine.handle(&Principal::trusted(), "list", json!({"path": "Finance/BIN\\/IIN Lookup"})).unwrap();
    assert_eq!(inside["tools"][0]["tool_id"], "t");
    assert_eq!(
        engine.handle(&Principal::trusted(), "list", json!({"path": "Finance/BIN/IIN Lookup"})).unwrap_err().code,
        toolsearch::ErrorCode::UnknownPath
    );
    let engine = common::sample();
    let err = engine.handle(&Principal::trusted(), "list", json!({"path": "/".repeat(10_000)})).unwrap_err();
    assert_eq!(err.code, toolsearch::ErrorCode::InvalidArgument, "{err:?}");
    let err = engine.handle(&Principal::trusted(), "list", json!({"path": "Storage//Buckets"})).unwrap_err();
    assert_eq!(err.code, toolsearch::ErrorCode::InvalidArgument, "{err:?}");
    assert!(engine.handle(&Principal::trusted(), "list", json!({"path": "/Storage/Buckets/"})).is_ok());
}

// ---- 4, 12. executor timeouts hold ----

#[test]
fn a_call_whose_executor_hangs_is_a_timeout_error_within_the_deadline() {
    let idx = common::build(&common::sample_catalog(), "sec-call");
    for executor in [&["sleep", "20"][..], &["sleep", "infinity"][..]] {
        let started = Instant::now();
        let mut cmd = vec!["call", idx.to_str().unwrap(), "weather.current", "--args", r#"{"location": "Paris"}"#];
        cmd.extend(["--timeout", "1", "--"]);
        cmd.extend(executor);
        let out = toolsearch(&cmd);
        assert!(!out.status.success(), "a timeout is an error");
        assert!(String::from_utf8_lossy(&out.stderr).contains("timed out"), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(started.elapsed() < Duration::from_secs(10), "{:?} took {:?}", executor, started.elapsed());
    }
}

#[test]
fn out_of_range_timeouts_are_usage_errors_not_panics() {
    let idx = common::build(&common::sample_catalog(), "sec-call-range");
    let out = toolsearch(&["call", idx.to_str().unwrap(), "weather.current", "--timeout", "18446744073709551615"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let config = write(&common::scratch().join("sec-serve-timeout.json"), r#"{"timeout_secs": 18446744073709551615}"#);
    let out = toolsearch(&["serve", idx.to_str().unwrap(), "--config", config.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("timeout_secs") && !err.contains("internal error"), "{err}");
}

// ---- 13, 14. the terminal: closed pipes and control characters ----

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let idx = common::build(&common::sample_catalog(), "sec-pipe-idx");
    let out = common::with_stdout_closed(Command::new(env!("CARGO_BIN_EXE_toolsearch")).args([
        "list",
        idx.to_str().unwrap(),
        "--limit",
        "50",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "{err}");
    assert!(out.status.success(), "{:?}", out.status);
}

#[test]
fn control_characters_from_a_catalogue_are_escaped_in_human_output() {
    let dir = common::scratch().join("sec-esc");
    let cat = json!({"tools": [{"id": "term.clear", "name": "clear", "path": "Term",
        "summary": "Clears \u{1b}[2J the screen\nFAKE LINE", "description": "Clears the terminal screen."}]});
    let f = write(&dir.join("esc.json"), &cat.to_string());
    let idx = dir.join("idx");
    assert!(toolsearch(&["index", f.to_str().unwrap(), "--out", idx.to_str().unwrap()]).status.success());
    let out = toolsearch(&["list", idx.to_str().unwrap(), "--path", "Term"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}') && text.contains("\\u{1b}"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("FAKE LINE")), "{text}");
}
