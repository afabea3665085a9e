//! Where a client is told that something changed: the session's own connection (revisions up
//! to 2025-11-25), or a `subscriptions/listen` stream (2026-07-28), whose notifications carry
//! its subscription id and only what it asked for.

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use rmcp::RoleServer;

/// How one client is told of changes.
#[derive(Clone)]
pub enum Notifier {
    /// A session's connection.
    Session(Peer<RoleServer>),
    /// A `subscriptions/listen` stream (sends only what its filter accepted).
    Listen(SubscriptionSink),
}

impl Notifier {
    /// `notifications/tools/list_changed`.
    pub async fn tools_changed(&self) {
        match self {
            Notifier::Session(peer) => drop(peer.notify_tool_list_changed().await),
            Notifier::Listen(sink) => drop(sink.notify_tool_list_changed().await),
        }
    }

    /// `notifications/prompts/list_changed`.
    pub async fn prompts_changed(&self) {
        match self {
            Notifier::Session(peer) => drop(peer.notify_prompt_list_changed().await),
            Notifier::Listen(sink) => drop(sink.notify_prompt_list_changed().await),
        }
    }

    /// `notifications/resources/list_changed`.
    pub async fn resources_changed(&self) {
        match self {
            Notifier::Session(peer) => drop(peer.notify_resource_list_changed().await),
            Notifier::Listen(sink) => drop(sink.notify_resource_list_changed().await),
        }
    }

    /// `notifications/resources/updated` of `uri`.
    pub async fn resource_updated(&self, uri: &str) {
        match self {
            Notifier::Session(peer) => {
                drop(peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.to_owned())).await)
            }
            Notifier::Listen(sink) => drop(sink.notify_resource_updated(uri).await),
        }
    }

    /// `notifications/message` (a session's; a `subscriptions/listen` stream of the 2026-07-28
    /// revision, which deprecates logging, carries none).
    #[allow(deprecated)]
    pub async fn log(&self, message: rmcp::model::LoggingMessageNotificationParam) {
        if let Notifier::Session(peer) = self {
            drop(peer.notify_logging_message(message).await);
        }
    }
}
