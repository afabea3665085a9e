//! The engine at 1k to 1M tools: build time by phase, disk per tool, open + one search in a
//! fresh process (wall time and RSS beyond the model's), search latency by stage (p50/p99),
//! and the recall@10 of the stored f16 vectors and of the HNSW graph against exact f32.
//!
//! `cargo bench --bench scale` runs 1k and 10k; `cargo bench --bench scale -- 100000 1000000`
//! runs the sizes given. Indexes are kept under target/scale-indexes between runs. Each build
//! runs in a process of its own, as the CLI's would; to measure one by hand, the bench binary
//! writes a size's catalogue (`--write-catalogue N FILE`) and builds it (`--build-child FILE
//! DIR`, under `/usr/bin/time -v`).
//!
//! Embedding a million documents would take this machine two days, so variant documents reuse
//! vectors: [`VariantEmbedder`] embeds each base tool's text once with the real model, and
//! gives each regional variant that vector plus a small deterministic perturbation (then
//! renormalised), so every tool is a distinct point near its base. BM25 indexes every
//! variant's real text, and queries are embedded by the real model. The index records the
//! real model, so it opens and serves like any other.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::{catalogue, embedder, repo, REGIONS};
use toolsearch::embed::{EmbedError, OnnxEmbedder};
use toolsearch::eval::Percentiles;
use toolsearch::index::document::tool_dense_text;
use toolsearch::index::dot;
use toolsearch::index::{Progress, Reporter};
use toolsearch::{build_index, BuildOptions, Embedder, Engine, EngineOptions, Filter, Retrieval};

/// The real model, with the vectors of variant documents derived from their base's.
struct VariantEmbedder {
    inner: Arc<OnnxEmbedder>,
    base: Mutex<HashMap<String, Vec<f32>>>,
}

