//! Serving the upstreams' resources, resource templates and prompts to the gateway's clients:
//! their lists (merged across servers, namespaced, paged), `resources/read`, `prompts/get`,
//! subscriptions and their updates, and `list_changed` for each.
//!
//! A server's offers are seen by exactly the callers who may see its tools: it must be up, and
//! the caller must hold the scopes the config `requires` of the server. A caller who may not
//! see a server is answered as if it did not exist (the same error as an unknown URI or name).

#![allow(deprecated)] // resources/subscribe is what servers of the protocol revisions with `initialize` take.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, GetPromptRequest, GetPromptRequestParams, InputResponses,
    ReadResourceRequest, ReadResourceRequestParams, Reference, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::ErrorData;
use serde_json::{json, Map, Value};
use toolsearch_query::Principal;

use crate::fleet::Fleet;
use crate::listing::Offers;
use crate::offers::{namespace_answer, prompt, resource, split_name, split_uri, template};
use crate::upstream::Upstream;
mod subscriptions;

use toolsearch_mcp::{BoxFutureRef, Notifier, Offer, OfferSource, RunContext, SessionHandle, Watched};

/// How an item of a server's list is shown to clients (namespaced).
type Shape = fn(&str, &Value) -> Value;

/// A client session watching a resource.
struct Subscriber {
    notifier: Notifier,
    session: SessionHandle,
}

/// What the gateway passes through besides tools, shared by every session.
pub struct Passthrough {
    fleet: Arc<Fleet>,
    /// What the guard holds back now (a held prompt or template is not served).
    held: crate::pins::HeldNow,
    /// The scopes each server requires (from the config; replaced when it is reloaded).
    requires: RwLock<BTreeMap<String, Vec<String>>>,
    page: usize,
    /// Who watches what: (server, its own URI) to the sessions subscribed.
    watchers: Mutex<HashMap<(String, String), Vec<Subscriber>>>,
    /// What each session (by its state's address) saw of the resource and prompt lists when
    /// last told.
    seen: Mutex<HashMap<usize, (u64, u64)>>,
    /// Who listens to upstream log messages (`crate::logs`).
    logs: Arc<crate::logs::Logs>,
}

impl std::fmt::Debug for Passthrough {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passthrough").field("fleet", &self.fleet).finish()
    }
}

/// Whether a caller holding `who`'s scopes may see what needs `requires`.
fn may(who: &Principal, requires: &[String]) -> bool {
    who.scopes().is_none_or(|held| requires.iter().all(|r| held.contains(r)))
}

impl Passthrough {
    /// Offers of `fleet`'s servers, each request forwarded within the fleet's call timeout
    /// ([`Fleet::call_timeout`]), lists paged by `page` items.
    pub(crate) fn new(
        fleet: Arc<Fleet>,
        held: crate::pins::HeldNow,
        requires: BTreeMap<String, Vec<String>>,
        page: usize,
    ) -> Self {
        Passthrough {
            fleet,
            held,
            requires: RwLock::new(requires),
            page: page.max(1),
            watchers: Mutex::default(),
            seen: Mutex::default(),
            logs: Arc::default(),
        }
    }

    /// Takes the scopes each server requires from a reloaded config.
    pub(crate) fn set_requires(&self, requires: BTreeMap<String, Vec<String>>) {
        *self.requires.write().unwrap_or_else(|p| p.into_inner()) = requires;
    }

    fn permitted(&self, who: &Principal, server: &str) -> bool {
        let requires = self.requires.read().unwrap_or_else(|p| p.into_inner());
        may(who, requires.get(server).map_or(&[][..], Vec::as_slice))
    }

    /// The servers `who` may see that are up, with what they offer (less what is held).
    fn visible(&self, who: &Principal) -> Vec<(String, Offers)> {
        self.fleet
            .all()
            .into_iter()
            .filter(|(name, up)| up.is_up() && self.permitted(who, name))
            .map(|(name, up)| {
                let mut offers = up.offers();
                offers.prompts.retain(|p| !self.held(&name, "prompt", p, "name"));
                offers.templates.retain(|t| !self.held(&name, "template", t, "uriTemplate"));
                (name, offers)
            })
            .collect()
    }

    /// Whether `item` of `server` (a prompt or template, named by its field `key`) is held.
    fn held(&self, server: &str, kind: &str, item: &Value, key: &str) -> bool {
        let name = item.get(key).and_then(Value::as_str).unwrap_or_default();
        crate::pins::is_held(&self.held, &crate::pins::offer_id(server, kind, name))
    }

