//! `toolsearch list`: the categories and tools at a path.

use std::path::PathBuf;

use toolsearch::{ListRequest, PathSpec};

use super::common::{emit, Asker, Global, Page};
use super::failure::Failure;
use super::render;

/// List the categories and tools at a path.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// Category path (default: the root).
    #[arg(long)]
    path: Option<String>,
    /// Keep only children matching this query.
    #[arg(long)]
    query: Option<String>,
    #[command(flatten)]
    page: Page,
    #[command(flatten)]
    asker: Asker,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let (engine, who) = args.asker.open(global, &args.index)?;
    let req = ListRequest {
        path: args.path.clone().map(PathSpec::Joined),
        query: args.query.clone(),
        tags: args.page.tags.clone(),
        limit: Some(args.page.limit.into()),
        cursor: args.page.cursor.clone(),
    };
    let res = engine.list(&who, &req)?;
    emit(global, &res, || render::list(&res))
}