impl VariantEmbedder {
    /// The text with the variant's qualifiers taken out: every variant of one tool has the key
    /// of the tool itself.
    fn key(text: &str) -> String {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| {
                !w.is_empty()
                    && !REGIONS.iter().any(|r| r.eq_ignore_ascii_case(w))
                    && !w.eq_ignore_ascii_case("edition")
                    && !w.chars().all(|c| c.is_ascii_digit())
            })
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The text's words, lowercased, without digits-only words: equal to its key unless it
    /// names a region (or "edition"), i.e. unless it is a variant's.
    fn plain(text: &str) -> String {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The vector of `text`: its base's, perturbed by a hash of the whole text when it is a
    /// variant's.
    fn vector(&self, text: &str, base: &[f32]) -> Vec<f32> {
        if Self::key(text) == Self::plain(text) {
            return base.to_vec();
        }
        let mut state = seed(text) | 1;
        let mut v: Vec<f32> = base
            .iter()
            .map(|x| {
                // xorshift64*: a uniform draw in [-1, 1).
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                let u = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
                x + 0.06 * (2.0 * u - 1.0)
            })
            .collect();
        let norm = dot(&v, &v).sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }
}

/// A deterministic 64-bit seed from `text`.
fn seed(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl Embedder for VariantEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn model_sha256(&self) -> &str {
        self.inner.model_sha256()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut base = self.base.lock().unwrap();
        let mut missing: Vec<&str> = Vec::new();
        let mut keys: Vec<String> = Vec::with_capacity(texts.len());
        for t in texts {
            let k = Self::key(t);
            if !base.contains_key(&k) && !missing.contains(t) {
                missing.push(t);
            }
            keys.push(k);
        }
        for (t, v) in missing.iter().zip(self.inner.embed(&missing)?) {
            base.entry(Self::key(t)).or_insert(v);
        }
        Ok(texts.iter().zip(&keys).map(|(t, k)| self.vector(t, &base[k])).collect())
    }
    fn release(&self) {
        self.inner.release()
    }
}

/// Peak RSS (KB) and wall seconds of `toolsearch search INDEX QUERY` in a fresh process (the
/// second of two runs, so the page cache is warm).
fn fresh_search(index: &Path) -> (f64, u64) {
    let mut last = (0.0, 0);
    for _ in 0..2 {
        let out = Command::new("/usr/bin/time")
            .arg("-v")
            .arg(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["search", index.to_str().unwrap(), "convert an amount between two currencies"])
            .output()
            .expect("/usr/bin/time runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        let field = |name: &str| time_field(&err, name);
        let wall = field("Elapsed (wall clock)");
        let secs = wall.split(':').fold(0.0, |acc, part| acc * 60.0 + part.parse::<f64>().unwrap_or(0.0));
        last = (secs, field("Maximum resident set size").parse().unwrap_or(0));
    }
    last
}

/// A figure from the report of `/usr/bin/time -v` ("0" where there is none).
fn time_field(report: &str, name: &str) -> String {
    report.lines().find(|l| l.contains(name)).and_then(|l| l.rsplit(' ').next()).unwrap_or("0").to_owned()
}

/// Writes the tools of `catalog` to `file` as JSON Lines.
fn write_catalogue(catalog: &toolsearch::Catalog, file: &Path) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    for t in &catalog.tools {
        serde_json::to_writer(&mut out, t).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

/// The argument that writes one size's catalogue and stops: `WRITE_CATALOGUE N FILE` (to
/// measure a build by hand: `/usr/bin/time -v BENCH --build-child FILE DIR`).
const WRITE_CATALOGUE: &str = "--write-catalogue";

/// The argument that makes this bench the build process of one size: `BUILD_CHILD CAT DIR`.
const BUILD_CHILD: &str = "--build-child";

/// Builds the index of the JSON Lines catalogue `cat` into `dir` as the CLI does (streamed, never
/// held whole), and prints the report as `built EMBEDDED EMBED_S GRAPH_S LEXICAL_S`.
fn build_child(cat: &Path, dir: &Path) {
    if std::env::var_os(SAMPLE_RSS).is_some() {
        std::thread::spawn(sample_memory);
    }
    let variants = VariantEmbedder { inner: embedder(), base: Mutex::new(HashMap::new()) };
    // A build from scratch: the index a previous run left there would give its vectors.
    if dir.exists() {
        std::fs::remove_dir_all(dir).expect("the previous run's index is removed");
    }
    let options = BuildOptions { reuse_from: None, release_model: true, progress: Reporter::new(PhaseMemory) };
    let report = toolsearch::build_index_jsonl(cat, &variants, dir, &options).unwrap();
    memory("built");
    println!("built {} {} {} {}", report.embedded, report.embed_seconds, report.graph_seconds, report.lexical_seconds);
}

/// With this variable set, the build child prints its memory four times a second to stderr.
const SAMPLE_RSS: &str = "SCALE_SAMPLE_RSS";

/// Prints, every 250 ms, `sample UNIX_SECONDS VmRSS: N kB inuse MB mmapped MB arena MB free MB`:
/// the RSS and glibc's own account of it (bytes in use, in chunks of their own mapping, in
/// its arenas, and free there), which is how the build's phases were told apart
/// (docs/build-memory.md, "Build memory at 1M").
fn sample_memory() {
    loop {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rss = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("").to_owned();
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let m = unsafe { libc::mallinfo2() };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        eprintln!(
            "sample {now:.1} {rss} inuse {} mmapped {} arena {} free {}",
            m.uordblks >> 20,
            m.hblkhd >> 20,
            m.arena >> 20,
            m.fordblks >> 20
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Prints the process's RSS and its peak so far, in MB, at a point of the build.
fn memory(at: &str) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap_or("");
        line.split_whitespace().nth(1).and_then(|kb| kb.parse().ok()).unwrap_or(0) / 1024
    };
    println!("memory {at}: RSS {} MB, peak so far {} MB", field("VmRSS:"), field("VmHWM:"));
}

/// Reports the memory when embedding starts and ends.
struct PhaseMemory;

impl Progress for PhaseMemory {
    fn start(&self, what: &str, _total: u64) {
        memory(&format!("{what} starts"));
    }
    fn advance(&self, _n: u64) {}
    fn finish(&self) {
        memory("embedding done");
    }
}

fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| if e.path().is_dir() { disk_bytes(&e.path()) } else { e.metadata().unwrap().len() })
        .sum()
}

/// Queries: the labelled ToolBench queries when ../shared is there, else a few of our own.
fn queries() -> Vec<String> {
    let p = repo().join("../shared/bench/toolbench_stb/queries.jsonl");
    let own = ["find upcoming concerts of an artist", "convert an amount between two currencies"];
    let mut q: Vec<String> = std::fs::read_to_string(p)
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|v| v.get("query").or_else(|| v.get("text")).and_then(|s| s.as_str()).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if q.is_empty() {
        q = own.iter().map(|s| (*s).to_owned()).collect();
    }
    q.truncate(200);
    q
}

fn run(n: usize, model: &Arc<OnnxEmbedder>, baseline_rss: u64) {
    let dir = repo().join(format!("target/scale-indexes/{n}"));
    let variants = VariantEmbedder { inner: model.clone(), base: Mutex::new(HashMap::new()) };
    let catalog = catalogue(n);
    // The build runs as the CLI's would, in a process of its own that loads the catalogue from
    // a JSONL file, builds and releases the model once everything is embedded; its peak RSS is
    // the build's (catalogue, model, graph), not this bench's.
    let file = repo().join(format!("target/scale-indexes/{n}.jsonl"));
    write_catalogue(&catalog, &file);
    let start = Instant::now();
    let child = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(std::env::current_exe().unwrap())
        .args([BUILD_CHILD, file.to_str().unwrap(), dir.to_str().unwrap()])
        .output()
        .expect("/usr/bin/time runs");
    let build = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{err}");
    let _ = std::fs::remove_file(&file);
    let build_peak: u64 = time_field(&err, "Maximum resident set size").parse().unwrap_or(0);
    let report: Vec<f64> = String::from_utf8_lossy(&child.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("built "))
        .expect("the build reports")
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    println!("{n} tools: build peak RSS {} MB (a process of its own: load, embed, graph, BM25)", build_peak / 1024);
    for line in String::from_utf8_lossy(&child.stdout).lines().filter(|l| l.starts_with("memory ")) {
        println!("{n} tools: build {line}");
    }
    let disk = disk_bytes(&dir);
    let (open_search, rss) = fresh_search(&dir);

    let engine =
        Engine::with_embedder(&dir, model.clone(), EngineOptions { query_cache: 0, ..EngineOptions::default() })
            .unwrap();
    let qs = queries();
    let mut times = Vec::new();
    for q in &qs {
        times.push(engine.rank_tools_timed(q, &Filter::default(), 10, Retrieval::Hybrid).unwrap().1);
    }
    let stage =
        |f: fn(&toolsearch::StageTimes) -> f64| Percentiles::of(&times.iter().map(|t| f(t) * 1e3).collect::<Vec<_>>());
    let (embed, dense, lexical, total) =
        (stage(|t| t.embed), stage(|t| t.dense), stage(|t| t.lexical), stage(|t| t.total));

    // Recall@10 against exact f32: of the stored f16 vectors (exact scan) and of the graph.
    let index = engine.index();
    let exact32: Vec<Vec<f32>> =
        catalog.tools.iter().map(|t| variants.embed(&[&tool_dense_text(t)]).unwrap().remove(0)).collect();
    let (mut r16, mut rgraph) = (0.0, 0.0);
    let recall_queries = &qs[..qs.len().min(50)];
    for q in recall_queries {
        let v = model.embed_one(q).unwrap();
        let mut truth: Vec<(f32, u32)> = exact32.iter().zip(0..).map(|(t, o)| (dot(t, &v), o)).collect();
        truth.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let truth: Vec<u32> = truth.iter().take(10).map(|x| x.1).collect();
        let hit = |ords: Vec<u32>| ords.iter().filter(|o| truth.contains(o)).count() as f64 / 10.0;
        r16 += hit(index.exact_tools(&v, 10).expect("vectors").iter().map(|h| h.ord).collect());
        rgraph +=
            hit(index.graph_tools(&v, 10, index.search_breadth()).expect("vectors").iter().map(|h| h.ord).collect());
    }
    let m = recall_queries.len() as f64;
    println!(
        "{n} tools: build {build:.1} s (embedded {} documents in {:.1} s, graph {:.1} s, BM25 {:.1} s); disk {:.0} MB = {:.0} B/tool; fresh open + search {open_search:.2} s, RSS {} MB = {:.0} B/tool beyond the model's {} MB",
        report[0], report[1], report[2], report[3],
        disk as f64 / 1e6,
        disk as f64 / n as f64,
        rss / 1024,
        (rss.saturating_sub(baseline_rss)) as f64 * 1024.0 / n as f64,
        baseline_rss / 1024,
    );
    println!(
        "{n} tools: latency ms p50/p99 embed {:.2}/{:.2} dense {:.3}/{:.3} lexical {:.3}/{:.3} total {:.2}/{:.2} (p50 {:.2}x embed, p99 {:.2}x p50); recall@10 vs f32 exact: f16 exact {:.3}, f16 graph {:.3} ({} queries)",
        embed.p50, embed.p99, dense.p50, dense.p99, lexical.p50, lexical.p99, total.p50, total.p99,
        total.p50 / embed.p50, total.p99 / total.p50, r16 / m, rgraph / m, recall_queries.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(BUILD_CHILD) {
        return build_child(Path::new(&args[2]), Path::new(&args[3]));
    }
    if args.get(1).map(String::as_str) == Some(WRITE_CATALOGUE) {
        return write_catalogue(&catalogue(args[2].parse().expect("a size")), Path::new(&args[3]));
    }
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 10_000] } else { sizes };
    let model = embedder();
    // The model's own share of a search process: the same search over a ten-tool index.
    let tiny = repo().join("target/scale-indexes/tiny");
    let small = toolsearch::load_path(&repo().join("tests/data/tools.jsonl"), None).unwrap();
    build_index(&small, model.as_ref(), &tiny, &BuildOptions::default()).unwrap();
    let (_, baseline_rss) = fresh_search(&tiny);
    for n in sizes {
        run(n, &model, baseline_rss);
    }
}
