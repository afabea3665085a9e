//! An upstream's questions to the client during a call (`elicitation/create`,
//! `sampling/createMessage`), relayed to the client whose call it is.
//!
//! A 2026-07-28 server asks instead by answering `input_required`: [`Asks::rounds`] puts its
//! questions to the client whose request it is and sends the request again with the answers.
//!
//! Over Streamable HTTP, a question sent on the response stream of one of the gateway's
//! requests (rmcp marks it [`InboundStreamOrigin::OutboundRequest`]) belongs to that
//! request's call and goes to its client at once, whatever else is open ([`Asks::sent`]).
//!
//! Over stdio nothing in such a request names the call it belongs to, so the rule is plain:
//! the question belongs to one of the calls open when it arrived; when exactly one of those is
//! still open, it is that call's and goes to its client: through its session when it has one
//! (and declared the capability), or, for a session-free client, as an `input_required` round
//! of its call (`toolsearch_mcp`'s [`Asker`]). While several are open it waits (at most
//! [`QUESTION_WAIT`]) for the others to finish, so another caller's open call never gets it
//! declined on its owner's behalf. With none left, after the wait, or for a client without
//! the capability, an elicitation is declined and a sampling request refused. A question never
//! reaches a client whose call was not open when it was asked.

// Sampling is deprecated by the 2026-07-28 revision (SEP-2577), and still sent by servers of
// the older ones, whose requests are relayed here.
#![allow(deprecated)]

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::RequestId;
use rmcp::model::{
    ClientRequest, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, InputRequest, InputResponses, ServerResult,
};
use rmcp::service::{InboundStreamOrigin, Peer};
use rmcp::{ErrorData, RoleServer};
use toolsearch_mcp::{Asker, RunContext};

/// Most `input_required` rounds one forwarded call, prompt or read may take.
const MAX_ROUNDS: usize = 10;
/// The longest a question of an older upstream waits for the calls it might belong to to
/// narrow down to one.
pub(crate) const QUESTION_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The client failed to answer a question.
fn client_failed(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(format!("the client: {e}"), None)
}

/// Who a call's questions go to.
#[derive(Clone)]
enum Owner {
    /// A client with a session: asked through it.
    Session(Peer<RoleServer>),
    /// A session-free client: asked in an `input_required` round of its call.
    Rounds(Asker),
}

/// The calls open on one upstream, each with the session of the client that made it (none for
/// a session-free client).
#[derive(Default)]
pub(crate) struct Asks {
    open: Mutex<Vec<(u64, Option<Owner>)>>,
    /// The owners of the requests in flight upstream, by the id the gateway sent each with.
    sent: Mutex<std::collections::HashMap<RequestId, Option<Owner>>>,
    next: AtomicU64,
    /// Woken when a call closes.
    closed: tokio::sync::Notify,
}

/// An open call's place in [`Asks`], removed when dropped.
pub(crate) struct Open(Arc<Asks>, u64);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.lock().unwrap_or_else(|p| p.into_inner()).retain(|(id, _)| *id != self.1);
        self.0.closed.notify_waiters();
    }
}

/// A request in flight upstream, known by its id until dropped.
pub(crate) struct Sent(Arc<Asks>, RequestId);

impl Drop for Sent {
    fn drop(&mut self) {
        self.0.sent.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.1);
    }
}

