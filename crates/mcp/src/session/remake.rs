//! A session's tool set made again when the hub's configuration changes (a reload of the
//! gateway's `toolset`, `scopes` or `access`), and how a request meets a session whose caller's
//! principal is no longer the one it began with.
//!
//! A caller the transport identifies (a token, an OAuth subject) keeps its scopes for its
//! session's life: under other scopes its requests are refused and it starts a new session
//! (what began under the old scopes does not go on under the new). A caller it does not
//! identify (the stdio client, HTTP without tokens) cannot start another session, and holds the
//! hub's default principal, which a reload may replace: its session is then made again as a new
//! session's would be, under the new principal, nothing of the old set carried over but the
//! numbering of its audit steps, and the trail on disk records it (a `tool_set_remade` line:
//! the tools it no longer shows, and those it shows now). Either way a session never answers
//! under scopes its caller no longer holds. One serving a single request of a session-free
//! client is never remade: a call it holds waiting for input is refused, as for any caller.

use std::sync::atomic::Ordering;

use rmcp::ErrorData;
use toolsearch_query::Principal;

use super::{Session, SessionState, SCOPES_CHANGED};
use crate::session_view::{MakeSet, SessionView};
use crate::trail::Trail;

impl Session {
    /// Checks that this session's set is the one its caller holding `principal` gets now: the
    /// first request takes `principal` as the session's; a session of a caller the transport
    /// does not identify is made again under a new default, and any session whose set was made
    /// from a configuration replaced since (missed by the hub's round) is made again.
    pub(super) fn current(&self, principal: &Principal) -> Result<(), ErrorData> {
        let held = match self.state.principal() {
            Some(held) => held,
            None => {
                let mut held = self.state.principal.write().unwrap_or_else(|p| p.into_inner());
                held.get_or_insert_with(|| principal.clone()).clone()
            }
        };
        let local = SessionView::local(&*self.state);
        let make = |p: Principal| self.hub.numbered_tool_set(p).ok();
        if &held != principal {
            if local {
                self.state.made_again(principal, &make, self.hub.ops().trail.as_deref());
            }
            if self.state.principal().as_ref() != Some(principal) {
                // The same caller, under other scopes: its grant changed (a reload, or an OAuth
                // token with other scopes). What began under the old scopes does not go on under
                // the new.
                return Err(ErrorData::invalid_request(SCOPES_CHANGED, None));
            }
        } else if !self.request_only() && self.state.made.load(Ordering::Relaxed) < self.hub.generation() {
            self.state.made_again(principal, &make, self.hub.ops().trail.as_deref());
        }
        Ok(())
    }
}

impl SessionState {
    /// See [`SessionView::remake`].
    pub(super) fn made_again(&self, default: &Principal, make: MakeSet<'_>, trail: Option<&Trail>) -> bool {
        if self.request_only {
            return false;
        }
        let local = self.local.get() == Some(&true);
        let Some(set) = self.set.get() else {
            // No set yet: its first request makes one from the configuration as it is then.
            if local {
                let mut held = self.principal.write().unwrap_or_else(|p| p.into_inner());
                if held.is_some() {
                    *held = Some(default.clone());
                }
            }
            return false;
        };
        let mut guard = set.lock().unwrap_or_else(|p| p.into_inner());
        let who = match (local, self.principal()) {
            (true, _) => default.clone(),
            (false, Some(who)) => who,
            (false, None) => return false,
        };
        let Some((generation, mut fresh)) = make(who.clone()) else { return false };
        let made = self.made.load(Ordering::Relaxed);
        // Never back to an older configuration; once per configuration and principal.
        if generation < made || (generation == made && self.principal().as_ref() == Some(&who)) {
            return true;
        }
        let before = trail.map(|_| guard.visible_names());
        fresh.continue_from(&guard);
        *guard = fresh;
        // Written under the set's lock, so before any entry of the set made again.
        if let (Some(trail), Some(before)) = (trail, before) {
            super::record::write_remade(trail, self, &who, &before, &guard.visible_names());
        }
        *self.principal.write().unwrap_or_else(|p| p.into_inner()) = Some(who);
        self.made.store(generation, Ordering::Relaxed);
        true
    }
}