    /// Whether `uri` (the server's own) is not a resource it lists and could be built from a
    /// template of `server` that is held: such a read is refused, as the template is.
    fn built_by_held_template(&self, up: &Upstream, server: &str, uri: &str) -> bool {
        let prefix = crate::pins::offer_id(server, "template", "");
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let templates: Vec<&str> =
            held.0.iter().filter_map(|h| h.tool.strip_prefix(&prefix)?.strip_prefix(':')).collect();
        if templates.is_empty() {
            return false;
        }
        let listed = up.offers().resources.iter().any(|r| r.get("uri").and_then(Value::as_str) == Some(uri));
        !listed && templates.iter().any(|t| crate::offers::built_from(t, uri))
    }

    /// One page of a merged list as `who` sees it: its items and, when more follow, the
    /// cursor of the next page (an offset into the merged list).
    pub(crate) fn page(&self, who: &Principal, offer: Offer, cursor: Option<&str>) -> Result<Value, ErrorData> {
        let start = match cursor {
            None => 0,
            Some(c) => c.strip_prefix("o").and_then(|n| n.parse::<usize>().ok()).ok_or_else(|| {
                ErrorData::invalid_params("the cursor is not one this gateway gave (start again without it)", None)
            })?,
        };
        let mut items = Vec::new();
        let mut total = 0usize;
        for (server, offers) in self.visible(who) {
            let (list, shape): (&[Value], Shape) = match offer {
                Offer::Resources => (&offers.resources, resource),
                Offer::Templates => (&offers.templates, template),
                Offer::Prompts => (&offers.prompts, prompt),
            };
            for item in list {
                if total >= start && items.len() < self.page {
                    items.push(shape(&server, item));
                }
                total += 1;
            }
        }
        let mut answer = json!({ offer.key(): items });
        if start + self.page < total {
            answer["nextCursor"] = json!(format!("o{}", start + self.page));
        }
        Ok(answer)
    }

    /// The upstream behind a namespaced URI or name, if `who` may use it and it is up.
    fn upstream(
        &self,
        who: &Principal,
        server: &str,
        unknown: impl Fn() -> ErrorData,
    ) -> Result<Arc<Upstream>, ErrorData> {
        let up = self.fleet.get(server).filter(|_| self.permitted(who, server)).ok_or_else(&unknown)?;
        if !up.is_up() {
            return Err(ErrorData::internal_error(up.client_reason(), None));
        }
        Ok(up)
    }

