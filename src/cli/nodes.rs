//! `toolsearch nodes`: the categories that best match a query.

use std::path::PathBuf;

use toolsearch::SearchNodesRequest;

use super::common::{emit, Asker, Global};
use super::failure::Failure;
use super::render;

/// Search categories for a query.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// What the agent wants to do.
    query: String,
    /// Most results (1-50).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=50))]
    limit: u16,
    #[command(flatten)]
    asker: Asker,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let (engine, who) = args.asker.open(global, &args.index)?;
    let req = SearchNodesRequest { query: args.query.clone(), limit: Some(args.limit.into()) };
    let res = engine.search_nodes(&who, &req)?;
    emit(global, &res, || render::nodes(&args.query, &res))
}
