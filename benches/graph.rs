//! Our HNSW graph and hnsw_rs' side by side over the same vectors: recall@10 against an exact
//! scan, build time, build peak memory and p50/p99 search time, at each size, in one run.
//!
//! `cargo bench --bench graph` runs 10k and 100k; `cargo bench --bench graph -- 10000 100000
//! 1000000` names the sizes. Each build runs in a process of its own (this binary again, with
//! `--child`), which reports its peak RSS (`VmHWM`), its build time and its searches.
//!
//! The vectors. ../shared/bench holds 7,316 real tools, too few; a catalogue of 100k or 1M
//! real tools is not to be had. The sizes are made from the real tools' embeddings so that
//! they keep their neighbourhood structure (docs/graph.md, "Realistic vectors"):
//! 1. every dev-set tool is embedded by the real model (cached under target/graph-bench);
//! 2. a point is a real tool's vector moved part of the way (a uniform share up to half)
//!    towards one of that tool's 10 nearest real tools, plus Gaussian noise of norm about
//!    `sigma`, renormalised: tools that resemble real ones and each other the way real tools
//!    of one kind do;
//! 3. `sigma` is chosen so that a set of 7,316 such points has the real set's distribution of
//!    similarity to the 1st and the 10th nearest neighbour (the quantiles are printed).
//!
//! Queries are 500 real dev-set queries (100 from each set), embedded by the model. Both
//! graphs see the same rows: ours maps the f16 vector file as an index does; hnsw_rs gets
//! those rows widened to f32. The truth is an exact scan of the same rows. Both are built with
//! 24 links a point (48 on layer 0) and a construction beam of 200.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use hnsw_rs::prelude::{DistDot, Hnsw};
use toolsearch::embed::Embedder;
use toolsearch::index::graph_bench::{build_graph, write_vectors, BenchGraph, BenchVectors};

const K: usize = 10;
const QUERIES_PER_SET: usize = 100;
const SETS: [&str; 5] = ["toolbench_stb", "metatool", "toollens", "mcptoolbenchpp", "sealtools"];
/// Search breadths tried, for both graphs.
const EFS: [usize; 7] = [64, 128, 192, 256, 384, 512, 768];
const MAX_CONNECTIONS: usize = 24;
const EF_CONSTRUCTION: usize = 200;
const DIM: usize = 384;

fn work() -> PathBuf {
    common::repo().join("target/graph-bench")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1], Path::new(&args[2]), args[3].parse().unwrap());
    }
    let sizes: Vec<usize> = match args.iter().filter_map(|a| a.parse().ok()).collect::<Vec<_>>() {
        s if s.is_empty() => vec![10_000, 100_000],
        s => s,
    };
    std::fs::create_dir_all(work()).unwrap();
    let (real, queries) = real_vectors();
    println!("real tools: {}, queries: {}", real.len(), queries.len());
    let neighbours = nearest_real(&real, 10);
    let sigma = calibrate(&real, &neighbours);
    println!(
        "\n| tools | graph | recall@10 at ef {} | p50 / p99 ms at ef {} | build s | build peak RSS MB | unreachable |",
        EFS.map(|e| e.to_string()).join(" / "),
        EFS.map(|e| e.to_string()).join(" / ")
    );
    println!("|---|---|---|---|---|---|---|");
    for &n in &sizes {
        let dir = work().join(n.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        if !dir.join("truth.u32").is_file() {
            let rows = synthetic(&real, &neighbours, n, sigma, n as u64);
            write_vectors(&dir.join("vectors.f16"), &rows).unwrap();
            drop(rows);
            write_f32(&dir.join("queries.f32"), &queries);
            truth(&dir, n, &queries);
        }
        let only = std::env::var("GRAPH_BENCH_ONLY").ok();
        for kind in ["ours", "hnsw_rs"].into_iter().filter(|k| only.as_deref().is_none_or(|o| o == *k)) {
            let out = Command::new(std::env::current_exe().unwrap())
                .args(["--child", kind, dir.to_str().unwrap(), &n.to_string()])
                .output()
                .unwrap();
            assert!(out.status.success(), "{kind} at {n}: {}", String::from_utf8_lossy(&out.stderr));
            print!("| {n} | {kind} | {}", String::from_utf8_lossy(&out.stdout));
        }
    }
}

/// A built graph's search: query and breadth in, the top [`K`] rows out.
type Search = dyn Fn(&[f32], usize) -> Vec<u32>;

