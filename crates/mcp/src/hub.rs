//! What every session of one server shares: the live catalogue, group availability, the tool
//! set configuration, how tools run, and the list of sessions to tell when something changes.

use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use toolsearch_disclosure::{Availability, DisclosureError, LiveCatalog, ToolSet, ToolSetConfig};
use toolsearch_query::Principal;

use crate::fresh_sets::FreshSets;
use crate::notifier::Notifier;
use crate::offer_source::OfferSource;
use crate::ops::Operations;
use crate::runner::ToolRunner;
use crate::session_view::{refresh, SessionHandle};
use crate::visible::{visible_digest, Digests};

/// The shared state of a server: one per `toolsearch serve` or `toolsearch gateway` process.
pub struct Hub {
    live: Arc<LiveCatalog>,
    availability: Arc<Availability>,
    /// How tool sets are made, and for whom when the transport does not say: replaced whole by
    /// [`Hub::reconfigure`].
    made: RwLock<Making>,
    runner: Arc<dyn ToolRunner>,
    instructions: Option<String>,
    ops: Operations,
    sessions: Mutex<Vec<(Notifier, SessionHandle)>>,
    /// The tool sets new session-free requests start from, by catalogue generation, caller and
    /// [`Making::generation`] (at most [`crate::fresh_sets::KEPT`]).
    fresh: Mutex<FreshSets<(Principal, u64), ToolSet>>,
    /// Callers first met at a request, being prepared behind it.
    preparing: toolsearch_query::PrepareBehind,
    /// Session-free calls waiting for their client's answer (`session::rounds`).
    rounds: crate::session::Rounds,
    fleet_rounds: Option<Arc<crate::fleet_rounds::FleetRounds>>,
    passthrough: Option<Arc<dyn OfferSource>>,
    digests: Arc<Mutex<Digests>>,
    /// The HTTP server's sessions, when it serves over HTTP: a session that must end (its
    /// client does not read its stream) is closed through them.
    http_sessions: std::sync::OnceLock<std::sync::Weak<HttpSessions>>,
    /// The HTTP server's checks of each request, when it serves over HTTP: its static tokens
    /// are replaced through them.
    guard: std::sync::OnceLock<std::sync::Weak<dyn crate::access_reload::AccessReload>>,
    /// Rate limits of callers' requests and calls (`crate::rate`).
    limiter: Arc<crate::rate::Limiter>,
}

/// How a hub makes tool sets: its configuration, the principal of a caller the transport does
/// not identify, and which of the hub's configurations this is (0 first, then one more per
/// [`Hub::reconfigure`] that changed it).
#[derive(Clone)]
struct Making {
    toolset: ToolSetConfig,
    principal: Principal,
    generation: u64,
}

impl Making {
    /// A tool set made from this configuration for a caller holding `principal`.
    fn tool_set(
        &self,
        live: &Arc<LiveCatalog>,
        availability: &Arc<Availability>,
        principal: Principal,
    ) -> Result<ToolSet, DisclosureError> {
        ToolSet::new(live.clone(), availability.clone(), ToolSetConfig { principal, ..self.toolset.clone() })
    }
}

/// The HTTP server's session manager.
pub(crate) type HttpSessions = rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("live", &self.live).finish()
    }
}

impl Hub {
    /// A hub serving `live` with tool sets made from `toolset`, for callers holding
    /// `principal` unless the transport says otherwise; catalogue tools run with `runner`.
    pub fn new(
        live: Arc<LiveCatalog>,
        availability: Arc<Availability>,
        toolset: ToolSetConfig,
        principal: Principal,
        runner: Arc<dyn ToolRunner>,
    ) -> Arc<Hub> {
        live.engine().prepare_for([&principal]);
        Arc::new(Hub {
            live,
            availability,
            made: RwLock::new(Making { toolset, principal, generation: 0 }),
            runner,
            instructions: None,
            ops: Operations::default(),
            sessions: Mutex::default(),
            fresh: Mutex::default(),
            preparing: Default::default(),
            rounds: Default::default(),
            fleet_rounds: None,
            passthrough: None,
            digests: Arc::default(),
            http_sessions: std::sync::OnceLock::new(),
            guard: std::sync::OnceLock::new(),
            limiter: Arc::default(),
        })
    }

    /// The same hub with `text` added to every session's instructions.
    pub fn with_instructions(self: Arc<Hub>, text: impl Into<String>) -> Arc<Hub> {
        let mut hub = Arc::try_unwrap(self).unwrap_or_else(|_| panic!("with_instructions before the hub is shared"));
        hub.instructions = Some(text.into());
        Arc::new(hub)
    }

