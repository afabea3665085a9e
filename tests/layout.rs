//! The repository's shape as the project's standards put it: every source, script and
//! document is at most 450 lines (one job a file, named after what it holds), and each
//! crate's `lib.rs` opens with a doc comment saying its job. Data (catalogues, models, lock
//! files) is not code and is left out.

use std::path::{Path, PathBuf};

use crate::docs::repo;

/// The most lines a file of code or prose may have.
const MAX_LINES: usize = 450;

/// Code and prose under `dir`: Rust, Python, JavaScript, shell, TOML and Markdown files, and
/// the extensionless scripts of `scripts/`; nothing under build outputs.
fn code_and_prose(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let built = matches!(name.as_str(), "target" | "build" | "dist" | "node_modules" | ".venv" | "__pycache__");
            if !built && !name.starts_with('.') && !name.ends_with(".egg-info") {
                code_and_prose(&path, out);
            }
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str());
        let script = ext.is_none() && dir.ends_with("scripts");
        if script || matches!(ext, Some("rs" | "py" | "js" | "mjs" | "sh" | "toml" | "md")) {
            out.push(path);
        }
    }
}

/// The files of code or prose under `dirs` of the repository (walked whole), beside its
/// top-level README.md, ARCHITECTURE.md and `.ci/run`.
pub(crate) fn files_under(dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md"), repo().join("ARCHITECTURE.md"), repo().join(".ci/run")];
    for dir in dirs {
        code_and_prose(&repo().join(dir), &mut out);
    }
    out
}

/// Every file of code or prose in the repository, from its root.
fn files() -> Vec<PathBuf> {
    files_under(&[
        "benches", "crates", "docs", "examples", "fuzz", "models", "python", "scripts", "src", "tests", "training",
    ])
}

/// The files of `paths` over `max` lines, as "path: N lines".
fn over(paths: &[PathBuf], max: usize) -> Vec<String> {
    paths
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).ok()?.lines().count();
            let name = path.strip_prefix(repo()).unwrap_or(path).display();
            (lines > max).then(|| format!("{name}: {lines} lines"))
        })
        .collect()
}

#[test]
fn no_file_of_code_or_prose_is_over_450_lines() {
    let files = files();
    assert!(files.len() >= 300, "only {} files found: is the walk still reading them?", files.len());
    let long = over(&files, MAX_LINES);
    assert!(long.is_empty(), "files over {MAX_LINES} lines (split them by job):\n{}", long.join("\n"));
}

#[test]
fn every_crate_opens_with_its_job() {
    let crates = std::fs::read_dir(repo().join("crates")).expect("crates/ reads");
    let mut libs: Vec<PathBuf> = crates.flatten().map(|c| c.path().join("src/lib.rs")).filter(|p| p.exists()).collect();
    libs.push(repo().join("src/lib.rs"));
    assert!(libs.len() >= 10, "only {} crates found", libs.len());
    let silent: Vec<String> = libs
        .iter()
        .filter(|lib| {
            let text = std::fs::read_to_string(lib).unwrap_or_default();
            let opening: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
            opening.len() < 3
        })
        .map(|lib| lib.strip_prefix(repo()).unwrap_or(lib).display().to_string())
        .collect();
    assert!(
        silent.is_empty(),
        "crates whose lib.rs does not open with a doc comment of their job:\n{}",
        silent.join("\n")
    );
}

#[test]
fn the_line_count_names_a_long_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let long = dir.path().join("long.rs");
    std::fs::write(&long, "x\n".repeat(MAX_LINES + 1)).expect("writes");
    let short = dir.path().join("short.rs");
    std::fs::write(&short, "x\n".repeat(MAX_LINES)).expect("writes");
    let found = over(&[long, short], MAX_LINES);
    assert_eq!(found.len(), 1);
    assert!(found[0].ends_with("long.rs: 451 lines"), "{found:?}");
}
