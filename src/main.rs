//! The `toolsearch` command line: a thin layer over the library.

mod cli;

fn main() {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal error ({info}); please report this with the command that caused it");
    }));
    std::process::exit(cli::run());
}
