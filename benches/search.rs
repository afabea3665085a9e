//! Search latency at 1k, 10k (and, with TOOLSEARCH_BENCH_100K=1, 100k) tools against the
//! query-embedding time alone, the cached path, and index build throughput against raw
//! embedding throughput.
//!
//! Catalogues are made by combining and varying the tools of ../shared/bench (read from there,
//! never committed); without it the benches fall back to the sample catalogue, varied.
//! Built indexes are kept under target/bench-indexes between runs.

mod common;

use std::path::PathBuf;

use common::{catalogue, embedder, repo};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use toolsearch::embed::OnnxEmbedder;
use toolsearch::{build_index, BuildOptions, Embedder, Engine, EngineOptions};

fn index_of(n: usize, embedder: &OnnxEmbedder) -> PathBuf {
    let dir = repo().join(format!("target/bench-indexes/{n}"));
    if toolsearch::IndexReader::open(&dir).is_err() {
        eprintln!("building the {n}-tool bench index (once)...");
        build_index(&catalogue(n), embedder, &dir, &BuildOptions::default()).unwrap();
    }
    dir
}

const QUERIES: [&str; 8] = [
    "find upcoming concerts of an artist",
    "convert an amount between two currencies",
    "get the weather forecast for next week",
    "search recipes by ingredient",
    "translate a sentence into French",
    "look up the live score of a football match",
    "generate a QR code for a link",
    "check whether an email address is valid",
];

fn search_latency(c: &mut Criterion) {
    let embedder = embedder();
    let mut sizes = vec![1_000, 10_000];
    if std::env::var_os("TOOLSEARCH_BENCH_100K").is_some() {
        sizes.push(100_000);
    }
    let mut g = c.benchmark_group("search");
    g.sample_size(30);
    let mut i = 0usize;
    g.bench_function("query_embedding_alone", |b| {
        b.iter(|| {
            i += 1;
            embedder.embed_one(&format!("{} {i}", QUERIES[i % QUERIES.len()])).unwrap()
        })
    });
    for n in sizes {
        let dir = index_of(n, &embedder);
        let uncached = EngineOptions { query_cache: 0, ..EngineOptions::default() };
        let engine = Engine::with_embedder(&dir, embedder.clone(), uncached).unwrap();
        let mut j = 0usize;
        g.bench_with_input(BenchmarkId::new("hybrid_uncached", n), &n, |b, _| {
            b.iter(|| {
                j += 1;
                engine
                    .rank_tools(&format!("{} {j}", QUERIES[j % QUERIES.len()]), &toolsearch::Filter::default(), 10)
                    .unwrap()
            })
        });
        let cached = Engine::with_embedder(&dir, embedder.clone(), EngineOptions::default()).unwrap();
        g.bench_with_input(BenchmarkId::new("hybrid_cached", n), &n, |b, _| {
            b.iter(|| cached.rank_tools(QUERIES[0], &toolsearch::Filter::default(), 10).unwrap())
        });
    }
    g.finish();
}

fn build_throughput(c: &mut Criterion) {
    let embedder = embedder();
    let catalog = catalogue(500);
    let texts: Vec<String> = catalog.tools.iter().map(toolsearch::index::document::tool_dense_text).collect();
    let docs = (catalog.tools.len() + catalog.nodes.len()) as u64;
    let mut g = c.benchmark_group("build");
    g.sample_size(10);
    g.throughput(Throughput::Elements(docs));
    let all: Vec<String> = texts.iter().cloned().chain(catalog.nodes.iter().map(|n| n.path.join(" / "))).collect();
    g.bench_function("raw_embedding_500_tools", |b| {
        b.iter(|| embedder.embed(&all.iter().map(String::as_str).collect::<Vec<_>>()).unwrap())
    });
    let out = tempfile::tempdir().unwrap();
    g.bench_function("index_build_500_tools", |b| {
        b.iter(|| {
            let dir = out.path().join("idx");
            let _ = std::fs::remove_dir_all(&dir);
            build_index(&catalog, embedder.as_ref(), &dir, &BuildOptions::default()).unwrap()
        })
    });
    g.finish();
}

/// What a learned query adapter adds to a search: one 384 x 384 residual map of the query
/// vector, against the query embedding it follows.
fn adapter_cost(c: &mut Criterion) {
    let embedder = embedder();
    let q = embedder.embed_one("convert 100 dollars to euros").unwrap();
    let d = q.len();
    let w: Vec<f32> = (0..d * d).map(|i| ((i * 7919) % 1000) as f32 / 1e5 - 0.005).collect();
    let mut g = c.benchmark_group("adapter");
    g.bench_function("apply_384x384", |b| b.iter(|| toolsearch::index::adapter_apply(&w, &q)));
    g.bench_function("query_embedding", |b| b.iter(|| embedder.embed_one("convert 100 dollars to euros").unwrap()));
    g.finish();
}

criterion_group!(benches, search_latency, build_throughput, adapter_cost);
criterion_main!(benches);
