//! Where a build may write: the target directory resolved through a symlink, and refused
//! unless it is missing, empty, or an index holding only the files the index wrote.

use std::path::{Path, PathBuf};

use crate::error::{io, IndexError};
use crate::format::{IndexMeta, META_FILE};

/// Where the index goes: `out` itself, or, when `out` is a symlink, the directory it points
/// to (the link is kept and keeps pointing there).
pub(super) fn resolve_target(out: &Path) -> Result<PathBuf, IndexError> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(out).map_err(|e| {
            IndexError::WouldClobber(out.to_path_buf(), format!("is a symlink whose target cannot be used ({e})"))
        }),
        _ => Ok(out.to_path_buf()),
    }
}

/// Entries an index of an older format may hold (its file list cannot be read).
const OLD_FORMAT_ENTRIES: &[&str] = &[
    "catalog.json",
    "vectors.f32",
    "lexical",
    "tools.hnsw.graph",
    "tools.hnsw.data",
    "catalog.bin",
    "tools.json",
    "vectors.f16",
    "graph.bin",
    "hashes.bin",
    "blocks.bin",
];

/// An existing target must be an empty directory, or an index whose metadata verifies and
/// that holds only what the index wrote. `shown` is the path as the user gave it.
pub(super) fn check_target(target: &Path, shown: &Path) -> Result<(), IndexError> {
    let refuse = |reason: String| Err(IndexError::WouldClobber(shown.to_path_buf(), reason));
    let meta = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(IndexError::Io(shown.to_path_buf(), e)),
        Ok(m) => m,
    };
    if !meta.is_dir() {
        return refuse("exists and is not a directory".into());
    }
    let entries: Vec<String> = std::fs::read_dir(target)
        .map_err(io(shown))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(io(shown))?;
    if entries.is_empty() {
        return Ok(());
    }
    let owned: Vec<String> = match IndexMeta::read(target) {
        Ok(m) => m.files.iter().map(|f| f.path.split('/').next().unwrap_or_default().to_owned()).collect(),
        Err(IndexError::Version { .. }) => OLD_FORMAT_ENTRIES.iter().map(|s| (*s).to_owned()).collect(),
        Err(_) => return refuse("exists and is not a toolsearch index (no verified meta.bin)".into()),
    };
    let foreign = entries.iter().find(|e| {
        e.as_str() != META_FILE && !e.ends_with(".lock") && e.as_str() != ".meta-update" && !owned.contains(e)
    });
    match foreign {
        Some(name) => refuse(format!("holds {name:?}, which is not a file of the index")),
        None => Ok(()),
    }
}

/// Relative paths of every file under `dir` except the metadata, sorted.
pub(super) fn data_files(root: &Path, dir: &Path) -> Result<Vec<String>, IndexError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            out.extend(data_files(root, &path)?);
        } else {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            if rel != META_FILE && !rel.ends_with(".lock") {
                out.push(rel);
            }
        }
    }
    out.sort();
    Ok(out)
}
