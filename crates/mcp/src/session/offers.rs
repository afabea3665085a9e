//! A session's side of what passes through besides tools: the caller's principal for the
//! passthrough, paged lists, and the log, metrics and audit of a forwarded read or prompt.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::PaginatedRequestParams;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{json, Value};
use toolsearch_query::Principal;

use super::{Session, LOCAL};
use crate::metrics::OWN;
use crate::offer_source::{Offer, OfferSource};
use crate::session_view::SessionView;

/// A JSON answer as the SDK's type, marked a complete result when it says nothing else (the
/// 2026-07-28 revision requires `resultType`; the SDK drops it again for older clients).
pub(super) fn typed<T: serde::de::DeserializeOwned>(mut answer: Value) -> Result<T, ErrorData> {
    if let Some(fields) = answer.as_object_mut() {
        fields.entry("resultType").or_insert_with(|| json!("complete"));
    }
    serde_json::from_value(answer).map_err(|e| ErrorData::internal_error(format!("the upstream's answer: {e}"), None))
}

impl Session {
    /// The hub's passthrough and the caller's principal (the session's tool set made, so the
    /// session is told when lists change); an error when this server passes nothing through.
    pub(super) fn passthrough(
        &self,
        method: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Arc<dyn OfferSource>, Principal), ErrorData> {
        let Some(pass) = self.hub.passthrough().cloned() else {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
                None,
            ));
        };
        self.set(context)?;
        let who = self.state.principal().unwrap_or_else(|| self.hub.default_principal());
        Ok((pass, who))
    }

    /// One page of the upstreams' resources, templates or prompts.
    pub(super) async fn offer_page<T: serde::de::DeserializeOwned>(
        &self,
        offer: Offer,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<T, ErrorData> {
        let started = Instant::now();
        let method = match offer {
            Offer::Resources => "resources/list",
            Offer::Templates => "resources/templates/list",
            Offer::Prompts => "prompts/list",
        };
        let (pass, who) = self.passthrough(method, context)?;
        let cursor = request.and_then(|r| r.cursor);
        let page = pass.page(&who, offer, cursor.as_deref())?;
        self.hub.ops().metrics.request(method, OWN, "ok", started.elapsed().as_secs_f64());
        typed(page)
    }

    /// Counts, logs and audits a forwarded read or prompt.
    pub(super) fn offer_done(
        &self,
        method: &str,
        what: &str,
        id: &str,
        answer: &Result<(String, Value), ErrorData>,
        started: Instant,
    ) {
        let seconds = started.elapsed().as_secs_f64();
        let (upstream, outcome) = match answer {
            Ok((server, _)) => (server.as_str(), "ok"),
            Err(_) => (OWN, "failed"),
        };
        let ops = self.hub.ops();
        ops.metrics.request(method, upstream, outcome, seconds);
        let token = self.state.caller.get().map_or(LOCAL, String::as_str);
        let record = json!({"request_id": id, "session": self.state.id, "token": token, "method": method,
            "name": what, "upstream": upstream, "outcome": outcome, "ms": (seconds * 1e6).round() / 1e3});
        ops.log("request", record.clone());
        if let (Some(trail), Value::Object(mut record)) = (&ops.trail, record) {
            record.insert("time".into(), json!(crate::trail::now_ms()));
            record.insert("event".into(), json!(method));
            trail.write(record);
        }
    }
}