/// Builds one graph over `dir`'s vectors, searches it at every breadth, and prints its row.
fn child(kind: &str, dir: &Path, n: usize) {
    let vectors = BenchVectors::open(&dir.join("vectors.f16"), n, DIM).unwrap();
    let queries = read_f32(&dir.join("queries.f32"));
    let truth = read_truth(&dir.join("truth.u32"), queries.len());
    let start = Instant::now();
    let (search, peak, unreachable): (Box<Search>, u64, String) = match kind {
        "ours" => {
            build_graph(&dir.join("vectors.f16"), DIM, n, &dir.join("graph.bin")).unwrap();
            let peak = vm_hwm();
            let graph = BenchGraph::open(&dir.join("vectors.f16"), &dir.join("graph.bin"), n, DIM).unwrap();
            let lost = graph.unreachable().to_string();
            (Box::new(move |q: &[f32], ef: usize| graph.search(q, K, ef)), peak, lost)
        }
        _ => {
            let rows: Vec<Vec<f32>> = (0..n as u32).map(|i| vectors.row(i)).collect();
            let hnsw: Hnsw<f32, DistDot> = Hnsw::new(MAX_CONNECTIONS, n, 16, EF_CONSTRUCTION, DistDot {});
            let data: Vec<(&Vec<f32>, usize)> = rows.iter().zip(0..).collect();
            hnsw.parallel_insert(&data);
            drop(data);
            let peak = vm_hwm();
            let search = move |q: &[f32], ef: usize| -> Vec<u32> {
                hnsw.search(q, K, ef).into_iter().map(|nb| nb.d_id as u32).collect()
            };
            (Box::new(search), peak, "-".into())
        }
    };
    let build = start.elapsed().as_secs_f64();
    let (mut recalls, mut times) = (Vec::new(), Vec::new());
    for ef in EFS {
        for q in queries.iter().take(50) {
            search(q, ef); // warm the pages
        }
        let mut found = 0;
        let mut ms = Vec::with_capacity(queries.len());
        for (q, t) in queries.iter().zip(&truth) {
            let at = Instant::now();
            let got = search(q, ef);
            ms.push(at.elapsed().as_secs_f64() * 1e3);
            found += got.iter().filter(|o| t.contains(o)).count();
        }
        ms.sort_by(f64::total_cmp);
        recalls.push(format!("{:.4}", found as f64 / (K * queries.len()) as f64));
        times.push(format!("{:.3}/{:.3}", ms[ms.len() / 2], ms[ms.len() * 99 / 100]));
    }
    println!("{} | {} | {build:.1} | {} | {unreachable} |", recalls.join(" / "), times.join(" / "), peak / 1024);
}

/// Peak resident memory of this process so far, in kB.
fn vm_hwm() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The real tools' vectors and 100 queries of each set, embedded (cached).
fn real_vectors() -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let (tools_file, queries_file) = (work().join("real-tools.f32"), work().join("real-queries.f32"));
    if tools_file.is_file() && queries_file.is_file() {
        return (read_f32(&tools_file), read_f32(&queries_file));
    }
    let shared = common::repo().join("../shared/bench");
    let (mut texts, mut asks) = (Vec::new(), Vec::new());
    for set in SETS {
        let tools = toolsearch::load_path(&shared.join(set).join("tools.jsonl"), None).expect("dev set loads").tools;
        texts.extend(tools.iter().map(toolsearch::index::document::tool_dense_text));
        let lines = std::fs::read_to_string(shared.join(set).join("queries.jsonl")).unwrap();
        let all: Vec<String> = lines
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?["query"].as_str().map(str::to_owned))
            .collect();
        let step = (all.len() / QUERIES_PER_SET).max(1);
        asks.extend(all.into_iter().step_by(step).take(QUERIES_PER_SET));
    }
    let model = common::embedder();
    let embed = |texts: &[String]| -> Vec<Vec<f32>> {
        texts
            .chunks(256)
            .flat_map(|c| model.embed(&c.iter().map(String::as_str).collect::<Vec<_>>()).unwrap())
            .collect()
    };
    let (tools, queries) = (embed(&texts), embed(&asks));
    write_f32(&tools_file, &tools);
    write_f32(&queries_file, &queries);
    (tools, queries)
}

/// Each real vector's `k` nearest other real vectors.
fn nearest_real(real: &[Vec<f32>], k: usize) -> Vec<Vec<u32>> {
    real.iter()
        .enumerate()
        .map(|(i, v)| {
            let mut s: Vec<(f32, u32)> =
                real.iter().enumerate().filter(|&(j, _)| j != i).map(|(j, w)| (dot(v, w), j as u32)).collect();
            s.select_nth_unstable_by(k, |a, b| b.0.total_cmp(&a.0));
            s.truncate(k);
            s.into_iter().map(|(_, j)| j).collect()
        })
        .collect()
}

