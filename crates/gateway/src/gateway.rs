//! `toolsearch gateway`: toolsearch in front of a user's real MCP servers, started: the fleet
//! of upstreams, the first index (`crate::catalogue`), the hub with its runner and
//! passthrough, operations, and the keeper that follows changes.
//!
//! Each upstream server is a category (its name, its instructions as summary) and an
//! availability group (down = its tools hidden); its tools get ids `SERVER.TOOL`. The index
//! lives under the state directory and is rebuilt atomically whenever a server's tool list
//! changes, re-embedding only changed tools; every session is then told `list_changed`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;
use toolsearch_disclosure::{Availability, LiveCatalog};
use toolsearch_embed::Embedder;
use toolsearch_query::{Engine, EngineOptions, Principal};

use crate::config::GatewayConfig;
use crate::fleet::Fleet;
use crate::forward::UpstreamRunner;
use crate::keeper::Keeper;
use crate::learner::{IndexWriter, LastRun, Learner};
use crate::passthrough::Passthrough;
use crate::pins;
use crate::upstream::UpEvent;
use toolsearch_mcp::ops::{Details, Operations, UpstreamState};
use toolsearch_mcp::trail::Trail;
use toolsearch_mcp::Hub;
use toolsearch_mcp::{Access, ServeError};

pub use crate::catalogue::{load_lenient, manifest_of, MAX_DESCRIPTION_CHARS};
pub use toolsearch_mcp::ops::Status;

use crate::catalogue::{private, rebuild};
use crate::pins::HeldNow;

/// A started gateway: the hub to serve, and the task that keeps the catalogue current.
pub struct Gateway {
    /// The shared server state.
    pub hub: Arc<Hub>,
    /// The upstreams.
    pub fleet: Arc<Fleet>,
    /// Where the index is.
    pub index_dir: PathBuf,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The default state directory of a config file: `NAME.toolsearch` beside it.
pub fn default_state_dir(config: &Path) -> PathBuf {
    let stem = config.file_stem().map_or_else(|| "gateway".into(), |s| s.to_string_lossy().into_owned());
    config.parent().unwrap_or(Path::new(".")).join(format!("{stem}.toolsearch"))
}

/// How a gateway uses its state directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Role {
    /// It owns the state dir: builds the index, keeps pins and the audit trail there.
    #[default]
    Primary,
    /// One of several gateways sharing a state dir a primary (or `gateway --build`) wrote: it
    /// serves that index read-only, reloads it when it is rebuilt, and writes nothing under the
    /// state dir; its audit trail goes to `audit` when given.
    Replica {
        /// Where its audit trail is written (none without it).
        audit: Option<PathBuf>,
    },
}

