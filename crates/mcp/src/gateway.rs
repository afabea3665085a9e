//! `toolsearch gateway`: toolsearch in front of a user's real MCP servers.
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
use toolsearch_catalog::{parse_lenient, tool_id, Catalog, CatalogWarning, Format, WarningKind};
use toolsearch_disclosure::{Availability, LiveCatalog};
use toolsearch_embed::Embedder;
use toolsearch_index::{build_index, BuildOptions};
use toolsearch_query::{Engine, EngineOptions, Principal};

use crate::config::{Access, GatewayConfig, ServeError};
use crate::fleet::Fleet;
use crate::forward::UpstreamRunner;
use crate::hub::Hub;
use crate::keeper::Keeper;
use crate::ops::{Details, Operations, UpstreamState};
use crate::passthrough::Passthrough;
use crate::pins;
use crate::trail::Trail;
use crate::upstream::{Listing, UpEvent};

/// What the gateway reports while it works (a terminal line, or a JSON line for scripts).
pub trait Status: Send + Sync {
    /// One event: a short `kind` and its details.
    fn event(&self, kind: &str, detail: Value);
}

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

/// The catalogue of the upstreams' tool listings, as a native manifest. Each server is a
/// category and a group; each tool is taken from the JSON its server sent, field by field, so
/// a tool with no `inputSchema` (any arguments), no description (its name and parameters are
/// indexed) or an odd name is still a tool. What is not a tool at all (no name) is reported
/// by [`load_lenient`], which leaves it out.
pub fn manifest_of(listings: &BTreeMap<String, Listing>, config: &GatewayConfig) -> Value {
    let s = &config.settings;
    let mut nodes = Vec::new();
    let mut groups = Vec::new();
    let mut tools = Vec::new();
    for (server, listing) in listings {
        let summary = first_line(&listing.summary, server);
        let mut node = json!({"path": [server], "summary": summary});
        if listing.summary.trim().len() > summary.len() {
            node["description"] = json!(truncate(&listing.summary, 64 * 1024));
        }
        if let Some(f) = s.facades.get(server) {
            node["facade"] = f.clone();
        }
        nodes.push(node);
        groups.push(
            json!({"id": server, "visibility": "conditional", "check": format!("upstream:{server}"), "ttl_secs": 0}),
        );
        let mut seen = std::collections::HashSet::new();
        for t in &listing.tools {
            let name = t.get("name").and_then(Value::as_str).map(str::to_owned);
            if let Some(n) = &name {
                if !seen.insert(n.clone()) {
                    tools.push(json!({"duplicate_of": tool_id(server, n)}));
                    continue;
                }
            }
            tools.push(tool_entry(server, name, t, s));
        }
        // Prompts are searchable beside the tools (a prompt named like a tool is left to it).
        for p in &listing.offers.prompts {
            let Some(name) = p.get("name").and_then(Value::as_str) else { continue };
            if !seen.insert(name.to_owned()) {
                continue;
            }
            let mut entry = crate::offers::prompt_entry(server, tool_id(server, name), name, p);
            if let Some(r) = s.requires.get(server) {
                entry["requires"] = json!(r);
            }
            tools.push(entry);
        }
    }
    json!({"nodes": nodes, "groups": groups, "tools": tools})
}

/// One upstream tool as a manifest entry.
fn tool_entry(server: &str, name: Option<String>, t: &Value, s: &crate::config::GatewaySettings) -> Value {
    let description = bounded_description(t.get("description").and_then(Value::as_str).unwrap_or_default().trim());
    let annotations = t.get("annotations").filter(|a| a.is_object());
    let mut tags = Vec::new();
    let mut meta = json!({"upstream_name": name});
    let title = t.get("title").or_else(|| annotations.and_then(|a| a.get("title"))).and_then(Value::as_str);
    if let Some(title) = title {
        meta["title"] = json!(title);
    }
    if let Some(a) = annotations {
        meta["annotations"] = a.clone();
        for (hint, tag) in [
            ("readOnlyHint", "read-only"),
            ("destructiveHint", "destructive"),
            ("idempotentHint", "idempotent"),
            ("openWorldHint", "open-world"),
        ] {
            if a.get(hint).and_then(Value::as_bool) == Some(true) {
                tags.push(tag);
            }
        }
    }
    let mut tool = json!({
        "id": name.as_deref().map(|n| tool_id(server, n)),
        "name": name,
        "path": [server],
        "description": description,
        "tags": tags,
        "group": server,
        "meta": meta,
    });
    if let Some(schema) = t.get("inputSchema").filter(|v| !v.is_null()) {
        tool["args_schema"] = schema.clone();
    }
    if let Some(out) = t.get("outputSchema").filter(|v| !v.is_null()) {
        tool["result_schema"] = out.clone();
    }
    if let Some(r) = s.requires.get(server) {
        tool["requires"] = json!(r);
    }
    tool
}

