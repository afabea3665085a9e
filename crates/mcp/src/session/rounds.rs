//! Requests of session-free clients that take more than one round (2026-07-28
//! `input_required`): `tools/call`, `prompts/get` and `resources/read`.
//!
//! When an upstream asks the client something in the middle of a request (its elicitation or
//! sampling request, or its own `input_required` round) and the client has no session to be
//! asked through, the request keeps running in a task of its own while it is answered with
//! the question and an opaque `requestState` token; the client retries the same request with
//! that token and its answer, which goes to the waiting task, and the retry is answered with
//! the result (or the next question). A round is kept server-side, bounded in number and time: the token is only a
//! random handle, and a round left unanswered is given up (its call cancelled).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use rmcp::model::CallToolResult;
use rmcp::ErrorData;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolsearch_disclosure::PendingCall;

use super::Session;
use crate::runner::{Asker, ProgressSink, Question, RunContext, RunError};

/// Most rounds waiting for an answer at once.
const MAX_ROUNDS: usize = 256;
/// Most rounds of one caller waiting at once: no caller can take every place.
const MAX_ROUNDS_PER_CALLER: usize = 32;
/// How long a round waits for the client's retry before it is given up (a client retries at
/// once with its user's answer; one that never does must not hold the tool for long).
const ROUND_TTL: Duration = Duration::from_secs(120);

/// What a finished call is logged and audited with.
pub(crate) struct CallNote {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) tool_id: String,
    pub(super) upstream: String,
    pub(super) started: std::time::Instant,
}

impl CallNote {
    /// A note taken away (the round's call finished).
    pub(super) fn none() -> CallNote {
        CallNote {
            id: String::new(),
            name: String::new(),
            tool_id: String::new(),
            upstream: String::new(),
            started: std::time::Instant::now(),
        }
    }
}

/// What a round's task came to.
pub(crate) enum Ran {
    /// A tool call's result.
    Call(Result<CallToolResult, RunError>),
    /// A forwarded `prompts/get` or `resources/read`: the server that answered and its answer.
    Offer(Result<(String, Value), ErrorData>),
}

/// A request of a session-free client that asked it something.
pub(crate) struct Round {
    /// The request-only session the request began in (its tool set, its caller).
    pub(super) session: Session,
    /// The method of the request (`tools/call`, `prompts/get`, `resources/read`): only a
    /// retry of the same method, naming the same subject, goes on with it.
    pub(super) method: &'static str,
    /// The tool, prompt or resource the request names.
    pub(super) subject: String,
    pub(super) pending: Option<PendingCall>,
    pub(super) task: tokio::task::JoinHandle<Ran>,
    pub(super) questions: mpsc::UnboundedReceiver<Question>,
    /// The question asked last, by its key, and where its answer goes.
    pub(super) waiting: Option<(String, oneshot::Sender<Value>)>,
    pub(super) cancel: CancellationToken,
    pub(super) call: CallNote,
    pub(super) asked: usize,
    pub(super) kept: Instant,
}

impl Round {
    /// Starts `work` in a task of its own, with a context whose questions (progress to
    /// `progress`) go to the round: the round of request `method` naming `subject`, for
    /// [`Session`]'s driving to wait on.
    pub(super) fn start<F>(
        session: Session,
        (method, subject): (&'static str, String),
        (pending, call): (Option<PendingCall>, CallNote),
        progress: Option<ProgressSink>,
        work: impl FnOnce(RunContext) -> F,
    ) -> Round
    where
        F: std::future::Future<Output = Ran> + Send + 'static,
    {
        let (asker, questions) = Asker::new();
        let cancel = CancellationToken::new();
        let request_id = Some(call.id.clone());
        let trace = opentelemetry::Context::new();
        let cx = RunContext {
            cancel: cancel.clone(),
            progress,
            request_id,
            client: None,
            asker: Some(asker),
            trace,
            caller: None,
        };
        let task = tokio::spawn(work(cx));
        Round {
            session,
            method,
            subject,
            pending,
            task,
            questions,
            waiting: None,
            cancel,
            call,
            asked: 0,
            kept: Instant::now(),
        }
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        // Given up (expired, or finished: then this is moot): the tool is told to stop.
        self.cancel.cancel();
        self.task.abort();
    }
}

/// What [`Rounds`] keeps: a request waiting for its client's retry.
pub(crate) trait Waiting: Send + 'static {
    /// When it was kept.
    fn kept(&self) -> Instant;
    /// Marks it kept now.
    fn keep_now(&mut self);
    /// Whether a retry of `method` naming `subject` by the caller `who` ([`super::Caller::identity`])
    /// goes on with it.
    fn fits(&self, method: &str, subject: &str, who: &str) -> bool;
    /// Who began it ([`super::Caller::identity`]).
    fn owner(&self) -> String;
}

impl Waiting for Round {
    fn kept(&self) -> Instant {
        self.kept
    }

    fn keep_now(&mut self) {
        self.kept = Instant::now();
    }

    fn fits(&self, method: &str, subject: &str, who: &str) -> bool {
        self.method == method && self.subject == subject && self.owner() == who
    }

    fn owner(&self) -> String {
        self.session.state.identity.get().cloned().unwrap_or_default()
    }
}

/// The rounds waiting for their client's retry, by token; in a fleet, this replica's seal on
/// the tokens it gives (`crate::fleet_rounds`); and how long a round waits ([`ROUND_TTL`], shorter
/// in tests).
pub(crate) struct Rounds<R: Waiting = Round>(
    Arc<Mutex<HashMap<String, R>>>,
    std::sync::OnceLock<Arc<crate::fleet_rounds::FleetRounds>>,
    Duration,
);

