//! Every transcript of the README and `docs/` (a `$ command` line in a code block, then what
//! it prints) is run as written with the release binary, and must print what the page shows.
//! `docs` checks that commands name real verbs and flags; this checks what they answer: a
//! confidence, an error's wording or a hint that changed leaves a page showing a newcomer
//! something the product no longer says.
//!
//! A transcript runs under `bash` in a fresh directory that holds what the pages assume
//! (`data/` of this repository, the sample index at `target/sample-index`, which
//! `scripts/demo` builds), with `toolsearch`, `$T` and `target/release/toolsearch` all this
//! build's binary. The few inputs a page names without making them are made by
//! [`inputs`], as the page describes them. In a page's expected output, `...` stands for
//! any text (a cursor's tail, a hint list cut short); every other character must match,
//! line for line. A transcript that shows an `error:` must exit non-zero, any other zero.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::docs::documents;
use common::{build, copy_dir, repo, sample_catalog, scratch};

/// One `$ command` of a page and the lines the page shows it printing.
#[derive(Debug, PartialEq)]
struct Transcript {
    /// Where: `docs/page.md:LINE`.
    place: String,
    command: String,
    expected: Vec<String>,
}

/// The transcripts of a page: inside any code block, each line starting `$ ` and the lines
/// after it up to the next such line or the block's end.
fn transcripts(name: &str, text: &str) -> Vec<Transcript> {
    let mut found: Vec<Transcript> = Vec::new();
    let mut fence = false;
    let mut open = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            open = false;
            continue;
        }
        if !fence {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            found.push(Transcript {
                place: format!("{name}:{}", number + 1),
                command: command.to_owned(),
                expected: Vec::new(),
            });
            open = true;
        } else if open {
            found.last_mut().expect("open transcript").expected.push(line.trim_end().to_owned());
        }
    }
    found
}

/// Whether `actual` is `expected`, where each `...` of `expected` stands for any text.
fn matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split("...");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether the lines printed are the lines a page shows: line for line by [`matches`], where
/// a line of only `...` stands for any number of lines, none included.
fn lines_match(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            actual.split_first().is_some_and(|(line, tail)| matches(first, line) && lines_match(rest, tail))
        }
    }
}

/// The directory the transcripts run in: `data/` and the sample index, as after
/// `scripts/demo`; and the inputs pages name without making them.
fn workplace() -> PathBuf {
    let dir = scratch().join("transcripts");
    std::fs::create_dir_all(dir.join("target")).unwrap();
    std::os::unix::fs::symlink(repo().join("data"), dir.join("data")).unwrap();
    copy_dir(&build(&sample_catalog(), "transcripts-sample"), &dir.join("target/sample-index"));
    inputs(&dir);
    dir
}

/// What pages name without making it, made as each page describes it.
fn inputs(dir: &Path) {
    // docs/manifest.md: a manifest that defines one id twice, JSON Lines missing a comma.
    let twice = r#"{"tools": [{"id": "a.one", "name": "one"}, {"id": "a.one", "name": "again"}]}"#;
    std::fs::write(dir.join("tools.json"), twice).unwrap();
    let lines = "{\"id\": \"a.one\", \"name\": \"one\"}\n{\"id\": \"a.two\" \"name\": \"two\"}\n";
    std::fs::write(dir.join("tools.jsonl"), lines).unwrap();
    // ... a value of the wrong type on line 2, and the same tools in YAML.
    let typed =
        "{\"id\": \"a.one\", \"name\": \"one\"}\n{\"id\": \"a.two\", \"name\": \"two\", \"tags\": [\"x\", 1]}\n";
    std::fs::write(dir.join("typed.jsonl"), typed).unwrap();
    std::fs::write(dir.join("tools.yaml"), "tools:\n  - id: a.one\n    name: one\n").unwrap();
    // docs/robustness.md: a manifest whose one tool has 300 KiB of usage notes.
    let notes = "x".repeat(300 * 1024);
    let big = format!(r#"{{"tools": [{{"id": "big", "name": "big", "usage_notes": "{notes}"}}]}}"#);
    std::fs::write(dir.join("big.json"), big).unwrap();
    // docs/troubleshooting.md: an index written by an older build (format version 3).
    let old = dir.join("old-index");
    copy_dir(&dir.join("target/sample-index"), &old);
    let mut meta = std::fs::read(old.join("meta.bin")).unwrap();
    meta[8..12].copy_from_slice(&3u32.to_le_bytes());
    std::fs::write(old.join("meta.bin"), meta).unwrap();
    // docs/models.md: the default model's index of the sample, built by the block above it.
    copy_dir(&dir.join("target/sample-index"), &dir.join("tmp/idx-tools"));
    // docs/protocol.md: an executor, which reads the call and prints the tool's result.
    let run = dir.join("run-tool.sh");
    std::fs::write(&run, "#!/bin/sh\ncat > /dev/null\necho '{\"days\": [{\"high_c\": 4, \"low_c\": -2}]}'\n").unwrap();
    let mut mode = std::fs::metadata(&run).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&run, mode).unwrap();
}

