//! `toolsearch expand`: one tool's full definition.

use std::path::PathBuf;

use toolsearch::ExpandToolRequest;

use super::common::{emit, open_until_exit, Caller, Global};
use super::failure::Failure;
use super::render;

/// Show a tool's full definition, schema included.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// The tool id.
    tool_id: String,
    #[command(flatten)]
    caller: Caller,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let engine = open_until_exit(global, &args.index, None)?;
    let res = engine.expand_tool(&args.caller.principal(), &ExpandToolRequest { tool_id: args.tool_id.clone() })?;
    emit(global, &res, || render::expand(&res))
}
