//! Driving a session-free client's request that asks it something through its
//! `input_required` rounds: a call, a forwarded prompt or read runs in a task of its own; each
//! question it asks answers the request and keeps the round ([`super::Rounds`]) for the
//! client's retry, which carries the answer back to the task.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock as Content};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use toolsearch_query::Principal;

use super::rounds::{CallNote, Ran, Round};
use super::{complete, session_free, Session};
use crate::runner::{RunContext, RunError};

/// What driving a round came to.
enum Driven {
    /// Its task ended.
    Ran(Box<Round>, Ran),
    /// It asked the client something (the round is kept for the retry).
    Asked(rmcp::model::InputRequiredResult),
    /// It asked, and too many rounds wait already.
    Full,
}

/// A forwarded read's or prompt's answer, or the question its client must answer first.
type Answered = Result<Value, rmcp::model::InputRequiredResult>;

/// A forwarded `prompts/get` or `resources/read`, running.
type OfferFuture = crate::offer_source::BoxFutureRef<'static, Result<(String, Value), ErrorData>>;

impl Session {
    /// Waits for `round`'s task: what it came to, or the next question it asks, which keeps
    /// the round for the client's retry and is what this request is answered with.
    async fn drive_round(&self, mut round: Round) -> Driven {
        let mut asking = true;
        loop {
            tokio::select! {
                ran = &mut round.task => {
                    let ran = ran.unwrap_or_else(|_| match round.method {
                        "tools/call" => Ran::Call(Err(RunError::Failed("the call ended before its result".into()))),
                        _ => Ran::Offer(Err(ErrorData::internal_error("the request ended before its answer", None))),
                    });
                    return Driven::Ran(Box::new(round), ran);
                }
                question = round.questions.recv(), if asking => match question {
                    Some(question) => {
                        round.asked += 1;
                        let key = format!("q{}", round.asked);
                        let requests = std::collections::BTreeMap::from([(key.clone(), question.request)]);
                        round.waiting = Some((key, question.answer));
                        let Some(token) = self.hub.rounds().keep(round) else { return Driven::Full };
                        return Driven::Asked(rmcp::model::InputRequiredResult::new(Some(requests), Some(token)));
                    }
                    None => asking = false,
                },
            }
        }
    }

    /// Waits for `round`'s call: its result, or the next question the tool asks
    /// (`input_required`).
    pub(super) async fn drive(
        &self,
        round: Round,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match self.drive_round(round).await {
            Driven::Asked(asked) => Ok(CallToolResponse::InputRequired(asked)),
            Driven::Full => Ok(complete(CallToolResult::error(vec![Content::text(
                "the tool asked for input, and too many requests wait for theirs: call it again later",
            )]))
            .into()),
            Driven::Ran(mut round, Ran::Call(ran)) => {
                let pending = round.pending.take().ok_or_else(|| ErrorData::internal_error("no call", None))?;
                let call = std::mem::replace(&mut round.call, CallNote::none());
                self.finish_run(context, pending, call, ran).await
            }
            Driven::Ran(_, Ran::Offer(_)) => Err(ErrorData::internal_error("a call's round answered a read", None)),
        }
    }

    /// Waits for `round`'s forwarded `prompts/get` or `resources/read`: the upstream's answer
    /// (logged), or the next question asked during it (`input_required`).
    async fn drive_offer(&self, round: Round) -> Result<Answered, ErrorData> {
        match self.drive_round(round).await {
            Driven::Asked(asked) => Ok(Err(asked)),
            Driven::Full => Err(ErrorData::internal_error(
                "the server asked for input, and too many requests wait for theirs: ask again later",
                None,
            )),
            Driven::Ran(round, Ran::Offer(answer)) => {
                let call = &round.call;
                round.session.offer_done(round.method, &round.subject, &call.id, &answer, call.started);
                Ok(Ok(answer?.1))
            }
            Driven::Ran(_, Ran::Call(_)) => Err(ErrorData::internal_error("a read's round answered a call", None)),
        }
    }

    /// A session-free client's retry of a request that asked it something: its answer goes
    /// to the waiting task, and the request goes on. `None` when the token is unknown or
    /// expired, or was not given for a request of `method` naming `subject`.
    async fn resume_round(
        &self,
        token: &str,
        (method, subject): (&str, &str),
        answers: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<Round>, ErrorData> {
        // Only the caller that began it goes on with it: anyone else's retry is answered as an
        // unknown token, and leaves the round to its owner.
        let who = super::identity_of(context);
        let Some(mut round) = self.hub.rounds().take(token, method, subject, &who) else { return Ok(None) };
        round.session.set(context)?;
        if let Some((key, answer)) = round.waiting.take() {
            let Some(value) = answers.get(&key) else {
                return Err(ErrorData::invalid_params(format!("inputResponses has no answer to {key:?}"), None));
            };
            let _ = answer.send(value.clone());
        }
        Ok(Some(round))
    }

    /// A session-free client's retry of a call that asked it something.
    pub(super) async fn resume(
        &self,
        token: &str,
        name: &str,
        answers: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(round) = self.resume_round(token, ("tools/call", name), answers, context).await? else {
            let text = "this call's requestState is unknown or expired: call the tool again";
            return Ok(complete(CallToolResult::error(vec![Content::text(text)])).into());
        };
        let session = round.session.clone();
        session.drive(round, context).await
    }

    /// Forwards a `prompts/get` or `resources/read` of `subject` (run by `forward` with the
    /// request's context), or goes on with one that asked its session-free client something
    /// (`state`, `answers`). An upstream's questions during it go to this client: through its
    /// session, or in `input_required` rounds.
    pub(super) async fn forward_offer<F>(
        &self,
        method: &'static str,
        subject: String,
        (state, answers): (Option<String>, Option<rmcp::model::InputResponses>),
        context: &RequestContext<RoleServer>,
        forward: F,
    ) -> Result<Answered, ErrorData>
    where
        F: FnOnce(Arc<dyn crate::offer_source::OfferSource>, Principal, RunContext) -> OfferFuture,
    {
        if let Some(token) = state.filter(|_| session_free(context)) {
            let answers = answers.unwrap_or_default();
            let Some(round) = self.resume_round(&token, (method, &subject), answers, context).await? else {
                return Err(ErrorData::invalid_params(
                    format!("this {method} request's requestState is unknown or expired: send it again without one"),
                    None,
                ));
            };
            let session = round.session.clone();
            return session.drive_offer(round).await;
        }
        let this = self.scoped(context);
        let (pass, who) = this.passthrough(method, context)?;
        let (started, id) = (Instant::now(), this.hub.ops().request_id());
        if !this.request_only() {
            let client = Some(context.peer.clone());
            let cx = RunContext {
                cancel: context.ct.clone(),
                progress: None,
                request_id: Some(id.clone()),
                client,
                asker: None,
                trace: opentelemetry::Context::new(),
                caller: Some(super::identity_of(context)).filter(|c| !c.is_empty()),
            };
            let answer = forward(pass, who, cx).await;
            this.offer_done(method, &subject, &id, &answer, started);
            return Ok(Ok(answer?.1));
        }
        let call = CallNote { id, name: String::new(), tool_id: String::new(), upstream: String::new(), started };
        let round = Round::start(this.clone(), (method, subject), (None, call), None, |cx| {
            let task = forward(pass, who, cx);
            async move { Ran::Offer(task.await) }
        });
        this.drive_offer(round).await
    }
}
