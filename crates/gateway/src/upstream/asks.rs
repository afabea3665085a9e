//! An upstream's questions to the client during a call (`elicitation/create`,
//! `sampling/createMessage`), relayed to the client whose call it is.
//!
//! Over stdio nothing in such a request names the call it belongs to, so the rule is plain:
//! while exactly one forwarded call is open on the server, the question is that call's and
//! goes to its client, when that client has a session and declared the capability; otherwise
//! (no call, several calls, a session-free client, a client without the capability) an
//! elicitation is declined and a sampling request refused. A question never reaches a client
//! whose call it is not.

// Sampling is deprecated by the 2026-07-28 revision (SEP-2577), and still sent by servers of
// the older ones, whose requests are relayed here.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};

/// The calls open on one upstream, each with the session of the client that made it (none for
/// a session-free client).
#[derive(Default)]
pub(crate) struct Asks {
    open: Mutex<Vec<(u64, Option<Peer<RoleServer>>)>>,
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
    /// A call opens, made by `client`.
    pub(crate) fn open(self: &Arc<Asks>, client: Option<Peer<RoleServer>>) -> Open {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        self.open.lock().unwrap_or_else(|p| p.into_inner()).push((id, client));
        Open(self.clone(), id)
    }

    /// The client a question now belongs to: the one open call's, if it has a session.
    fn owner(&self) -> Option<Peer<RoleServer>> {
        match self.open.lock().unwrap_or_else(|p| p.into_inner()).as_slice() {
            [(_, client)] => client.clone(),
            _ => None,
        }
    }

    /// Relays an elicitation to the owning client, or declines it.
    pub(crate) async fn elicit(&self, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let client = self.owner().filter(|p| p.peer_info().is_some_and(|i| i.capabilities.elicitation.is_some()));
        let Some(client) = client else { return Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline)) };
        client
            .create_elicitation(request)
            .await
            .map_err(|e| ErrorData::internal_error(format!("the client: {e}"), None))
    }

    /// Relays a sampling request to the owning client, or refuses it.
    pub(crate) async fn sample(&self, request: CreateMessageRequestParams) -> Result<CreateMessageResult, ErrorData> {
        let client = self.owner().filter(|p| p.peer_info().is_some_and(|i| i.capabilities.sampling.is_some()));
        let Some(client) = client else {
            return Err(ErrorData::invalid_request(
                "no client that can sample owns this request (none, several, or one without the sampling capability)",
                None,
            ));
        };
        client.create_message(request).await.map_err(|e| ErrorData::internal_error(format!("the client: {e}"), None))
    }
}
