//! Atomic replacement of an index directory.
//!
//! Guarantee: a reader of the target path sees either the complete previous index or the
//! complete new one, never a mix, and a failed or interrupted build leaves the previous index
//! untouched. A build writes into a hidden sibling directory, fsyncs it, then swaps it in with
//! one `renameat2(RENAME_EXCHANGE)` (or a plain rename when there is no previous index).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{io, IndexError};

/// A directory being built beside `target`; removed on drop unless committed.
pub(crate) struct Staging {
    dir: PathBuf,
    target: PathBuf,
    done: bool,
}

impl Staging {
    /// Creates the staging directory, after removing stale ones left by dead builds. Errors
    /// name `shown`, the destination as the user gave it, never the hidden staging folder.
    pub(crate) fn new(target: &Path, shown: &Path) -> Result<Staging, IndexError> {
        let unwritable = |e: std::io::Error| IndexError::Unwritable(shown.to_path_buf(), e);
        let name = target
            .file_name()
            .ok_or_else(|| IndexError::NotAnIndex(shown.to_path_buf(), "the output path has no directory name".into()))?
            .to_string_lossy()
            .into_owned();
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(unwritable)?;
        remove_stale(&parent, &name);
        // Unique per build, even for concurrent builds of one target in one process.
        static BUILDS: AtomicU64 = AtomicU64::new(0);
        let n = BUILDS.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(unwritable)?;
        }
        std::fs::create_dir(&dir).map_err(unwritable)?;
        // A probe file: a directory can be creatable yet its files not writable (quota, ro bind).
        let probe = dir.join(".probe");
        std::fs::write(&probe, b"").and_then(|()| std::fs::remove_file(&probe)).map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            unwritable(e)
        })?;
        Ok(Staging { dir, target: target.to_path_buf(), done: false })
    }

    /// Where to write the new index.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Makes the staged directory durable and swaps it in for the target. Every file gets the
    /// permissions of the index's own metadata file (the umask's), whatever the library that
    /// wrote it chose, so whoever may read the index may read all of it.
    pub(crate) fn commit(mut self) -> Result<(), IndexError> {
        let meta = self.dir.join(crate::format::META_FILE);
        let mode = std::fs::metadata(&meta).map_err(io(&meta))?.permissions();
        same_permissions(&self.dir, &mode)?;
        sync_tree(&self.dir)?;
        if self.target.exists() {
            exchange(&self.dir, &self.target)?;
        // The previous index now sits at the staging path; drop removes it.
        } else {
            match std::fs::rename(&self.dir, &self.target) {
                Ok(()) => self.done = true,
                // Another build committed the target meanwhile: swap with it instead.
                Err(_) if self.target.is_dir() => exchange(&self.dir, &self.target)?,
                Err(e) => return Err(IndexError::Io(self.target.clone(), e)),
            }
        }
        if let Some(parent) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = toolsearch_catalog::platform::sync_dir(parent);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Atomically exchanges two directory entries where the system can (Linux: renameat2 with
/// RENAME_EXCHANGE); elsewhere, or on a filesystem that cannot, moves the old one aside first.
fn exchange(a: &Path, b: &Path) -> Result<(), IndexError> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let ca = CString::new(a.as_os_str().as_bytes())
            .map_err(|_| IndexError::NotAnIndex(a.to_path_buf(), "path contains NUL".into()))?;
        let cb = CString::new(b.as_os_str().as_bytes())
            .map_err(|_| IndexError::NotAnIndex(b.to_path_buf(), "path contains NUL".into()))?;
        // SAFETY: both pointers are valid NUL-terminated strings for the duration of the call.
        let rc =
            unsafe { libc::renameat2(libc::AT_FDCWD, ca.as_ptr(), libc::AT_FDCWD, cb.as_ptr(), libc::RENAME_EXCHANGE) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) && err.raw_os_error() != Some(libc::ENOSYS) {
            return Err(IndexError::Io(b.to_path_buf(), err));
        }
    }
    // The system or filesystem cannot exchange: move the old index aside, then the new one in.
    let aside = a.with_extension("old");
    std::fs::rename(b, &aside).map_err(io(b))?;
    if let Err(e) = std::fs::rename(a, b) {
        let _ = std::fs::rename(&aside, b);
        return Err(IndexError::Io(b.to_path_buf(), e));
    }
    std::fs::rename(&aside, a).map_err(io(a))
}

/// Gives every file under `dir` the permissions `mode`.
fn same_permissions(dir: &Path, mode: &std::fs::Permissions) -> Result<(), IndexError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            same_permissions(&path, mode)?;
        } else {
            std::fs::set_permissions(&path, mode.clone()).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// fsyncs every file in `dir` (recursively) and the directories themselves.
fn sync_tree(dir: &Path) -> Result<(), IndexError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            std::fs::File::open(&path).and_then(|f| f.sync_all()).map_err(io(&path))?;
        }
    }
    toolsearch_catalog::platform::sync_dir(dir).map_err(io(dir))
}

/// Removes `.NAME.tmp-PID-N` directories whose build process no longer runs.
fn remove_stale(parent: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let pid = file_name.strip_prefix(&prefix).and_then(|p| p.split('-').next()).and_then(|p| p.parse::<u32>().ok());
        let Some(pid) = pid else {
            continue;
        };
        if !toolsearch_catalog::platform::process_may_run(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
