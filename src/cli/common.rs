//! What several verbs share: flag groups, choices, opening an index, printing an answer, and
//! the terminal progress bar.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Serialize;
use toolsearch::disclosure::Dialect;
use toolsearch::embed::EmbedError;
use toolsearch::index::{Progress, Reporter};
use toolsearch::{Engine, EngineError, EngineOptions, Format, Principal, Retrieval};

use super::failure::{Failure, Problem};
use super::output::say;
use super::render;

/// Flags every verb takes.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Global {
    /// Directory with the model files (default: found automatically; see models/README.md).
    #[arg(long, global = true, value_name = "DIR")]
    pub models: Option<PathBuf>,
    /// The embedding model: `stock`, `tools`, or a directory with a sentence-transformers
    /// ONNX export (docs/models.md). Building: default `tools`. Querying: the model the index
    /// was built with.
    #[arg(long, global = true, value_name = "NAME|DIR")]
    pub model: Option<String>,
    /// Print JSON instead of text: the protocol's answers (errors too) exactly; `gateway`
    /// writes its status as JSON lines on stderr.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Who is asking: the verbs that answer protocol calls take these.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct Caller {
    /// Answer as a caller holding only these scopes (comma-separated): tools requiring others
    /// do not exist for it. Without this flag the caller is trusted and sees every tool.
    #[arg(long, value_delimiter = ',', value_name = "SCOPES")]
    pub scopes: Option<Vec<String>>,
    /// With --scopes: the catalogue is public, so asking for a hidden tool by id gives
    /// NOT_AUTHORIZED (naming the missing scopes) instead of TOOL_NOT_FOUND.
    #[arg(long, requires = "scopes")]
    pub public_catalog: bool,
}

impl Caller {
    /// The caller the CLI answers as: trusted, or exactly the `--scopes` given.
    pub(crate) fn principal(&self) -> Principal {
        match &self.scopes {
            None => Principal::trusted(),
            Some(s) => Principal::with_scopes(s.iter().cloned()).with_public_catalog(self.public_catalog),
        }
    }
}

/// The confidence cut-off, for the verbs that rank.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Cutoff {
    /// Show the results at this confidence (0 to 1) or more, answering NO_MATCH_IN_CATEGORY
    /// only when none is left, in place of the default rules (results within 3% of the best
    /// one's confidence; NO_MATCH_IN_CATEGORY when no tool is likely to fit).
    #[arg(long, value_name = "P", value_parser = probability)]
    pub min_confidence: Option<f32>,
}

fn probability(s: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        Ok(p) => Err(format!("{p} is not between 0 and 1")),
        Err(e) => Err(e.to_string()),
    }
}

/// Who asks and how sure answers must be: the flags of the verbs that answer protocol calls.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Asker {
    #[command(flatten)]
    pub caller: Caller,
    #[command(flatten)]
    pub cutoff: Cutoff,
}

impl Asker {
    /// Opens the index for these flags and returns it with the caller.
    pub(crate) fn open(&self, global: &Global, dir: &Path) -> Result<(&'static Engine, Principal), Failure> {
        Ok((open_until_exit(global, dir, self.cutoff.min_confidence)?, self.caller.principal()))
    }
}

/// Filtering and paging flags shared by `search` and `list`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Page {
    /// Only tools carrying all these tags (for `list`, also categories holding such tools), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Most entries (1-50).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub limit: u16,
    /// Continue from the `next_cursor` of the previous page.
    #[arg(long)]
    pub cursor: Option<String>,
}

/// A catalogue format, as `--format` names it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatArg {
    /// The native JSON manifest: nodes, tools, groups.
    Manifest,
    /// One tool per line.
    Jsonl,
    /// An MCP `tools/list` result, or a registry of servers.
    Mcp,
    /// OpenAI function definitions.
    Openai,
    /// Anthropic tool definitions.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Manifest => Format::Manifest,
            FormatArg::Jsonl => Format::Jsonl,
            FormatArg::Mcp => Format::Mcp,
            FormatArg::Openai => Format::OpenAi,
            FormatArg::Anthropic => Format::Anthropic,
            FormatArg::Gemini => Format::Gemini,
        }
    }
}

/// A tool-definition dialect, as `--dialect` and `--render` name it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DialectArg {
    /// OpenAI Chat Completions function tools.
    Openai,
    /// OpenAI Responses API function tools.
    OpenaiResponses,
    /// Anthropic tools.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
    /// MCP tools.
    Mcp,
}

