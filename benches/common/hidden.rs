//! The catalogue of `scripts/bench-scopes` for the benches that time a restricted caller
//! (`toolsets`, `first_words`): whether its time tells it how much is hidden.

use std::path::{Path, PathBuf};

use serde_json::json;
use toolsearch::{build_index, BuildOptions};

/// The catalogue of `scripts/bench-scopes`: 7,000 tools in 30 categories, and with `hidden`
/// 5,000 payment tools in 10 categories of their own, requiring `billing`.
pub fn catalogue(hidden: bool) -> serde_json::Value {
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

/// The index of `catalogue(hidden)` under `dir` (benches use target/toolsets-indexes), built
/// unless it is there.
pub fn index(dir: &Path, hidden: bool) -> PathBuf {
    let out = dir.join(if hidden { "hidden" } else { "none" });
    if !out.join("meta.bin").exists() {
        let file = dir.join(if hidden { "hidden.json" } else { "none.json" });
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(&file, catalogue(hidden).to_string()).unwrap();
        let catalog = toolsearch::load_path(&file, None).unwrap();
        build_index(&catalog, super::embedder().as_ref(), &out, &BuildOptions::default()).unwrap();
    }
    out
}

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
