//! The `toolsearch` command line: a thin layer over the library.

mod cli;

fn main() {
    // A closed pipe (`toolsearch list idx | head -1`) ends the process quietly, as it does any
    // command-line tool, instead of surfacing as a failed write.
    // SAFETY: restoring the default action of SIGPIPE before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal error ({info}); please report this with the command that caused it");
    }));
    std::process::exit(cli::run());
}
