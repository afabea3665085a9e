//! Calls of session-free clients that take more than one round (2026-07-28 `input_required`).
//!
//! When a tool asks its client something in the middle of a call (an upstream's elicitation
//! or sampling request) and the client has no session to be asked through, the call keeps
//! running in a task of its own while the request is answered with the question and an opaque
//! `requestState` token; the client retries the call with that token and its answer, which
//! goes to the waiting tool, and the retry is answered with the call's result (or the next
//! question). A round is kept server-side, bounded in number and time: the token is only a
//! random handle, and a round left unanswered is given up (its call cancelled).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolsearch_disclosure::PendingCall;

use super::Session;
use crate::runner::{Question, RunError};

/// Most rounds waiting for an answer at once.
const MAX_ROUNDS: usize = 256;
/// How long a round waits for the client's retry before it is given up (a client retries at
/// once with its user's answer; one that never does must not hold the tool for long).
const ROUND_TTL: Duration = Duration::from_secs(120);

/// What a finished call is logged and audited with.
pub(super) struct CallNote {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) tool_id: String,
    pub(super) upstream: String,
    pub(super) started: Instant,
}

impl CallNote {
    /// A note taken away (the round's call finished).
    pub(super) fn none() -> CallNote {
        CallNote {
            id: String::new(),
            name: String::new(),
            tool_id: String::new(),
            upstream: String::new(),
            started: Instant::now(),
        }
    }
}

/// A call of a session-free client that asked it something.
pub(super) struct Round {
    /// The request-only session the call began in (its tool set, its caller).
    pub(super) session: Session,
    pub(super) pending: Option<PendingCall>,
    pub(super) task: tokio::task::JoinHandle<Result<CallToolResult, RunError>>,
    pub(super) questions: mpsc::UnboundedReceiver<Question>,
    /// The question asked last, by its key, and where its answer goes.
    pub(super) waiting: Option<(String, oneshot::Sender<Value>)>,
    pub(super) cancel: CancellationToken,
    pub(super) call: CallNote,
    pub(super) asked: usize,
    pub(super) kept: Instant,
}

impl Drop for Round {
    fn drop(&mut self) {
        // Given up (expired, or finished: then this is moot): the tool is told to stop.
        self.cancel.cancel();
        self.task.abort();
    }
}

/// The rounds waiting for their client's retry, by token.
#[derive(Default)]
pub(crate) struct Rounds(Arc<Mutex<HashMap<String, Round>>>);

impl Rounds {
    /// Keeps `round` until its client's retry: its token, or `None` when too many wait.
    pub(super) fn keep(&self, mut round: Round) -> Option<String> {
        let mut key = [0u8; 16];
        getrandom::fill(&mut key).ok()?;
        let token: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let mut rounds = self.0.lock().unwrap_or_else(|p| p.into_inner());
        rounds.retain(|_, r| r.kept.elapsed() < ROUND_TTL);
        if rounds.len() >= MAX_ROUNDS {
            return None;
        }
        round.kept = Instant::now();
        rounds.insert(token.clone(), round);
        // Given up when not taken in time (dropping it cancels its call).
        let (kept, expired) = (Arc::downgrade(&self.0), token.clone());
        tokio::spawn(async move {
            tokio::time::sleep(ROUND_TTL).await;
            let gone = kept.upgrade().and_then(|k| k.lock().unwrap_or_else(|p| p.into_inner()).remove(&expired));
            drop(gone);
        });
        Some(token)
    }

    /// The round of `token`, taken out, if it is still kept.
    pub(super) fn take(&self, token: &str) -> Option<Round> {
        let mut rounds = self.0.lock().unwrap_or_else(|p| p.into_inner());
        rounds.remove(token).filter(|r| r.kept.elapsed() < ROUND_TTL)
    }
}