/// Loads `manifest`, leaving out each tool the catalogue refuses (and each second tool of one
/// name in a server), so one upstream tool cannot take the others down: one pass over the
/// tools, each checked once. Every tool left out or indexed without validation is reported as
/// a `tool_skipped` or `tool_unvalidated` event and kept in the catalogue's warnings, which the
/// gateway's status lists.
pub fn load_lenient(mut manifest: Value, status: &dyn Status) -> Result<Option<Catalog>, ServeError> {
    let source = Path::new("<upstream tools>");
    let mut duplicates = Vec::new();
    if let Some(tools) = manifest["tools"].as_array_mut() {
        tools.retain(|t| match t.get("duplicate_of").and_then(Value::as_str) {
            Some(id) => {
                duplicates.push(id.to_owned());
                false
            }
            None => true,
        });
    }
    if manifest["tools"].as_array().is_none_or(Vec::is_empty) {
        return Ok(None);
    }
    let mut catalog = parse_lenient(source, &manifest.to_string(), Some(Format::Manifest))
        .map_err(|e| ServeError::Config(source.to_path_buf(), e.to_string()))?;
    for id in duplicates {
        catalog.warnings.push(CatalogWarning {
            kind: WarningKind::DuplicateName,
            tool: Some(id.clone()),
            at: source.display().to_string(),
            message: format!("a second tool named like {id:?}: the first is kept, this one left out"),
        });
    }
    for w in &catalog.warnings {
        let kind = match w.kind {
            WarningKind::Unvalidated => "tool_unvalidated",
            _ => "tool_skipped",
        };
        status.event(kind, json!({"tool": w.tool, "kind": w.kind, "reason": w.message}));
    }
    Ok((!catalog.tools.is_empty()).then_some(catalog))
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
pub async fn start(
    config: GatewayConfig,
    state: &Path,
    embedder: Arc<dyn Embedder>,
    engine_options: EngineOptions,
    status: Arc<dyn Status>,
    role: Role,
) -> Result<Gateway, ServeError> {
    // The gateway rebuilds its index whenever a tool list changes: keep that from ratcheting
    // memory up (see the function's doc for the measurement).
    toolsearch_embed::memory::fixed_mmap_threshold();
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
    let index_stamp = crate::keeper::file_stamp(&index_dir.join("meta.bin"));
    let connect = Duration::from_secs(config.settings.connect_timeout_secs);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let availability = Arc::new(Availability::default());
    let fleet = Arc::new(Fleet::new(events_tx, availability.clone()));
    for (name, spec) in &config.servers {
        fleet.add(name, spec, config.settings.limits, connect);
    }
    // Wait for each upstream's first attempt (up or down), within the connect timeout.
    let deadline = Instant::now() + connect;
    let mut settled: BTreeMap<String, bool> = BTreeMap::new();
    let upstreams = fleet.all();
    while settled.len() < upstreams.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
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
                _ => {}
            },
            _ => break,
        }
    }
    for (n, up) in &upstreams {
        if !settled.contains_key(n) {
            status.event("upstream_down", json!({"server": n, "reason": up.operator_reason()}));
        }
    }
    let listings = fleet.listings();
    let held: HeldNow = Arc::default();
    let (built, first_stamp) = match replica {
        true => (false, None),
        false => rebuild(&listings, &config, embedder.as_ref(), state, &held, status.as_ref())?,
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
    let principal = match (&s.scopes, s.access) {
        (Some(scopes), _) => Principal::with_scopes(scopes.iter().cloned()),
        (None, Access::Closed) => Principal::with_scopes(Vec::<String>::new()),
        (None, Access::Open) => Principal::trusted(),
    };
    let runner = Arc::new(UpstreamRunner { fleet: fleet.clone(), timeout: Duration::from_secs(s.call_timeout_secs) });
    let mut toolset = s.toolset.clone();
    toolset.discovery.kinds = true;
    let passthrough = Arc::new(Passthrough::new(
        fleet.clone(),
        held.clone(),
        s.requires.clone(),
        Duration::from_secs(s.call_timeout_secs),
        s.limits.list.page,
    ));
    let hub = Hub::new(live.clone(), availability, toolset, principal, Arc::new(runner)).with_instructions(
        "This server is a gateway to several MCP servers: their tools are found by search \
             (search_tool_by_category), then expanded (expand_tool) and called by name, or called \
             through call_tool with the tool_id the search returned if your client does not \
             refresh its tool list.",
    );
    let hub = hub
        .with_operations(operations(state, &role, s, &fleet, held.clone(), status.clone())?)
        .with_passthrough(passthrough);
    hub.check().map_err(|e| ServeError::Config(config.path.clone(), e.to_string()))?;
    status.event("ready", json!({"index": index_dir, "tools": live.engine().catalog().tools.len()}));
    let keeper = Keeper {
        hub: hub.clone(),
        fleet: fleet.clone(),
        config,
        state: state.to_path_buf(),
        embedder,
        held,
        status,
        last: listings,
        pins: first_stamp,
        replica: replica.then_some(index_stamp),
    };
    let task = tokio::spawn(keeper.run(events));
    Ok(Gateway { hub, fleet, index_dir, tasks: vec![task] })
}

