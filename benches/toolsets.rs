//! What making a session's tool set costs a restricted caller, and whether its time tells the
//! caller how much is hidden (docs/protocol.md, "Timing"): `ToolSet::new` for a caller holding
//! `user`, over two indexes in one process, interleaved: HIDDEN (7,000 tools it may see and
//! 5,000 that require `billing`) and NONE (the same 7,000 alone). Medians of 60 rounds after a
//! first (which pays for a cold process, whatever the catalogue), and HIDDEN / NONE.
//!
//! `cargo bench --bench toolsets`: the two indexes are built under target/toolsets-indexes the
//! first time (about a minute) and kept.

use std::sync::Arc;
use std::time::Instant;

use toolsearch::disclosure::{Availability, LiveCatalog, ToolSet, ToolSetConfig};
use toolsearch::{Engine, EngineOptions, Principal};

mod common;

use common::hidden::{index, median};

const ROUNDS: usize = 60;

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
