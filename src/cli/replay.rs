//! `toolsearch replay`: run a script of model tool calls against a tool set.

use std::path::{Path, PathBuf};

use toolsearch::disclosure::replay::Script;
use toolsearch::disclosure::{render as render_defs, LiveCatalog};

use super::common::{emit, open, Caller, Cutoff, DialectArg, Global};
use super::failure::{Failure, Problem};
use super::output::say;
use super::render;

/// Replay a script of model tool calls against a tool set and show, after each, what the
/// model would see: the result text and the visible tools.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// The script (JSON Lines; see docs/disclosure.md).
    script: PathBuf,
    /// Also write the audit trail to this JSON Lines file.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// At the end, print the visible tool definitions in this format.
    #[arg(long, value_enum, value_name = "DIALECT")]
    render: Option<DialectArg>,
    #[command(flatten)]
    caller: Caller,
    #[command(flatten)]
    cutoff: Cutoff,
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    let script = Script::load(&args.script).map_err(|e| Problem::InvalidScript.because(e))?;
    // A script that registers tools changes the catalogue: run it on a private copy.
    let copy = if script.registers_tools() { Some(PrivateCopy::of(&args.index)?) } else { None };
    let dir = copy.as_ref().map_or(args.index.as_path(), |c| c.0.as_path());
    let live = LiveCatalog::new(open(global, dir, args.cutoff.min_confidence)?);
    let mut config = script.config.clone();
    if args.caller.scopes.is_some() {
        config.principal = args.caller.principal();
    }
    let script = Script { config, ..script };
    let replay = script.run(live).map_err(|e| Problem::Replay.because(e))?;
    if let Some(path) = &args.audit {
        let jsonl: String = replay.audit.iter().map(|e| serde_json::to_string(e).unwrap_or_default() + "\n").collect();
        std::fs::write(path, jsonl).map_err(|e| Problem::Io.because(format!("{}: {e}", path.display())))?;
    }
    emit(global, &replay, || render::replay(&replay))?;
    if let Some(d) = args.render {
        say!("{}", serde_json::to_string_pretty(&render_defs(&replay.final_definitions, d.into())).unwrap_or_default());
    }
    Ok(())
}

/// A copy of an index directory, removed when dropped.
struct PrivateCopy(PathBuf);

impl PrivateCopy {
    fn of(index: &Path) -> Result<PrivateCopy, Failure> {
        let dir = std::env::temp_dir().join(format!("toolsearch-replay-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(index, &dir).map_err(|e| Problem::Io.because(format!("copying {}: {e}", index.display())))?;
        Ok(PrivateCopy(dir))
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
