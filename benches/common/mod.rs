//! What both benches share: the model, and catalogues of any size made from real tools.
//!
//! Catalogues are made by combining and varying the tools of ../shared/bench (read from there,
//! never committed); without it they fall back to the sample catalogue, varied.
#![allow(dead_code)] // each bench uses part of it

pub mod hidden;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolsearch::embed::{EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch::{Catalog, Tool};

/// The allocator of the programs the benches stand for (the CLI and the Python module), so
/// they measure what a user runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn embedder() -> Arc<OnnxEmbedder> {
    let files = ModelFiles::choose(None, None).expect("run scripts/setup first");
    Arc::new(OnnxEmbedder::load(&files, EmbedderOptions::default()).expect("model loads"))
}

/// Real tools to vary: both bench sets when present, else the sample catalogue.
fn base_tools() -> Vec<Tool> {
    let shared = repo().join("../shared/bench");
    let mut tools = Vec::new();
    for set in ["toolbench_stb", "metatool"] {
        let p = shared.join(set).join("tools.jsonl");
        if p.is_file() {
            tools.extend(toolsearch::load_path(&p, None).expect("bench set loads").tools);
        }
    }
    if tools.is_empty() {
        tools = toolsearch::load_path(&repo().join("data/sample-catalog.json"), None).unwrap().tools;
    }
    tools
}

/// The regional qualifiers that tell variants apart.
pub const REGIONS: [&str; 12] =
    ["EU", "US", "APAC", "LATAM", "Nordic", "Iberia", "Benelux", "Alpine", "Baltic", "Gulf", "Pacific", "Andean"];

/// A catalogue of `n` tools: the real tools, then variants of them (another id, a regional
/// qualifier in name and description, another category) so no two documents are identical.
pub fn catalogue(n: usize) -> Catalog {
    let base = base_tools();
    let mut tools = Vec::with_capacity(n);
    for i in 0..n {
        let mut t = base[i % base.len()].clone();
        let round = i / base.len();
        if round > 0 {
            let region = REGIONS[(round - 1) % REGIONS.len()];
            t.id = format!("{}#{round}", t.id);
            t.name = format!("{} {region} {round}", t.name);
            t.details.description = format!("{} ({region} edition {round})", t.details.description);
            for p in &mut t.paths {
                p.insert(0, format!("{region} {}", round.div_ceil(REGIONS.len())));
            }
        }
        tools.push(t);
    }
    // Serialised straight from the tools (no JSON tree of a million tools in between), and
    // the tools dropped before the text is parsed back.
    #[derive(serde::Serialize)]
    struct Manifest<'a> {
        tools: &'a [Tool],
    }
    let text = serde_json::to_string(&Manifest { tools: &tools }).unwrap();
    drop(tools);
    toolsearch::catalog::parse_str(Path::new("bench.json"), &text, None).expect("varied catalogue is valid")
}
