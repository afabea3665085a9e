//! `toolsearch search`: the best tools for a query, optionally inside a category.

use std::path::PathBuf;

use toolsearch::{MatchMode, PathSpec, SearchToolsRequest};

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
    /// How the query is matched: `semantic` ranks by meaning (an exact tool id or name comes
    /// first); `regex` takes it as a regular expression over tool ids and names
    /// (case-insensitive) and lists every match.
    #[arg(long = "match", value_enum, default_value_t = Match::Semantic)]
    match_mode: Match,
}

/// `--match` choices.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Match {
    Semantic,
    Regex,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let (engine, who) = args.asker.open(global, &args.index)?;
    let req = SearchToolsRequest {
        query: args.query.clone(),
        category_path: args.path.clone().map(PathSpec::Joined),
        tags: args.page.tags.clone(),
        limit: Some(args.page.limit.into()),
        cursor: args.page.cursor.clone(),
        match_mode: match args.match_mode {
            Match::Semantic => MatchMode::Semantic,
            Match::Regex => MatchMode::Regex,
        },
    };
    let res = engine.search_tool_by_category(&who, &req)?;
    emit(global, &res, || render::search(&args.query, &res))
}
