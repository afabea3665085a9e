//! How a catalogue tool call runs once the tool set has checked it: a [`ToolRunner`] turns a
//! checked call into an MCP `CallToolResult`, asynchronously, cancellably, with progress.
//!
//! `toolsearch serve` runs tools with a command ([`CommandRunner`]); the gateway forwards them
//! to the upstream MCP session that owns them (`toolsearch-gateway`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock as Content, ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use toolsearch_catalog::Tool;

use toolsearch_exec::CommandExecutor;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Where progress of a running call goes: the downstream client's progress token, if it
/// asked for progress.
#[derive(Clone)]
pub struct ProgressSink {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

impl ProgressSink {
    /// Progress to `token` through `peer`.
    pub fn new(peer: Peer<RoleServer>, token: ProgressToken) -> ProgressSink {
        ProgressSink { peer, token }
    }

    /// Sends one progress notification (best effort).
    pub async fn send(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let mut p = ProgressNotificationParam::new(self.token.clone(), progress);
        p.total = total;
        p.message = message;
        let _ = self.peer.notify_progress(p).await;
    }
}

/// What a running call may use besides its arguments.
#[derive(Clone)]
pub struct RunContext {
    /// Cancelled when the downstream client cancels the request (or goes away).
    pub cancel: CancellationToken,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressSink>,
    /// The id the server's log and audit trail know this call by; the gateway passes it on to
    /// the upstream in the request's `_meta` (`io.toolsearch/requestId`).
    pub request_id: Option<String>,
    /// The session of the client that made the call, which an upstream's questions during it
    /// (elicitation, sampling) may be relayed to; `None` for a session-free client.
    pub client: Option<rmcp::service::Peer<rmcp::RoleServer>>,
    /// How a session-free client is asked something during the call (its revision's
    /// `input_required` rounds); `None` for a client with a session (asked through `client`).
    pub asker: Option<Asker>,
    /// The trace the call belongs to (`crate::trace`; empty when traces are off).
    pub trace: opentelemetry::Context,
    /// Who made the call, where the transport tells callers apart (an HTTP bearer token's or
    /// an identity provider's principal's digest, hex): what per-user upstream grants are
    /// kept by. `None` for a caller the transport does not identify (stdio, open loopback).
    pub caller: Option<String>,
}

/// A question for a session-free client in the middle of a call: the request, and where its
/// answer goes.
pub struct Question {
    /// What the client is asked (an elicitation, a sampling request).
    pub request: rmcp::model::InputRequest,
    /// Its answer, as the client sent it.
    pub answer: tokio::sync::oneshot::Sender<Value>,
}

/// Asks a session-free client during a call: the call is answered with the question
/// (`input_required`), and the client's retry carries the answer back here.
#[derive(Clone)]
pub struct Asker(tokio::sync::mpsc::UnboundedSender<Question>);

impl Asker {
    /// An asker, and where its questions arrive.
    pub fn new() -> (Asker, tokio::sync::mpsc::UnboundedReceiver<Question>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Asker(tx), rx)
    }

    /// Asks `request`; the answer, or `None` when the client gave none (the call was given up).
    pub async fn ask(&self, request: rmcp::model::InputRequest) -> Option<Value> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        self.0.send(Question { request, answer }).ok()?;
        answered.await.ok()
    }
}

