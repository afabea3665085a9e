//! toolsearch-exec: the host behaviour toolsearch can run as commands. A [`CommandExecutor`]
//! runs catalogue tools (an [`Executor`](toolsearch_query::Executor) for the engine), a
//! [`CommandCheck`] decides whether an availability group is up.
//!
//! Key design decision: a command is never trusted to behave. It runs in a process group of
//! its own, its input and output are handled on threads of their own, the whole group is
//! killed at the deadline (and whatever it left running when it exits), and its output is
//! capped, so no command can hang, flood or outlive the process that ran it. Serving (MCP)
//! and the CLI use it; neither knows how processes are run.
//!
//! ## Where things live
//!
//! `command.rs`: a process group per command, a deadline that kills the group, bounded output;
//! [`CommandExecutor`] is an engine `Executor`, [`CommandCheck`] an availability check.
#![deny(missing_docs)]

mod command;

pub use command::{CommandCheck, CommandExecutor, MAX_OUTPUT_BYTES, MAX_TIMEOUT_SECS};
