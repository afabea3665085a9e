//! `toolsearch index`: build an index from one or more catalogue files.

use std::path::{Path, PathBuf};

use toolsearch::embed::{EmbedderOptions, OnnxEmbedder};
use toolsearch::index::IndexError;
use toolsearch::{build_index_jsonl, build_index_owned, BuildOptions, Format};

use super::common::{emit, progress, FormatArg, Global};
use super::failure::{Failure, Problem};
use super::render;

/// Build an index from a catalogue: one file, or several merged (e.g. one MCP `tools/list`
/// result per server).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The catalogue file(s): native manifest, JSON Lines, MCP, OpenAI or Anthropic.
    #[arg(required = true, num_args = 1..)]
    catalogue: Vec<PathBuf>,
    /// Output directory (replaced atomically if it holds an index).
    #[arg(long)]
    out: PathBuf,
    /// Input format (default: by extension, then shape).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Which server a flat OpenAI or Anthropic file is: its tools get ids NAME.tool under a
    /// category NAME. `NAME` applies to every file; `FILE=NAME` to one (repeatable).
    #[arg(long, value_name = "NAME|FILE=NAME")]
    namespace: Vec<String>,
    /// Take the vectors of documents whose text is unchanged (and the graph, the calibration
    /// and the learned adapter) from this index rather than embedding them again, as a rebuild
    /// over the index at `--out` does: for a build into a new directory. It must have been
    /// built with the same model.
    #[arg(long, value_name = "INDEX")]
    reuse: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    // `NAME` for every file, or `FILE=NAME` for one.
    let mut everywhere: Option<&str> = None;
    let mut per_file: Vec<(&Path, &str)> = Vec::new();
    for n in &args.namespace {
        match n.rsplit_once('=') {
            Some((file, name)) => match args.catalogue.iter().find(|c| c.as_os_str() == file) {
                Some(c) => per_file.push((c, name)),
                None => {
                    return Err(Problem::Usage
                        .because(format!("--namespace {n:?}: the part before `=` is not one of the catalogue files")))
                }
            },
            None => everywhere = Some(n.as_str()),
        }
    }
    let options =
        BuildOptions { progress: progress(global, !args.quiet), reuse_from: args.reuse.clone(), release_model: true };
    // One JSON Lines file is read a tool at a time as the index is built, never held whole.
    if let [file] = args.catalogue.as_slice() {
        let format = args.format.map(Format::from).or_else(|| Format::by_extension(file));
        if format == Some(Format::Jsonl) {
            let embedder = load_model(global)?;
            let report = build_index_jsonl(file, &embedder, &args.out, &options).map_err(index_failure)?;
            super::output::write_err(&render::warnings(&report));
            return emit(global, &render::BuildSummary::new(&args.out, &report), || render::build(&args.out, &report));
        }
    }
    let catalog = toolsearch::catalog::load_paths_as(&args.catalogue, args.format.map(Into::into), |f| {
        per_file.iter().find(|(p, _)| *p == f).map(|(_, n)| *n).or(everywhere)
    })
    .map_err(|e| Problem::InvalidCatalogue.because(e))?;
    let embedder = load_model(global)?;
    let report = build_index_owned(catalog, &embedder, &args.out, &options).map_err(index_failure)?;
    super::output::write_err(&render::warnings(&report));
    emit(global, &render::BuildSummary::new(&args.out, &report), || render::build(&args.out, &report))
}

fn load_model(global: &Global) -> Result<OnnxEmbedder, Failure> {
    let files = super::common::choose_model(global, global.model.as_deref())?;
    OnnxEmbedder::load(&files, EmbedderOptions::default()).map_err(|e| Problem::Model.because(e))
}

/// A build's failure: an invalid catalogue (found as a JSON Lines file is read) is the
/// catalogue's, anything else the index's.
fn index_failure(e: IndexError) -> Failure {
    match e {
        IndexError::Catalog(e) => Problem::InvalidCatalogue.because(e),
        e => Problem::Index.because(e),
    }
}
