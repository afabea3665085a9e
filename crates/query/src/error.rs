//! Protocol errors: a code a program can switch on, a message a model can read, hints, and the
//! call that would most likely help next.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of protocol error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Nothing in the category matches the query well enough; hints name categories that do.
    NoMatchInCategory,
    /// The category path does not exist; hints name the closest one.
    UnknownPath,
    /// No tool has that id; hints name similar ids.
    ToolNotFound,
    /// The caller lacks a scope the tool requires.
    NotAuthorized,
    /// A request field is invalid.
    InvalidArgument,
    /// A paging cursor is invalid, tampered with, or from another query or index.
    InvalidCursor,
    /// The engine failed (e.g. the model could not run); not the caller's fault.
    Internal,
}

impl ErrorCode {
    /// The wire form, e.g. `UNKNOWN_PATH`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NoMatchInCategory => "NO_MATCH_IN_CATEGORY",
            ErrorCode::UnknownPath => "UNKNOWN_PATH",
            ErrorCode::ToolNotFound => "TOOL_NOT_FOUND",
            ErrorCode::NotAuthorized => "NOT_AUTHORIZED",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::InvalidCursor => "INVALID_CURSOR",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

/// The protocol call that would most likely help, with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextAction {
    /// Protocol call name, e.g. `search_tool_by_category`.
    pub call: String,
    /// Its arguments.
    pub arguments: Value,
}

/// A protocol error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ProtocolError {
    /// What kind of error.
    pub code: ErrorCode,
    /// What went wrong, in one sentence.
    pub message: String,
    /// Concrete alternatives (closest path, similar ids, matching categories).
    pub hints: Vec<String>,
    /// The call to make next, if one is likely to help.
    pub next_action: Option<NextAction>,
}

impl ProtocolError {
    /// An error without hints.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ProtocolError { code, message: message.into(), hints: Vec::new(), next_action: None }
    }

    /// Adds hints.
    pub fn with_hints(mut self, hints: Vec<String>) -> Self {
        self.hints = hints;
        self
    }

    /// Sets the next action.
    pub fn with_next(mut self, call: &str, arguments: Value) -> Self {
        self.next_action = Some(NextAction { call: call.to_owned(), arguments });
        self
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        ProtocolError::new(ErrorCode::InvalidArgument, message)
    }
}