/// Starts the upstreams, builds (or refreshes) the index under `state` (a replica: opens it
/// as it is), and returns the hub to serve with the task that keeps it current.
///
/// `model` is the embedding model loading: it is awaited while the upstreams start and are
/// waited for, so that a model loaded on another thread meanwhile costs the client's wait
/// nothing; its error is [`ServeError::Model`], returned as soon as it comes.
pub async fn start(
    config: GatewayConfig,
    state: &Path,
    model: impl std::future::Future<Output = Result<Arc<dyn Embedder>, String>>,
    engine_options: EngineOptions,
    status: Arc<dyn Status>,
    role: Role,
) -> Result<Gateway, ServeError> {
    let index_dir = state.join("index");
    let replica = matches!(role, Role::Replica { .. });
    if !replica {
        std::fs::create_dir_all(state).map_err(|e| ServeError::Config(state.to_path_buf(), e.to_string()))?;
        private(state).map_err(|e| ServeError::Config(state.to_path_buf(), e.to_string()))?;
    } else if !index_dir.join("meta.bin").exists() {
        return Err(ServeError::Config(
            index_dir,
            "a replica serves the index a primary gateway built under its state dir, and there is none: \
             run `toolsearch gateway --build` (or a gateway without --replica) on it first"
                .into(),
        ));
    }
    // In a fleet, upstream grants are shared (sealed) before any upstream asks for one.
    let grants = match (config.settings.state.postgres(), config.settings.state.key.as_deref(), replica) {
        (Some(url), Some(key), false) => Some(crate::store::grants::register(state, url, key)),
        _ => None,
    };
    // In a fleet, servers start from the fleet's kept listings where this dir has none.
    if let (Some(url), false) = (config.settings.state.postgres(), replica) {
        match crate::store::listings::take_fleets(url, state).await {
            Ok(n) if n > 0 => status.event("listings_taken", json!({"servers": n})),
            Ok(_) => {}
            Err(e) => status.event("store_error", json!({"error": e})),
        }
    }
    let index_stamp = crate::stamp::file_stamp(&index_dir.join("meta.bin"));
    let connect = Duration::from_secs(config.settings.connect_timeout_secs);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let availability = Arc::new(Availability::default());
    let fleet = Arc::new(
        Fleet::new(
            events_tx.clone(),
            availability.clone(),
            state,
            Duration::from_secs(config.settings.call_timeout_secs),
        )
        .keeping_listings(!replica),
    );
    for (name, spec) in &config.servers {
        let lazy = lazy_settings(&config, name, state, replica);
        fleet.add(name, spec, config.settings.limits, connect, lazy, call_timeout(&config, name));
    }
    // Wait for each upstream's first attempt (up or down), within the connect timeout, but
    // once one is up, no longer than the startup wait: the client is waiting for its
    // `initialize` answer, and a server still starting then is indexed when it is up (the
    // keeper's rebuild). What else comes meanwhile (a failed request, a changed list) is the
    // keeper's, given it after.
    let started = Instant::now();
    let deadline = started + connect;
    let serve_by = started + Duration::from_secs(config.settings.startup_wait_secs).min(connect);
    let mut settled: BTreeMap<String, bool> = BTreeMap::new();
    let mut later = Vec::new();
    let upstreams = fleet.all();
    // The model loads meanwhile; one that cannot load ends the start at once, not after the
    // servers have been waited for.
    tokio::pin!(model);
    let mut loaded = None;
    while settled.len() < upstreams.len() {
        let until = if settled.values().any(|up| *up) { serve_by } else { deadline };
        let left = until.saturating_duration_since(Instant::now());
        let event = tokio::select! {
            m = &mut model, if loaded.is_none() => {
                loaded = Some(m.map_err(ServeError::Model)?);
                continue;
            }
            event = tokio::time::timeout(left, events.recv()) => event,
        };
        match event {
            Ok(Some(e)) => match &e {
                UpEvent::Up(n) => {
                    let tools = upstreams[n].tool_count();
                    status.event("upstream_up", json!({"server": n, "tools": tools}));
                    crate::keeper::offers_refused(status.as_ref(), n, &upstreams[n]);
                    settled.insert(n.clone(), true);
                }
                UpEvent::Down(n) => {
                    status.event("upstream_down", json!({"server": n, "reason": upstreams[n].operator_reason()}));
                    settled.entry(n.clone()).or_insert(false);
                }
                _ => later.push(e),
            },
            _ => break,
        }
    }
    for e in later {
        let _ = events_tx.send(e);
    }
    drop(events_tx);
    let waited = started.elapsed();
    for (n, up) in &upstreams {
        match settled.contains_key(n) {
            true => {}
            // Still within its own connect timeout: indexed when it is up, down when that passes.
            false if waited < connect => {
                status.event("upstream_starting", json!({"server": n, "waited_secs": waited.as_secs_f64()}))
            }
            false => status.event("upstream_down", json!({"server": n, "reason": up.operator_reason()})),
        }
    }
    let embedder = match loaded {
        Some(embedder) => embedder,
        None => model.await.map_err(ServeError::Model)?,
    };
    // The gateway rebuilds its index whenever a tool list changes: keep that from ratcheting
    // memory up (see the function's doc for the measurement). Set once the model is loaded:
    // set before, the model's own loading (on its thread) paid an mmap per large buffer.
    toolsearch_embed::memory::fixed_mmap_threshold();
    let listings = fleet.listings();
    let held: HeldNow = Arc::default();
    let vetted: Arc<crate::vetted::Vetted> = Arc::default();
    let mut replica_id = None;
    let store = match config.settings.state.postgres() {
        Some(_) if replica => {
            return Err(ServeError::Config(
                config.path.clone(),
                "toolsearch.state.store: with a shared store each replica keeps its own state dir; run it without                  --replica"
                    .into(),
            ))
        }
        Some(url) => {
            let store = crate::store::PgStore::start(url.to_owned(), crate::store::replica_id(state), connect).await;
            replica_id = Some(crate::store::replica_id(state));
            status.event("store", json!({"backend": "postgres", "up": store.is_up()}));
            Some(store)
        }
        None => None,
    };
    let ((built, first_stamp), trusted) = match replica {
        true => ((false, None), true),
        false => {
            crate::store::guarded(store.as_ref(), state, &held, |trust| {
                let out = rebuild(&listings, &config, embedder.as_ref(), state, &held, status.as_ref(), trust);
                async move { out }
            })
            .await?
        }
    };
    if !built && !index_dir.join("meta.bin").exists() {
        let reasons: Vec<String> = upstreams.values().map(|u| u.operator_reason()).collect();
        return Err(ServeError::Config(
            config.path.clone(),
            format!("no upstream server listed any tool, and there is no earlier index: {}", reasons.join("; ")),
        ));
    }
    let engine = Engine::with_embedder(&index_dir, embedder.clone(), engine_options)
        .map_err(|e| ServeError::Config(index_dir.clone(), e.to_string()))?;
    let live = LiveCatalog::new(engine);
    let s = &config.settings;
    let s_state = s.state.clone();
    let last_learned: LastRun = Arc::default();
    let writer: IndexWriter = Arc::default();
    let (toolset, principal) = tool_sets(s);
    vetted.reload(state);
    let runner = UpstreamRunner { fleet: fleet.clone(), vetted: vetted.clone() };
    let passthrough = Arc::new(Passthrough::new(fleet.clone(), held.clone(), s.requires.clone(), s.limits.list.page));
    let hub = Hub::new(live.clone(), availability, toolset, principal, Arc::new(runner)).with_instructions(
        "This server is a gateway to several MCP servers: their tools are found by search \
             (search_tool_by_category), then expanded (expand_tool) and called by name, or called \
             through call_tool with the tool_id the search returned if your client does not \
             refresh its tool list.",
    );
    let mut ops = operations(state, &role, s, &fleet, held.clone(), status.clone(), last_learned.clone())?;
    if let Some(store) = store.clone() {
        ops = ops.with_unready(Arc::new(move || store.unready()));
    }
    let hub = hub.with_operations(ops).with_passthrough(passthrough.clone()).with_rate_limits(s.rate_limits.clone());
    let hub = match s.state.postgres() {
        Some(url) => hub.with_shared_rate_limits(Arc::new(crate::store::PgBuckets::new(url.to_owned()))),
        None => hub,
    };
    // In a fleet, a session-free round's retry reaches the replica holding it, wherever it lands.
    // So does the browser's redirect of a per-user login (`crate::login::per_user`).
    let hub = match (s.state.postgres(), s.state.key.as_deref()) {
        (Some(_), Some(key)) => {
            let rounds = Arc::new(toolsearch_mcp::fleet_rounds::FleetRounds::new(key, s.state.advertise.clone()));
            crate::login::per_user::join_fleet(state, rounds.clone());
            hub.with_fleet_rounds(rounds)
        }
        _ => hub,
    };
    hub.check().map_err(|e| ServeError::Config(config.path.clone(), e.to_string()))?;
    status.event("ready", json!({"index": index_dir, "tools": live.engine().catalog().tools.len()}));
    // Learning needs the trail this process writes: a primary with its audit trail on. A
    // primary's learner runs as the config asks now, and waits while it asks for nothing (a
    // reload's settings reach it through `crate::learner::reconfigure`).
    let asked = crate::learner::asked(s, replica);
    if let Err(reason) = &asked {
        status.event("learn_off", json!({ "reason": reason }));
    }
    let (learn, settings) = tokio::sync::watch::channel(asked.ok().flatten());
    let learner = (!replica).then(|| Learner {
        hub: hub.clone(),
        trail: state.join("audit"),
        store: s.state.postgres().map(str::to_owned).zip(replica_id.clone()),
        settings,
        status: status.clone(),
        last: last_learned,
        writer: writer.clone(),
    });
    // Each replica's trail goes to the shared store too (`crate::store::audit`).
    let shipper = match (s.state.postgres(), replica_id) {
        (Some(url), Some(replica)) => {
            let dir = state.join("audit");
            Some(tokio::spawn(crate::store::audit::ship(url.to_owned(), replica, dir, status.clone())))
        }
        _ => None,
    };
    // In a fleet, every replica serves the adapter the fleet learned (`crate::store::adapters`).
    let adopter = s.state.postgres().map(|url| {
        let (live, writer, status) = (hub.live().clone(), writer.clone(), status.clone());
        tokio::spawn(crate::store::adapters::keep_adopted(url.to_owned(), live, writer, status))
    });
    // A full bucket is no different from none: each replica deletes them (`store::buckets`),
    // and the trail's lines older than `audit_days`.
    let mut pruners: Vec<_> =
        s.state.postgres().map(|url| tokio::spawn(crate::store::prune_full(url.to_owned()))).into_iter().collect();
    if let (Some(url), Some(days)) = (s.state.postgres(), s.state.audit_days) {
        pruners.push(tokio::spawn(crate::store::audit::keep_pruned(url.to_owned(), days, status.clone())));
    }
    let keeper = Keeper {
        hub: hub.clone(),
        passthrough: Some(passthrough),
        fleet: fleet.clone(),
        config,
        state: state.to_path_buf(),
        embedder,
        held,
        vetted,
        status,
        last: listings,
        pins: first_stamp,
        replica: replica.then_some(index_stamp),
        writer,
        store_seen: store.as_ref().map_or(0, |s| s.generation()),
        store,
        learn,
        untrusted: !trusted,
        tool_sets_refused: None,
        follow_refused: None,
    };
    let mut tasks = vec![tokio::spawn(keeper.run(events))];
    tasks.extend(shipper);
    tasks.extend(adopter);
    tasks.extend(pruners);
    tasks.extend(grants.map(|g| tokio::spawn(g.keep_synced(state.to_path_buf()))));
    if let (Some(url), false) = (s_state.postgres(), replica) {
        tasks.push(tokio::spawn(crate::store::listings::keep_pushed(url.to_owned(), state.to_path_buf())));
    }
    tasks.extend(learner.map(|l| tokio::spawn(l.run())));
    Ok(Gateway { hub, fleet, index_dir, tasks })
}

