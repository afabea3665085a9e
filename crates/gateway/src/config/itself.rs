//! Whether a server entry starts this very gateway: `toolsearch gateway` on the config being
//! read, the usual entry of a file that also lists the gateway for its client (the client's
//! one `toolsearch` entry in `~/.cursor/mcp.json`). Started, it would read the same file and
//! start another copy, without end. An entry found so is skipped with a note; whatever this
//! misses (a wrapper script) is stopped by the chain limit of [`crate::lineage`].

use std::path::{Path, PathBuf};

/// Whether `command args` (run in `cwd`) starts a toolsearch gateway on the file `config`.
pub(super) fn starts_this_gateway(command: &str, args: &[String], cwd: Option<&Path>, config: &Path) -> bool {
    let words: Vec<&str> = std::iter::once(command).chain(args.iter().map(String::as_str)).collect();
    // `toolsearch ...`, or a launcher of it (`uvx toolsearch ...`, `python -m toolsearch ...`).
    let toolsearch = words.iter().position(|w| is_toolsearch(w));
    let Some(at) = toolsearch else { return false };
    let rest = &words[at + 1..];
    if !rest.contains(&"gateway") {
        return false;
    }
    let given = rest.iter().enumerate().find_map(|(i, w)| match w.strip_prefix("--config=") {
        Some(v) => Some(v),
        None if *w == "--config" => rest.get(i + 1).copied(),
        None => None,
    });
    let Some(given) = given else { return false };
    let given = PathBuf::from(given);
    let given = match (given.is_relative(), cwd) {
        (true, Some(dir)) => dir.join(given),
        _ => given,
    };
    match (given.canonicalize(), config.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether a word names the toolsearch program: its path or name, or this executable.
fn is_toolsearch(word: &str) -> bool {
    let name = Path::new(word).file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == "toolsearch" || name == "toolsearch.exe" {
        return true;
    }
    let this = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    this.is_some() && which(word).and_then(|p| p.canonicalize().ok()) == this
}

/// Where `word` is found: as a path, or on `PATH`.
fn which(word: &str) -> Option<PathBuf> {
    if word.contains('/') {
        return Some(PathBuf::from(word));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(word)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn an_entry_running_a_gateway_on_the_same_file_is_this_gateway() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, "{}").unwrap();
        let other = dir.path().join("other.json");
        std::fs::write(&other, "{}").unwrap();
        let c = config.to_str().unwrap();
        assert!(starts_this_gateway("toolsearch", &s(&["gateway", "--config", c]), None, &config));
        assert!(starts_this_gateway(
            "/opt/bin/toolsearch",
            &s(&["--json", "gateway", &format!("--config={c}")]),
            None,
            &config
        ));
        assert!(starts_this_gateway("uvx", &s(&["toolsearch", "gateway", "--config", c]), None, &config));
        assert!(starts_this_gateway("toolsearch", &s(&["gateway", "--config", "mcp.json"]), Some(dir.path()), &config));
        // Another config, another verb, another program: not this gateway.
        assert!(!starts_this_gateway(
            "toolsearch",
            &s(&["gateway", "--config", other.to_str().unwrap()]),
            None,
            &config
        ));
        assert!(!starts_this_gateway("toolsearch", &s(&["serve", "idx"]), None, &config));
        assert!(!starts_this_gateway("node", &s(&["server.js", "gateway", "--config", c]), None, &config));
    }
}