/// `n` points made from the real vectors (see the module documentation), reproducibly.
fn synthetic(real: &[Vec<f32>], neighbours: &[Vec<u32>], n: usize, sigma: f32, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed ^ 0x5EED_5EED_5EED_5EED);
    let scale = sigma / (DIM as f32).sqrt();
    (0..n)
        .map(|_| {
            let b = rng.below(real.len());
            let c = neighbours[b][rng.below(neighbours[b].len())] as usize;
            let t = rng.unit() * 0.5;
            let mut x: Vec<f32> =
                (0..DIM).map(|d| (1.0 - t) * real[b][d] + t * real[c][d] + scale * rng.gaussian()).collect();
            let norm = dot(&x, &x).sqrt();
            x.iter_mut().for_each(|v| *v /= norm);
            x
        })
        .collect()
}

/// The noise that makes a synthetic set of the real set's size match its similarity to the
/// 1st and 10th nearest neighbour; prints both distributions.
fn calibrate(real: &[Vec<f32>], neighbours: &[Vec<u32>]) -> f32 {
    let quantiles = |set: &[Vec<f32>]| -> [f32; 6] {
        let (mut first, mut tenth) = (Vec::new(), Vec::new());
        for i in (0..set.len()).step_by((set.len() / 1000).max(1)) {
            let mut s: Vec<f32> =
                set.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, w)| dot(&set[i], w)).collect();
            s.select_nth_unstable_by(9, |a, b| b.total_cmp(a));
            s[..10].sort_by(|a, b| b.total_cmp(a));
            first.push(s[0]);
            tenth.push(s[9]);
        }
        let q = |v: &mut Vec<f32>, p: f64| {
            v.sort_by(f32::total_cmp);
            v[((v.len() - 1) as f64 * p) as usize]
        };
        [
            q(&mut first, 0.1),
            q(&mut first, 0.5),
            q(&mut first, 0.9),
            q(&mut tenth, 0.1),
            q(&mut tenth, 0.5),
            q(&mut tenth, 0.9),
        ]
    };
    let show =
        |q: [f32; 6]| format!("{:.3} / {:.3} / {:.3} | {:.3} / {:.3} / {:.3}", q[0], q[1], q[2], q[3], q[4], q[5]);
    let target = quantiles(real);
    println!("\nsimilarity to the nearest and the 10th nearest neighbour, quantiles 10% / 50% / 90%:");
    println!("| set | 1st | 10th | distance |\n|---|---|---|---|");
    println!("| real ({} tools) | {} | |", real.len(), show(target));
    let mut best = (f32::MAX, 0.0);
    for sigma in [0.0f32, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8] {
        let q = quantiles(&synthetic(real, neighbours, real.len(), sigma, 7));
        let distance: f32 = q.iter().zip(&target).map(|(a, b)| (a - b).abs()).sum();
        println!("| synthetic, sigma {sigma} | {} | {distance:.3} |", show(q));
        if distance < best.0 {
            best = (distance, sigma);
        }
    }
    println!("chosen sigma: {}", best.1);
    best.1
}

/// The exact top 10 of every query, over the stored rows (two threads).
fn truth(dir: &Path, n: usize, queries: &[Vec<f32>]) {
    let vectors = BenchVectors::open(&dir.join("vectors.f16"), n, DIM).unwrap();
    let half = queries.len() / 2;
    let scan = |qs: &[Vec<f32>]| qs.iter().map(|q| vectors.exact(q, K, 0, n as u32)).collect::<Vec<_>>();
    let (a, b) = std::thread::scope(|s| {
        let first = s.spawn(|| scan(&queries[..half]));
        let second = scan(&queries[half..]);
        (first.join().unwrap(), second)
    });
    let words: Vec<u8> = a.iter().chain(&b).flat_map(|t| t.iter().flat_map(|&(_, o)| o.to_le_bytes())).collect();
    std::fs::write(dir.join("truth.u32"), words).unwrap();
}

fn read_truth(path: &Path, queries: usize) -> Vec<Vec<u32>> {
    let bytes = std::fs::read(path).unwrap();
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(words.len(), queries * K);
    words.chunks(K).map(<[u32]>::to_vec).collect()
}

fn write_f32(path: &Path, rows: &[Vec<f32>]) {
    let bytes: Vec<u8> = rows.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

fn read_f32(path: &Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap();
    let values: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    values.chunks(DIM).map(<[f32]>::to_vec).collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    toolsearch::index::dot(a, b)
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f32 {
        ((self.next() >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A standard normal draw (Box-Muller).
    fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}
