//! `toolsearch gateway --check --config FILE`: every server of a config started once, what
//! each offers listed (the tools its filter lets through and those it leaves out, its prompts,
//! resources and templates), and the problems found (a command not found, an authentication failure,
//! a server that does not answer, tools the catalogue refuses or cannot validate, definitions
//! that look injected), without building an index or serving anyone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use toolsearch_disclosure::Availability;

use crate::catalogue::{load_lenient, manifest_of, unmatched_examples};
use crate::config::GatewayConfig;
use crate::fleet::Fleet;
use crate::upstream::UpEvent;
use toolsearch_mcp::ops::Status;

/// What the check found of one server.
#[derive(Debug, Clone, Serialize)]
pub struct ServerCheck {
    /// Its name in the config.
    pub server: String,
    /// It started and listed its tools.
    pub up: bool,
    /// Why not (the operator's wording, credentials masked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tools it lists that the config's tool filter (`tools.allow` / `tools.deny`) lets
    /// through, by name: what clients would get.
    pub tools: Vec<String>,
    /// The tools it lists that the filter leaves out, by name.
    pub filtered_out: Vec<String>,
    /// Its prompts, by name.
    pub prompts: Vec<String>,
    /// How many resources and resource templates it lists.
    pub resources: usize,
    /// How many resource templates it lists.
    pub templates: usize,
    /// Problems with its tools: left out, not validated, possibly injected.
    pub warnings: Vec<String>,
}

/// Collects the warnings the catalogue loader reports.
#[derive(Default)]
struct Collect(Mutex<Vec<(String, Value)>>);

impl Status for Collect {
    fn event(&self, kind: &str, detail: Value) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push((kind.to_owned(), detail));
    }
}

/// Starts every server of `config` once (within its connect timeout) and reports on each; an
/// OAuth-protected one with the grant kept under `state`.
pub async fn check(config: &GatewayConfig, state: &std::path::Path) -> Vec<ServerCheck> {
    let connect = Duration::from_secs(config.settings.connect_timeout_secs);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let fleet = Fleet::new(
        events_tx,
        Arc::new(Availability::default()),
        state,
        Duration::from_secs(config.settings.call_timeout_secs),
    );
    for (name, spec) in &config.servers {
        fleet.add(name, spec, config.settings.limits, connect, None, crate::gateway::call_timeout(config, name));
    }
    let deadline = Instant::now() + connect;
    let mut settled = BTreeMap::new();
    while settled.len() < config.servers.len() {
        match tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), events.recv()).await {
            Ok(Some(UpEvent::Up(n))) => {
                settled.insert(n, true);
            }
            Ok(Some(UpEvent::Down(n))) => {
                settled.entry(n).or_insert(false);
            }
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    let mut out = Vec::new();
    for (name, up) in fleet.all() {
        let listing = up.listing().filter(|_| settled.get(&name) == Some(&true));
        let mut check = ServerCheck {
            server: name.clone(),
            up: listing.is_some(),
            reason: None,
            tools: Vec::new(),
            filtered_out: Vec::new(),
            prompts: Vec::new(),
            resources: 0,
            templates: 0,
            warnings: Vec::new(),
        };
        let Some(listing) = listing else {
            check.reason = Some(match settled.get(&name) {
                Some(_) => crate::secrets::mask(&up.operator_reason()),
                None => format!("it did not answer initialize within {} s", connect.as_secs()),
            });
            out.push(check);
            continue;
        };
        let policy = config.policies.get(&name).cloned().unwrap_or_default();
        let name_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("?").to_owned();
        let (passed, left): (Vec<String>, Vec<String>) =
            listing.tools.iter().map(|t| name_of(t, "name")).partition(|n| policy.tools.passes(n));
        (check.tools, check.filtered_out) = (passed, left);
        check.prompts = listing.offers.prompts.iter().map(|p| name_of(p, "name")).collect();
        (check.resources, check.templates) = (listing.offers.resources.len(), listing.offers.templates.len());
        let instructions = json!({"name": "instructions", "description": listing.summary});
        let scanned = listing
            .tools
            .iter()
            .filter(|t| policy.tools.passes(&name_of(t, "name")))
            .map(|t| (name_of(t, "name"), t))
            .chain(listing.offers.prompts.iter().map(|p| (format!("prompt {}", name_of(p, "name")), p)))
            .chain(listing.offers.templates.iter().map(|t| (format!("template {}", name_of(t, "uriTemplate")), t)))
            .chain(std::iter::once(("the server's instructions".to_owned(), &instructions)));
        for (what, item) in scanned {
            let markers = crate::scan::markers(item);
            if !markers.is_empty() {
                check.warnings.push(format!("{what}: looks injected: {}", markers.join("; ")));
            }
        }
        check.warnings.extend(listing.offers.problems.iter().cloned());
        for id in unmatched_examples(&name, &listing, config) {
            check.warnings.push(format!("toolsearch.examples.{id:?}: {name} offers no such tool"));
        }
        let collect = Collect::default();
        let mut listing = listing;
        listing.tools.retain(|t| policy.tools.passes(&name_of(t, "name")));
        let one = BTreeMap::from([(name.clone(), listing)]);
        if let Err(e) = load_lenient(manifest_of(&one, config), &collect) {
            check.warnings.push(e.to_string());
        }
        for (_, d) in collect.0.into_inner().unwrap_or_else(|p| p.into_inner()) {
            let tool = d["tool"].as_str().unwrap_or("a tool with no name");
            check.warnings.push(format!("{tool}: {}", d["reason"].as_str().unwrap_or_default()));
        }
        out.push(check);
    }
    // Every server it started is ended, process group and all, before the report is given.
    for name in fleet.names() {
        fleet.stop(&name).await;
    }
    out
}

/// The report as JSON: `{"ok": bool, "servers": [...]}`.
pub fn report_json(checks: &[ServerCheck]) -> Value {
    json!({"ok": checks.iter().all(|c| c.up), "servers": checks})
}
