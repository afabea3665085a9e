//! Whether a server entry starts this very gateway: `toolsearch gateway` on the config being
//! read, the usual entry of a file that also lists the gateway for its client (the client's
//! one `toolsearch` entry in `~/.cursor/mcp.json`). Started, it would read the same file and
//! start another copy, without end. An entry found so is skipped with a note; whatever this
//! misses (a wrapper script) is stopped by the chain limit of [`crate::lineage`].

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Whether `command args` (run in `cwd` with `env` on top of the gateway's environment) starts a
/// toolsearch gateway on the file `config`.
pub(super) fn starts_this_gateway(
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
    env: &BTreeMap<String, String>,
    config: &Path,
) -> bool {
    let words: Vec<&str> = std::iter::once(command).chain(args.iter().map(String::as_str)).collect();
    // `toolsearch ...`, or a launcher of it (`uvx toolsearch ...`, `python -m toolsearch ...`).
    let path = crate::child_program::child_path(env);
    let toolsearch = words.iter().position(|w| is_toolsearch(w, cwd, path.as_deref()));
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

/// Whether a word names the toolsearch program: its path or name, or this executable (under
/// another name) as the child would find it.
fn is_toolsearch(word: &str, cwd: Option<&Path>, path: Option<&OsStr>) -> bool {
    let name = Path::new(word).file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == "toolsearch" || name == "toolsearch.exe" {
        return true;
    }
    let this = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    this.is_some() && which(word, cwd, path).and_then(|p| p.canonicalize().ok()) == this
}

/// Where the child finds `word`: a path (relative to its `cwd`), or the program along its `PATH`
/// as it starts it (`crate::child_program::found`, the lookup the start itself uses).
fn which(word: &str, cwd: Option<&Path>, path: Option<&OsStr>) -> Option<PathBuf> {
    if word.contains('/') {
        return Some(match cwd {
            Some(dir) => dir.join(word),
            None => PathBuf::from(word),
        });
    }
    crate::child_program::found(word, path)
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
        let none = BTreeMap::new();
        assert!(starts_this_gateway("toolsearch", &s(&["gateway", "--config", c]), None, &none, &config));
        assert!(starts_this_gateway(
            "/opt/bin/toolsearch",
            &s(&["--json", "gateway", &format!("--config={c}")]),
            None,
            &none,
            &config
        ));
        assert!(starts_this_gateway("uvx", &s(&["toolsearch", "gateway", "--config", c]), None, &none, &config));
        assert!(starts_this_gateway(
            "toolsearch",
            &s(&["gateway", "--config", "mcp.json"]),
            Some(dir.path()),
            &none,
            &config
        ));
        // Another config, another verb, another program: not this gateway.
        assert!(!starts_this_gateway(
            "toolsearch",
            &s(&["gateway", "--config", other.to_str().unwrap()]),
            None,
            &none,
            &config
        ));
        assert!(!starts_this_gateway("toolsearch", &s(&["serve", "idx"]), None, &none, &config));
        assert!(!starts_this_gateway("node", &s(&["server.js", "gateway", "--config", c]), None, &none, &config));
    }

    /// This executable under another name is found as the child finds it: along the server's
    /// own `PATH`, or by a path relative to the server's `cwd`.
    #[cfg(unix)]
    #[test]
    fn this_executable_under_another_name_is_found_along_the_servers_own_path() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, "{}").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(std::env::current_exe().unwrap(), bin.join("ts")).unwrap();
        let args = s(&["gateway", "--config", config.to_str().unwrap()]);
        let on_path = BTreeMap::from([("PATH".to_string(), bin.to_str().unwrap().to_string())]);
        let elsewhere = BTreeMap::from([("PATH".to_string(), "/nonexistent".to_string())]);
        assert!(starts_this_gateway("ts", &args, None, &on_path, &config));
        assert!(!starts_this_gateway("ts", &args, None, &elsewhere, &config));
        assert!(starts_this_gateway("bin/ts", &args, Some(dir.path()), &elsewhere, &config));
        assert!(!starts_this_gateway("bin/ts", &args, None, &elsewhere, &config));
    }
}
