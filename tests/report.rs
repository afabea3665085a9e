//! `toolsearch bench --report FILE.html`: one self-contained page with the four pictures
//! (quality by mode, the reliability diagram with ECE, latency by stage with p50 and p99, and
//! with --twins the answerability ROC), its numbers those of the JSON answer, and rendered by
//! a real browser (Debian's Chromium, headless, installed by scripts/test-deps).

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Output};

fn sample_index() -> String {
    static D: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    D.get_or_init(|| common::build(&common::sample_catalog(), "report-sample")).display().to_string()
}

fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(args).output().unwrap()
}

/// `bench` of the sample queries in BM25 mode alone, its report written to `page`.
fn bm25_report(page: &Path) -> Output {
    let queries = common::repo().join("tests/data/sample-queries.jsonl");
    let (index, queries, page) = (sample_index(), queries.display().to_string(), page.display().to_string());
    toolsearch(&["bench", &index, &queries, "--mode", "bm25", "--report", &page])
}

/// Headless Chromium on `page` with `args` (`--screenshot=...`, `--dump-dom`); its output.
fn chromium(page: &Path, args: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (scripts/test-deps installs it)");
    assert!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn bench_report_is_one_self_contained_page_that_a_browser_renders_with_its_four_pictures() {
    let index = sample_index();
    let queries = common::repo().join("tests/data/sample-queries.jsonl");
    let dir = common::scratch().join("report");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("bench.html");
    let out = toolsearch(&[
        "--json",
        "bench",
        &index,
        queries.to_str().unwrap(),
        "--twins",
        "--report",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(reports[0].get("plots").is_none(), "the JSON answer is unchanged: {}", reports[0]);
    let html = std::fs::read_to_string(&page).unwrap();

    for id in ["quality-bars", "recall-curve", "reliability", "latency-embed", "latency-lexical", "latency-fuse", "roc"]
    {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "no {id} picture");
    }
    // Its numbers are the answer's: ECE and the twins' AUROC by mode.
    for r in reports.as_array().unwrap() {
        let ece = format!("{} (ECE {:.3})", r["mode"].as_str().unwrap(), r["ece"].as_f64().unwrap());
        assert!(html.contains(&ece), "{ece}");
    }
    let auroc = reports[0]["default_path"]["twins"]["auroc"].as_f64().unwrap();
    assert!(html.contains(&format!("hybrid (AUROC {auroc:.3})")), "{auroc}");
    assert!(html.contains("p50 ") && html.contains("p99 "), "latency markers");
    // Self-contained: nothing is fetched, nothing runs.
    for banned in ["<script", "src=", "href=", "url(", "@import", "<link"] {
        assert!(!html.contains(banned), "{banned} in the page");
    }
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "only the SVG namespace"
    );

    // A browser renders it: the pictures are in its DOM, and the screenshot is no blank page.
    let dom = String::from_utf8(chromium(&page, &["--dump-dom"]).stdout).unwrap();
    assert_eq!(dom.matches("<svg").count(), html.matches("<svg").count(), "every picture parsed");
    assert!(dom.matches("<polyline").count() >= 6 && dom.matches("class=\"bar\"").count() >= 12, "lines and bars");
    let shot = dir.join("bench.png");
    chromium(&page, &["--window-size=1200,2400", &format!("--screenshot={}", shot.display())]);
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let (w, h) =
        (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap()));
    assert_eq!((w, h), (1200, 2400));
    assert!(png.len() > 60_000, "a page of pictures, not a blank one: {} bytes", png.len());

    // Without --twins, no ROC; one mode, one series.
    let plain = dir.join("plain.html");
    assert!(bm25_report(&plain).status.success());
    let html = std::fs::read_to_string(&plain).unwrap();
    assert!(!html.contains("<svg id=\"roc\"") && html.contains("bm25 (ECE "), "{html}");
}

#[test]
fn a_report_that_cannot_be_written_is_an_error_naming_it_and_leaves_nothing() {
    let missing = common::scratch().join("no-such-dir/bench.html");
    let out = bm25_report(&missing);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no-such-dir/bench.html"), "{err}");
    assert!(!missing.parent().unwrap().exists());
}
