//! Progress of forwarded calls, routed by ownership: a `notifications/progress` from an
//! upstream reaches a client only when it names a request that this upstream has open and that
//! client asked progress for, under the client's own token.
//!
//! The routing sits in the upstream's transport ([`Routed`]), not in a client handler: the
//! SDK handles each notification in a task of its own, so a handler may run after the answer
//! it preceded has been passed on (and its progress lost), and it cannot tell which of the
//! gateway's upstreams sent it. Here every message is seen in the order the upstream wrote it:
//! an outgoing request opens a slot for its progress token, its answer closes it, and a
//! progress notification in between is passed on before the answer is read. One that names
//! no open request of this upstream (another server's, a guessed one, a late one) is dropped
//! and counted.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{GetMeta, JsonRpcMessage, ProgressNotificationParam, ProgressToken, RequestId, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;

use toolsearch_mcp::ProgressSink;

/// Progress held for a request whose caller has not taken its slot yet.
const BUFFERED: usize = 64;
/// Open requests one upstream may have before unanswered ones without a caller are forgotten.
const MAX_OPEN: usize = 4096;
/// The longest a slow client may hold up one progress notification (and so the upstream's
/// messages behind it).
const SEND_TIMEOUT: Duration = Duration::from_millis(500);

/// One open request's progress.
#[derive(Default)]
struct Slot {
    id: Option<RequestId>,
    sink: Option<ProgressSink>,
    early: Vec<ProgressNotificationParam>,
}

/// The open requests of one upstream: each slot by its progress token, and the token by the
/// request's id, so an answer closes its slot without a scan.
#[derive(Default)]
struct Table {
    slots: HashMap<ProgressToken, Slot>,
    ids: HashMap<RequestId, ProgressToken>,
}

/// The open requests of one upstream and where their progress goes.
#[derive(Default)]
pub(crate) struct Router {
    table: std::sync::Mutex<Table>,
    dropped: AtomicU64,
}

impl Router {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Progress notifications dropped because they named no open request of this upstream.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// A new session: requests of the old one are no longer open.
    pub(crate) fn reset(&self) {
        *self.table() = Table::default();
    }

    /// Request `id` goes out with progress token `token`.
    fn opened(&self, id: RequestId, token: ProgressToken) {
        let mut table = self.table();
        let Table { slots, ids } = &mut *table;
        if slots.len() >= MAX_OPEN {
            // Requests that were never answered (an upstream that drops them), and progress no
            // caller took: forgotten, so the table stays bounded; a caller still waiting keeps
            // its slot.
            slots.retain(|_, s| s.sink.is_some());
            ids.retain(|_, t| slots.contains_key(t));
        }
        slots.entry(token.clone()).or_default().id = Some(id.clone());
        ids.insert(id, token);
    }

    /// Request `id` was answered: its slot is closed, unless it holds progress its caller has
    /// not taken yet (the answer can come before the caller takes the slot): that stays until
    /// the caller takes it and is done ([`Router::detach`]).
    fn answered(&self, id: &RequestId) {
        let mut table = self.table();
        let Some(token) = table.ids.remove(id) else { return };
        let waiting = table.slots.get(&token).is_some_and(|s| s.sink.is_none() && !s.early.is_empty());
        if !waiting {
            table.slots.remove(&token);
        }
    }

    /// A progress notification from the upstream: passed on to its request's caller (before
    /// anything the upstream wrote after it), held while the caller has not taken the slot,
    /// or dropped and counted.
    async fn progress(&self, p: ProgressNotificationParam) {
        let sink = {
            let mut table = self.table();
            match table.slots.get_mut(&p.progress_token) {
                Some(Slot { sink: Some(sink), .. }) => sink.clone(),
                Some(slot) if slot.early.len() < BUFFERED => return slot.early.push(p),
                _ => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        };
        send(&sink, p).await;
    }

    /// The caller of the request with `token` takes its progress, with what came before (in
    /// order: what arrives meanwhile is held until what came before is passed on).
    pub(crate) async fn attach(&self, token: ProgressToken, sink: ProgressSink) {
        loop {
            let early = {
                let mut table = self.table();
                let slot = table.slots.entry(token.clone()).or_default();
                if slot.early.is_empty() {
                    slot.sink = Some(sink);
                    return;
                }
                std::mem::take(&mut slot.early)
            };
            for p in early {
                send(&sink, p).await;
            }
        }
    }

    /// The caller is done with the request with `token` (answered, cancelled or timed out).
    pub(crate) fn detach(&self, token: &ProgressToken) {
        let mut table = self.table();
        if let Some(id) = table.slots.remove(token).and_then(|s| s.id) {
            table.ids.remove(&id);
        }
    }
}

async fn send(sink: &ProgressSink, p: ProgressNotificationParam) {
    let _ = tokio::time::timeout(SEND_TIMEOUT, sink.send(p.progress, p.total, p.message)).await;
}

/// An upstream's transport with its progress routed by [`Router`].
pub(crate) struct Routed<T> {
    inner: T,
    router: Arc<Router>,
}

impl<T> Routed<T> {
    /// `inner`, routed by `router`.
    pub(crate) fn new(inner: T, router: Arc<Router>) -> Routed<T> {
        Routed { inner, router }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let opened = match &item {
            JsonRpcMessage::Request(r) => r.request.get_meta().get_progress_token().map(|t| (r.id.clone(), t)),
            _ => None,
        };
        if let Some((id, token)) = opened {
            self.router.opened(id, token);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            match message {
                JsonRpcMessage::Notification(n) => match n.notification {
                    ServerNotification::ProgressNotification(p) => self.router.progress(p.params).await,
                    other => {
                        return Some(JsonRpcMessage::Notification(rmcp::model::JsonRpcNotification {
                            jsonrpc: n.jsonrpc,
                            notification: other,
                        }))
                    }
                },
                JsonRpcMessage::Response(ref r) => {
                    self.router.answered(&r.id);
                    return Some(message);
                }
                JsonRpcMessage::Error(ref e) => {
                    if let Some(id) = &e.id {
                        self.router.answered(id);
                    }
                    return Some(message);
                }
                other => return Some(other),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
