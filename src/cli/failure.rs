//! How a command fails: one error type that knows its code and its exit status.

use serde_json::json;
use toolsearch::ProtocolError;

use super::output::{say, say_err};
use super::render;

/// The process exit status, one per kind of outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// The command did what was asked.
    Success = 0,
    /// Bad input (a file, a catalogue, a config) or a failing environment (model, index, I/O).
    Failure = 1,
    /// The command line itself is wrong (clap's convention).
    Usage = 2,
    /// The protocol answered with an error (`UNKNOWN_PATH`, `TOOL_NOT_FOUND`, ...).
    Protocol = 3,
    /// The tool ran and reported its own failure.
    ToolFailed = 4,
}

impl ExitStatus {
    /// The number the process exits with.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }
}

/// What kind of non-protocol problem stopped a command; each has a stable code for `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A flag's value is unusable in a way clap cannot check (exit 2).
    Usage,
    /// An argument's content is unusable (e.g. `--args` that is not JSON).
    InvalidArgument,
    /// The catalogue cannot be loaded.
    InvalidCatalogue,
    /// The labelled queries cannot be loaded.
    InvalidQueries,
    /// The replay script cannot be loaded.
    InvalidScript,
    /// The serve or gateway config cannot be used.
    InvalidConfig,
    /// The model cannot be found or loaded.
    Model,
    /// The index cannot be built or opened.
    Index,
    /// Reading or writing a file or stream failed.
    Io,
    /// A replay could not run to its end.
    Replay,
    /// The gateway stopped with an error.
    Gateway,
    /// `learn` fitted an adapter that did not beat the unadapted ranking, and stored nothing.
    NotLearned,
    /// A bug: something that should not fail did.
    Internal,
}

impl Problem {
    /// The code printed with `--json`.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Problem::Usage | Problem::InvalidArgument => "INVALID_ARGUMENT",
            Problem::InvalidCatalogue => "INVALID_CATALOGUE",
            Problem::InvalidQueries => "INVALID_QUERIES",
            Problem::InvalidScript => "INVALID_SCRIPT",
            Problem::InvalidConfig => "INVALID_CONFIG",
            Problem::Model => "MODEL_ERROR",
            Problem::Index => "INDEX_ERROR",
            Problem::Io => "IO_ERROR",
            Problem::Replay => "REPLAY_ERROR",
            Problem::Gateway => "GATEWAY_ERROR",
            Problem::NotLearned => "NOT_LEARNED",
            Problem::Internal => "INTERNAL",
        }
    }

    /// This problem, explained by `e`.
    pub(crate) fn because(self, e: impl std::fmt::Display) -> Failure {
        Failure::Problem { problem: self, message: e.to_string() }
    }
}

/// A failed command.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The protocol answered with an error.
    Protocol(ProtocolError),
    /// Bad input or environment.
    Problem {
        /// What kind.
        problem: Problem,
        /// What went wrong, naming the file, line or flag.
        message: String,
    },
    /// A check ran and found faults; its report (with `--json`, the only JSON on stdout) has
    /// been printed already.
    Faults {
        /// The faults in one line, naming the first.
        message: String,
    },
    /// The tool ran and failed; its result has been printed already.
    Tool {
        /// The tool.
        tool_id: String,
        /// Its error text.
        message: String,
    },
}

impl Failure {
    /// The exit status this failure ends the process with.
    pub(crate) fn status(&self) -> ExitStatus {
        match self {
            Failure::Protocol(_) => ExitStatus::Protocol,
            Failure::Problem { problem: Problem::Usage, .. } => ExitStatus::Usage,
            Failure::Problem { .. } | Failure::Faults { .. } => ExitStatus::Failure,
            Failure::Tool { .. } => ExitStatus::ToolFailed,
        }
    }

    /// Prints the failure (one line on stderr; the error JSON on stdout with `--json`) and
    /// returns the exit status.
    pub(crate) fn report(self, json_out: bool) -> ExitStatus {
        let status = self.status();
        match self {
            Failure::Protocol(e) => {
                if json_out {
                    say!("{}", serde_json::to_string_pretty(&e).unwrap_or_default());
                }
                let hints = if e.hints.is_empty() { String::new() } else { format!(" ({})", e.hints.join("; ")) };
                say_err!("error: {}", render::printable(&format!("{e}{hints}")));
            }
            Failure::Problem { problem, message } => {
                if json_out {
                    let v = json!({ "code": problem.code(), "message": message, "hints": [], "next_action": null });
                    say!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                }
                say_err!("error: {}", render::printable(&message));
            }
            Failure::Faults { message } => say_err!("error: {}", render::printable(&message)),
            Failure::Tool { tool_id, message } => {
                say_err!("error: {}", render::printable(&format!("tool {tool_id:?} failed: {message}")));
            }
        }
        status
    }
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Self {
        Failure::Protocol(e)
    }
}
