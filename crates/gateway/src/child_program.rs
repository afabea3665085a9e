//! Where a stdio server's bare command (`node`, `npx`, `uvx`) is found, so that it starts
//! without copying the gateway.
//!
//! A child gets an environment of its own (`crate::child::set_env`), and when a command's
//! `PATH` is set that way the standard library cannot let `posix_spawn` look the program up: it
//! forks the whole gateway instead (a copy of the page tables of a process holding a model and
//! an index, then a write fault on each page the gateway writes next) and looks the program up
//! in the child.
//! Looking it up here first, along the `PATH` the child will get and the way `execvp` does,
//! lets the program start by its full path with `posix_spawn` (a `vfork`). What would make the
//! lookup depend on the child's working directory (a relative entry in `PATH`) is left to the
//! child, as before.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The `PATH` a child started with `env` on top of the gateway's environment gets: its own
/// `PATH` if it sets one, else the gateway's (every `inherit_env` passes the gateway's).
pub(crate) fn child_path(env: &std::collections::BTreeMap<String, String>) -> Option<OsString> {
    env.get("PATH").map(OsString::from).or_else(|| std::env::var_os("PATH"))
}

/// `command`'s full path along `path`, as `execvp` would find it: the first entry holding an
/// executable file of that name. `None` (the child looks it up, as before) when `command`
/// names a path already, when no entry holds it, or when an entry relative to the child's
/// working directory (or an empty one, which means it) comes first.
pub(crate) fn found(command: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if command.is_empty() || command.contains('/') {
        return None;
    }
    for dir in std::env::split_paths(path?) {
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(command);
        if executable(&candidate) {
            return Some(candidate);
        }
    }
    None
}

/// Whether `path` is a file this process may execute.
#[cfg(unix)]
fn executable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if !path.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Elsewhere the child looks its program up itself.
#[cfg(not(unix))]
fn executable(_: &Path) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::found;
    use std::ffi::OsString;
    use std::os::unix::fs::PermissionsExt;

    fn file(dir: &std::path::Path, name: &str, mode: u32) {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The first entry that holds an executable file wins, as with `execvp`; a file that may
    /// not be executed, or a directory of that name, is passed over.
    #[test]
    fn the_first_executable_along_path_is_found() {
        let t = tempfile::tempdir().unwrap();
        let (a, b, c) = (t.path().join("a"), t.path().join("b"), t.path().join("c"));
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).unwrap();
        }
        file(&a, "srv", 0o644);
        std::fs::create_dir(b.join("srv")).unwrap();
        file(&c, "srv", 0o755);
        let path = std::env::join_paths([&a, &b, &c]).unwrap();
        assert_eq!(found("srv", Some(&path)), Some(c.join("srv")));
        assert_eq!(found("other", Some(&path)), None);
        assert_eq!(found("srv", None), None);
    }

    /// A command naming a path, or a `PATH` whose relative or empty entry comes before the hit,
    /// is left for the child to look up in its own working directory.
    #[test]
    fn paths_and_relative_entries_are_left_to_the_child() {
        let t = tempfile::tempdir().unwrap();
        file(t.path(), "srv", 0o755);
        let dir = t.path().to_str().unwrap();
        assert_eq!(found("./srv", Some(&OsString::from(dir))), None);
        assert_eq!(found(&format!("{dir}/srv"), Some(&OsString::from(dir))), None);
        assert_eq!(found("srv", Some(&OsString::from(format!("bin:{dir}")))), None);
        assert_eq!(found("srv", Some(&OsString::from(format!(":{dir}")))), None);
        assert_eq!(found("srv", Some(&OsString::from(format!("{dir}:bin")))), Some(t.path().join("srv")));
        assert_eq!(found("", Some(&OsString::from(dir))), None);
    }
}
