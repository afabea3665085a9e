//! Writing to stdout and stderr. A closed pipe (`toolsearch list idx | head -1`) ends the
//! process quietly with status 0, as it does any command-line tool, instead of a panic: Rust
//! ignores SIGPIPE (so that a tool executor that stops reading its input cannot kill us), which
//! turns every write to a closed pipe into an error that must be handled here.

use std::io::Write;

/// Writes `text` to stdout; exits quietly if stdout is closed.
pub(crate) fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// Writes `text` to stderr; a closed stderr is ignored.
pub(crate) fn write_err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `println!` that survives a closed stdout.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::output::write_out(&format!("{}\n", format!($($arg)*)))
    };
}

/// `eprintln!` that survives a closed stderr.
macro_rules! say_err {
    ($($arg:tt)*) => {
        $crate::cli::output::write_err(&format!("{}\n", format!($($arg)*)))
    };
}

pub(crate) use {say, say_err};