/// Runs one transcript's command in `dir`: whether it exited 0, and what it printed,
/// standard output then error.
fn run(dir: &Path, command: &str) -> (bool, Vec<String>) {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_toolsearch"));
    let command = command.replace("target/release/toolsearch", "$T").replace(" /tmp/", " tmp/");
    let path = format!("{}:{}", binary.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash")
        .arg("-c")
        .arg(&command)
        .current_dir(dir)
        .env("PATH", path)
        .env("T", &binary)
        .env_remove("TOOLSEARCH_MODELS")
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text.lines().map(|line| line.trim_end().replace(" tmp/", " /tmp/")).collect())
}

#[test]
fn every_transcript_of_the_documents_prints_what_the_page_shows() {
    let dir = workplace();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        for transcript in transcripts(&name, &text) {
            checked += 1;
            let (success, actual) = run(&dir, &transcript.command);
            // A page showing an error shows a command that fails: its exit status says so too.
            let fails = transcript.expected.iter().any(|line| line.starts_with("error: "));
            if success == fails {
                wrong.push(format!(
                    "{}: $ {}: exit status {}",
                    transcript.place,
                    transcript.command,
                    if success { "0" } else { "not 0" }
                ));
            }
            if !lines_match(&transcript.expected, &actual) {
                wrong.push(format!(
                    "{}: $ {}\n  the page shows:\n    {}\n  it prints:\n    {}",
                    transcript.place,
                    transcript.command,
                    transcript.expected.join("\n    "),
                    actual.join("\n    ")
                ));
            }
        }
    }
    assert!(checked >= 10, "only {checked} transcripts found: the reader is broken");
    assert!(wrong.is_empty(), "{} of {checked} transcripts print something else:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_transcript_reader_and_matcher_do_what_they_say() {
    let page = "text\n```console\n$ toolsearch a\nline one\n  line two  \n$ toolsearch b\n```\n$ not in a block\n```\n$ c\n```\n";
    let found = transcripts("p.md", page);
    let summary: Vec<(&str, &str, usize)> =
        found.iter().map(|t| (t.place.as_str(), t.command.as_str(), t.expected.len())).collect();
    assert_eq!(summary, [("p.md:3", "toolsearch a", 2), ("p.md:6", "toolsearch b", 0), ("p.md:10", "c", 0)]);
    assert_eq!(found[0].expected, ["line one", "  line two"]);
    assert!(matches("more: --cursor 0200...", "more: --cursor 02000000abcdef"));
    assert!(matches("  {\"days\": [...]}", "  {\"days\": [{\"high_c\": 4}]}"));
    assert!(matches("exact", "exact"));
    assert!(!matches("exact", "exact but longer"));
    assert!(!matches("0.93 a...", "0.92 a b"));
    assert!(!matches("a...b...c", "a c b"));
    assert!(!matches("ab...ba", "aba"));
    let lines = |text: &str| text.lines().map(str::to_owned).collect::<Vec<_>>();
    assert!(lines_match(&lines("a\n  ...\nz"), &lines("a\nb\nc\nz")));
    assert!(lines_match(&lines("a\n...\nz"), &lines("a\nz")));
    assert!(!lines_match(&lines("a\n...\nz"), &lines("a\nb")));
    assert!(!lines_match(&lines("a\nb"), &lines("a\nb\nc")));
    assert!(!lines_match(&lines("a\nb\nc"), &lines("a\nb")));
}
