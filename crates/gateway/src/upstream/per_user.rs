//! The sessions of a per-user server's callers (`"oauth": {"per_user": true}`): each caller
//! the gateway tells apart reaches the server on a session of its own, with its own grant
//! (`crate::login::per_user`), asked for with a URL-mode elicitation the first time. At most
//! [`MAX_SESSIONS`] are kept per server; the one used longest ago is closed to make room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::service::{Peer, RunningService};
use rmcp::RoleClient;
use toolsearch_mcp::{RunContext, RunError};

use super::client::UpClient;
use super::Upstream;
use crate::config::ServerSpec;
use crate::credentials::Credentials;
use crate::login::per_user::grant_name;

/// Most callers' sessions kept open with one per-user server.
const MAX_SESSIONS: usize = 64;

/// A caller's own line to the server: its session, the questions the server asks during its
/// calls (relayed to that caller only), and where its progress goes. Nothing of it is shared
/// with the gateway's session or another caller's: request ids and progress tokens of two
/// sessions may be equal.
#[derive(Clone)]
pub(crate) struct Line {
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) asks: Arc<super::Asks>,
    pub(crate) router: Arc<crate::progress::Router>,
}

/// One caller's slot: its session once connected (kept open while the slot is), and its line.
type Slot = Arc<tokio::sync::Mutex<Option<(RunningService<RoleClient, UpClient>, Line)>>>;

/// The callers' sessions with one per-user server.
#[derive(Default)]
pub(crate) struct UserSessions {
    slots: Mutex<HashMap<String, (Slot, Instant)>>,
}

impl UserSessions {
    /// `caller`'s slot, made room for.
    fn slot(&self, caller: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if !slots.contains_key(caller) && slots.len() >= MAX_SESSIONS {
            // The slot used longest ago that nobody is using now goes (its session closes).
            let idle = slots
                .iter()
                .filter(|(_, (s, _))| s.try_lock().is_ok())
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = idle {
                slots.remove(&k);
            }
        }
        let entry = slots.entry(caller.to_owned()).or_insert_with(|| (Slot::default(), Instant::now()));
        entry.1 = Instant::now();
        entry.0.clone()
    }
}

