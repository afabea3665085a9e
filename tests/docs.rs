//! The README and `docs/` as a newcomer reads them: every file of the repository they name
//! exists, and every `toolsearch` command in their shell blocks names a real verb and flags
//! that verb takes (its `--help` lists each), and every script they run is there and reads each
//! `--flag` they give it. Examples that run end to end are tested where they belong (the
//! `$ command` transcripts and what they print in `transcripts`, the Python examples in
//! `tests/python/test_docs.py`, the gateway configs in `gateway_configs`, the HAProxy recipe
//! in `gateway_haproxy`); this catches what those do not: a verb or flag renamed, a file moved.

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

pub(crate) use common::repo;

/// The folders of the repository whose files the documents name.
const REPO_DIRS: [&str; 8] = ["crates", "data", "docs", "examples", "python", "scripts", "tests", "training"];

/// README.md and every `docs/*.md`, as (name, text).
pub(crate) fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ reads")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(repo().join(&name)).expect("document reads");
            (name, text)
        })
        .collect()
}

/// A document's ```json blocks: the byte offset of each opening fence, and the block's text.
pub(crate) fn json_fences(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut offset = 0;
    while let Some(fence) = text[offset..].find("```json\n").map(|i| offset + i) {
        let body = fence + "```json\n".len();
        let end = text[body..].find("```").map_or(text.len(), |i| body + i);
        found.push((fence, &text[body..end]));
        offset = end + 3;
    }
    found
}

/// The lines of a document's shell blocks (fences marked sh, bash, console, shell, text or
/// nothing), a backslash-continued line joined into one, a trailing `# comment` and a
/// leading `$ ` prompt dropped.
fn shell_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut fence: Option<bool> = None;
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                None => Some(matches!(info.trim(), "" | "sh" | "bash" | "console" | "shell" | "text")),
                Some(_) => None,
            };
            continue;
        }
        if fence != Some(true) {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let joined = std::mem::take(&mut pending);
        let code = joined.split(" #").next().unwrap_or("").trim();
        lines.push(code.strip_prefix("$ ").unwrap_or(code).to_owned());
    }
    lines
}

/// The words after the program name, when `line` runs toolsearch (the release binary, `$T`
/// as the benchmark recipes name it, or `toolsearch` on the PATH).
fn toolsearch_words(line: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| matches!(*w, "target/release/toolsearch" | "$T" | "toolsearch"))?;
    if words[at] == "toolsearch" && at != 0 {
        return None; // prose or another program's argument, not a command
    }
    Some(words[at + 1..].to_vec())
}

