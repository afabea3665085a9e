//! `toolsearch bench --report FILE.html`: the benchmark as one self-contained page to look
//! at: a table of the figures by mode, nDCG@10 and Recall@k by mode, a reliability diagram
//! of the confidence with its ECE, latency by stage as histograms with p50 and p99, and with
//! twins the answerability ROC. Inline SVG and CSS only: no script, font or image from
//! elsewhere, so it opens offline, in a mail or a CI artefact alike.

mod svg;

use std::fmt::Write as _;
use std::path::Path;

use svg::{esc, num, Chart, PALETTE};
use toolsearch_query::StageTimes;

use crate::metrics::Percentiles;
use crate::run::BenchReport;

/// What the page says it measured.
#[derive(Debug, Clone)]
pub struct ReportMeta {
    /// The index benchmarked.
    pub index: String,
    /// The labelled queries run.
    pub queries: String,
}

/// Histogram bins of a latency picture.
const LATENCY_BINS: usize = 30;

/// A stage drawn: its id, its name, and how to read it from a query's times.
type Stage = (&'static str, &'static str, fn(&StageTimes) -> f64);

/// The stages drawn.
const STAGES: [Stage; 5] = [
    ("embed", "query embedding", |t| t.embed),
    ("dense", "dense search", |t| t.dense),
    ("lexical", "lexical (BM25) search", |t| t.lexical),
    ("fuse", "fusion", |t| t.fuse),
    ("total", "end to end", |t| t.total),
];

/// The page for `reports` (one per mode, as `bench` ran them).
pub fn report_html(reports: &[BenchReport], meta: &ReportMeta) -> String {
    let mut page = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>toolsearch bench</title>\
         <style>body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}\
         table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
         th:first-child,td:first-child{text-align:left}figure{display:inline-block;margin:8px 16px 16px 0}\
         figcaption{font-size:13px;color:#555;max-width:520px}</style></head><body>\n",
    );
    let _ = writeln!(
        page,
        "<h1>toolsearch bench</h1><p>Index <code>{}</code>, queries <code>{}</code>, toolsearch {}.</p>",
        esc(&meta.index),
        esc(&meta.queries),
        env!("CARGO_PKG_VERSION")
    );
    page.push_str(&summary_table(reports));
    page.push_str("<section id=\"quality\"><h2>Quality by mode</h2>\n");
    page.push_str(&figure(&quality_bars(reports), "nDCG@10 and Recall@k of the uncut ranking, by mode."));
    page.push_str(&figure(&recall_curve(reports), "Recall@k for k = 1 to 20, by mode."));
    page.push_str("</section>\n<section id=\"calibration\"><h2>Calibration</h2>\n");
    page.push_str(&figure(
        &reliability(reports),
        "Mean confidence against the share relevant, per confidence bin of the top-10 results; \
         the diagonal is perfect calibration. ECE weighs each bin's gap by its size.",
    ));
    page.push_str("</section>\n<section id=\"latency\"><h2>Latency by stage</h2>\n");
    if let Some(r) = reports.iter().find(|r| r.mode == "hybrid").or(reports.first()) {
        let _ = write!(page, "<p>Mode <b>{}</b>, {} queries, milliseconds per query.</p>", esc(&r.mode), r.queries);
        for (id, name, stage) in STAGES {
            let values: Vec<f64> = r.plots.latency_ms.iter().map(stage).collect();
            if values.iter().any(|&v| v > 0.0) {
                page.push_str(&figure(&latency(id, name, &values), &format!("{name}: histogram, p50 and p99.")));
            }
        }
    }
    page.push_str("</section>\n");
    let twins: Vec<&BenchReport> = reports.iter().filter(|r| r.plots.twin_roc.is_some()).collect();
    if !twins.is_empty() {
        page.push_str("<section id=\"answerability\"><h2>Answerability on twins</h2>\n");
        page.push_str(&figure(
            &roc(&twins),
            "ROC of answerable: each query against its twin (the same query with its gold tools \
             taken out). Above the diagonal, the decision tells them apart.",
        ));
        page.push_str("</section>\n");
    }
    page.push_str("</body></html>\n");
    page
}