    /// `resources/read` of a namespaced URI, forwarded; the contents' URIs namespaced.
    /// Questions the server asks go to the client of `cx`.
    pub(crate) async fn read(&self, who: &Principal, uri: &str, cx: RunContext) -> Result<(String, Value), ErrorData> {
        let unknown = || ErrorData::resource_not_found(format!("no resource {uri:?}"), Some(json!({"uri": uri})));
        let (server, original) = split_uri(uri).ok_or_else(unknown)?;
        let up = self.upstream(who, server, unknown)?;
        if self.built_by_held_template(&up, server, original) {
            return Err(unknown());
        }
        let request = |answers, state| {
            let mut params = ReadResourceRequestParams::new(original);
            params.input_responses = answers;
            params.request_state = state;
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params))
        };
        let mut answer = self.ask_rounds(&up, "resources/read", &cx, request).await?;
        namespace_answer(server, &mut answer);
        Ok((server.to_owned(), answer))
    }

    /// `prompts/get` of a namespaced name, forwarded; embedded resources' URIs namespaced.
    /// Questions the server asks go to the client of `cx`.
    pub(crate) async fn get_prompt(
        &self,
        who: &Principal,
        name: &str,
        arguments: Option<Map<String, Value>>,
        cx: RunContext,
    ) -> Result<(String, Value), ErrorData> {
        let (up, server, original) = self.prompt(who, name)?;
        let request = |answers, state| {
            let mut params = GetPromptRequestParams::new(original);
            params.arguments = arguments.clone();
            params.input_responses = answers;
            params.request_state = state;
            ClientRequest::GetPromptRequest(GetPromptRequest::new(params))
        };
        let mut answer = self.ask_rounds(&up, "prompts/get", &cx, request).await?;
        namespace_answer(server, &mut answer);
        Ok((server.to_owned(), answer))
    }

    /// The upstream, server and original name of the prompt `name` (namespaced) that `who`
    /// may see and that is not held; an unknown prompt otherwise.
    fn prompt<'n>(&self, who: &Principal, name: &'n str) -> Result<(Arc<Upstream>, &'n str, &'n str), ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("no prompt {name:?}"), None);
        let (server, original) = split_name(name).ok_or_else(unknown)?;
        let up = self.upstream(who, server, unknown)?;
        let known = up.offers().prompts.iter().any(|p| p.get("name").and_then(Value::as_str) == Some(original))
            && !crate::pins::is_held(&self.held, &crate::pins::offer_id(server, "prompt", original));
        if !known {
            return Err(unknown());
        }
        Ok((up, server, original))
    }

    /// `completion/complete` for a namespaced prompt's argument, or a resource template's,
    /// forwarded to the server that owns it with the name or URI it knows.
    pub(crate) async fn complete(
        &self,
        who: &Principal,
        mut params: CompleteRequestParams,
        request_id: &str,
    ) -> Result<(String, Value), ErrorData> {
        let (up, server) = match &mut params.r#ref {
            Reference::Prompt(p) => {
                let name = p.name.clone();
                let (up, server, original) = self.prompt(who, &name)?;
                p.name = original.to_owned();
                (up, server.to_owned())
            }
            Reference::Resource(r) => {
                let uri = r.uri.clone();
                let unknown = || {
                    ErrorData::resource_not_found(format!("no resource template {uri:?}"), Some(json!({"uri": uri})))
                };
                let (server, original) = split_uri(&uri).ok_or_else(unknown)?;
                let up = self.upstream(who, server, unknown)?;
                if crate::pins::is_held(&self.held, &crate::pins::offer_id(server, "template", original)) {
                    return Err(unknown());
                }
                r.uri = original.to_owned();
                (up, server.to_owned())
            }
            _ => return Err(ErrorData::invalid_params("completion for an unknown kind of reference", None)),
        };
        let answer = self.ask(&up, ClientRequest::CompleteRequest(CompleteRequest::new(params)), request_id).await?;
        Ok((server, answer))
    }

    /// Sends `request` to `up` within the timeout; its answer as JSON, refused when over the
    /// size a client is given.
    async fn ask(&self, up: &Upstream, request: ClientRequest, request_id: &str) -> Result<Value, ErrorData> {
        // Made on no caller's own session: a per-user server is asked only for its callers.
        if up.users.is_some() {
            let said = "is called with each caller's own login: its completions and subscriptions are not passed on";
            return Err(ErrorData::invalid_request(format!("MCP server {:?} {said}", up.name), None));
        }
        let answer = self.send(up, request, request_id, None, None).await?;
        self.bounded(up, answer)
    }

    /// Sends the request `make` builds for `method` to `up`, as [`Passthrough::ask`] does,
    /// through the `input_required` rounds the server asks for, whose questions go to the
    /// client of `cx` ([`crate::upstream::Asks::rounds`]).
    async fn ask_rounds(
        &self,
        up: &Upstream,
        method: &str,
        cx: &RunContext,
        make: impl Fn(Option<InputResponses>, Option<String>) -> ClientRequest,
    ) -> Result<Value, ErrorData> {
        let request_id = cx.request_id.clone().unwrap_or_default();
        let (request_id, cancel) = (&request_id, &cx.cancel);
        // A per-user server is asked on the caller's own session (`crate::upstream::per_user`).
        let own = match (&up.users, &cx.caller) {
            (Some(_), Some(caller)) => Some(
                up.user_line(caller, cx)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), Some(json!({"code": e.code()}))))?,
            ),
            _ => None,
        };
        let own = own.as_ref();
        let send = move |request| self.send(up, request, request_id, Some(cancel), own);
        let asks = own.map_or(&up.asks, |l| &l.asks);
        let answer = asks.rounds((&up.name, method), cx, make, send, |e| e).await?;
        self.bounded(up, answer)
    }

    /// Sends `request` to `up` (on a caller's `own` line to a per-user server) and waits for
    /// its answer within the timeout (or until `cancel`, when the client gives up: the server
    /// is told).
    async fn send(
        &self,
        up: &Upstream,
        request: ClientRequest,
        request_id: &str,
        cancel: Option<&tokio_util::sync::CancellationToken>,
        own: Option<&crate::upstream::Line>,
    ) -> Result<ServerResult, ErrorData> {
        let timeout = self.fleet.call_timeout(up);
        let (peer, _held) =
            up.ready_peer(timeout).await.ok_or_else(|| ErrorData::internal_error(up.client_reason(), None))?;
        let peer = own.map_or(&peer, |l| &l.peer);
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.insert(crate::upstream::REQUEST_ID_META.to_owned(), json!(request_id));
        options.meta = Some(meta);
        let failed = |e: &rmcp::service::ServiceError| {
            let error = up.failed(e);
            ErrorData::internal_error(error.to_string(), Some(json!({"code": error.code()})))
        };
        let handle = peer.send_request_with_option(request, options).await.map_err(|e| failed(&e))?;
        let id = handle.id.clone();
        let never = tokio_util::sync::CancellationToken::new();
        let answered = tokio::select! {
            _ = cancel.unwrap_or(&never).cancelled() => {
                let reason = Some("cancelled by the client".to_owned());
                let _ = peer.notify_cancelled(rmcp::model::CancelledNotificationParam::new(Some(id), reason)).await;
                return Err(ErrorData::internal_error("cancelled by the client", None));
            }
            answered = handle.await_response() => answered,
        };
        match answered {
            Ok(answer) => Ok(answer),
            Err(rmcp::service::ServiceError::McpError(e)) => Err(e),
            Err(rmcp::service::ServiceError::Timeout { .. }) => Err(ErrorData::internal_error(
                format!("MCP server {:?} did not answer within {} s", up.name, timeout.as_secs()),
                None,
            )),
            Err(e) => Err(failed(&e)),
        }
    }

    /// An upstream's answer as JSON, refused when over the size a client is given.
    fn bounded(&self, up: &Upstream, answer: ServerResult) -> Result<Value, ErrorData> {
        let answer = match answer {
            ServerResult::CustomResult(c) => c.0,
            other => serde_json::to_value(other).map_err(|_| {
                ErrorData::internal_error(format!("MCP server {:?} gave an unreadable answer", up.name), None)
            })?,
        };
        let bytes = answer.to_string().len();
        let limit = up.limits().max_result_bytes;
        if bytes > limit {
            return Err(ErrorData::internal_error(
                format!("the answer is {bytes} bytes, over the gateway's limit of {limit} (toolsearch.limits.max_result_bytes)"),
                Some(json!({"bytes": bytes, "limit": limit})),
            ));
        }
        Ok(answer)
    }
}