/// Paths under the repository's own folders that a document names: a file (its last part
/// has a dot), a nested path, or a script. `tiny-*` stands for any entry so named.
fn named_paths(text: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./*-".contains(c);
    let mut paths = Vec::new();
    for token in text.split(|c: char| !is_path_char(c)) {
        let token = token.trim_end_matches(['.', '-']);
        let Some((dir, rest)) = token.split_once('/') else { continue };
        if !REPO_DIRS.contains(&dir) || rest.is_empty() {
            continue;
        }
        let last = rest.rsplit('/').next().unwrap_or(rest);
        if last.contains('.') || rest.contains('/') || dir == "scripts" {
            paths.push(token.to_owned());
        }
    }
    paths
}

fn exists(path: &str) -> bool {
    let Some(prefix) = path.strip_suffix('*') else { return repo().join(path.trim_end_matches('/')).exists() };
    let full = repo().join(prefix);
    let (parent, start) = if prefix.ends_with('/') {
        (full.as_path(), String::new())
    } else {
        (full.parent().unwrap_or(Path::new(".")), full.file_name().unwrap_or_default().to_string_lossy().into_owned())
    };
    std::fs::read_dir(parent)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with(&start)))
        .unwrap_or(false)
}

#[test]
fn every_repository_file_the_documents_name_exists() {
    let mut missing = Vec::new();
    for (name, text) in documents() {
        for path in named_paths(&text) {
            if !exists(&path) {
                missing.push(format!("{name}: {path}"));
            }
        }
    }
    assert!(missing.is_empty(), "the documents name files that are not there:\n{}", missing.join("\n"));
}

/// `toolsearch <verb...> --help`: its exit status and text, asked once per verb.
fn help<'a>(cache: &'a mut HashMap<String, (bool, String)>, verb: &[&str]) -> &'a (bool, String) {
    cache.entry(verb.join(" ")).or_insert_with(|| {
        let out =
            Command::new(env!("CARGO_BIN_EXE_toolsearch")).args(verb).arg("--help").output().expect("binary runs");
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    })
}

/// Whether `help` lists `flag` as a whole flag (`--model`, not `--model-dir`).
fn lists(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let after = help[at + flag.len()..].chars().next();
        !matches!(after, Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[test]
fn every_toolsearch_command_in_the_documents_names_a_real_verb_and_its_flags() {
    let mut cache = HashMap::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        for line in shell_lines(&text) {
            let Some(words) = toolsearch_words(&line) else { continue };
            let Some(first) = words.first() else { continue };
            let mut verb = vec![*first];
            if first.starts_with('-') {
                verb.clear(); // `toolsearch --version`: the top level's own flags
            } else if *first == "gateway" {
                // `gateway login SERVER ...`: a sub-verb when gateway's help lists it as one.
                if let Some(second) = words
                    .get(1)
                    .filter(|w| !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                {
                    let listed = help(&mut cache, &["gateway"])
                        .1
                        .lines()
                        .any(|l| l.trim_start().starts_with(&format!("{second} ")));
                    if listed {
                        verb.push(second);
                    }
                }
            }
            let (ok, text) = help(&mut cache, &verb);
            checked += 1;
            if !*ok {
                wrong.push(format!("{name}: `{line}`: no verb `{}`", verb.join(" ")));
                continue;
            }
            for word in &words {
                let flag = word.trim_start_matches('[').trim_end_matches([']', ',']).split('=').next().unwrap_or("");
                if flag.starts_with("--") && flag.len() > 2 && !lists(text, flag) {
                    wrong.push(format!("{name}: `{line}`: `{} --help` lists no {flag}", verb.join(" ")));
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} commands found in the documents: is the parser still reading them?");
    assert!(wrong.is_empty(), "commands in the documents that the binary does not take:\n{}", wrong.join("\n"));
}

/// `(script, flags)` for each run of a repository script in a shell line (`scripts/NAME`,
/// `bash scripts/NAME` or `python3 scripts/NAME.py`): the `--flags` given to it, up to the
/// next `&&`, `|` or `;`.
fn script_runs(line: &str) -> Vec<(&str, Vec<&str>)> {
    let mut runs = Vec::new();
    for part in line.split(['|', ';', '&']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| w.starts_with("scripts/")) else { continue };
        let flags = words[at + 1..]
            .iter()
            .map(|w| w.trim_start_matches('[').trim_end_matches([']', ',']).split('=').next().unwrap_or(""))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .collect();
        runs.push((words[at], flags));
    }
    runs
}

/// The lines of a Markdown text outside its code fences (fence lines left out too).
pub(crate) fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut fence = false;
    text.lines().filter(move |line| {
        let marker = line.trim_start().starts_with("```");
        fence ^= marker;
        !marker && !fence
    })
}

/// The inline code spans of a document's prose that run a script (`` `scripts/NAME ...` ``).
fn inline_commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose_lines(text) {
        for span in line.split('`').skip(1).step_by(2) {
            let run = span.strip_prefix("bash ").or_else(|| span.strip_prefix("python3 ")).unwrap_or(span);
            if run.starts_with("scripts/") {
                found.push(span.to_owned());
            }
        }
    }
    found
}

#[test]
fn every_script_the_documents_run_is_there_and_reads_each_flag_given() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        for line in shell_lines(&text).into_iter().chain(inline_commands(&text)) {
            for (script, flags) in script_runs(&line) {
                checked += 1;
                let Ok(source) = std::fs::read_to_string(repo().join(script)) else {
                    wrong.push(format!("{name}: `{line}`: no {script}"));
                    continue;
                };
                for flag in flags {
                    if !lists(&source, flag) {
                        wrong.push(format!("{name}: `{line}`: {script} reads no {flag}"));
                    }
                }
            }
        }
    }
    assert!(checked >= 40, "only {checked} script runs found in the documents: is the parser still reading them?");
    assert!(wrong.is_empty(), "script runs in the documents that the scripts do not take:\n{}", wrong.join("\n"));
}

/// The interpreter words of a shell line that run a Python file (`INTERPRETER FILE.py`).
fn python_runs(line: &str) -> Vec<&str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).filter(|w| w[1].ends_with(".py") && w[0].contains("python")).map(|w| w[0]).collect()
}

#[test]
fn every_python_file_the_documents_run_is_run_by_an_interpreter_a_fresh_machine_has() {
    // A fresh machine has `python3` (Debian has no `python` unless asked); a script needing
    // more than the standard library runs from the venv its setup script made.
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        for line in shell_lines(&text) {
            for python in python_runs(&line) {
                checked += 1;
                if python != "python3" && !python.ends_with("/bin/python") && !python.ends_with("/bin/python3") {
                    wrong.push(format!("{name}: `{line}`: runs {python}"));
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} Python runs found in the documents: is the parser still reading them?");
    assert!(
        wrong.is_empty(),
        "Python files the documents run with an interpreter a fresh machine lacks:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_readers_parsers_find_what_they_should() {
    let text =
        "x\n```sh\n$ target/release/toolsearch index a \\\n  --out b  # why\n```\n```json\n{\"toolsearch\": 1}\n```\n";
    assert_eq!(shell_lines(text), vec!["target/release/toolsearch index a    --out b"]);
    assert_eq!(toolsearch_words(&shell_lines(text)[0]), Some(vec!["index", "a", "--out", "b"]));
    assert_eq!(toolsearch_words("pip install toolsearch"), None);
    let named = named_paths("see `tests/index/`, docs/s, scripts/demo, tests/models/tiny-*, and ../shared/bench/x.");
    assert_eq!(named, vec!["tests/index/", "scripts/demo", "tests/models/tiny-*"]);
    assert!(exists("tests/models/tiny-*") && !exists("tests/models/huge-*") && !exists("tests/index.rs"));
    assert!(lists("  --model <DIR>\n  --model-dir", "--model") && !lists("  --model-dir <X>", "--model"));
    let runs = script_runs("scripts/setup && bash scripts/bench-gateway --compare OLD [--x=1] | tee log");
    assert_eq!(runs, vec![("scripts/setup", vec![]), ("scripts/bench-gateway", vec!["--compare", "--x"])]);
    let inline =
        inline_commands("run `bash scripts/fuzz 60` or `toolsearch x`\n```sh\nscripts/demo\n```\n`scripts/a --b`");
    assert_eq!(inline, vec!["bash scripts/fuzz 60", "scripts/a --b"]);
}
