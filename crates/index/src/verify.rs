//! `verify`: every byte of an index checked against its metadata, and its graph walked, with
//! every fault reported by file rather than the first one stopping the check.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::IndexError;
use crate::format::{file_sum, IndexMeta, CATALOG_FILE, GRAPH_FILE};
use crate::graph::Graph;
use crate::table::NO_NODE;

/// What [`verify`] found in an index.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The index directory.
    pub index: PathBuf,
    /// The format version it was written in.
    pub format_version: u32,
    /// The model it was built with, in words ([`IndexMeta::describe_model`]): what a query
    /// must load.
    pub model: String,
    /// Whether it carries a confidence map fitted by `toolsearch calibrate`.
    pub calibrated: bool,
    /// Whether it carries a query adapter learned by `toolsearch learn`.
    pub adapter: bool,
    /// Files the metadata lists, all checked.
    pub files: usize,
    /// Bytes read and checked.
    pub bytes: u64,
    /// Tools in the index.
    pub tools: usize,
    /// Tools that layer 0 of the graph does not reach from its entry point (a search could
    /// never return them); `None` when the graph itself is faulty and was not walked.
    pub unreachable: Option<usize>,
    /// Every fault found, each naming its file.
    pub faults: Vec<Fault>,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.faults.is_empty()
    }
}

/// One thing wrong with one file of an index.
#[derive(Debug, Clone, Serialize)]
pub struct Fault {
    /// The file.
    pub file: PathBuf,
    /// What is wrong with it, in words.
    pub problem: String,
}

/// Checks the index in `dir`: each file's size and checksum against the metadata, the graph's
/// structure and that every tool is reachable in it, and that the whole index opens. Fails
/// only when `dir` is not an index at all (no readable metadata); every other fault is in the
/// report.
pub fn verify(dir: &Path) -> Result<VerifyReport, IndexError> {
    let meta = IndexMeta::read(dir)?;
    let tools = meta.tools as usize;
    let mut report = VerifyReport {
        index: dir.to_path_buf(),
        format_version: meta.format_version,
        model: meta.describe_model(),
        calibrated: meta.calibration.is_some(),
        adapter: meta.adapter.is_some(),
        files: meta.files.len(),
        bytes: 0,
        tools,
        unreachable: None,
        faults: Vec::new(),
    };
    let mut faults = Vec::new();
    for sum in &meta.files {
        let path = dir.join(&sum.path);
        match file_sum(dir, &sum.path) {
            Ok(got) if got.len != sum.len => {
                faults.push(Fault { file: path, problem: format!("{} bytes, expected {}", got.len, sum.len) })
            }
            Ok(got) if got.xxh3 != sum.xxh3 => {
                report.bytes += got.len;
                faults.push(Fault {
                    file: path,
                    problem: "checksum mismatch: its bytes differ from those written".into(),
                })
            }
            Ok(got) => report.bytes += got.len,
            Err(e) => faults.push(Fault { file: path, problem: e.to_string() }),
        }
    }
    let graph_path = dir.join(GRAPH_FILE);
    if !faults.iter().any(|f| f.file == graph_path) {
        match Graph::open(&graph_path, tools) {
            Ok(graph) => {
                let lost = graph.unreachable().len();
                report.unreachable = Some(lost);
                if lost > 0 {
                    faults.push(Fault {
                        file: graph_path,
                        problem: format!("{lost} of {tools} tools cannot be reached from the entry point: search can never return them; rebuild the index"),
                    });
                }
            }
            Err(IndexError::Corrupted(_, reason)) => faults.push(Fault { file: graph_path, problem: reason }),
            Err(e) => faults.push(Fault { file: graph_path, problem: e.to_string() }),
        }
    }
    // What the checks above do not cover (the table, the records, the BM25 index) is checked
    // by opening the whole index, once the files are known to be as written (so the open does
    // not checksum them again).
    if faults.is_empty() {
        let options = crate::OpenOptions { verify_checksums: false, ..crate::OpenOptions::default() };
        match crate::IndexReader::open_with(dir, options) {
            Ok(reader) => faults.extend(misplaced_tools(&reader)),
            Err(e) => {
                let file = match &e {
                    IndexError::Corrupted(p, _) | IndexError::Io(p, _) => p.clone(),
                    _ => dir.to_path_buf(),
                };
                faults.push(Fault { file, problem: e.to_string() });
            }
        }
    }
    report.faults = faults;
    Ok(report)
}

/// A fault when a tool's category node stored in the table (which an open trusts, the table's
/// checksum being right) is not the node at its path.
fn misplaced_tools(reader: &crate::IndexReader) -> Option<Fault> {
    let tools = &reader.catalog().tools;
    let wrong = (0..tools.len())
        .filter(|&o| {
            let at = match &tools[o].paths[..] {
                [p] => reader.node_by_path(p).unwrap_or(NO_NODE),
                _ => NO_NODE,
            };
            reader.tool_nodes().get(o) != Some(&at)
        })
        .count();
    (wrong > 0).then(|| Fault {
        file: reader.dir().join(CATALOG_FILE),
        problem: format!("{wrong} tools are stored under another category than their path's; rebuild the index"),
    })
}
