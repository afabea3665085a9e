//! What making a session's tool set costs a restricted caller, and whether its time tells the
//! caller how much is hidden (docs/protocol.md, "Timing"): `ToolSet::new` for a caller holding
//! `user`, over two indexes in one process, interleaved: HIDDEN (7,000 tools it may see and
//! 5,000 that require `billing`) and NONE (the same 7,000 alone). Medians of 60 rounds after a
//! first (which pays for a cold process, whatever the catalogue), and HIDDEN / NONE.
//!
//! `cargo bench --bench toolsets`: the two indexes are built under target/toolsets-indexes the
//! first time (about a minute) and kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use toolsearch::disclosure::{Availability, LiveCatalog, ToolSet, ToolSetConfig};
use toolsearch::{build_index, BuildOptions, Engine, EngineOptions, Principal};

mod common;

const ROUNDS: usize = 60;

/// The catalogue of `scripts/bench-scopes`: 7,000 tools in 30 categories, and with `hidden`
/// 5,000 payment tools in 10 categories of their own, requiring `billing`.
fn catalogue(hidden: bool) -> serde_json::Value {
    let words = ["file", "image", "user", "report", "email", "calendar", "chart", "table", "queue", "log"];
    let verbs = ["create", "delete", "list", "update", "send", "fetch", "resize", "export", "import", "archive"];
    let mut tools: Vec<serde_json::Value> = (0..7000)
        .map(|i| {
            let (v, w) = (verbs[i % 10], words[(i / 10) % 10]);
            json!({"id": format!("v{i}"), "name": format!("{v}_{w}_{i}"), "path": format!("Cat{}", i % 30),
                   "description": format!("{v} a {w} in the system, variant {i}.")})
        })
        .collect();
    for i in 0..if hidden { 5000 } else { 0 } {
        let v = verbs[i % 10];
        tools.push(json!({"id": format!("h{i}"), "name": format!("{v}_payment_{i}"), "path": format!("Pay{}", i % 10),
                          "requires": ["billing"], "description": format!("{v} a payment for a customer, variant {i}.")}));
    }
    json!({ "tools": tools })
}

/// The index of `catalogue(hidden)` under `dir`, built unless it is there.
fn index(dir: &Path, hidden: bool) -> PathBuf {
    let out = dir.join(if hidden { "hidden" } else { "none" });
    if !out.join("meta.bin").exists() {
        let file = dir.join(if hidden { "hidden.json" } else { "none.json" });
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(&file, catalogue(hidden).to_string()).unwrap();
        let catalog = toolsearch::load_path(&file, None).unwrap();
        build_index(&catalog, common::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = common::repo().join("target/toolsets-indexes");
    let embedder = common::embedder();
    let lives: Vec<(&str, Arc<LiveCatalog>)> = [("hidden", true), ("none", false)]
        .into_iter()
        .map(|(name, hidden)| {
            let engine = Engine::with_embedder(&index(&dir, hidden), embedder.clone(), EngineOptions::default());
            (name, LiveCatalog::new(engine.expect("index opens")))
        })
        .collect();
    let who = Principal::with_scopes(["user"]);
    let mut times = vec![Vec::new(); lives.len()];
    for round in 0..=ROUNDS {
        for (i, (_, live)) in lives.iter().enumerate() {
            let config = ToolSetConfig { principal: who.clone(), ..ToolSetConfig::default() };
            let start = Instant::now();
            let set = ToolSet::new(live.clone(), Arc::new(Availability::default()), config).expect("tool set");
            let took = start.elapsed().as_secs_f64() * 1000.0;
            drop(set);
            if round > 0 {
                times[i].push(took);
            }
        }
    }
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    for ((name, _), m) in lives.iter().zip(&medians) {
        println!("ToolSet::new, {name}: {m:.3} ms");
    }
    println!("hidden / none: {:.2}", medians[0] / medians[1]);
}
