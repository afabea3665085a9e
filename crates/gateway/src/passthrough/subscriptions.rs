//! Resource subscriptions and their updates, the upstreams' log levels and messages, and
//! telling each session when what it may see of the resource and prompt lists changed.

#![allow(deprecated)] // resources/subscribe is what servers of the protocol revisions with `initialize` take.

use std::hash::{Hash, Hasher};

use rmcp::model::{
    ClientRequest, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};
use rmcp::ErrorData;
use serde_json::json;
use toolsearch_mcp::{Notifier, SessionHandle, Watched};
use toolsearch_query::Principal;

use super::{Passthrough, Subscriber};
use crate::offers::split_uri;

impl Passthrough {
    /// Subscribes `session` to a namespaced URI: the first watcher of a resource subscribes
    /// the gateway upstream.
    pub(crate) async fn subscribe(
        &self,
        who: &Principal,
        uri: &str,
        notifier: Notifier,
        session: SessionHandle,
    ) -> Result<(), ErrorData> {
        let unknown = || ErrorData::resource_not_found(format!("no resource {uri:?}"), Some(json!({"uri": uri})));
        let (server, original) = split_uri(uri).ok_or_else(unknown)?;
        let up = self.upstream(who, server, unknown)?;
        if !up.offers().subscribe {
            return Err(ErrorData::invalid_request(format!("MCP server {server:?} does not take subscriptions"), None));
        }
        let key = (server.to_owned(), original.to_owned());
        let first = {
            let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
            let list = watchers.entry(key.clone()).or_default();
            list.retain(|s| s.session.strong_count() > 0);
            if !list.iter().any(|s| s.session.ptr_eq(&session)) {
                list.push(Subscriber { notifier, session });
            }
            list.len() == 1
        };
        if first {
            let params = SubscribeRequestParams::new(original);
            if let Err(e) =
                self.ask(&up, ClientRequest::SubscribeRequest(SubscribeRequest::new(params)), "subscribe").await
            {
                self.watchers.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unsubscribes `session`; the last watcher of a resource unsubscribes the gateway.
    pub(crate) async fn unsubscribe(
        &self,
        who: &Principal,
        uri: &str,
        session: &SessionHandle,
    ) -> Result<(), ErrorData> {
        let unknown = || ErrorData::resource_not_found(format!("no resource {uri:?}"), Some(json!({"uri": uri})));
        let (server, original) = split_uri(uri).ok_or_else(unknown)?;
        if !self.permitted(who, server) {
            return Err(unknown());
        }
        let key = (server.to_owned(), original.to_owned());
        let last = {
            let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
            let Some(list) = watchers.get_mut(&key) else { return Ok(()) };
            list.retain(|s| s.session.strong_count() > 0 && !s.session.ptr_eq(session));
            let empty = list.is_empty();
            if empty {
                watchers.remove(&key);
            }
            empty
        };
        if let (true, Some(up)) = (last, self.fleet.get(server).filter(|u| u.is_up())) {
            let params = UnsubscribeRequestParams::new(original);
            let _ =
                self.ask(&up, ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(params)), "unsubscribe").await;
        }
        Ok(())
    }

    /// A watched resource changed upstream: each session watching it is told, with its
    /// namespaced URI, if its caller may see the server now (the scopes a server requires, or
    /// a local caller's, may have changed by a reload since it subscribed).
    pub(crate) async fn updated(&self, server: &str, uri: &str) {
        let notifiers: Vec<Notifier> = {
            let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
            let Some(list) = watchers.get_mut(&(server.to_owned(), uri.to_owned())) else { return };
            list.retain(|s| s.session.strong_count() > 0);
            list.iter()
                .filter(|s| {
                    s.session.upgrade().and_then(|v| v.principal()).is_some_and(|who| self.permitted(&who, server))
                })
                .map(|s| s.notifier.clone())
                .collect()
        };
        let namespaced = crate::offers::namespace_uri(server, uri);
        for notifier in notifiers {
            notifier.resource_updated(&namespaced).await;
        }
    }

    /// A client asked for upstream log messages at `level` and above: kept, and each running
    /// server it may see is asked for that level when none more verbose was asked of it.
    pub(crate) async fn set_level(
        &self,
        who: &Principal,
        level: rmcp::model::LoggingLevel,
        notifier: Notifier,
        session: SessionHandle,
    ) {
        self.logs.listen(session, notifier, who.clone(), level);
        // All at once: a slow server delays the answer by its own time, not by the sum.
        let servers: Vec<String> = self.fleet.all().into_keys().filter(|name| self.permitted(who, name)).collect();
        futures::future::join_all(servers.iter().map(|server| self.ask_level(server))).await;
    }

    /// Asks `server`, when it is running (a lazy server is not started for it) and takes log
    /// levels, for the most verbose level its listeners want, if it was not asked for that.
    async fn ask_level(&self, server: &str) {
        let Some(up) = self.fleet.get(server).filter(|u| u.is_up()) else { return };
        let takes =
            |p: &rmcp::service::Peer<rmcp::RoleClient>| p.peer_info().is_some_and(|i| i.capabilities.logging.is_some());
        if !up.peer().is_some_and(|p| takes(&p)) {
            return;
        }
        let Some(level) = self.logs.to_ask(server, |who| self.permitted(who, server)) else { return };
        let request = rmcp::model::SetLevelRequest::new(rmcp::model::SetLevelRequestParams::new(level));
        if self.ask(&up, ClientRequest::SetLevelRequest(request), "setLevel").await.is_err() {
            self.logs.forget(server);
        }
    }

    /// A log message of `server`: to each client that may see the server and asked for its
    /// level.
    pub(crate) async fn logged(&self, server: &str, message: rmcp::model::LoggingMessageNotificationParam) {
        let recipients = self.logs.recipients(message.level, |who| self.permitted(who, server));
        if recipients.is_empty() {
            return;
        }
        let max = self.fleet.get(server).map_or(usize::MAX, |up| up.limits().max_result_bytes);
        let message = crate::logs::relayed(server, message, max);
        // Each handed over on its own, bounded in time: a client that does not read its stream
        // stops getting messages, and holds up no one else.
        let logs = self.logs.clone();
        for (session, notifier) in recipients {
            let (message, logs) = (message.clone(), logs.clone());
            tokio::spawn(async move {
                if tokio::time::timeout(crate::logs::SEND_WAIT, notifier.log(message)).await.is_err() {
                    logs.stop(&session);
                }
            });
        }
    }

    /// `server` connected again: the resources watched through it are subscribed anew (its
    /// new session knows nothing of the old one's), and it is asked for its listeners' log
    /// level.
    pub(crate) async fn resubscribe(&self, server: &str) {
        self.logs.forget(server);
        self.ask_level(server).await;
        let Some(up) = self.fleet.get(server).filter(|u| u.is_up()) else { return };
        let uris: Vec<String> = {
            let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
            watchers.retain(|_, list| {
                list.retain(|s| s.session.strong_count() > 0);
                !list.is_empty()
            });
            watchers.keys().filter(|(s, _)| s == server).map(|(_, u)| u.clone()).collect()
        };
        for uri in uris {
            let params = SubscribeRequestParams::new(uri);
            let _ = self.ask(&up, ClientRequest::SubscribeRequest(SubscribeRequest::new(params)), "subscribe").await;
        }
    }

    /// What `who` sees of the resource (with templates) and prompt lists, as two hashes.
    fn fingerprint(&self, who: &Principal) -> (u64, u64) {
        let (mut resources, mut prompts) =
            (std::collections::hash_map::DefaultHasher::new(), std::collections::hash_map::DefaultHasher::new());
        for (name, offers) in self.visible(who) {
            name.hash(&mut resources);
            name.hash(&mut prompts);
            json!([offers.resources, offers.templates]).to_string().hash(&mut resources);
            json!(offers.prompts).to_string().hash(&mut prompts);
        }
        (resources.finish(), prompts.finish())
    }

    /// Remembers what a new session of `who` sees, for [`Passthrough::announce`].
    pub(crate) fn watch(&self, session: &SessionHandle, who: &Principal) {
        let now = self.fingerprint(who);
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).insert(session.as_ptr() as *const () as usize, now);
    }

    /// Tells each session in `sessions` whose view of the resource or prompt lists changed
    /// since it was last told (a server it may see came or went or said its lists changed, or
    /// the scopes a server requires did) that they did, list by list. Each session is judged by
    /// what its own caller may see: a change to a server it may not see tells it nothing.
    pub(crate) async fn announce(&self, sessions: &[Watched]) {
        let mut tell = Vec::new();
        {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let live: std::collections::HashSet<usize> =
                sessions.iter().map(|(_, h, _)| h.as_ptr() as *const () as usize).collect();
            seen.retain(|k, _| live.contains(k));
            for (notifier, handle, who) in sessions {
                let now = self.fingerprint(who);
                if let Some(before) = seen.insert(handle.as_ptr() as *const () as usize, now) {
                    tell.push((notifier.clone(), now.0 != before.0, now.1 != before.1));
                }
            }
        }
        for (notifier, resources, prompts) in tell {
            if resources {
                notifier.resources_changed().await;
            }
            if prompts {
                notifier.prompts_changed().await;
            }
        }
    }
}