impl From<DialectArg> for Dialect {
    fn from(d: DialectArg) -> Dialect {
        match d {
            DialectArg::Openai => Dialect::OpenAi,
            DialectArg::OpenaiResponses => Dialect::OpenAiResponses,
            DialectArg::Anthropic => Dialect::Anthropic,
            DialectArg::Gemini => Dialect::Gemini,
            DialectArg::Mcp => Dialect::Mcp,
        }
    }
}

/// A retrieval mode, as `bench --mode` names it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeArg {
    /// Dense and BM25, fused (the product).
    Hybrid,
    /// BM25 alone.
    #[value(alias = "lexical")]
    Bm25,
    /// Embeddings alone.
    Dense,
}

impl From<ModeArg> for Retrieval {
    fn from(m: ModeArg) -> Retrieval {
        match m {
            ModeArg::Hybrid => Retrieval::Hybrid,
            ModeArg::Bm25 => Retrieval::Lexical,
            ModeArg::Dense => Retrieval::Dense,
        }
    }
}

/// Prints `value` as JSON with `--json`, else the human text.
pub(crate) fn emit<T: Serialize>(global: &Global, value: &T, human: impl FnOnce() -> String) -> Result<(), Failure> {
    if global.json {
        let text = serde_json::to_string_pretty(value).map_err(|e| Problem::Internal.because(e))?;
        say!("{text}");
    } else {
        super::output::write_out(&render::printable(&human()));
    }
    Ok(())
}

/// Opens the index for a verb that uses it until the process exits. The engine is never
/// dropped: exiting hands its memory back at once, while tearing down a 100k-tool index
/// piece by piece costs about a second.
pub(crate) fn open_until_exit(
    global: &Global,
    dir: &Path,
    min_confidence: Option<f32>,
) -> Result<&'static Engine, Failure> {
    Ok(Box::leak(Box::new(open(global, dir, min_confidence)?)))
}

/// Opens the index in `dir` with the model the flags point at.
pub(crate) fn open(global: &Global, dir: &Path, min_confidence: Option<f32>) -> Result<Engine, Failure> {
    open_with(dir, engine_options(global, min_confidence))
}

/// Opens the index in `dir` with `options` (which name the model directory).
pub(crate) fn open_with(dir: &Path, options: EngineOptions) -> Result<Engine, Failure> {
    Engine::open_with(dir, options).map_err(|e| match e {
        EngineError::Embed(e) => model_failure(e),
        other => Problem::Index.because(other),
    })
}

/// The files of the model `model` names (`None`: the default); when the default is not
/// installed and the stock model stands in for it, says so on stderr.
pub(crate) fn choose_model(global: &Global, model: Option<&str>) -> Result<toolsearch::ModelFiles, Failure> {
    let files = toolsearch::ModelFiles::choose(global.models.as_deref(), model).map_err(model_failure)?;
    if model.is_none() && files.spec.id != toolsearch::embed::TOOLS_MODEL_ID {
        super::output::say_err!(
            "note: the default model `tools` is not installed (scripts/setup, or pip install ./python/model-tools): \
             using `stock`"
        );
    }
    Ok(files)
}

/// A model that cannot be found or loaded; when it was not found, says which flag names it.
pub(crate) fn model_failure(e: EmbedError) -> Failure {
    match e {
        EmbedError::NotFound { .. } => Problem::Model.because(format!("{e}; the CLI takes --models DIR")),
        other => Problem::Model.because(other),
    }
}

/// Engine options from the flags.
pub(crate) fn engine_options(global: &Global, min_confidence: Option<f32>) -> EngineOptions {
    EngineOptions {
        models: global.models.clone(),
        model: global.model.clone(),
        min_confidence,
        ..EngineOptions::default()
    }
}

/// A progress bar on stderr when it is a terminal and the output is for a person.
pub(crate) fn progress(global: &Global, wanted: bool) -> Reporter {
    terminal_progress(wanted && !global.json)
}

/// A progress bar on stderr when `wanted` and stderr is a terminal; no progress otherwise.
pub(crate) fn terminal_progress(wanted: bool) -> Reporter {
    if wanted && std::io::stderr().is_terminal() {
        Reporter::new(Bar(indicatif::ProgressBar::hidden()))
    } else {
        Reporter::default()
    }
}

/// [`Progress`] drawn with indicatif.
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        self.0.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        self.0.set_length(total);
        self.0.set_position(0);
        let template = format!("{what} {{bar:40}} {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})");
        self.0.set_style(
            indicatif::ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    }

    fn advance(&self, n: u64) {
        self.0.inc(n);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
