//! `toolsearch search`: the best tools for a query, optionally inside a category.

use std::path::PathBuf;

use toolsearch::{PathSpec, SearchToolsRequest};

use super::common::{emit, Asker, Global, Page};
use super::failure::Failure;
use super::render;

/// Search tools for a query, optionally inside a category.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    #[command(flatten)]
    asker: Asker,
    /// What the agent wants to do.
    query: String,
    /// Category path to search in, e.g. Storage/Buckets.
    #[arg(long)]
    path: Option<String>,
    #[command(flatten)]
    page: Page,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let (engine, who) = args.asker.open(global, &args.index)?;
    let req = SearchToolsRequest {
        query: args.query.clone(),
        category_path: args.path.clone().map(PathSpec::Joined),
        tags: args.page.tags.clone(),
        limit: Some(args.page.limit.into()),
        cursor: args.page.cursor.clone(),
    };
    let res = engine.search_tool_by_category(&who, &req)?;
    emit(global, &res, || render::search(&args.query, &res))
}
