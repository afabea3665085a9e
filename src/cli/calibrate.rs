//! `toolsearch calibrate`: fit the confidence map on labelled queries and store it.

use toolsearch::eval::fit_calibration;
use toolsearch::index::IndexMeta;

use super::bench::QuerySet;
use super::common::{emit, open_until_exit, Global};
use super::failure::{Failure, Problem};
use super::render;

/// Fit the confidence map on labelled queries and store it in the index.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index and the labelled queries (even lines fit, odd lines measure).
    #[command(flatten)]
    set: QuerySet,
    /// Report the fit without storing it.
    #[arg(long)]
    dry_run: bool,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let labelled = args.set.load()?;
    let engine = open_until_exit(global, &args.set.index, None)?;
    args.set.check_gold(&labelled, engine)?;
    let report = fit_calibration(engine, &labelled)?;
    if !args.dry_run {
        IndexMeta::set_calibration(&args.set.index, &report.fitted).map_err(|e| Problem::Index.because(e))?;
    }
    emit(global, &report, || render::calibration(&report, args.dry_run))
}