impl<R: Waiting> Default for Rounds<R> {
    fn default() -> Self {
        Rounds(Arc::default(), std::sync::OnceLock::new(), ROUND_TTL)
    }
}

impl<R: Waiting> Rounds<R> {
    /// Seals the tokens given from now on with this replica's place in `fleet`.
    pub(crate) fn in_fleet(&self, fleet: Arc<crate::fleet_rounds::FleetRounds>) {
        let _ = self.1.set(fleet);
    }

    /// Keeps `round` until its client's retry: its token, or `None` when too many wait, in
    /// all or of its caller.
    pub(super) fn keep(&self, mut round: R) -> Option<String> {
        let mut key = [0u8; 16];
        getrandom::fill(&mut key).ok()?;
        let mut token: String = key.iter().map(|b| format!("{b:02x}")).collect();
        if let Some(fleet) = self.1.get() {
            token.push_str(&fleet.suffix());
        }
        let mut rounds = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.2;
        rounds.retain(|_, r| r.kept().elapsed() < ttl);
        let owner = round.owner();
        if rounds.len() >= MAX_ROUNDS || rounds.values().filter(|r| r.owner() == owner).count() >= MAX_ROUNDS_PER_CALLER
        {
            return None;
        }
        round.keep_now();
        rounds.insert(token.clone(), round);
        // Given up when not taken in time (dropping it cancels its call).
        let (kept, expired) = (Arc::downgrade(&self.0), token.clone());
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            let gone = kept.upgrade().and_then(|k| k.lock().unwrap_or_else(|p| p.into_inner()).remove(&expired));
            drop(gone);
        });
        Some(token)
    }

    /// The round of `token`, taken out, if it is still kept and is one of `method` naming
    /// `subject` begun by `who` (a token retried with another request, or by another caller,
    /// is left alone).
    pub(super) fn take(&self, token: &str, method: &str, subject: &str, who: &str) -> Option<R> {
        let mut rounds = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !rounds.get(token).is_some_and(|r| r.fits(method, subject, who)) {
            return None;
        }
        rounds.remove(token).filter(|r| r.kept().elapsed() < self.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept request that says when it is given up (dropped).
    struct Probe {
        kept: Instant,
        dropped: Arc<std::sync::atomic::AtomicUsize>,
        who: String,
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    impl Waiting for Probe {
        fn kept(&self) -> Instant {
            self.kept
        }
        fn keep_now(&mut self) {
            self.kept = Instant::now();
        }
        fn fits(&self, method: &str, subject: &str, who: &str) -> bool {
            method == "prompts/get" && subject == "p" && who == self.who
        }
        fn owner(&self) -> String {
            self.who.clone()
        }
    }

    fn probe(dropped: &Arc<std::sync::atomic::AtomicUsize>) -> Probe {
        probe_of(dropped, "a")
    }

    fn probe_of(dropped: &Arc<std::sync::atomic::AtomicUsize>, who: &str) -> Probe {
        Probe { kept: Instant::now(), dropped: dropped.clone(), who: who.to_owned() }
    }

    #[tokio::test]
    async fn one_caller_cannot_take_every_place_nor_anothers_round() {
        let rounds: Rounds<Probe> = Rounds::default();
        let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mine: Vec<String> =
            (0..MAX_ROUNDS_PER_CALLER).map(|_| rounds.keep(probe_of(&dropped, "intruder")).unwrap()).collect();
        assert!(rounds.keep(probe_of(&dropped, "intruder")).is_none(), "its own places are full");
        let owners = rounds.keep(probe_of(&dropped, "owner")).expect("another caller still gets a place");
        // A retry by anyone but the owner is refused, and leaves the round to its owner.
        assert!(rounds.take(&owners, "prompts/get", "p", "intruder").is_none());
        assert!(rounds.take(&owners, "prompts/get", "p", "owner").is_some());
        assert!(rounds.take(&mine[0], "prompts/get", "p", "owner").is_none());
    }

    #[tokio::test]
    async fn at_most_so_many_wait_and_each_is_given_up_after_its_time() {
        // Real time, with rounds that wait 3 s (the steps before the wait take microseconds).
        let ttl = Duration::from_secs(3);
        let rounds: Rounds<Probe> = Rounds(Arc::default(), std::sync::OnceLock::new(), ttl);
        let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tokens: Vec<String> =
            (0..MAX_ROUNDS).map(|i| rounds.keep(probe_of(&dropped, &format!("c{}", i % 16))).unwrap()).collect();
        assert_eq!(tokens.iter().collect::<std::collections::HashSet<_>>().len(), MAX_ROUNDS, "tokens are unique");
        assert!(rounds.keep(probe(&dropped)).is_none(), "one more is refused");
        assert_eq!(dropped.load(std::sync::atomic::Ordering::SeqCst), 1, "and dropped at once");
        // A retry of another request, or another subject, leaves a round where it is.
        assert!(rounds.take(&tokens[0], "tools/call", "p", "c0").is_none());
        assert!(rounds.take(&tokens[0], "prompts/get", "q", "c0").is_none());
        assert!(rounds.take(&tokens[0], "prompts/get", "p", "c0").is_some());
        assert!(rounds.take(&tokens[0], "prompts/get", "p", "c0").is_none(), "taken once");
        assert!(rounds.keep(probe_of(&dropped, "c0")).is_some(), "a taken round frees its place");
        // Past their time, unanswered rounds are given up: dropped (their calls cancelled).
        tokio::time::sleep(ttl + Duration::from_secs(1)).await;
        tokio::task::yield_now().await;
        assert_eq!(dropped.load(std::sync::atomic::Ordering::SeqCst), MAX_ROUNDS + 2);
        assert!(rounds.take(&tokens[1], "prompts/get", "p", "c1").is_none());
        assert_eq!(rounds.0.lock().unwrap().len(), 0);
    }
}