    /// The same hub with `limits` on its callers' requests and calls.
    pub fn with_rate_limits(self: Arc<Hub>, limits: crate::rate::RateLimits) -> Arc<Hub> {
        let mut hub = Arc::try_unwrap(self).unwrap_or_else(|_| panic!("with_rate_limits before the hub is shared"));
        hub.limiter = Arc::new(crate::rate::Limiter::new(limits));
        Arc::new(hub)
    }

    /// The same hub as one replica of `fleet`: the `requestState` of its session-free rounds
    /// sealed with its address, and another replica's forwarded to it (`crate::fleet_rounds`).
    pub fn with_fleet_rounds(self: Arc<Hub>, fleet: Arc<crate::fleet_rounds::FleetRounds>) -> Arc<Hub> {
        let mut hub = Arc::try_unwrap(self).unwrap_or_else(|_| panic!("with_fleet_rounds before the hub is shared"));
        hub.rounds.in_fleet(fleet.clone());
        hub.fleet_rounds = Some(fleet);
        Arc::new(hub)
    }

    /// This replica's place in its fleet, if it is in one.
    pub(crate) fn fleet_rounds(&self) -> Option<&Arc<crate::fleet_rounds::FleetRounds>> {
        self.fleet_rounds.as_ref()
    }

    /// The same hub with its callers' call budgets kept in `shared` (a fleet's store).
    pub fn with_shared_rate_limits(self: Arc<Hub>, shared: Arc<dyn crate::rate::SharedBuckets>) -> Arc<Hub> {
        let mut hub =
            Arc::try_unwrap(self).unwrap_or_else(|_| panic!("with_shared_rate_limits before the hub is shared"));
        let limits = crate::rate::RateLimits::clone(&hub.limiter.limits());
        hub.limiter = Arc::new(crate::rate::Limiter::new(limits).sharing(shared));
        Arc::new(hub)
    }

    /// Applies `limits` to its callers' next requests and calls (a reloaded config's).
    pub fn set_rate_limits(&self, limits: crate::rate::RateLimits) {
        self.limiter.set_limits(limits);
    }

    /// The rate limiter of its callers.
    pub(crate) fn limiter(&self) -> &Arc<crate::rate::Limiter> {
        &self.limiter
    }

    /// The same hub with `ops` for its metrics, audit trail, request log and `/readyz`.
    pub fn with_operations(self: Arc<Hub>, ops: Operations) -> Arc<Hub> {
        let mut hub = Arc::try_unwrap(self).unwrap_or_else(|_| panic!("with_operations before the hub is shared"));
        hub.ops = ops;
        Arc::new(hub)
    }

    /// The same hub passing `passthrough`'s resources and prompts on to its clients.
    pub fn with_passthrough(self: Arc<Hub>, passthrough: Arc<dyn OfferSource>) -> Arc<Hub> {
        let mut hub = Arc::try_unwrap(self).unwrap_or_else(|_| panic!("with_passthrough before the hub is shared"));
        hub.passthrough = Some(passthrough);
        Arc::new(hub)
    }

    /// Serves over HTTP with `sessions`.
    pub(crate) fn attach_http_sessions(&self, sessions: &Arc<HttpSessions>) {
        let _ = self.http_sessions.set(Arc::downgrade(sessions));
    }

    /// Serves over HTTP behind `guard`.
    pub(crate) fn attach_guard(&self, guard: std::sync::Weak<dyn crate::access_reload::AccessReload>) {
        let _ = self.guard.set(guard);
    }

    /// Replaces who may call the HTTP endpoint (a reloaded config's `tokens`, `auth.oauth`,
    /// `allowed_origins` and `trusted_proxies`, from `access`), its `limits` and its public
    /// pages (`documents`, `callbacks`) for the next request on; refused with
    /// the reason, the running ones kept, where a start would refuse them. The sessions ended,
    /// whose caller's token went or is granted otherwise, or whose identity provider changed
    /// (`None`: no HTTP endpoint, nothing to do).
    pub async fn set_http_access(
        &self,
        access: crate::http_access::HttpAccess,
    ) -> Result<Option<crate::access_reload::SessionsEnded>, String> {
        self.prepare_for_callers(&access);
        match self.guard.get().and_then(|g| g.upgrade()) {
            Some(guard) => guard.reload(access).await.map(Some),
            None => Ok(None),
        }
    }

    /// Works out now what the holders of `access`'s tokens may see (`Engine::prepare_for`),
    /// and, when it takes an identity provider's tokens, whose scope sets arrive with their
    /// requests, what the scope sets the tools tell apart may see (`Engine::prepare_for_unnamed`):
    /// so that none of their first requests takes longer for the tools hidden from them.
    pub(crate) fn prepare_for_callers(&self, access: &crate::http_access::HttpAccess) {
        let callers: Vec<Principal> =
            access.tokens.values().map(|g| Principal::with_scopes(g.scopes.iter().cloned())).collect();
        let engine = self.live.engine();
        if access.oauth.is_some() {
            engine.prepare_for_unnamed();
        }
        engine.prepare_for(&callers);
    }

