//! Human-readable output of each verb.

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;
use toolsearch::disclosure::replay::Replay;
use toolsearch::eval::{BenchReport, CalibrationReport, LearnReport, TokenReport};
use toolsearch::{
    BuildReport, CallToolResponse, ExpandToolResponse, ListResponse, SearchNodesResponse, SearchToolsResponse,
    ToolPointer,
};

/// Human output with every control character but newline and tab escaped (`\u{1b}`), so text
/// from a catalogue (an imported MCP description, say) cannot drive the terminal.
pub(crate) fn printable(text: &str) -> String {
    escape_controls(text, |c| c == '\n' || c == '\t')
}

/// One line of human output: every control character escaped, newlines included, so a field
/// cannot fake another line.
fn one_line(text: &str) -> String {
    escape_controls(text, |_| false)
}

fn escape_controls(text: &str, keep: impl Fn(char) -> bool) -> String {
    if !text.chars().any(|c| c.is_control() && !keep(c)) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && !keep(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

fn scope_name(path: &str) -> String {
    if path.is_empty() {
        "the whole catalogue".into()
    } else {
        format!("{path:?}")
    }
}

fn pointer_lines(out: &mut String, p: &ToolPointer) {
    let tags = if p.tags.is_empty() { String::new() } else { format!("  #{}", one_line(&p.tags.join(" #"))) };
    let _ = writeln!(out, "  {:.2}  {}  [{}]{tags}", p.confidence, one_line(&p.tool_id), one_line(&p.path));
    let _ = writeln!(out, "        {}", one_line(&p.summary));
}

pub(crate) fn search(query: &str, r: &SearchToolsResponse) -> String {
    let answerable = r.answerable.map(|a| format!(" (answerable {a:.2})")).unwrap_or_default();
    let mut out = format!(
        "{} for {} in {}{answerable}\n",
        count(r.results.len(), "result", "results"),
        toolsearch::quoted(query),
        scope_name(&r.category_path)
    );
    for p in &r.results {
        pointer_lines(&mut out, p);
    }
    more(&mut out, r.next_cursor.as_deref());
    out
}

fn more(out: &mut String, cursor: Option<&str>) {
    if let Some(c) = cursor {
        let _ = writeln!(out, "more: --cursor {c}");
    }
}

pub(crate) fn nodes(query: &str, r: &SearchNodesResponse) -> String {
    let mut out = format!("{} for {}\n", count(r.results.len(), "category", "categories"), toolsearch::quoted(query));
    for n in &r.results {
        let _ = writeln!(out, "  {:.2}  {}  {}", n.confidence, one_line(&n.path), one_line(&n.summary));
    }
    out
}

pub(crate) fn list(r: &ListResponse) -> String {
    let where_ = if r.path.is_empty() { "/".to_owned() } else { r.path.clone() };
    let mut out = format!(
        "{where_}: {}, {}\n",
        count(r.nodes.len(), "category", "categories"),
        count(r.tools.len(), "tool", "tools")
    );
    for n in &r.nodes {
        let _ = writeln!(out, "  {}/  ({} tools)  {}", one_line(&n.name), n.tool_count, one_line(&n.summary));
    }
    for p in &r.tools {
        pointer_lines(&mut out, p);
    }
    more(&mut out, r.next_cursor.as_deref());
    out
}

pub(crate) fn expand(r: &ExpandToolResponse) -> String {
    let mut out = format!(
        "{} ({})\n  path: {}\n  summary: {}\n",
        one_line(&r.tool_id),
        one_line(&r.name),
        one_line(&r.paths.join(", ")),
        one_line(&r.summary)
    );
    if !r.description.is_empty() && r.description != r.summary {
        let _ = writeln!(out, "  description: {}", r.description);
    }
    if !r.tags.is_empty() {
        let _ = writeln!(out, "  tags: {}", r.tags.join(", "));
    }
    let schema = serde_json::to_string_pretty(&r.args_schema).unwrap_or_default();
    let _ = writeln!(out, "  arguments:\n{}", indent(&schema, 4));
    if r.validation.starts_with("off") {
        let _ = writeln!(out, "  validation: {}", one_line(&r.validation));
    }
    if let Some(rs) = &r.result_schema {
        let _ = writeln!(out, "  result:\n{}", indent(&serde_json::to_string_pretty(rs).unwrap_or_default(), 4));
    }
    if let Some(n) = &r.usage_notes {
        let _ = writeln!(out, "  usage notes: {n}");
    }
    out
}

pub(crate) fn call(r: &CallToolResponse) -> String {
    let result = match &r.result {
        serde_json::Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let status = if r.is_error { "failed" } else { "ok" };
    format!("{} {status}:\n{}\n", r.tool_id, indent(&result, 2))
}

/// "1 tool", "3 tools".
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}

/// The JSON form of a finished build.
#[derive(Serialize)]
pub(crate) struct BuildSummary {
    index: String,
    tools: usize,
    nodes: usize,
    embedded: usize,
    reused: usize,
    embed_seconds: f64,
    graph_seconds: f64,
    graph_updated: bool,
    lexical_seconds: f64,
    total_seconds: f64,
    tools_per_second: f64,
    warnings: Vec<toolsearch::catalog::CatalogWarning>,
}

impl BuildSummary {
    pub(crate) fn new(out: &Path, r: &BuildReport) -> Self {
        BuildSummary {
            index: out.display().to_string(),
            tools: r.tools,
            nodes: r.nodes,
            embedded: r.embedded,
            reused: r.reused,
            embed_seconds: r.embed_seconds,
            graph_seconds: r.graph_seconds,
            graph_updated: r.graph_updated,
            lexical_seconds: r.lexical_seconds,
            total_seconds: r.total_seconds,
            tools_per_second: r.tools as f64 / r.total_seconds.max(1e-9),
            warnings: r.warnings.clone(),
        }
    }
}

/// One `warning: ...` line per catalogue warning, for stderr.
pub(crate) fn warnings(r: &BuildReport) -> String {
    r.warnings.iter().map(|w| format!("warning: {}\n", one_line(&w.to_string()))).collect()
}

pub(crate) fn build(out: &Path, r: &BuildReport) -> String {
    format!(
        "indexed {} and {} into {} in {:.1} s ({:.0} tools/s; embedded {} in {:.1} s, reused {}; graph {:.1} s{}, BM25 {:.1} s)\n",
        count(r.tools, "tool", "tools"),
        count(r.nodes, "category", "categories"),
        out.display(),
        r.total_seconds,
        r.tools as f64 / r.total_seconds.max(1e-9),
        count(r.embedded, "document", "documents"),
        r.embed_seconds,
        r.reused,
        r.graph_seconds,
        if r.graph_updated { " (updated)" } else { "" },
        r.lexical_seconds
    )
}

pub(crate) fn bench(reports: &[BenchReport]) -> String {
    let mut out = String::new();
    let Some(first) = reports.first() else {
        return out;
    };
    let ks: Vec<String> = first.recall.iter().map(|(k, _)| format!("R@{k}")).collect();
    let _ = writeln!(out, "{}", count(first.queries, "query", "queries"));
    let _ = writeln!(
        out,
        "{:<7} {} {:>7} {:>7} {:>6} {:>6} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>9}",
        "mode",
        ks.iter().map(|k| format!("{k:>6}")).collect::<Vec<_>>().join(" "),
        "nDCG@10",
        "MRR",
        "ECE",
        "P@10",
        "embed",
        "dense",
        "lexical",
        "fuse",
        "p50",
        "p95",
        "p99",
        "cached"
    );
    for r in reports {
        let recall = r.recall.iter().map(|(_, v)| format!("{v:>6.3}")).collect::<Vec<_>>().join(" ");
        let l = &r.latency_ms;
        let cached = r.cached_p50_us.map_or("-".to_owned(), |us| format!("{us:.0}us"));
        let _ = writeln!(out, "{:<7} {recall} {:>7.3} {:>7.3} {:>6.3} {:>6.3} | {:>6.2}ms {:>6.2}ms {:>6.2}ms {:>6.2}ms {:>6.2}ms | {:>6.2}ms {:>6.2}ms {cached:>9}",
            r.mode, r.ndcg10, r.mrr, r.ece, r.precision10, l.embed.p50, l.dense.p50, l.lexical.p50, l.fuse.p50, l.total.p50, l.total.p95, l.total.p99);
    }
    let _ = writeln!(out, "(stage columns are p50; ECE and P@10 over the top-10 confidences)");
    if let Some(r) = reports.iter().find_map(|r| r.graph_recall10) {
        let _ = writeln!(out, "HNSW graph recall@10 against an exact scan of the stored vectors: {r:.3}");
    }
    for r in reports.iter().filter(|r| r.mode == "hybrid") {
        let _ = writeln!(out, "{}", latency_ratios(&r.latency_ms));
    }
    for r in reports.iter().filter(|r| r.mode == "hybrid") {
        let Some(d) = &r.default_path else { continue };
        let _ = writeln!(
            out,
            "default path (search, limit {}): nDCG@10 {:.3} (uncut {:.3}), R@5 {:.3}, {:.1} results shown; NO_MATCH for {:.1}% of queries (answerable < {:.3})",
            toolsearch::eval::DEFAULT_LIMIT,
            d.ndcg10,
            r.ndcg10,
            d.recall5,
            d.shown,
            100.0 * d.no_match_present,
            d.answerable_threshold
        );
        if let Some(t) = &d.twins {
            let _ = writeln!(
                out,
                "twins ({} pairs): answerable AUROC {:.3}; NO_MATCH for {:.1}% with the gold tools taken out, {:.1}% with them present",
                t.pairs,
                t.auroc,
                100.0 * t.no_match_removed,
                100.0 * t.no_match_present
            );
            let _ = writeln!(
                out,
                "  gold first in {:.1}% of pairs: a judge of the best result alone reaches at most AUROC {:.3}; answerable's AUROC on those pairs {:.3}",
                100.0 * t.gold_first,
                t.ceiling,
                t.auroc_gold_first
            );
        }
    }
    out
}

pub(crate) fn calibration(r: &CalibrationReport, dry_run: bool) -> String {
    format!(
        "fitted on {} queries: confidence = 1 / (1 + exp(-({:.3} * score {:+.3} * margin {:+.3})))\nheld-out ECE ({} queries): {:.4} before, {:.4} after{}\n",
        r.train_queries,
        r.fitted.scale,
        r.fitted.margin_scale,
        r.fitted.bias,
        r.heldout_queries,
        r.heldout_ece_before,
        r.heldout_ece_after,
        if dry_run { " (dry run: not stored)" } else { "; stored in the index" }
    )
}

pub(crate) fn learned(r: &LearnReport, dry_run: bool) -> String {
    let verdict = match (&r.adapter, dry_run) {
        (None, _) => "refused: it does not beat the unadapted ranking",
        (Some(_), true) => "dry run: not stored",
        (Some(_), false) => "stored in the index",
    };
    format!(
        "{} labelled queries: {} fit, {} chose {:?} and cosine weight {}, {} judged\nheld-out nDCG@10: {:.4} without the adapter, {:.4} with it ({verdict})\n",
        r.labels, r.fit, r.choose, r.method, r.alpha, r.judge, r.ndcg_before, r.ndcg_after
    )
}

pub(crate) fn tokens(r: &TokenReport) -> String {
    let mut out = format!(
        "{} queries over {} tools, {} tool definitions, tiktoken o200k_base\n",
        r.queries,
        r.tools,
        r.dialect.name()
    );
    out.push_str(&format!(
        "  up front:  {:>10.0} tokens per query (every definition: {})\n",
        r.upfront_per_query, r.upfront_definitions
    ));
    out.push_str(&format!(
        "  discovery: {:>10.0} tokens per query (p50 {:.0}, p95 {:.0}; {:.2} turns; discovery tools {} per turn)\n",
        r.discovery_per_query,
        r.discovery_percentiles.p50,
        r.discovery_percentiles.p95,
        r.turns,
        r.discovery_definitions
    ));
    out.push_str(&format!("  ratio:     {:>10.1}x fewer tokens through discovery\n", r.ratio));
    out.push_str(&format!("  gold tool reached by the script: {:.1}%\n", r.reached * 100.0));
    out
}

pub(crate) fn replay(r: &Replay) -> String {
    let mut out = String::new();
    out.push_str("System prompt snippet:\n");
    out.push_str(&indent(&r.system_prompt, 2));
    out.push('\n');
    for d in &r.diagnostics {
        out.push_str(&format!("note: {d}\n"));
    }
    out.push_str(&format!("\nvisible ({}): {}\n", r.initial.len(), r.initial.join(", ")));
    for step in &r.steps {
        out.push_str(&format!("\n[line {}] {}\n", step.line, step.action));
        if let Some(result) = &step.result {
            let label = if step.is_error { "error" } else { "result" };
            out.push_str(&format!("  {label}:\n{}\n", indent(result, 4)));
        }
        if !step.added.is_empty() {
            out.push_str(&format!("  + {}\n", step.added.join(", ")));
        }
        if !step.removed.is_empty() {
            out.push_str(&format!("  - {}\n", step.removed.join(", ")));
        }
        if !step.action.starts_with('#') {
            out.push_str(&format!("  visible ({}): {}\n", step.visible.len(), step.visible.join(", ")));
        }
    }
    let flagged = r.audit.iter().filter(|e| e.event.breaks_a_rule()).count();
    out.push_str(&format!(
        "\naudit trail: {}, {} breaking a rule\n",
        count(r.audit.len(), "event", "events"),
        count(flagged, "step", "steps")
    ));
    out
}

pub(crate) fn verified(r: &toolsearch::index::VerifyReport) -> String {
    let mut out = format!("{}: format {}, built with {}", r.index.display(), r.format_version, r.model);
    out.push_str(match (r.calibrated, r.adapter) {
        (false, false) => "\n",
        (true, false) => "; calibrated\n",
        (false, true) => "; query adapter learned\n",
        (true, true) => "; calibrated; query adapter learned\n",
    });
    out.push_str(&format!("{} files, {} bytes checked, {} tools", r.files, r.bytes, r.tools));
    match r.unreachable {
        Some(0) => out.push_str(", every tool reachable in the graph\n"),
        Some(n) => out.push_str(&format!(", {n} unreachable in the graph\n")),
        None => out.push_str(", graph not walked (faulty)\n"),
    }
    if r.faults.is_empty() {
        out.push_str("ok: no fault\n");
    }
    for f in &r.faults {
        out.push_str(&format!("fault: {}: {}\n", f.file.display(), f.problem));
    }
    out
}

/// The latency targets' ratios of one hybrid run (DESIGN: a search's p50 within 1.3x of the
/// query embedding's, p99 under 3x p50), both taken from the same queries in the same run, so
/// the machine's load moves both sides alike.
fn latency_ratios(l: &toolsearch::eval::StageLatency) -> String {
    let ratio = |a: f64, b: f64| if b > 0.0 { format!("{:.2}x", a / b) } else { "-".to_owned() };
    format!(
        "latency: p50 {:.2} ms is {} the embedding's p50 {:.2} ms; p99 is {} p50",
        l.total.p50,
        ratio(l.total.p50, l.embed.p50),
        l.embed.p50,
        ratio(l.total.p99, l.total.p50)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verify_report_says_what_the_index_was_built_with_and_carries() {
        let report = |calibrated, adapter| toolsearch::index::VerifyReport {
            index: "idx".into(),
            format_version: 12,
            model: "local/m (sha256 0123456789ab)".into(),
            calibrated,
            adapter,
            files: 2,
            bytes: 10,
            tools: 3,
            unreachable: Some(0),
            faults: Vec::new(),
        };
        let plain = verified(&report(false, false));
        assert!(plain.starts_with("idx: format 12, built with local/m (sha256 0123456789ab)\n2 files"), "{plain}");
        let both = verified(&report(true, true));
        assert!(both.contains("(sha256 0123456789ab); calibrated; query adapter learned\n"), "{both}");
        assert!(verified(&report(false, true)).contains("); query adapter learned\n"));
    }

    #[test]
    fn a_build_line_counts_one_in_the_singular() {
        let one = BuildReport { tools: 1, nodes: 1, embedded: 1, total_seconds: 1.0, ..Default::default() };
        let line = build(Path::new("idx"), &one);
        assert!(
            line.starts_with("indexed 1 tool and 1 category into idx") && line.contains("embedded 1 document in"),
            "{line}"
        );
        let many = BuildReport { tools: 3, nodes: 0, embedded: 2, total_seconds: 1.0, ..Default::default() };
        let line = build(Path::new("idx"), &many);
        assert!(
            line.starts_with("indexed 3 tools and 0 categories") && line.contains("embedded 2 documents"),
            "{line}"
        );
    }
}
