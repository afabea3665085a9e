//! Where the repository points a reader inside its own documents: every relative Markdown
//! link of the README and `docs/` reaches a file and, with a `#fragment`, a heading of it; and
//! every section a file names by its heading (`docs/benchmarks.md, "Latency"`, in a doc
//! comment, a script's header or a page) is a heading of that page. A section moved to
//! another page, or renamed, fails here naming the file that still points at the old place.

use std::path::Path;

use crate::docs::{documents, prose_lines, repo};
use crate::layout::files_under;

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces made hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of a Markdown text, outside its code fences, without their `#`s.
fn headings(text: &str) -> Vec<String> {
    titles(text, false)
}

/// The places a page can be pointed at by name: its headings and, with `bold`, the bold
/// titles that open a paragraph (`**Licensed folds** (...)`).
fn titles(text: &str, bold: bool) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose_lines(text) {
        if line.starts_with('#') {
            let title = line.trim_start_matches('#');
            if title.starts_with(' ') {
                found.push(title.trim().to_owned());
            }
        } else if let Some(lead) = line.strip_prefix("**").filter(|_| bold) {
            found.push(lead.split("**").next().unwrap_or("").to_owned());
        }
    }
    found
}

/// The targets of a text's inline Markdown links, `[...](target)`.
fn link_targets(text: &str) -> Vec<&str> {
    text.match_indices("](").filter_map(|(at, _)| text[at + 2..].split_once(')').map(|(target, _)| target)).collect()
}

#[test]
fn every_relative_link_of_the_documents_reaches_a_file_and_a_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        let base = repo().join(&name).parent().map(Path::to_path_buf).unwrap_or_else(repo);
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            checked += 1;
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let page = if file.is_empty() { repo().join(&name) } else { base.join(file) };
            if !page.exists() {
                broken.push(format!("{name}: ({target}): no such file"));
                continue;
            }
            if !fragment.is_empty() {
                let text = std::fs::read_to_string(&page).unwrap_or_default();
                if !headings(&text).iter().any(|h| slug(h) == fragment) {
                    broken.push(format!("{name}: ({target}): no heading of that page has this anchor"));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} links read: the parser stopped finding them");
    assert!(broken.is_empty(), "links that lead nowhere:\n{}", broken.join("\n"));
}

/// Every file of code or prose under the folders that point at the documents (sources,
/// scripts, tests, training, the pages themselves), as (path from the root, text).
fn pointing_files() -> Vec<(String, String)> {
    let dirs = ["benches", "crates", "docs", "python", "scripts", "src", "tests", "training"];
    files_under(&dirs)
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let name = path.strip_prefix(repo()).ok()?.to_string_lossy().into_owned();
            Some((name, text))
        })
        .collect()
}

/// A text with comment markers at line starts dropped and its lines joined, so a reference
/// wrapped across two comment lines reads as one.
fn flattened(text: &str) -> String {
    text.lines()
        .map(|line| line.trim_start().trim_start_matches("//!").trim_start_matches("///").trim_start_matches("//"))
        .map(|line| line.trim_start_matches('#').trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `(page, heading)` for each `docs/PAGE.md, "Heading"`, `docs/PAGE.md "Heading"` or
/// `docs/PAGE.md ("Heading")` in a text.
fn section_references(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        let rest = &text[at..];
        let Some(end) = rest.find(".md") else { continue };
        let page = &rest[..end + 3];
        if page.contains(char::is_whitespace) {
            continue;
        }
        if let Some(heading) = quoted_after(&rest[end + 3..]) {
            found.push((page.to_owned(), heading.to_owned()));
        }
    }
    // `[page.md](page.md), "Section"`: a page beside the one that links it.
    for (at, _) in text.match_indices("](") {
        let Some((page, _)) = text[at + 2..].split_once(')') else { continue };
        let local = page.ends_with(".md") && !page.contains(['/', '#', ' ']);
        if let Some(heading) = quoted_after(&text[at + 2 + page.len()..]).filter(|_| local) {
            found.push((page.to_owned(), heading.to_owned()));
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The heading quoted right after a page's name: `, "X"`, ` "X"`, `("X")` or ` ("X")`.
fn quoted_after(text: &str) -> Option<&str> {
    let after = text.trim_start_matches(['`', ')']);
    let quoted = ["(\"", ", \"", " \"", " (\""].iter().find_map(|lead| after.strip_prefix(lead))?;
    quoted.split_once('"').map(|(heading, _)| heading)
}

#[test]
fn every_section_a_file_names_is_a_heading_of_its_page() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, text) in pointing_files() {
        if name.ends_with("doc_links.rs") {
            continue; // this file's own examples
        }
        for (page, heading) in section_references(&flattened(&text)) {
            checked += 1;
            let beside = repo().join(&name).parent().map(|dir| dir.join(&page)).filter(|_| !page.starts_with("docs/"));
            let Ok(page_text) = std::fs::read_to_string(beside.unwrap_or_else(|| repo().join(&page))) else {
                wrong.push(format!("{name}: {page}: no such page"));
                continue;
            };
            let wanted = heading.replace('`', "");
            if !titles(&page_text, true).iter().any(|h| h.replace('`', "").starts_with(&wanted)) {
                wrong.push(format!("{name}: {page} has no heading \"{heading}\""));
            }
        }
    }
    assert!(checked >= 20, "only {checked} section references read: the parser stopped finding them");
    assert!(wrong.is_empty(), "files that name a section their page does not have:\n{}", wrong.join("\n"));
}

#[test]
fn the_link_readers_find_what_they_should() {
    assert_eq!(slug("MCP gateway (`scripts/bench-gateway`)"), "mcp-gateway-scriptsbench-gateway");
    assert_eq!(
        slug("Learning from a deployment's own labels: `toolsearch learn`"),
        "learning-from-a-deployments-own-labels-toolsearch-learn"
    );
    assert_eq!(headings("# A\n```sh\n# not\n```\n## B c\n#tag\n**D** e"), ["A", "B c"]);
    assert_eq!(titles("# A\n**D e** (f)\n```\n**g**\n```", true), ["A", "D e"]);
    assert_eq!(link_targets("see [x](docs/a.md#b) and [y](c.md)"), ["docs/a.md#b", "c.md"]);
    let text =
        flattened("/// (docs/benchmarks.md, \"BM25 beside the\n/// embedding\") and docs/gateway.md \"Security\"");
    assert_eq!(
        section_references(&text),
        [
            ("docs/benchmarks.md".to_owned(), "BM25 beside the embedding".to_owned()),
            ("docs/gateway.md".to_owned(), "Security".to_owned())
        ]
    );
    assert_eq!(
        section_references("docs/scaling.md (\"Build memory\")"),
        [("docs/scaling.md".to_owned(), "Build memory".to_owned())]
    );
    let beside =
        section_references("([benchmarks.md](benchmarks.md), \"Where an example belongs\") and [x](a/b.md), \"No\"");
    assert_eq!(beside, [("benchmarks.md".to_owned(), "Where an example belongs".to_owned())]);
}
