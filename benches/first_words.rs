//! Whether a restricted caller can time the words the tools hidden from it hold
//! (docs/protocol.md, "Timing"): over two indexes in one process, HIDDEN (7,000 tools a caller
//! holding `user` may see and 5,000 payment tools that require `billing`) and NONE (the same
//! 7,000 alone), each round opens a fresh engine of each, prepares it for the caller as a server
//! does on start (timed: `prepare`), asks a long query (whose vector is then cached), and times
//! the same query with words after the model's 2,000 characters that only the hidden tools hold
//! (`first words`: BM25 meets them for the first time), then once more (`again`); then the
//! first request of a caller whose scopes no host named (`openid`, `profile`: an identity
//! provider's token) with the same query (`unnamed set`). Medians of 30 rounds after a first,
//! and HIDDEN / NONE; and the bytes the caller's view keeps of every word.
//!
//! `cargo bench --bench first_words`: the indexes are those of `cargo bench --bench toolsets`
//! (built under target/toolsets-indexes the first time, about a minute).

use std::time::Instant;

use serde_json::json;
use toolsearch::index::{DocKind, View};
use toolsearch::{Engine, EngineOptions, Principal};

mod common;

use common::hidden::{index, median};

const ROUNDS: usize = 30;

fn main() {
    let dir = common::repo().join("target/toolsets-indexes");
    let embedder = common::embedder();
    let indexes = [("hidden", index(&dir, true)), ("none", index(&dir, false))];
    let who = Principal::with_scopes(["user"]);
    let prefix = format!("find the thing {}", "y".repeat(2000));
    let words = format!("{prefix} payment customer");
    let stranger = Principal::with_scopes(["openid", "profile"]);
    let steps = ["prepare", "first words", "again", "unnamed set"];
    let mut times = vec![vec![Vec::new(); steps.len()]; indexes.len()];
    for round in 0..=ROUNDS {
        for (i, (_, dir)) in indexes.iter().enumerate() {
            let engine = Engine::with_embedder(dir, embedder.clone(), EngineOptions::default()).expect("index opens");
            let search_as = |who: &Principal, query: &str| {
                let start = Instant::now();
                // An answer or a "nothing fits" (the long query fits nothing): both are timed.
                let _ = engine.handle(who, "search_tool_by_category", json!({ "query": query }));
                start.elapsed().as_secs_f64() * 1000.0
            };
            let search = |query: &str| search_as(&who, query);
            let start = Instant::now();
            engine.prepare_for([&who]);
            let took = [
                start.elapsed().as_secs_f64() * 1000.0,
                (search(&prefix), search(&words)).1,
                search(&words),
                search_as(&stranger, &words),
            ];
            if round > 0 {
                for (t, ms) in times[i].iter_mut().zip(took) {
                    t.push(ms);
                }
            }
        }
    }
    // What the caller's view keeps: every word's postings of the 7,000 tools it may see.
    let engine = Engine::with_embedder(&indexes[0].1, embedder.clone(), EngineOptions::default()).expect("index opens");
    let tools = &engine.catalog().tools;
    let seen: Vec<u32> = (0..tools.len() as u32).filter(|&o| tools[o as usize].requires.is_empty()).collect();
    assert_eq!(seen.len(), 7000);
    let view = View::of(1, &seen, engine.catalog().tools.len());
    let words = engine.index().view_lexicon(DocKind::Tool, &view, usize::MAX).expect("lexicon").expect("restricted");
    println!("the view's words: {:.2} MiB", words.bytes() as f64 / (1 << 20) as f64);
    let medians: Vec<Vec<f64>> = times.into_iter().map(|by_step| by_step.into_iter().map(median).collect()).collect();
    for (s, step) in steps.iter().enumerate() {
        let (h, n) = (medians[0][s], medians[1][s]);
        println!("{step}: hidden {h:.3} ms, none {n:.3} ms, hidden / none {:.2}", h / n);
    }
}