impl OfferSource for Passthrough {
    fn page(&self, who: &Principal, offer: Offer, cursor: Option<&str>) -> Result<Value, ErrorData> {
        Passthrough::page(self, who, offer, cursor)
    }

    fn read<'a>(
        &'a self,
        who: &'a Principal,
        uri: &'a str,
        cx: RunContext,
    ) -> BoxFutureRef<'a, Result<(String, Value), ErrorData>> {
        Box::pin(Passthrough::read(self, who, uri, cx))
    }

    fn get_prompt<'a>(
        &'a self,
        who: &'a Principal,
        name: &'a str,
        arguments: Option<Map<String, Value>>,
        cx: RunContext,
    ) -> BoxFutureRef<'a, Result<(String, Value), ErrorData>> {
        Box::pin(Passthrough::get_prompt(self, who, name, arguments, cx))
    }

    fn complete<'a>(
        &'a self,
        who: &'a Principal,
        params: CompleteRequestParams,
        request_id: &'a str,
    ) -> BoxFutureRef<'a, Result<(String, Value), ErrorData>> {
        Box::pin(Passthrough::complete(self, who, params, request_id))
    }

    fn subscribe<'a>(
        &'a self,
        who: &'a Principal,
        uri: &'a str,
        notifier: Notifier,
        session: SessionHandle,
    ) -> BoxFutureRef<'a, Result<(), ErrorData>> {
        Box::pin(Passthrough::subscribe(self, who, uri, notifier, session))
    }

    fn unsubscribe<'a>(
        &'a self,
        who: &'a Principal,
        uri: &'a str,
        session: &'a SessionHandle,
    ) -> BoxFutureRef<'a, Result<(), ErrorData>> {
        Box::pin(Passthrough::unsubscribe(self, who, uri, session))
    }

    fn set_level<'a>(
        &'a self,
        who: &'a Principal,
        level: rmcp::model::LoggingLevel,
        notifier: Notifier,
        session: SessionHandle,
    ) -> BoxFutureRef<'a, ()> {
        Box::pin(Passthrough::set_level(self, who, level, notifier, session))
    }

    fn watch(&self, session: &SessionHandle, who: &Principal) {
        Passthrough::watch(self, session, who)
    }

    fn announce<'a>(&'a self, sessions: &'a [Watched]) -> BoxFutureRef<'a, ()> {
        Box::pin(Passthrough::announce(self, sessions))
    }
}
