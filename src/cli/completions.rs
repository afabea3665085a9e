//! `toolsearch completions`: shell completion scripts.

use clap::CommandFactory;
use clap_complete::Shell;

use super::failure::Failure;
use super::Cli;

/// Print a completion script for a shell (e.g. `toolsearch completions bash > /etc/bash_completion.d/toolsearch`).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "toolsearch", &mut out);
    super::output::write_out(&String::from_utf8_lossy(&out));
    Ok(())
}