/// Why a call did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// Nothing is configured to run catalogue tools.
    #[error("{0}")]
    NotConfigured(String),
    /// The server that owns the tool is down; what to fix.
    #[error("{0}")]
    Unavailable(String),
    /// The call took longer than allowed.
    #[error("the call did not finish within {0} s")]
    Timeout(u64),
    /// The client cancelled the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The call failed on the way (transport, protocol).
    #[error("{0}")]
    Failed(String),
    /// The server that owns the tool could not be reached (its name and the code only).
    #[error("{0}")]
    Unreachable(String),
    /// The server that owns the tool refused the gateway's credentials.
    #[error("{0}")]
    AuthFailed(String),
    /// The server that owns the tool needs its operator to log the gateway in (OAuth).
    #[error("{0}")]
    LoginRequired(String),
    /// The answer is larger than the gateway passes on (`toolsearch.limits.max_result_bytes`).
    #[error("the tool's answer is {bytes} bytes, over the limit of {limit} bytes that this gateway passes on (toolsearch.limits.max_result_bytes)")]
    TooLarge {
        /// Its size, as JSON.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

impl RunError {
    /// The protocol code the model sees for this failure.
    pub fn code(&self) -> &'static str {
        match self {
            RunError::NotConfigured(_) => "NOT_CONFIGURED",
            RunError::Unavailable(_) => "UNAVAILABLE",
            RunError::Timeout(_) => "TIMEOUT",
            RunError::Cancelled => "CANCELLED",
            RunError::Failed(_) => "UPSTREAM_ERROR",
            RunError::Unreachable(_) => "UPSTREAM_UNREACHABLE",
            RunError::AuthFailed(_) => "UPSTREAM_AUTH_FAILED",
            RunError::LoginRequired(_) => "UPSTREAM_LOGIN_REQUIRED",
            RunError::TooLarge { .. } => "RESULT_TOO_LARGE",
        }
    }

    /// The `outcome` label of metrics and logs: the code in lower case.
    pub fn outcome(&self) -> &'static str {
        match self {
            RunError::NotConfigured(_) => "not_configured",
            RunError::Unavailable(_) => "unavailable",
            RunError::Timeout(_) => "timeout",
            RunError::Cancelled => "cancelled",
            RunError::Failed(_) => "upstream_error",
            RunError::Unreachable(_) => "upstream_unreachable",
            RunError::AuthFailed(_) => "upstream_auth_failed",
            RunError::LoginRequired(_) => "upstream_login_required",
            RunError::TooLarge { .. } => "result_too_large",
        }
    }

    /// The error result the model sees: `{code, message, hints}` as text, `isError` set.
    pub fn to_result(&self) -> CallToolResult {
        let hints: Vec<&str> = match self {
            RunError::NotConfigured(_) => {
                vec!["tell the user that this server has no way to run catalogue tools; search and expand still work"]
            }
            RunError::Unavailable(_) => vec!["tell the user what to fix; the gateway retries by itself"],
            RunError::Timeout(_) => vec!["retry with a smaller request, or tell the user"],
            RunError::Cancelled => vec![],
            RunError::Failed(_) => vec!["retry once; if it fails again, tell the user"],
            RunError::Unreachable(_) => vec!["retry in a moment; if it fails again, tell the user"],
            RunError::AuthFailed(_) => vec!["tell the user that the gateway's credentials for this server need fixing"],
            RunError::LoginRequired(_) => {
                vec!["tell the user that the gateway's operator must log it in to this server; the message says how"]
            }
            RunError::TooLarge { .. } => {
                vec!["ask for less: a narrower query, fewer items, a page or a range at a time"]
            }
        };
        let text = json!({"code": self.code(), "message": self.to_string(), "hints": hints}).to_string();
        CallToolResult::error(vec![Content::text(text)])
    }
}

/// Runs checked catalogue tool calls.
pub trait ToolRunner: Send + Sync {
    /// Runs `tool` with `arguments` (already valid against its schema and allowed for the
    /// caller). The result is the tool's own, unchanged (`content`, `structuredContent`,
    /// `isError`).
    fn run(&self, tool: Tool, arguments: Value, cx: RunContext) -> BoxFuture<Result<CallToolResult, RunError>>;
}

/// No runner: every call explains, in MCP terms, what to configure.
#[derive(Debug, Clone)]
pub struct NoRunner(pub String);

impl ToolRunner for NoRunner {
    fn run(&self, _: Tool, _: Value, _: RunContext) -> BoxFuture<Result<CallToolResult, RunError>> {
        let message = self.0.clone();
        Box::pin(async move { Err(RunError::NotConfigured(message)) })
    }
}

/// Runs tools with a command ([`CommandExecutor`]) on a blocking thread: its output is the
/// result text (`isError` on a non-zero exit).
#[derive(Debug, Clone)]
pub struct CommandRunner(pub Arc<CommandExecutor>);

impl ToolRunner for CommandRunner {
    fn run(&self, tool: Tool, arguments: Value, cx: RunContext) -> BoxFuture<Result<CallToolResult, RunError>> {
        let executor = self.0.clone();
        Box::pin(async move {
            let job = tokio::task::spawn_blocking(move || executor.run_tool(&tool, &arguments));
            tokio::select! {
                _ = cx.cancel.cancelled() => Err(RunError::Cancelled),
                done = job => match done {
                    Err(e) => Err(RunError::Failed(format!("the executor thread failed: {e}"))),
                    Ok(Ok(value)) => Ok(CallToolResult::success(vec![Content::text(text_of(&value))])),
                    Ok(Err(failure)) => Ok(CallToolResult::error(vec![Content::text(failure.to_string())])),
                },
            }
        })
    }
}

/// A JSON result as the model reads it: a string as is, anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The text of a call result, for the audit trail and replay: its text content joined.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.as_str())).collect();
    if texts.is_empty() {
        result.structured_content.as_ref().map(Value::to_string).unwrap_or_default()
    } else {
        texts.join("\n")
    }
}
