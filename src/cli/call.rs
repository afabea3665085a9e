//! `toolsearch call`: check a tool call and, given an executor command, run it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolsearch::exec::CommandExecutor;
use toolsearch::CallToolRequest;

use super::common::{emit, open_until_exit, Caller, Global};
use super::failure::{Failure, Problem};
use super::render;

/// Check a tool call (the caller may use the tool, the arguments match its schema) and,
/// given an executor command after `--`, run it: the command reads
/// `{"tool_id", "arguments"}` on stdin and prints the result; a non-zero exit is the
/// tool's own failure (exit code 4).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// The tool id.
    tool_id: String,
    /// The arguments: a JSON object, @FILE to read them from a file, or - for stdin.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    args: String,
    /// Longest executor run, in seconds (1 to 86400).
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    #[command(flatten)]
    caller: Caller,
    /// The executor command and its arguments (after `--`). Without it the call is only checked.
    #[arg(last = true, value_name = "EXECUTOR")]
    executor: Vec<String>,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let arguments = read_arguments(&args.args)?;
    let engine = open_until_exit(global, &args.index, None)?;
    let req = CallToolRequest { tool_id: args.tool_id.clone(), arguments };
    let who = args.caller.principal();
    if args.executor.is_empty() {
        engine.check_call(&who, &req)?;
        let answer = json!({ "tool_id": req.tool_id, "valid": true, "executed": false });
        return emit(global, &answer, || {
            format!("arguments are valid for {} (not run: give an executor command after --)\n", req.tool_id)
        });
    }
    let timeout = Duration::from_secs(args.timeout);
    engine.set_executor(Arc::new(CommandExecutor { argv: args.executor.clone(), timeout }));
    let res = engine.call_tool(&who, &req)?;
    emit(global, &res, || render::call(&res))?;
    if res.is_error {
        let message = res.result.get("error").and_then(Value::as_str).unwrap_or_default();
        return Err(Failure::Tool { tool_id: res.tool_id.clone(), message: message.to_owned() });
    }
    Ok(())
}

/// `--args`: inline JSON, `@FILE`, or `-` for standard input.
fn read_arguments(spec: &str) -> Result<Value, Failure> {
    let (source, text) = match spec {
        "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| Problem::Io.because(format!("standard input: {e}")))?;
            ("standard input".to_owned(), text)
        }
        s if s.starts_with('@') => {
            let path = &s[1..];
            let text = std::fs::read_to_string(path).map_err(|e| Problem::Io.because(format!("{path}: {e}")))?;
            (path.to_owned(), text)
        }
        s => ("--args".to_owned(), s.to_owned()),
    };
    serde_json::from_str(&text).map_err(|e| Problem::InvalidArgument.because(format!("{source}: not JSON: {e}")))
}
