//! Shared fixtures: the real model, loaded once per test binary, and indexes built from
//! catalogues in data/ and tests/data/.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use toolsearch::embed::{EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch::{build_index, load_path, BuildOptions, Engine, EngineOptions};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn sample_catalog() -> PathBuf {
    repo().join("data/sample-catalog.json")
}

pub fn embedder() -> Arc<OnnxEmbedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        let files = ModelFiles::locate(None).expect("model files: run scripts/setup");
        Arc::new(OnnxEmbedder::load(&files, EmbedderOptions::default()).expect("model loads"))
    })
    .clone()
}

/// A temporary directory that lives for the whole test binary.
pub fn scratch() -> &'static Path {
    static D: OnceLock<tempfile::TempDir> = OnceLock::new();
    D.get_or_init(|| tempfile::tempdir().expect("tempdir")).path()
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
