//! `toolsearch tokens`: what discovery saves, in tokens, against loading every schema.

use toolsearch::disclosure::LiveCatalog;
use toolsearch::eval::token_report;

use super::bench::QuerySet;
use super::common::{emit, open, Cutoff, DialectArg, Global};
use super::failure::Failure;
use super::render;

/// Count tokens: every schema loaded up front vs a scripted agent reaching the gold tool
/// through discovery (search -> expand -> call), on labelled queries.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    set: QuerySet,
    /// The definition format counted.
    #[arg(long, value_enum, default_value = "openai")]
    dialect: DialectArg,
    #[command(flatten)]
    cutoff: Cutoff,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let labelled = args.set.load()?;
    let live = LiveCatalog::new(open(global, &args.set.index, args.cutoff.min_confidence)?);
    let report = token_report(&live, &labelled, args.dialect.into());
    emit(global, &report, || render::tokens(&report))
}