/// Writes `html` to `path` whole or not at all (a temporary file beside it, renamed).
pub fn write_report(path: &Path, html: &str) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| std::io::Error::other("the report path names no file"))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    std::fs::write(&tmp, html).and_then(|()| std::fs::rename(&tmp, path)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn figure(svg: &str, caption: &str) -> String {
    format!("<figure>{svg}<figcaption>{}</figcaption></figure>\n", esc(caption))
}

fn summary_table(reports: &[BenchReport]) -> String {
    let ks: Vec<usize> = reports.first().map(|r| r.recall.iter().map(|&(k, _)| k).collect()).unwrap_or_default();
    let mut t = String::from("<table id=\"summary\"><tr><th>mode</th><th>queries</th><th>nDCG@10</th>");
    for k in &ks {
        let _ = write!(t, "<th>Recall@{k}</th>");
    }
    t.push_str(
        "<th>MRR</th><th>ECE</th><th>p50 ms</th><th>p99 ms</th><th>default path nDCG@10</th><th>twin AUROC</th></tr>",
    );
    for r in reports {
        let _ = write!(t, "<tr><td>{}</td><td>{}</td><td>{:.3}</td>", esc(&r.mode), r.queries, r.ndcg10);
        for (_, v) in &r.recall {
            let _ = write!(t, "<td>{v:.3}</td>");
        }
        let dp = r.default_path.as_ref();
        let twins = dp.and_then(|d| d.twins.as_ref()).map_or("-".into(), |t| format!("{:.3}", t.auroc));
        let _ = write!(
            t,
            "<td>{:.3}</td><td>{:.3}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{twins}</td></tr>",
            r.mrr,
            r.ece,
            r.latency_ms.total.p50,
            r.latency_ms.total.p99,
            dp.map_or("-".into(), |d| format!("{:.3}", d.ndcg10))
        );
    }
    t.push_str("</table>\n");
    t
}

fn quality_bars(reports: &[BenchReport]) -> String {
    let metrics: Vec<String> = std::iter::once("nDCG@10".to_owned())
        .chain(reports.first().into_iter().flat_map(|r| r.recall.iter().map(|(k, _)| format!("Recall@{k}"))))
        .collect();
    let mut c = Chart::new(
        "quality-bars",
        "nDCG@10 and Recall@k",
        (520.0, 300.0),
        (0.0, metrics.len() as f64),
        (0.0, 1.0),
        ("", "score"),
    );
    c.no_x_ticks();
    let width = 0.8 / reports.len().max(1) as f64;
    for (m, r) in reports.iter().enumerate() {
        let colour = PALETTE[m % PALETTE.len()];
        let values = std::iter::once(r.ndcg10).chain(r.recall.iter().map(|&(_, v)| v));
        for (i, (v, metric)) in values.zip(&metrics).enumerate() {
            let x0 = i as f64 + 0.1 + width * m as f64;
            c.bar(x0, x0 + width, v, colour, &format!("{} {metric}: {v:.3}", r.mode));
        }
        c.key(colour, &r.mode);
    }
    let mut svg = c.finish();
    // The metric names under their groups, in place of the numeric x ticks.
    let labels: String = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let x = 56.0 + (i as f64 + 0.5) / metrics.len() as f64 * (520.0 - 72.0);
            format!(
                "<text x=\"{x:.1}\" y=\"283\" font-size=\"11\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
                esc(m)
            )
        })
        .collect();
    svg.insert_str(svg.len() - "</svg>".len(), &labels);
    svg
}

fn recall_curve(reports: &[BenchReport]) -> String {
    let k = reports.iter().flat_map(|r| r.plots.recall_curve.last().map(|p| p.0)).max().unwrap_or(1) as f64;
    let mut c = Chart::new("recall-curve", "Recall@k", (520.0, 300.0), (0.0, k), (0.0, 1.0), ("k", "recall"));
    for (m, r) in reports.iter().enumerate() {
        let colour = PALETTE[m % PALETTE.len()];
        let points: Vec<(f64, f64)> = r.plots.recall_curve.iter().map(|&(k, v)| (k as f64, v)).collect();
        c.line(&points, colour, false, true);
        c.key(colour, &r.mode);
    }
    c.finish()
}

fn reliability(reports: &[BenchReport]) -> String {
    let mut c = Chart::new(
        "reliability",
        "Reliability of the confidence",
        (520.0, 340.0),
        (0.0, 1.0),
        (0.0, 1.0),
        ("confidence", "share relevant"),
    );
    c.line(&[(0.0, 0.0), (1.0, 1.0)], "#999999", true, false);
    for (m, r) in reports.iter().enumerate() {
        let colour = PALETTE[m % PALETTE.len()];
        let points: Vec<(f64, f64)> =
            r.plots.reliability.iter().filter(|b| b.count > 0).map(|b| (b.confidence, b.accuracy)).collect();
        c.line(&points, colour, false, true);
        c.key(colour, &format!("{} (ECE {:.3})", r.mode, r.ece));
    }
    c.finish()
}

fn latency(id: &str, name: &str, values: &[f64]) -> String {
    let Percentiles { p50, p99, .. } = Percentiles::of(values);
    let slowest = values.iter().copied().fold(0.0, f64::max);
    // Up to a little past p99: a rare outlier would squeeze every other bar into one.
    let top = (p99 * 1.25).max(slowest.min(p99 * 2.0)).max(1e-6);
    let width = top / LATENCY_BINS as f64;
    let mut counts = vec![0usize; LATENCY_BINS];
    for v in values {
        counts[((v / width) as usize).min(LATENCY_BINS - 1)] += 1;
    }
    let most = *counts.iter().max().unwrap_or(&1) as f64;
    let mut c = Chart::new(&format!("latency-{id}"), name, (340.0, 240.0), (0.0, top), (0.0, most), ("ms", "queries"));
    for (i, &n) in counts.iter().enumerate() {
        let lo = i as f64 * width;
        c.bar(lo, lo + width, n as f64, PALETTE[0], &format!("{}-{} ms: {n}", num(lo), num(lo + width)));
    }
    c.vline(p50, PALETTE[2], &format!("p50 {}", num(p50)), true);
    c.vline(p99, PALETTE[1], &format!("p99 {}", num(p99)), false);
    c.finish()
}

fn roc(reports: &[&BenchReport]) -> String {
    let mut c = Chart::new(
        "roc",
        "Answerability ROC",
        (420.0, 340.0),
        (0.0, 1.0),
        (0.0, 1.0),
        ("false-positive rate", "true-positive rate"),
    );
    c.line(&[(0.0, 0.0), (1.0, 1.0)], "#999999", true, false);
    for (m, r) in reports.iter().enumerate() {
        let colour = PALETTE[m % PALETTE.len()];
        c.line(r.plots.twin_roc.as_deref().unwrap_or_default(), colour, false, false);
        let auroc = r.default_path.as_ref().and_then(|d| d.twins.as_ref()).map_or(0.5, |t| t.auroc);
        c.key(colour, &format!("{} (AUROC {auroc:.3})", r.mode));
    }
    c.finish()
}