/// The gateway's operations: its audit trail under `state/audit` (unless disabled), request
/// logs to `status`, and the upstreams' states for `/readyz` and `/metrics`.
fn operations(
    state: &Path,
    role: &Role,
    settings: &crate::config::GatewaySettings,
    fleet: &Arc<Fleet>,
    held: HeldNow,
    status: Arc<dyn Status>,
) -> Result<Operations, ServeError> {
    let dir = match role {
        Role::Primary => Some(state.join("audit")),
        Role::Replica { audit } => audit.clone(),
    };
    let trail = match (settings.audit.enabled, dir) {
        (true, Some(dir)) => {
            Some(Trail::open(&dir, settings.audit).map_err(|e| ServeError::Config(dir, e.to_string()))?)
        }
        _ => None,
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
        (states, pins::guard_json(&found.0, &found.1))
    });
    Ok(Operations::new(trail, Some(status), Some(details)))
}

/// A pins file's stamp (`pins::pins_stamp`).
pub(crate) type PinsStamp = (u64, std::time::SystemTime);

pub(crate) use crate::pins::HeldNow;

/// Guards `listings` (filters, pins, held tools: `crate::pins`), then builds the index of what
/// passed into `STATE/index` (atomically; unchanged tools keep their vectors). `false` when
/// there is nothing to index; with the pins file's stamp after the guard wrote it.
pub(crate) fn rebuild(
    listings: &BTreeMap<String, Listing>,
    config: &GatewayConfig,
    embedder: &dyn Embedder,
    state: &Path,
    held: &HeldNow,
    status: &dyn Status,
) -> Result<(bool, Option<PinsStamp>), ServeError> {
    let guarded = pins::guard(listings, config, state, status)?;
    *held.lock().unwrap_or_else(|p| p.into_inner()) = (guarded.held, guarded.flagged);
    let dir = state.join("index");
    let Some(catalog) = load_lenient(manifest_of(&guarded.listings, config), status)? else {
        return Ok((false, guarded.stamp));
    };
    let report = build_index(&catalog, embedder, &dir, &BuildOptions::default())
        .map_err(|e| ServeError::Config(dir.to_path_buf(), e.to_string()))?;
    drop(catalog);
    // What the build held (the catalogue, its JSON, the staging buffers) goes back to the
    // system, so tool-list churn does not ratchet the gateway's memory up.
    toolsearch_embed::memory::give_back();
    private(&dir).map_err(|e| ServeError::Config(dir.to_path_buf(), e.to_string()))?;
    status.event(
        "indexed",
        json!({"tools": report.tools, "embedded": report.embedded, "reused": report.reused, "seconds": report.total_seconds}),
    );
    Ok((true, guarded.stamp))
}

/// Makes `dir` and everything in it private to the user (0700 directories, 0600 files): the
/// state holds every upstream's tool definitions.
fn private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            private(&entry.path())?;
        } else if kind.is_file() {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

fn first_line(text: &str, fallback: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(fallback);
    truncate(line, 500)
}

/// The most characters of an upstream tool's description that the catalogue keeps (so one
/// `expand_tool` cannot flood a model's context); a longer one is cut with a notice.
pub const MAX_DESCRIPTION_CHARS: usize = 8 * 1024;

/// `text` as the catalogue keeps it: whole, or cut to [`MAX_DESCRIPTION_CHARS`] with a notice
/// saying how long it was.
fn bounded_description(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= MAX_DESCRIPTION_CHARS {
        return text.to_owned();
    }
    format!(
        "{}\n[cut by the gateway: the server's description is {chars} characters, over the limit of {MAX_DESCRIPTION_CHARS}]",
        truncate(text, MAX_DESCRIPTION_CHARS)
    )
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_owned(),
        None => text.to_owned(),
    }
}