impl Asks {
    /// The request the client of `cx` caused went upstream with the id `id`: a question that
    /// arrives on its response stream is that client's.
    pub(crate) fn sent(self: &Arc<Asks>, id: RequestId, cx: &RunContext) -> Sent {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), Asks::owner_of(cx));
        Sent(self.clone(), id)
    }

    /// The owner of a question that came with `origin`: the client of the request whose
    /// response stream carried it, else (stdio, or a stream of no call) [`Asks::owner`].
    async fn owner_by(&self, origin: Option<&InboundStreamOrigin>) -> Option<Owner> {
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = origin {
            if let Some(owner) = self.sent.lock().unwrap_or_else(|p| p.into_inner()).get(id) {
                return owner.clone();
            }
        }
        self.owner().await
    }

    /// A call opens, made by the client of `cx`.
    fn open(self: &Arc<Asks>, cx: &RunContext) -> Open {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let owner = Asks::owner_of(cx);
        self.open.lock().unwrap_or_else(|p| p.into_inner()).push((id, owner));
        Open(self.clone(), id)
    }

    /// Sends the request `make` builds (with the answers and `requestState` of the round
    /// before, none at first) through `send`, until `server` answers other than
    /// `input_required`: each round's questions are put to the client of `cx`, for at most
    /// [`MAX_ROUNDS`] rounds of `method`. The request is open throughout ([`Asks::open`]), so
    /// a server of an older revision that asks during it (elicitation, sampling) reaches that
    /// client too. `fail` makes the caller's error of a question the client could not answer.
    pub(crate) async fn rounds<E, Fut>(
        self: &Arc<Asks>,
        (server, method): (&str, &str),
        cx: &RunContext,
        make: impl Fn(Option<InputResponses>, Option<String>) -> ClientRequest,
        mut send: impl FnMut(ClientRequest) -> Fut,
        fail: impl Fn(ErrorData) -> E,
    ) -> Result<ServerResult, E>
    where
        Fut: Future<Output = Result<ServerResult, E>>,
    {
        let _open = self.open(cx);
        let (mut answers, mut state) = (None, None);
        for _ in 0..MAX_ROUNDS {
            let asked = match send(make(answers.take(), state.take())).await? {
                ServerResult::InputRequiredResult(asked) => asked,
                answer => return Ok(answer),
            };
            let mut given = InputResponses::new();
            for (key, question) in asked.input_requests.unwrap_or_default() {
                given.insert(key, self.answer(cx, question).await.map_err(&fail)?);
            }
            (answers, state) = (Some(given), asked.request_state);
        }
        let too_many = format!("MCP server {server:?} asked for input more than {MAX_ROUNDS} times ({method})");
        Err(fail(ErrorData::internal_error(too_many, None)))
    }

    /// Answers `question`, which a session-free upstream asked in an `input_required` round of
    /// the call of `cx` (so its owner is known): through that call's client.
    async fn answer(&self, cx: &RunContext, question: InputRequest) -> Result<serde_json::Value, ErrorData> {
        let owner = Asks::owner_of(cx);
        match question {
            InputRequest::Elicitation(r) => {
                serde_json::to_value(self.elicit_by(owner, r.params).await?).map_err(client_failed)
            }
            InputRequest::CreateMessage(r) => {
                serde_json::to_value(self.sample_by(owner, r.params).await?).map_err(client_failed)
            }
            // The gateway exposes no roots of its clients to upstreams.
            _ => Ok(serde_json::json!({"roots": []})),
        }
    }

    /// The client a question asked now belongs to: of the calls open now, the one left open
    /// once the others finished (waiting at most [`QUESTION_WAIT`]); `None` when none is.
    async fn owner(&self) -> Option<Owner> {
        let candidates: Vec<u64> =
            self.open.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(id, _)| *id).collect();
        let deadline = tokio::time::Instant::now() + QUESTION_WAIT;
        loop {
            let closed = self.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            {
                let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
                let left: Vec<&(u64, Option<Owner>)> = open.iter().filter(|(id, _)| candidates.contains(id)).collect();
                match left.as_slice() {
                    [] => return None,
                    [(_, client)] => return client.clone(),
                    _ => {}
                }
            }
            if tokio::time::timeout_at(deadline, closed).await.is_err() {
                return None;
            }
        }
    }

    /// Who questions during the call of `cx` go to.
    fn owner_of(cx: &RunContext) -> Option<Owner> {
        match (&cx.client, &cx.asker) {
            (Some(peer), _) => Some(Owner::Session(peer.clone())),
            (None, Some(asker)) => Some(Owner::Rounds(asker.clone())),
            (None, None) => None,
        }
    }

    /// Relays an elicitation that came with `origin` to the owning client, or declines it.
    pub(crate) async fn elicit(
        &self,
        origin: Option<&InboundStreamOrigin>,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        self.elicit_by(self.owner_by(origin).await, request).await
    }

    /// Relays a sampling request that came with `origin` to the owning client, or refuses it.
    pub(crate) async fn sample(
        &self,
        origin: Option<&InboundStreamOrigin>,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sample_by(self.owner_by(origin).await, request).await
    }

    /// Puts an elicitation to `owner`, or declines it.
    async fn elicit_by(&self, owner: Option<Owner>, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let declined = || Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline));
        match owner {
            Some(Owner::Session(peer)) if peer.peer_info().is_some_and(|i| i.capabilities.elicitation.is_some()) => {
                peer.create_elicitation(request).await.map_err(client_failed)
            }
            Some(Owner::Rounds(asker)) => {
                let Some(answer) = asker.ask(InputRequest::Elicitation(ElicitRequest::new(request))).await else {
                    return declined();
                };
                serde_json::from_value(answer).map_err(client_failed)
            }
            _ => declined(),
        }
    }

    /// Puts a sampling request to `owner`, or refuses it.
    async fn sample_by(
        &self,
        owner: Option<Owner>,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        match owner {
            Some(Owner::Session(peer)) if peer.peer_info().is_some_and(|i| i.capabilities.sampling.is_some()) => {
                peer.create_message(request).await.map_err(client_failed)
            }
            Some(Owner::Rounds(asker)) => {
                let answer = asker.ask(InputRequest::CreateMessage(CreateMessageRequest::new(request))).await;
                let answer = answer.ok_or_else(|| ErrorData::invalid_request("the client gave no answer", None))?;
                serde_json::from_value(answer).map_err(client_failed)
            }
            _ => Err(ErrorData::invalid_request(
                "no client that can sample owns this request (none, several, or one without the sampling capability)",
                None,
            )),
        }
    }
}