/// How server `name` is kept lazy, if its entry (or `toolsearch.lazy`) asks for it: its
/// listing kept under `state`. A replica writes nothing there, so its servers are eager.
pub(crate) fn lazy_settings(
    config: &GatewayConfig,
    name: &str,
    state: &Path,
    replica: bool,
) -> Option<crate::upstream::LazySettings> {
    let lazy = config.policies.get(name).is_some_and(|p| p.lazy) && !replica;
    lazy.then(|| crate::upstream::LazySettings {
        state: state.to_path_buf(),
        idle: Duration::from_secs(config.settings.idle_stop_secs.max(1)),
    })
}

/// Server `name`'s own longest forwarded call, if its entry gives one (`call_timeout_secs`).
pub(crate) fn call_timeout(config: &GatewayConfig, name: &str) -> Option<Duration> {
    config.policies.get(name).and_then(|p| p.call_timeout_secs).map(Duration::from_secs)
}

/// The gateway's operations: its audit trail under `state/audit` (written while
/// `audit.enabled`), request logs to `status`, and the upstreams' states for `/readyz` and
/// `/metrics`.
fn operations(
    state: &Path,
    role: &Role,
    settings: &crate::config::GatewaySettings,
    fleet: &Arc<Fleet>,
    held: HeldNow,
    status: Arc<dyn Status>,
    learned: LastRun,
) -> Result<Operations, ServeError> {
    let dir = match role {
        Role::Primary => Some(state.join("audit")),
        Role::Replica { audit } => audit.clone(),
    };
    // Kept off as well as on: a reload may turn it on (`Trail::set_settings`).
    let trail = match dir {
        Some(dir) => Some(Trail::open(&dir, settings.audit).map_err(|e| ServeError::Config(dir, e.to_string()))?),
        None => None,
    };
    let fleet = fleet.clone();
    let details: Details = Arc::new(move || {
        let states = fleet
            .all()
            .iter()
            .map(|(name, u)| UpstreamState {
                name: name.clone(),
                up: u.is_up(),
                tools: u.tool_count(),
                reason: (!u.is_up()).then(|| u.operator_reason()),
                progress_dropped: u.progress_dropped(),
            })
            .collect();
        let found = held.lock().unwrap_or_else(|p| p.into_inner());
        let mut more = pins::guard_json(&found.0, &found.1);
        if let (Some(run), Value::Object(m)) = (learned.lock().unwrap_or_else(|p| p.into_inner()).clone(), &mut more) {
            m.insert("learn".into(), run);
        }
        (states, more)
    });
    Ok(Operations::new(trail, Some(status), Some(details)))
}

/// How the settings make sessions' tool sets: the tool set configuration (with its kinds of
/// discovery), and the principal of a caller the transport does not identify (`scopes`, or
/// what `access` gives a caller without them).
pub(crate) fn tool_sets(s: &crate::config::GatewaySettings) -> (toolsearch_disclosure::ToolSetConfig, Principal) {
    let principal = match (&s.scopes, s.access) {
        (Some(scopes), _) => Principal::with_scopes(scopes.iter().cloned()),
        (None, Access::Closed) => Principal::with_scopes(Vec::<String>::new()),
        (None, Access::Open) => Principal::trusted(),
    };
    let mut toolset = s.toolset.clone();
    toolset.discovery.kinds = true;
    (toolset, principal)
}
