//! Shared fixtures: the real model, loaded once per test binary, and indexes built from
//! catalogues in data/ and tests/data/.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use toolsearch::embed::OnnxEmbedder;
use toolsearch::{build_index, load_path, BuildOptions, Engine, EngineOptions};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn sample_catalog() -> PathBuf {
    repo().join("data/sample-catalog.json")
}

/// The real embedding model, loaded once per test binary (see `tests/all.rs`).
pub fn embedder() -> Arc<OnnxEmbedder> {
    crate::shared_embedder()
}

/// A temporary directory that lives for the whole test binary, under cargo's
/// `target/tmp` rather than the system's: a static is never dropped, so the directory is
/// removed when the process exits, and one a killed run leaves is `target/`'s to clean.
pub fn scratch() -> &'static Path {
    SCRATCH.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("scratch-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("tempdir under target/tmp")
            .keep();
        // SAFETY: `remove_scratch` is a plain `extern "C"` function with no arguments, as
        // `atexit` expects; it only reads `SCRATCH`, and finds nothing if that is not set yet.
        unsafe { libc::atexit(remove_scratch) };
        dir
    })
}

static SCRATCH: OnceLock<PathBuf> = OnceLock::new();

/// Removes the scratch directory as the process exits (the test harness ends with `exit`,
/// passed or failed, which runs `atexit` handlers).
extern "C" fn remove_scratch() {
    if let Some(dir) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Copies the test model `tests/models/NAME` into the scratch directory as `as_name`, to be
/// changed there.
pub fn copy_model(name: &str, as_name: &str) -> PathBuf {
    let to = scratch().join(as_name);
    let _ = std::fs::remove_dir_all(&to);
    copy_dir(&repo().join("tests/models").join(name), &to);
    to
}

/// Builds the index of `catalogue` into a fresh directory under the scratch dir.
pub fn build(catalogue: &Path, name: &str) -> PathBuf {
    let out = scratch().join(name);
    let catalog = load_path(catalogue, None).expect("catalogue loads");
    build_index(&catalog, embedder().as_ref(), &out, &BuildOptions::default()).expect("index builds");
    out
}

pub fn open(dir: &Path) -> Engine {
    Engine::with_embedder(dir, embedder(), EngineOptions::default()).expect("engine opens")
}

/// The engine over the sample catalogue, built once per test binary.
pub fn sample() -> &'static Engine {
    static S: OnceLock<Engine> = OnceLock::new();
    S.get_or_init(|| open(&build(&sample_catalog(), "sample")))
}

/// The Python of the test venv (the official MCP SDK, the frameworks), from scripts/test-deps.
pub fn python() -> PathBuf {
    let p = repo().join("target/py/bin/python");
    assert!(p.exists(), "{} is missing: run scripts/test-deps (scripts/test does)", p.display());
    p
}

/// Writes a gateway config (`gateway.json`) into `dir`; its path.
pub fn write_config(dir: &Path, config: &serde_json::Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_string_pretty(config).unwrap()).unwrap();
    path
}

pub mod gateway;
pub mod haproxy;
pub mod index_format;
pub mod oauth;
pub mod oauth_mock;
pub mod ports;
pub mod postgres;
pub mod probe;

/// Runs `command` with its stdout closed at once, as by a reader that stopped reading
/// (`| head -1`); what it wrote to stderr and how it ended.
pub fn with_stdout_closed(command: &mut std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}
