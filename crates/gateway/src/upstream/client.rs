//! The gateway's client handler for one upstream session: what it answers of the upstream's
//! requests (questions relayed to the calling client, `asks`) and what it does with its
//! notifications (list changes, resource updates, log messages, each an [`UpEvent`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc;

use super::{Asks, UpEvent};

/// How many log messages of one upstream are passed on per second; the rest are dropped, so a
/// server that floods them neither fills the gateway's memory nor holds up its other events.
const LOGS_PER_SECOND: u32 = 100;

/// The gateway's client handler for one upstream: passes list changes on (progress is routed
/// in its transport, `crate::progress`).
pub(super) struct UpClient {
    pub(super) name: String,
    pub(super) events: mpsc::UnboundedSender<UpEvent>,
    /// Its open calls, whose clients its questions go to.
    pub(super) asks: Arc<Asks>,
    /// The second its log messages are counted in, and how many were passed on in it.
    pub(super) logged: Mutex<(Instant, u32)>,
}

impl ClientHandler for UpClient {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asks.elicit(context.extensions.get::<rmcp::service::InboundStreamOrigin>(), request).await
    }

    // Deprecated by 2026-07-28 (SEP-2577), still sent by servers of the older revisions.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        request: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.asks.sample(context.extensions.get::<rmcp::service::InboundStreamOrigin>(), request).await
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        info.client_info = Implementation::new("toolsearch-gateway", env!("CARGO_PKG_VERSION"));
        // Relayed to the client whose call asks (`asks`), declined when none may answer.
        info.capabilities.elicitation = serde_json::from_value(serde_json::json!({"form": {}})).ok();
        info.capabilities.sampling = serde_json::from_value(serde_json::json!({})).ok();
        info
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(UpEvent::ToolsChanged(self.name.clone()));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(UpEvent::OffersChanged(self.name.clone()));
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(UpEvent::OffersChanged(self.name.clone()));
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(UpEvent::ResourceUpdated(self.name.clone(), params.uri));
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        {
            let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
            if logged.0.elapsed() >= Duration::from_secs(1) {
                *logged = (Instant::now(), 0);
            }
            if logged.1 >= LOGS_PER_SECOND {
                return;
            }
            logged.1 += 1;
        }
        let _ = self.events.send(UpEvent::Logged(self.name.clone(), params));
    }
}
