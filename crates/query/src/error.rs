//! Protocol errors: a code a program can switch on, a message a model can read, hints, and the
//! call that would most likely help next.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of protocol error, with their wire names.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $wire:literal,)*) => {
        /// The kinds of protocol error.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The wire form, e.g. `UNKNOWN_PATH`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)*
                }
            }
        }
    };
}

error_codes! {
    /// Nothing in the category matches the query well enough; hints name categories that do.
    NoMatchInCategory => "NO_MATCH_IN_CATEGORY",
    /// The category path does not exist; hints name the closest one.
    UnknownPath => "UNKNOWN_PATH",
    /// No tool has that id; hints name similar ids.
    ToolNotFound => "TOOL_NOT_FOUND",
    /// The caller lacks a scope the tool requires.
    NotAuthorized => "NOT_AUTHORIZED",
    /// A request field is invalid.
    InvalidArgument => "INVALID_ARGUMENT",
    /// A paging cursor is invalid, tampered with, or from another query or index.
    InvalidCursor => "INVALID_CURSOR",
    /// A model called a tool name that is not among the tools it may call now (disclosure).
    UnknownTool => "UNKNOWN_TOOL",
    /// The tool's availability group is down; the hint says what to start or configure.
    Unavailable => "UNAVAILABLE",
    /// The engine failed (e.g. the model could not run); not the caller's fault.
    Internal => "INTERNAL",
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = String::deserialize(d)?;
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == wire).ok_or_else(|| {
            let names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
            serde::de::Error::custom(format!("unknown error code {wire:?}; expected one of {names:?}"))
        })
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol call, by its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// `list`.
    List,
    /// `search_nodes`.
    SearchNodes,
    /// `search_tool_by_category`.
    SearchToolByCategory,
    /// `expand_tool`.
    ExpandTool,
    /// `call_tool`.
    CallTool,
}

impl Call {
    /// The wire name, e.g. `search_tool_by_category`.
    pub fn as_str(self) -> &'static str {
        match self {
            Call::List => "list",
            Call::SearchNodes => "search_nodes",
            Call::SearchToolByCategory => "search_tool_by_category",
            Call::ExpandTool => "expand_tool",
            Call::CallTool => "call_tool",
        }
    }
}

/// The protocol call that would most likely help, with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextAction {
    /// The call to make.
    pub call: Call,
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
    pub fn with_next(mut self, call: Call, arguments: Value) -> Self {
        self.next_action = Some(NextAction { call, arguments });
        self
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        ProtocolError::new(ErrorCode::InvalidArgument, message)
    }
}
