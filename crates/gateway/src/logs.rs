//! Upstream log messages (`notifications/message`), relayed to the clients that asked for them
//! with `logging/setLevel` (the revisions up to 2025-11-25; 2026-07-28 deprecates logging).
//!
//! A client opts in: one that never set a level is sent none. It is sent the messages of the
//! servers it may see (as scopes decide) at or above its level, each with the server's name as
//! its logger (`SERVER`, or `SERVER/LOGGER` when the server named one) and its data masked as
//! the operator's log is. Each running server is asked, with a `logging/setLevel` of its own,
//! for the most verbose level any client that may see it wants; each client's own level is
//! applied here. A message is handed to each client with a short wait ([`SEND_WAIT`]); a client
//! that does not take it in time (it does not read its stream) is sent no more and its HTTP
//! session is closed, so nothing stays queued for it and no other client waits on it.

// Logging is deprecated by the 2026-07-28 revision (SEP-2577), and still used by clients and
// servers of the older ones, whose messages are relayed here.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use toolsearch_mcp::{Notifier, SessionHandle};
use toolsearch_query::Principal;

/// How long a client's connection may take to accept one log message.
pub(crate) const SEND_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// A client that set a level.
struct Listener {
    notifier: Notifier,
    session: SessionHandle,
    who: Principal,
    level: LoggingLevel,
}

impl Listener {
    /// Its caller's principal now: its session's (a reload may have given a local caller
    /// other scopes since it set its level), or the one it set its level with.
    fn who(&self) -> Principal {
        self.session.upgrade().and_then(|s| s.principal()).unwrap_or_else(|| self.who.clone())
    }
}

/// Who listens to upstream logs, and at what level each server was asked to send them.
#[derive(Default)]
pub(crate) struct Logs {
    listeners: Mutex<Vec<Listener>>,
    asked: Mutex<HashMap<String, LoggingLevel>>,
}

impl Logs {
    /// `session` (told through `notifier`, its caller `who`) wants messages at `level` and above.
    pub(crate) fn listen(&self, session: SessionHandle, notifier: Notifier, who: Principal, level: LoggingLevel) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.retain(|l| l.session.strong_count() > 0 && !l.session.ptr_eq(&session));
        listeners.push(Listener { notifier, session, who, level });
    }

    /// The most verbose level a live listener that may see a server (`may`) wants of it, if
    /// one does, when that is not what the server was last asked for (it is then taken as
    /// asked).
    pub(crate) fn to_ask(&self, server: &str, may: impl Fn(&Principal) -> bool) -> Option<LoggingLevel> {
        let wanted = {
            let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
            listeners.retain(|l| l.session.strong_count() > 0);
            listeners.iter().filter(|l| may(&l.who())).map(|l| l.level).min_by_key(|l| *l as u8)?
        };
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        (asked.insert(server.to_owned(), wanted) != Some(wanted)).then_some(wanted)
    }

    /// The server's connection is new: it knows no level yet.
    pub(crate) fn forget(&self, server: &str) {
        self.asked.lock().unwrap_or_else(|p| p.into_inner()).remove(server);
    }

    /// Who gets a message of `level` from a server: each live listener that may see it
    /// (`may`) and wants that level, with its session.
    pub(crate) fn recipients(
        &self,
        level: LoggingLevel,
        may: impl Fn(&Principal) -> bool,
    ) -> Vec<(SessionHandle, Notifier)> {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.retain(|l| l.session.strong_count() > 0);
        listeners
            .iter()
            .filter(|l| level as u8 >= l.level as u8 && may(&l.who()))
            .map(|l| (l.session.clone(), l.notifier.clone()))
            .collect()
    }

    /// `session` did not take a message in time (its client does not read its stream): it gets
    /// no more, and its connection is closed, so nothing stays queued for it.
    pub(crate) fn stop(&self, session: &SessionHandle) {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner()).retain(|l| !l.session.ptr_eq(session));
        if let Some(s) = session.upgrade() {
            s.close();
        }
    }
}

/// A message of `server` as its clients get it: logged as the server (and its own logger),
/// its data masked, and cut to `max` bytes of JSON (`limits.max_result_bytes`) with a notice.
pub(crate) fn relayed(
    server: &str,
    mut message: LoggingMessageNotificationParam,
    max: usize,
) -> LoggingMessageNotificationParam {
    message.logger = Some(match message.logger.take() {
        Some(logger) => format!("{server}/{logger}"),
        None => server.to_owned(),
    });
    message.data = crate::secrets::mask_json(&message.data);
    let bytes = serde_json::to_vec(&message.data).map_or(0, |v| v.len());
    if bytes > max {
        let text = match &message.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut end = max.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        message.data = serde_json::Value::String(format!(
            "{}\n[cut by the gateway: the message is {bytes} bytes, over the limit of {max} (toolsearch.limits.max_result_bytes)]",
            &text[..end]
        ));
    }
    message.meta = None;
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_message_names_its_server_and_keeps_its_level() {
        let m = LoggingMessageNotificationParam::new(LoggingLevel::Error, Value::String("disk full".into()));
        let out = relayed("files", m.clone(), 1000);
        assert_eq!(out.logger.as_deref(), Some("files"));
        assert_eq!(out.level, LoggingLevel::Error);
        assert_eq!(out.data, Value::String("disk full".into()));
        let out = relayed("files", m.clone().with_logger("io"), 1000);
        assert_eq!(out.logger.as_deref(), Some("files/io"));
        // Over the limit: cut, with a notice; structured data masked first.
        let big = LoggingMessageNotificationParam::new(LoggingLevel::Info, Value::String("x".repeat(5000)));
        let out = relayed("files", big, 1000);
        let text = out.data.as_str().unwrap();
        assert!(text.len() < 1200 && text.contains("5002 bytes"), "{text}");
        let secret =
            LoggingMessageNotificationParam::new(LoggingLevel::Info, serde_json::json!({"password": "hunter2"}));
        assert_eq!(relayed("files", secret, 1000).data, serde_json::json!({"password": "***"}));
    }
}
