//! Opening an index: open + first search, with the model already loaded (what a server pays
//! to swap in a rebuilt index, and what an index adds to a CLI call beyond the model's load,
//! which runs beside the index's open), phase by phase, and the memory an opened index holds.
//!
//! `cargo bench --bench open -- DIR [DIR ...]`: for each index, one round in a fresh child
//! process for memory (resident set after the first search minus before the open: the lean
//! table, the engine's tables and the pages the open and the search touched), then 7 rounds
//! for time (medians; warm page cache, since a server's index was just written or read):
//! - `files`: `IndexReader::open` alone (metadata, sizes, the checks on open, the lean table,
//!   the maps);
//! - `engine`: the whole `Engine::with_embedder` (files, then the engine's path and name
//!   tables);
//! - `search`: the first search (query embedded, BM25 beside it, dense, fusion): its blocks
//!   of vectors are checked as it meets them.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use toolsearch::{Engine, EngineOptions, Principal, SearchToolsRequest};

mod common;

const ROUNDS: usize = 7;
const QUERY: &str = "convert an amount between two currencies";
const CHILD: &str = "--memory-child";

fn vm(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn search(engine: &Engine) {
    let req = SearchToolsRequest { query: QUERY.into(), ..Default::default() };
    let r = engine.search_tool_by_category(&Principal::trusted(), &req).expect("search");
    assert!(!r.results.is_empty());
}

/// One open + search in this process, printing `rss_kb tools`.
fn memory_child(dir: &Path) {
    let model = common::embedder();
    toolsearch::Embedder::embed_one(model.as_ref(), "warm the model up").unwrap();
    let before = vm("VmRSS:");
    let engine = Engine::with_embedder(dir, model, EngineOptions::default()).expect("index opens");
    search(&engine);
    println!("{} {}", vm("VmRSS:").saturating_sub(before), engine.catalog().tools.len());
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD) {
        return memory_child(Path::new(&args[1]));
    }
    let dirs: Vec<&String> = args.iter().filter(|a| Path::new(a).join("meta.bin").is_file()).collect();
    if dirs.is_empty() {
        eprintln!("usage: cargo bench --bench open -- INDEX_DIR [INDEX_DIR ...]");
        return;
    }
    let model = common::embedder();
    toolsearch::Embedder::embed_one(model.as_ref(), "warm the model up").unwrap();
    println!("| index | tools | files | engine (files + tables) | first search | open + first search | RSS held | per tool |");
    println!("|---|---|---|---|---|---|---|---|");
    for dir in dirs {
        let out = Command::new(std::env::current_exe().unwrap()).args([CHILD, dir]).output().expect("child runs");
        let line = String::from_utf8_lossy(&out.stdout);
        let mut words = line.split_whitespace().map(|w| w.parse::<u64>().unwrap_or(0));
        let (rss_kb, tools) = (words.next().unwrap_or(0), words.next().unwrap_or(1).max(1));
        let (mut files, mut engine_s, mut first) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = Instant::now();
            drop(toolsearch::IndexReader::open(Path::new(dir)).expect("index opens"));
            files.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let engine = Engine::with_embedder(Path::new(dir), model.clone(), EngineOptions::default()).unwrap();
            engine_s.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            search(&engine);
            first.push(t.elapsed().as_secs_f64());
        }
        let (f, e, s) = (median(files), median(engine_s.clone()), median(first.clone()));
        let total = median(engine_s.iter().zip(&first).map(|(a, b)| a + b).collect());
        println!(
            "| {dir} | {tools} | {:.0} ms | {:.0} ms | {:.1} ms | **{:.0} ms** | {:.0} MB | {:.0} B |",
            f * 1e3,
            e * 1e3,
            s * 1e3,
            total * 1e3,
            rss_kb as f64 / 1024.0,
            rss_kb as f64 * 1024.0 / tools as f64
        );
    }
}
