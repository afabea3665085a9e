//! `toolsearch candidates`: every query's fusion candidates with their evidence, for tuning.

use std::path::PathBuf;

use toolsearch::eval::dump_candidates;

use super::bench::QuerySet;
use super::common::{open_until_exit, Global};
use super::failure::{Failure, Problem};
use super::output::say_err;

/// Write every labelled query's fusion candidates, with their evidence and gold labels, to a
/// JSON Lines file (for tuning fusion and calibration offline).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    set: QuerySet,
    /// The JSON Lines file written.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Candidates drawn from each index per query.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    depth: u16,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let labelled = args.set.load()?;
    let engine = open_until_exit(global, &args.set.index, None)?;
    args.set.check_gold(&labelled, engine)?;
    let out = &args.out;
    let file = std::fs::File::create(out).map_err(|e| Problem::Io.because(format!("{}: {e}", out.display())))?;
    let mut w = std::io::BufWriter::new(file);
    dump_candidates(engine, &labelled, args.depth.into(), &mut w).map_err(|e| Problem::Io.because(e))?;
    say_err!("wrote candidates of {} to {}", super::render::count(labelled.len(), "query", "queries"), out.display());
    Ok(())
}
