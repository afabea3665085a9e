//! The `toolsearch` command line: a thin layer over the library.

fn main() {
    std::panic::set_hook(Box::new(|info| {
        use std::io::Write;
        // A closed stderr must not turn a panic into an abort.
        let _ = writeln!(
            std::io::stderr(),
            "error: internal error ({info}); please report this with the command that caused it"
        );
    }));
    std::process::exit(toolsearch::cli::run());
}
