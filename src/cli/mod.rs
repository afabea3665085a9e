//! Argument parsing and dispatch of the CLI verbs.

mod output;
mod render;
mod verbs;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Semantic tool search for LLM agents.
#[derive(Parser, Debug)]
#[command(name = "toolsearch", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// Directory with the model files (default: found automatically; see models/README.md).
    #[arg(long, global = true, value_name = "DIR")]
    pub models: Option<PathBuf>,
    /// Print exactly the protocol JSON (errors too) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Answer as a caller holding only these scopes (comma-separated): tools requiring others
    /// do not exist for it. Without this flag the caller is trusted and sees every tool.
    #[arg(long, global = true, value_delimiter = ',', value_name = "SCOPES")]
    pub scopes: Option<Vec<String>>,
    /// With --scopes: the catalogue is public, so asking for a hidden tool by id gives
    /// NOT_AUTHORIZED (naming the missing scopes) instead of TOOL_NOT_FOUND.
    #[arg(long, global = true)]
    pub public_catalog: bool,
    /// Results below this confidence are not returned (NO_MATCH_IN_CATEGORY when none is left).
    #[arg(long, global = true, value_name = "P", default_value_t = 0.08)]
    pub min_confidence: f32,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Build an index from a catalogue: one file, or several merged (e.g. one MCP `tools/list`
    /// result per server).
    Index {
        /// The catalogue file(s): native manifest, JSON Lines, MCP, OpenAI or Anthropic.
        #[arg(required = true, num_args = 1..)]
        catalogue: Vec<PathBuf>,
        /// Output directory (replaced atomically if it holds an index).
        #[arg(long)]
        out: PathBuf,
        /// Input format: manifest, jsonl, mcp, openai or anthropic (default: by extension, then shape).
        #[arg(long)]
        format: Option<String>,
        /// Which server a flat OpenAI or Anthropic file is: its tools get ids NAME.tool under a
        /// category NAME. `NAME` applies to every file; `FILE=NAME` to one (repeatable).
        #[arg(long, value_name = "NAME|FILE=NAME")]
        namespace: Vec<String>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Search tools for a query, optionally inside a category.
    Search {
        /// The index directory.
        index: PathBuf,
        /// What the agent wants to do.
        query: String,
        /// Category path to search in, e.g. Storage/Buckets.
        #[arg(long)]
        path: Option<String>,
        #[command(flatten)]
        page: Page,
    },
    /// Search categories for a query.
    Nodes {
        /// The index directory.
        index: PathBuf,
        /// What the agent wants to do.
        query: String,
        /// Most results (1-50).
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// List the categories and tools at a path.
    List {
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
    },
    /// Measure retrieval quality and latency on labelled queries (queries.jsonl format).
    Bench {
        /// The index directory.
        index: PathBuf,
        /// Labelled queries: {"id", "query", "gold": [...], "gold_groups": [[...]]} per line.
        queries: PathBuf,
        /// Modes to run and compare, comma-separated: hybrid, bm25, dense.
        #[arg(long, default_value = "hybrid,bm25,dense")]
        mode: String,
        /// Recall cut-offs, comma-separated.
        #[arg(long, default_value = "1,5,10")]
        k: String,
        /// Only queries tagged with this split (or whose id starts with it).
        #[arg(long)]
        split: Option<String>,
        /// Run a deterministic sample of this many queries.
        #[arg(long)]
        sample: Option<usize>,
        /// Candidates drawn from each index per query (the ranking depth; the protocol uses 64).
        #[arg(long, default_value_t = 100)]
        depth: usize,
        /// Instead of measuring, write every query's fusion candidates with their evidence
        /// and gold labels to this JSON Lines file (for tuning fusion and calibration).
        #[arg(long, value_name = "FILE")]
        dump_candidates: Option<PathBuf>,
        /// Instead of retrieval quality, count tokens: every schema loaded up front vs a scripted
        /// agent reaching the gold tool through discovery (search -> expand -> call).
        #[arg(long)]
        tokens: bool,
        /// With --tokens: the definition format counted (openai, anthropic or mcp).
        #[arg(long, default_value = "openai")]
        dialect: String,
    },
    /// Serve the catalogue to one MCP client over stdio (JSON-RPC 2.0, one message per line):
    /// tools/list is the visible tool set, tools/call drives facades and discovery.
    Serve {
        /// The index directory.
        index: PathBuf,
        /// Server configuration (tool set, scopes, check and executor commands; see docs/disclosure.md).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Put toolsearch in front of your MCP servers: start or reach each server of an
    /// `mcpServers` config, index their tools, and serve search-then-call over all of them
    /// (stdio by default, Streamable HTTP with --http).
    Gateway {
        /// The config: {"mcpServers": {...}, "toolsearch": {...}} (see docs/gateway.md).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Where the index is kept (default: NAME.toolsearch beside the config).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// Replay a script of model tool calls against a tool set and show, after each, what the
    /// model would see: the result text and the visible tools.
    Replay {
        /// The index directory.
        index: PathBuf,
        /// The script (JSON Lines; see docs/disclosure.md).
        script: PathBuf,
        /// Also write the audit trail to this JSON Lines file.
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// At the end, print the visible tool definitions in this format (openai, anthropic or mcp).
        #[arg(long, value_name = "DIALECT")]
        render: Option<String>,
    },
    /// Fit the confidence map on labelled queries and store it in the index.
    Calibrate {
        /// The index directory.
        index: PathBuf,
        /// Labelled queries (queries.jsonl format); even lines fit, odd lines measure.
        queries: PathBuf,
        /// Only queries tagged with this split.
        #[arg(long)]
        split: Option<String>,
        /// Use a deterministic sample of this many queries.
        #[arg(long)]
        sample: Option<usize>,
        /// Report the fit without storing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Check a tool call (the caller may use the tool, the arguments match its schema) and,
    /// given an executor command after `--`, run it: the command reads
    /// `{"tool_id", "arguments"}` on stdin and prints the result; a non-zero exit is the
    /// tool's own failure (exit code 4).
    Call {
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
        /// The executor command and its arguments (after `--`). Without it the call is only checked.
        #[arg(last = true, value_name = "EXECUTOR")]
        executor: Vec<String>,
    },
    /// Show a tool's full definition, schema included.
    Expand {
        /// The index directory.
        index: PathBuf,
        /// The tool id.
        tool_id: String,
    },
}

/// Filtering and paging flags shared by `search` and `list`.
#[derive(clap::Args, Debug)]
pub(crate) struct Page {
    /// Only tools carrying all these tags (for `list`, also categories holding such tools), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Most entries (1-50).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Continue from the `next_cursor` of the previous page.
    #[arg(long)]
    pub cursor: Option<String>,
}

/// Runs the CLI and returns the process exit code.
pub(crate) fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match verbs::dispatch(&cli) {
        Ok(()) => 0,
        Err(failure) => failure.report(cli.json),
    }
}