    /// The HTTP server's sessions, when this hub serves over HTTP.
    pub(crate) fn http_sessions(&self) -> Option<Arc<HttpSessions>> {
        self.http_sessions.get().and_then(|w| w.upgrade())
    }

    /// The upstreams' resources and prompts, when this hub passes them on (a gateway).
    pub fn passthrough(&self) -> Option<&Arc<dyn OfferSource>> {
        self.passthrough.as_ref()
    }

    /// Tells every session that the upstreams' resource or prompt lists changed, for each
    /// that did in what its caller may see since last told.
    pub async fn announce_offers(&self) {
        let Some(p) = &self.passthrough else { return };
        let sessions: Vec<(Notifier, SessionHandle, Principal)> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.retain(|(_, h)| h.strong_count() > 0);
            sessions.iter().filter_map(|(peer, h)| Some((peer.clone(), h.clone(), h.upgrade()?.principal()?))).collect()
        };
        p.announce(&sessions).await;
    }

    /// What the server measures and records.
    pub fn ops(&self) -> &Operations {
        &self.ops
    }

    /// The live catalogue.
    pub fn live(&self) -> &Arc<LiveCatalog> {
        &self.live
    }

    /// How catalogue tools run.
    pub fn runner(&self) -> &Arc<dyn ToolRunner> {
        &self.runner
    }

    /// The principal of a caller the transport does not identify.
    pub fn default_principal(&self) -> Principal {
        self.making().principal.clone()
    }

    fn making(&self) -> std::sync::RwLockReadGuard<'_, Making> {
        self.made.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn extra_instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    /// A new tool set for a caller holding `principal`.
    pub fn tool_set(&self, principal: Principal) -> Result<ToolSet, DisclosureError> {
        self.numbered_tool_set(principal).map(|(_, set)| set)
    }

    /// A new tool set for a caller holding `principal`, with the generation of the
    /// configuration it was made from.
    pub(crate) fn numbered_tool_set(&self, principal: Principal) -> Result<(u64, ToolSet), DisclosureError> {
        // Built outside the lock: a reload waits for no tool set being made.
        let made = self.making().clone();
        let set = made.tool_set(&self.live, &self.availability, principal.clone())?;
        self.preparing.behind(self.live.engine(), &principal); // after the set: it keeps what it worked out
        Ok((made.generation, set))
    }

    /// The generation of the configuration tool sets are made from now.
    pub(crate) fn generation(&self) -> u64 {
        self.making().generation
    }

    /// A tool set as `principal`'s sessions start, for one request of a session-free client:
    /// a clone of one kept per caller and catalogue generation (building one derives facades
    /// and names from the whole catalogue, milliseconds for thousands of tools; a clone
    /// shares that).
    pub fn fresh_tool_set(&self, principal: Principal) -> Result<ToolSet, DisclosureError> {
        let generation = self.live.engine().index().meta().generation;
        let key = (principal, self.generation());
        if let Some(set) = self.fresh.lock().unwrap_or_else(|p| p.into_inner()).get(generation, &key) {
            return Ok(set);
        }
        // Kept under the generation it was made from: one made from a configuration replaced
        // meanwhile is never handed out for the new one.
        let (made, set) = self.numbered_tool_set(key.0.clone())?;
        self.fresh.lock().unwrap_or_else(|p| p.into_inner()).put(generation, (key.0, made), set.clone());
        Ok(set)
    }

    /// Session-free calls waiting for their client's answer.
    pub(crate) fn rounds(&self) -> &crate::session::Rounds {
        &self.rounds
    }

    /// Checks the configuration by building a tool set for the default caller.
    pub fn check(&self) -> Result<ToolSet, DisclosureError> {
        self.tool_set(self.default_principal())
    }

    /// Replaces how tool sets are made (a config reload): `toolset`, and `principal` for the
    /// callers the transport does not identify. A configuration no tool set can be made from
    /// (a pinned tool the catalogue lacks) is refused, the running one kept. Each session it
    /// changes (every one for a new `toolset`; those of callers the transport does not
    /// identify for a new `principal`) has its tool set made again, as a new session's would
    /// be (what it had unfolded is folded away, its audit steps numbered on), and is told
    /// `list_changed`, and of resource and prompt lists its caller now sees otherwise. The
    /// number of sessions remade (`None`: nothing changed).
    pub async fn reconfigure(
        &self,
        toolset: ToolSetConfig,
        principal: Principal,
    ) -> Result<Option<usize>, DisclosureError> {
        let mut next = Making { toolset, principal, generation: 0 };
        // Compared as written out: a tool set configuration holds facades built in code.
        let written = format!("{:?}", next.toolset);
        let unchanged = |made: &Making| (format!("{:?}", made.toolset) == written, made.principal == next.principal);
        if unchanged(&self.making()) == (true, true) {
            return Ok(None);
        }
        next.tool_set(&self.live, &self.availability, next.principal.clone())?;
        let (toolset_changed, now) = {
            let mut made = self.made.write().unwrap_or_else(|p| p.into_inner());
            let (same_toolset, same_principal) = unchanged(&made);
            if same_toolset && same_principal {
                return Ok(None);
            }
            next.generation = made.generation + u64::from(!same_toolset);
            *made = next.clone();
            (!same_toolset, next)
        };
        // What makes a tool set as the hub does now, for each session to call without the hub.
        let make = {
            let (live, availability, generation) = (self.live.clone(), self.availability.clone(), now.generation);
            let now = now.clone();
            Arc::new(move |who: Principal| Some((generation, now.tool_set(&live, &availability, who).ok()?)))
        };
        let sessions: Vec<(Notifier, SessionHandle)> = self.sessions.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut remade = 0;
        for (notifier, handle) in sessions {
            let (live, digests, default, make) =
                (self.live.clone(), self.digests.clone(), now.principal.clone(), make.clone());
            let trail = self.ops.trail.clone();
            let done = tokio::task::spawn_blocking(move || {
                let state = handle.upgrade()?;
                if !toolset_changed && !state.local() {
                    return Some(false);
                }
                let current = state.remake(&default, &*make, trail.as_deref());
                if let (true, Some(who)) = (current, state.principal()) {
                    state.saw_catalogue(visible_digest(&live, &digests, &who));
                }
                Some(current)
            });
            if done.await.ok().flatten() == Some(true) {
                remade += 1;
                notifier.tools_changed().await;
            }
        }
        self.announce_offers().await;
        Ok(Some(remade))
    }

    pub(crate) fn register(&self, notifier: Notifier, handle: SessionHandle) {
        if let Some(state) = handle.upgrade() {
            if let Some(who) = state.principal() {
                state.saw_catalogue(visible_digest(&self.live, &self.digests, &who));
            }
        }
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|(_, h)| h.strong_count() > 0);
        if let (Some(p), Some(who)) = (&self.passthrough, handle.upgrade().and_then(|s| s.principal())) {
            p.watch(&handle, &who);
        }
        sessions.push((notifier, handle));
    }

    /// Something changed under every session (a group's availability, the catalogue):
    /// each recomputes what its client sees and is told with `list_changed` when that moved.
    pub async fn announce_changes(&self) {
        self.availability.invalidate();
        let sessions: Vec<(Notifier, SessionHandle)> = self.sessions.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (notifier, handle) in sessions {
            let changed = tokio::task::spawn_blocking(move || refresh(&handle)).await.ok().flatten();
            if changed == Some(true) {
                notifier.tools_changed().await;
            }
        }
    }

    /// The catalogue changed (a rebuild after an upstream or the config changed): every
    /// session recomputes what it sees and is told `list_changed` when its visible tools moved
    /// or what its caller may see of the catalogue changed (what its searches find, a tool's
    /// description or schema), and only then: a change to tools a caller may not see tells
    /// that caller nothing.
    pub async fn announce_catalogue_changed(&self) {
        self.availability.invalidate();
        let sessions: Vec<(Notifier, SessionHandle)> = self.sessions.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (notifier, handle) in sessions {
            let (live, digests) = (self.live.clone(), self.digests.clone());
            let told = tokio::task::spawn_blocking(move || {
                let state = handle.upgrade()?;
                let moved = state.refresh();
                let seen = state.principal().map(|who| visible_digest(&live, &digests, &who));
                Some(moved | seen.is_some_and(|d| state.saw_catalogue(d)))
            });
            if told.await.ok().flatten() == Some(true) {
                notifier.tools_changed().await;
            }
        }
    }

    /// Adds what MCP carries beyond name, description and input schema to a rendered tool
    /// definition of a catalogue tool: `title`, `outputSchema` and `annotations`, from the
    /// catalogue (imported from the upstream server).
    pub(crate) fn decorate(&self, tool_id: Option<&str>, def: &mut Value) {
        let Some(id) = tool_id else { return };
        let engine = self.live.engine();
        let Ok(Some(tool)) = engine.full_tool(id) else { return };
        if let Some(schema) = &tool.details.result_schema {
            def["outputSchema"] = schema.value();
        }
        if let Some(meta) = tool.details.meta.as_ref().map(|m| m.value()) {
            if let Some(title) = meta.get("title").filter(|t| t.is_string()) {
                def["title"] = title.clone();
            }
            if let Some(a) = meta.get("annotations").filter(|a| a.is_object()) {
                def["annotations"] = a.clone();
            }
        }
    }
}