impl Upstream {
    /// `caller`'s session with this per-user server: its own grant, asked for (a URL
    /// elicitation to the client of `cx`) when it has none or the server no longer takes it.
    pub(crate) async fn user_line(&self, caller: &str, cx: &RunContext) -> Result<Line, RunError> {
        let (Some(users), ServerSpec::Http { url, header_commands, oauth: Some(oauth), .. }) =
            (&self.users, &self.spec)
        else {
            return Err(RunError::Failed(format!("MCP server {:?} has no per-user grants", self.name)));
        };
        let slot = users.slot(caller);
        let mut session = slot.lock().await;
        if let Some((_, line)) = session.as_ref().filter(|(s, _)| !s.is_closed()) {
            return Ok(line.clone());
        }
        let name = grant_name(&self.name, caller);
        let mut asked = false;
        if crate::login::store::load_grant(&self.state, &name).is_none() {
            self.ask_login(url, oauth, caller, cx).await?;
            asked = true;
        }
        loop {
            let grant = crate::login::UpstreamGrant::new(&name, url, self.state.clone(), (**oauth).clone())
                .map_err(RunError::Failed)?;
            let credentials = Credentials::new(header_commands.clone(), Some(grant));
            let events = self.events.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let events = events.unwrap_or_else(|| tokio::sync::mpsc::unbounded_channel().0);
            let (asks, router) = (Arc::<super::Asks>::default(), Arc::<crate::progress::Router>::default());
            let handler = UpClient {
                name: self.name.clone(),
                events,
                asks: asks.clone(),
                logged: Mutex::new((Instant::now(), 0)),
            };
            match self.reach(handler, Some(credentials), router.clone()).await {
                Ok(s) => {
                    let line = Line { peer: s.peer().clone(), asks, router };
                    *session = Some((s, line.clone()));
                    return Ok(line);
                }
                // Its grant was revoked or has lapsed: a new login, once.
                Err(f) if !asked && f.detail.contains(crate::login::LOGIN_REQUIRED) => {
                    let _ = crate::login::store::remove_grant(&self.state, &name);
                    self.ask_login(url, oauth, caller, cx).await?;
                    asked = true;
                }
                Err(f) => {
                    if let Some(events) = self.events.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                        let _ = events.send(super::UpEvent::RequestFailed(self.name.clone(), f.detail.clone()));
                    }
                    return Err(RunError::Unavailable(format!(
                        "MCP server {:?} is unavailable for you: {}",
                        self.name, f.kind
                    )));
                }
            }
        }
    }

    /// Forgets `caller`'s session and grant with this server (its grant no longer works).
    pub(crate) fn forget_user(&self, caller: &str) {
        if let Some(users) = &self.users {
            users.slots.lock().unwrap_or_else(|p| p.into_inner()).remove(caller);
        }
        let name = grant_name(&self.name, caller);
        let _ = crate::login::store::remove_grant(&self.state, &name);
    }

    /// Asks the client of `cx` to have its person log in to this server, and waits for it.
    async fn ask_login(
        &self,
        url: &str,
        oauth: &crate::login::UpstreamOAuth,
        caller: &str,
        cx: &RunContext,
    ) -> Result<(), RunError> {
        let needs = |why: &str| {
            RunError::LoginRequired(format!(
                "{}: MCP server {:?} needs your own login: {why}",
                crate::login::LOGIN_REQUIRED,
                self.name
            ))
        };
        // A client with a session is sent the elicitation; a session-free one (2026-07-28)
        // gets it as an `input_required` round of the call.
        let (client, asker) = (cx.client.clone(), cx.asker.clone());
        if client.is_none() && asker.is_none() {
            return Err(needs("this client cannot be sent the address to open (it takes no URL elicitation)"));
        }
        let server = self.name.clone();
        let ask = move |address: String| async move {
            let id = crate::login::random_b64(12)?;
            let message = format!("Log in to {server} to let the gateway call it for you.");
            if let Some(client) = client {
                let address = url::Url::parse(&address).map_err(|e| e.to_string())?;
                return match client.elicit_url(message, address, id).await {
                    Ok(rmcp::model::ElicitationAction::Accept) => Ok(()),
                    Ok(_) => Err("the login was declined".to_owned()),
                    Err(rmcp::service::ElicitationError::CapabilityNotSupported) => {
                        Err("this client does not take URL elicitations".to_owned())
                    }
                    Err(e) => Err(format!("the client could not be asked ({e})")),
                };
            }
            let params = rmcp::model::ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message,
                url: address,
                elicitation_id: id,
            };
            let request = rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(params));
            let asker = asker.ok_or("this client cannot be asked")?;
            let answer = asker.ask(request).await.ok_or("the client gave no answer")?;
            match answer.get("action").and_then(serde_json::Value::as_str) {
                Some("accept") => Ok(()),
                _ => Err("the login was declined".to_owned()),
            }
        };
        let logins = crate::login::per_user::of(&self.state);
        tokio::select! {
            _ = cx.cancel.cancelled() => Err(RunError::Cancelled),
            done = logins.login((&self.name, url), oauth, caller, ask) => done.map_err(|e| needs(&crate::secrets::mask(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_sessions_callers_are_kept_and_the_one_used_longest_ago_goes() {
        let users = UserSessions::default();
        for i in 0..MAX_SESSIONS {
            users.slot(&format!("caller-{i}"));
        }
        users.slot("caller-0"); // used again: now the newest
        let held = users.slot("caller-1");
        let _busy = held.try_lock().unwrap(); // in use: never evicted
        users.slot("newcomer");
        let slots = users.slots.lock().unwrap();
        assert_eq!(slots.len(), MAX_SESSIONS);
        assert!(slots.contains_key("caller-0") && slots.contains_key("caller-1") && slots.contains_key("newcomer"));
        assert!(!slots.contains_key("caller-2"), "the one used longest ago and idle goes");
    }
}
