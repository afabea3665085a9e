//! Argument parsing and dispatch of the CLI verbs: one file per verb, each with its flags
//! (`Args`) and its `run`; `failure.rs` maps every failure to its exit status.

mod bench;
mod calibrate;
mod call;
mod candidates;
mod common;
mod completions;
mod expand;
mod failure;
mod gateway;
mod gateway_audit;
mod gateway_login;
mod index;
mod learn;
mod list;
mod nodes;
mod output;
mod render;
mod replay;
mod search;
mod serve;
mod serve_running;
mod serve_watch;
mod tokens;
mod verify;

use clap::{Parser, Subcommand};

use common::Global;
use failure::ExitStatus;

/// Semantic tool search for LLM agents.
#[derive(Parser, Debug)]
#[command(name = "toolsearch", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Index(index::Args),
    Search(search::Args),
    Nodes(nodes::Args),
    List(list::Args),
    Expand(expand::Args),
    Call(call::Args),
    Bench(bench::Args),
    Tokens(tokens::Args),
    Candidates(candidates::Args),
    Calibrate(calibrate::Args),
    Learn(learn::Args),
    Replay(replay::Args),
    Serve(serve::Args),
    Verify(verify::Args),
    Gateway(gateway::Args),
    Completions(completions::Args),
}

/// Build progress as the CLI draws it: a bar on stderr when `wanted` and stderr is a terminal.
pub fn progress_bar(wanted: bool) -> toolsearch::index::Reporter {
    common::terminal_progress(wanted)
}

/// Runs the CLI on this process's arguments and returns the process exit code.
pub fn run() -> i32 {
    run_with(std::env::args_os())
}

/// Runs the CLI on `args` (the first is the program name) and returns the exit code: the
/// `toolsearch` command of the Python package calls this with `sys.argv`.
pub fn run_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(mut e) => {
            config_tip(&mut e, &args);
            let status = if e.use_stderr() { ExitStatus::Usage } else { ExitStatus::Success };
            let _ = e.print();
            return status.code();
        }
    };
    let g = &cli.global;
    let outcome = match &cli.command {
        Command::Index(a) => index::run(g, a),
        Command::Search(a) => search::run(g, a),
        Command::Nodes(a) => nodes::run(g, a),
        Command::List(a) => list::run(g, a),
        Command::Expand(a) => expand::run(g, a),
        Command::Call(a) => call::run(g, a),
        Command::Bench(a) => bench::run(g, a),
        Command::Tokens(a) => tokens::run(g, a),
        Command::Candidates(a) => candidates::run(g, a),
        Command::Calibrate(a) => calibrate::run(g, a),
        Command::Learn(a) => learn::run(g, a),
        Command::Replay(a) => replay::run(g, a),
        Command::Serve(a) => serve::run(g, a),
        Command::Verify(a) => verify::run(g, a),
        Command::Gateway(a) => gateway::run(g, a),
        Command::Completions(a) => completions::run(a),
    };
    // The MCP servers' stdout is the protocol channel: their failures go to stderr only
    // (with --json, the status events there are JSON already).
    let serves_mcp = matches!(cli.command, Command::Serve(_) | Command::Gateway(_));
    match outcome {
        Ok(()) => ExitStatus::Success.code(),
        Err(failure) => failure.report(g.json && !serves_mcp).code(),
    }
}

/// `toolsearch gateway FILE`, the config given without `--config`: clap takes FILE for an
/// unknown subcommand, and its error then says how a config is named.
fn config_tip(e: &mut clap::Error, args: &[std::ffi::OsString]) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand || !args.iter().any(|a| a == "gateway") {
        return;
    }
    let Some(ContextValue::String(name)) = e.get(ContextKind::InvalidSubcommand) else { return };
    if !name.ends_with(".json") && !std::path::Path::new(name).is_file() {
        return;
    }
    let tip = format!("a config is named with --config: `toolsearch gateway --config {name}`");
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(vec![tip.into()]));
}
