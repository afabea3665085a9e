//! An upstream's questions to the client during a call (`elicitation/create`,
//! `sampling/createMessage`), relayed to the client whose call it is.
//!
//! Over stdio nothing in such a request names the call it belongs to, so the rule is plain:
//! while exactly one forwarded call is open on the server, the question is that call's and
//! goes to its client: through its session when it has one (and declared the capability), or,
//! for a session-free client, as an `input_required` round of its call (`toolsearch_mcp`'s
//! [`Asker`]). Otherwise (no call, several calls, a client without the capability) an
//! elicitation is declined and a sampling request refused. A question never reaches a client
//! whose call it is not.

// Sampling is deprecated by the 2026-07-28 revision (SEP-2577), and still sent by servers of
// the older ones, whose requests are relayed here.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, InputRequest,
};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use toolsearch_mcp::{Asker, RunContext};

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
    next: AtomicU64,
}

/// An open call's place in [`Asks`], removed when dropped.
pub(crate) struct Open(Arc<Asks>, u64);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.lock().unwrap_or_else(|p| p.into_inner()).retain(|(id, _)| *id != self.1);
    }
}

impl Asks {
    /// A call opens, made by the client of `cx`.
    pub(crate) fn open(self: &Arc<Asks>, cx: &RunContext) -> Open {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let owner = Asks::owner_of(cx);
        self.open.lock().unwrap_or_else(|p| p.into_inner()).push((id, owner));
        Open(self.clone(), id)
    }

    /// Answers `question`, which a session-free upstream asked in an `input_required` round of
    /// the call of `cx` (so its owner is known): through that call's client.
    pub(crate) async fn answer(&self, cx: &RunContext, question: InputRequest) -> Result<serde_json::Value, ErrorData> {
        let owner = Asks::owner_of(cx);
        let failed = |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("the client: {e}"), None);
        match question {
            InputRequest::Elicitation(r) => {
                serde_json::to_value(self.elicit_by(owner, r.params).await?).map_err(|e| failed(&e))
            }
            InputRequest::CreateMessage(r) => {
                serde_json::to_value(self.sample_by(owner, r.params).await?).map_err(|e| failed(&e))
            }
            // The gateway exposes no roots of its clients to upstreams.
            _ => Ok(serde_json::json!({"roots": []})),
        }
    }

    /// The client a question now belongs to: the one open call's.
    fn owner(&self) -> Option<Owner> {
        match self.open.lock().unwrap_or_else(|p| p.into_inner()).as_slice() {
            [(_, client)] => client.clone(),
            _ => None,
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

    /// Relays an elicitation to the owning client, or declines it.
    pub(crate) async fn elicit(&self, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        self.elicit_by(self.owner(), request).await
    }

    /// Relays a sampling request to the owning client, or refuses it.
    pub(crate) async fn sample(&self, request: CreateMessageRequestParams) -> Result<CreateMessageResult, ErrorData> {
        self.sample_by(self.owner(), request).await
    }

    /// Puts an elicitation to `owner`, or declines it.
    async fn elicit_by(&self, owner: Option<Owner>, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let declined = || Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline));
        let failed = |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("the client: {e}"), None);
        match owner {
            Some(Owner::Session(peer)) if peer.peer_info().is_some_and(|i| i.capabilities.elicitation.is_some()) => {
                peer.create_elicitation(request).await.map_err(|e| failed(&e))
            }
            Some(Owner::Rounds(asker)) => {
                let Some(answer) = asker.ask(InputRequest::Elicitation(ElicitRequest::new(request))).await else {
                    return declined();
                };
                serde_json::from_value(answer).map_err(|e| failed(&e))
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
        let failed = |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("the client: {e}"), None);
        match owner {
            Some(Owner::Session(peer)) if peer.peer_info().is_some_and(|i| i.capabilities.sampling.is_some()) => {
                peer.create_message(request).await.map_err(|e| failed(&e))
            }
            Some(Owner::Rounds(asker)) => {
                let answer = asker.ask(InputRequest::CreateMessage(CreateMessageRequest::new(request))).await;
                let answer = answer.ok_or_else(|| ErrorData::invalid_request("the client gave no answer", None))?;
                serde_json::from_value(answer).map_err(|e| failed(&e))
            }
            _ => Err(ErrorData::invalid_request(
                "no client that can sample owns this request (none, several, or one without the sampling capability)",
                None,
            )),
        }
    }
}
