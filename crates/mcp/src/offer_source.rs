//! The seam through which a server passes on resources, resource templates and prompts it
//! does not own: the gateway's upstreams implement [`OfferSource`], and a session asks it for
//! pages, reads, prompts and subscriptions without knowing where they come from. The server
//! defines the seam and the gateway plugs into it, so the arrow points one way.

use std::future::Future;
use std::pin::Pin;

use rmcp::ErrorData;
use serde_json::{Map, Value};
use toolsearch_query::Principal;

use crate::notifier::Notifier;
use crate::runner::RunContext;
use crate::session_view::SessionHandle;

/// A boxed, sendable future that may borrow for `'a`.
pub type BoxFutureRef<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One of the lists a client pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
    /// `prompts/list`.
    Prompts,
}

impl Offer {
    /// The key of the list in its answer (`resources`, `resourceTemplates`, `prompts`).
    pub fn key(self) -> &'static str {
        match self {
            Offer::Resources => "resources",
            Offer::Templates => "resourceTemplates",
            Offer::Prompts => "prompts",
        }
    }
}

/// A session's open sessions as an [`OfferSource`] sees them: the peer to notify, the
/// session's handle, and its caller.
pub type Watched = (Notifier, SessionHandle, Principal);

/// Where resources, templates and prompts come from. Every call names the caller, who sees
/// only what it may: anything else is answered as if it did not exist.
pub trait OfferSource: Send + Sync + std::fmt::Debug {
    /// One page of `offer` as `who` sees it (the answer's JSON, with `nextCursor` when more
    /// follow).
    fn page(&self, who: &Principal, offer: Offer, cursor: Option<&str>) -> Result<Value, ErrorData>;

    /// `resources/read` of `uri`: the server that answered and its answer. Questions the
    /// server asks during it go to the client of `cx` (its session, or its `asker`).
    fn read<'a>(
        &'a self,
        who: &'a Principal,
        uri: &'a str,
        cx: RunContext,
    ) -> BoxFutureRef<'a, Result<(String, Value), ErrorData>>;

    /// `prompts/get` of `name` with `arguments`: the server that answered and its answer.
    /// Questions the server asks during it go to the client of `cx`.
    fn get_prompt<'a>(
        &'a self,
        who: &'a Principal,
        name: &'a str,
        arguments: Option<Map<String, Value>>,
        cx: RunContext,
    ) -> BoxFutureRef<'a, Result<(String, Value), ErrorData>>;

    /// `completion/complete` for a prompt's or a resource template's argument: the server
    /// that answered and its answer.
    fn complete<'a>(
        &'a self,
        who: &'a Principal,
        params: rmcp::model::CompleteRequestParams,
        request_id: &'a str,
    ) -> BoxFutureRef<'a, Result<(String, Value), ErrorData>>;

    /// Subscribes `session` (told through `notifier`) to `uri`.
    fn subscribe<'a>(
        &'a self,
        who: &'a Principal,
        uri: &'a str,
        notifier: Notifier,
        session: SessionHandle,
    ) -> BoxFutureRef<'a, Result<(), ErrorData>>;

    /// Unsubscribes `session` from `uri`.
    fn unsubscribe<'a>(
        &'a self,
        who: &'a Principal,
        uri: &'a str,
        session: &'a SessionHandle,
    ) -> BoxFutureRef<'a, Result<(), ErrorData>>;

    /// `session` (of caller `who`, told through `notifier`) asked with `logging/setLevel` for
    /// the upstream log messages it may see at `level` and above.
    #[allow(deprecated)]
    fn set_level<'a>(
        &'a self,
        who: &'a Principal,
        level: rmcp::model::LoggingLevel,
        notifier: Notifier,
        session: SessionHandle,
    ) -> BoxFutureRef<'a, ()>;

    /// Remembers what a new session of `who` sees, so [`OfferSource::announce`] tells it only
    /// of changes.
    fn watch(&self, session: &SessionHandle, who: &Principal);

    /// Tells each of `sessions` whose view of the lists changed since it was last told.
    fn announce<'a>(&'a self, sessions: &'a [Watched]) -> BoxFutureRef<'a, ()>;
}
