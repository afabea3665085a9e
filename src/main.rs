//! The `toolsearch` command line: a thin layer over the library.

/// mimalloc, not the system's allocator: an index's open makes millions of small strings, and
/// mimalloc makes and frees them with fewer instructions and less memory held (docs/scaling.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
