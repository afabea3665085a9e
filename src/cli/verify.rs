//! `toolsearch verify`: every byte of an index checked, and its graph walked.

use std::path::PathBuf;

use super::common::{emit, Global};
use super::failure::{Failure, Problem};
use super::render;

/// Check an index: every file's size and checksum against its metadata, the graph's structure
/// and that every tool is reachable in it, and that the whole index opens. Exits non-zero on
/// any fault, naming the file.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let report = toolsearch::index::verify(&args.index).map_err(|e| Problem::Index.because(e))?;
    emit(global, &report, || render::verified(&report))?;
    match report.faults.first() {
        None => Ok(()),
        Some(first) => Err(Failure::Faults {
            message: format!(
                "{} fault(s) in {}; the first: {}: {}",
                report.faults.len(),
                args.index.display(),
                first.file.display(),
                first.problem
            ),
        }),
    }
}
