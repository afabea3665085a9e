//! `toolsearch gateway`: toolsearch in front of the user's MCP servers.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use toolsearch::embed::{EmbedderOptions, OnnxEmbedder};
use toolsearch::gateway::store::store_error;
use toolsearch::mcp::approve;
use toolsearch::mcp::gateway::{default_state_dir, start, Role, Status};
use toolsearch::mcp::{serve_http, serve_io, stdio_streams, Access, CancellationToken, GatewayConfig};

use super::common::{engine_options, Cutoff, Global};
use super::failure::{Failure, Problem};
use super::output::{say, say_err};
use super::render;

/// Put toolsearch in front of your MCP servers: start or reach each server of an
/// `mcpServers` config, index their tools, and serve search-then-call over all of them
/// (stdio by default, Streamable HTTP with --http).
#[derive(clap::Args, Debug)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// The config: {"mcpServers": {...}, "toolsearch": {...}} (see docs/gateway.md).
    #[arg(long, value_name = "FILE", required = true)]
    config: Option<PathBuf>,
    /// Where the index is kept (default: NAME.toolsearch beside the config).
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Start every server once, list what each offers, report problems (a command not found,
    /// an authentication failure, schema and injection warnings) and exit: 0 when every
    /// server came up.
    #[arg(long)]
    check: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Start every server, build the index under the state dir, and exit (for replicas to
    /// serve, or to prepare a deployment).
    #[arg(long, conflicts_with_all = ["check", "replica"])]
    build: bool,
    /// Serve the index another gateway built under --state, read-only: write nothing there,
    /// reload the index when it is rebuilt. Several replicas can share one state dir (behind
    /// a load balancer that keeps a session on one replica: docs/gateway-operations.md).
    #[arg(long)]
    replica: bool,
    /// Where a replica writes its audit trail (none without it).
    #[arg(long, value_name = "DIR", requires = "replica")]
    audit_dir: Option<PathBuf>,
    #[command(flatten)]
    cutoff: Cutoff,
}

/// What to do instead of serving.
#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Approve a tool the gateway holds back because its definition changed (or looks
    /// injected): pin what it lists now, so a running gateway serves it again.
    Approve {
        /// The tool, SERVER.TOOL.
        tool: String,
        /// The digest of the definition you reviewed, as `gateway held` prints it (at least 12
        /// hex digits): a definition that changed again since is not approved.
        #[arg(long, value_name = "HEX")]
        digest: Option<String>,
        #[command(flatten)]
        at: Place,
    },
    /// Log the gateway in to an OAuth-protected server (its entry has "oauth"): prints the
    /// address to open, waits for the login on a loopback redirect, and keeps the grant in the
    /// state directory, where a running gateway takes it up within seconds.
    Login {
        /// The server, as the config names it.
        server: String,
        #[command(flatten)]
        at: Place,
        /// Print the address only; do not start a browser.
        #[arg(long)]
        no_browser: bool,
        /// Log in on another device (RFC 8628): print an address and a code to enter there.
        #[arg(long, conflicts_with = "no_browser")]
        device: bool,
    },
    /// Forget the gateway's grant for a server; a running gateway stops using it within seconds.
    Logout {
        /// The server, as the config names it.
        server: String,
        #[command(flatten)]
        at: Place,
        /// Forget every caller's own grant instead (a `per_user` server; the gateway's own
        /// stays): each caller is asked to log in again at its next call.
        #[arg(long)]
        callers: bool,
    },
    /// Print the gateway's OAuth Client ID Metadata Document (`toolsearch.auth.client_metadata_url`),
    /// to publish at that URL where the gateway's HTTP listener does not serve it itself.
    ClientMetadata {
        /// The gateway's config.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// List the tools held back, with what changed.
    Held {
        #[command(flatten)]
        at: Place,
    },
    /// Read the audit trail, oldest first: every session's searches, expansions and calls, with
    /// who made them and when (filters combine). With a PostgreSQL state store, the whole
    /// fleet's trail.
    Audit {
        #[command(flatten)]
        at: Place,
        #[command(flatten)]
        args: super::gateway_audit::AuditArgs,
    },
}

/// The gateway a subcommand acts on.
#[derive(clap::Args, Debug)]
struct Place {
    /// The gateway's config.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Its state directory (default: NAME.toolsearch beside the config).
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
}

/// Runs `f` against the shared state store, on a runtime of its own.
pub(super) fn shared<T, F: std::future::Future<Output = Result<T, String>>>(
    f: impl FnOnce() -> F,
) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(f())
}

/// Runs a subcommand of `gateway`: approve, held, audit, login, logout or client-metadata.
fn act(global: &Global, action: &Action) -> Result<(), Failure> {
    let (config, state) = match action {
        Action::Approve { at, .. }
        | Action::Held { at }
        | Action::Login { at, .. }
        | Action::Logout { at, .. }
        | Action::Audit { at, .. } => (&at.config, &at.state),
        Action::ClientMetadata { config } => (config, &None),
    };
    let config = GatewayConfig::load(config).map_err(|e| Problem::InvalidConfig.because(e))?;
    let state = state.as_deref().map_or_else(|| default_state_dir(&config.path), Path::to_path_buf);
    match action {
        Action::ClientMetadata { .. } => {
            let url = config.settings.auth.client_metadata_url.as_deref().ok_or_else(|| {
                Problem::InvalidConfig.because(format!(
                    "{}: toolsearch.auth.client_metadata_url is not set: the gateway has no Client ID Metadata \
                     Document",
                    config.path.display()
                ))
            })?;
            let callback = config.settings.auth.callback_url.as_deref();
            say!("{:#}", toolsearch::gateway::login::document::document(url, callback));
        }
        Action::Login { server, no_browser, device, .. } => {
            use toolsearch::gateway::login::How;
            let how = match (device, no_browser) {
                (true, _) => How::Device,
                (false, true) => How::Print,
                (false, false) => How::Browser,
            };
            super::gateway_login::login(global, &config, &state, server, how)?
        }
        Action::Logout { server, callers, .. } => {
            super::gateway_login::logout(global, &config, &state, server, *callers)?
        }
        Action::Approve { tool, digest, .. } => {
            let held = match config.settings.state.postgres() {
                Some(url) => shared(|| toolsearch::gateway::store::approve_in(url, tool, digest.as_deref()))
                    .map_err(|e| Problem::InvalidConfig.because(store_error(&config.path, e)))?,
                None => {
                    approve::approve(&state, tool, digest.as_deref()).map_err(|e| Problem::InvalidConfig.because(e))?
                }
            };
            if global.json {
                say!(
                    "{}",
                    json!({"approved": held.tool, "reason": held.reason, "diff": held.diff, "flags": held.flags})
                );
            } else {
                say_err!("approved {} ({}); a running gateway serves it within a second", held.tool, held.reason);
            }
        }
        Action::Audit { args, .. } => super::gateway_audit::run(global, &config, &state, args)?,
        Action::Held { .. } => {
            let held = match config.settings.state.postgres() {
                Some(url) => shared(|| toolsearch::gateway::store::held_in(url))
                    .map_err(|e| Problem::InvalidConfig.because(store_error(&config.path, e)))?,
                None => approve::held_tools(&state),
            };
            if global.json {
                say!("{}", serde_json::to_string(&held).map_err(|e| Problem::Internal.because(e))?);
            } else if held.is_empty() {
                say!("no tool is held");
            } else {
                for h in held {
                    say!("{} ({}), digest {}", h.tool, h.reason, &h.seen.digest[..16]);
                    for line in h.diff.iter().chain(&h.flags) {
                        say!("    {}", render::printable(line));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Gateway status on stderr: a line per event, or a JSON line with `--json`.
struct StderrStatus {
    json: bool,
}

impl Status for StderrStatus {
    fn event(&self, kind: &str, detail: Value) {
        if self.json {
            let mut v = json!({"event": kind});
            if let (Some(o), Value::Object(d)) = (v.as_object_mut(), detail) {
                o.extend(d);
            }
            say_err!("{v}");
            return;
        }
        let text = match (kind, &detail) {
            ("upstream_up", d) => format!("{} is up ({} tools)", d["server"].as_str().unwrap_or("?"), d["tools"]),
            ("upstream_down", d) => d["reason"].as_str().unwrap_or("an upstream is down").to_owned(),
            ("upstream_starting", d) => format!(
                "{} is still starting after {:.1} s: serving the others; its tools are added when it is up",
                d["server"].as_str().unwrap_or("?"),
                d["waited_secs"].as_f64().unwrap_or(0.0)
            ),
            ("indexed", d) => format!(
                "indexed {} ({} embedded, {} reused) in {:.1} s",
                super::render::count(d["tools"].as_u64().unwrap_or(0) as usize, "tool", "tools"),
                d["embedded"],
                d["reused"],
                d["seconds"].as_f64().unwrap_or(0.0)
            ),
            ("config_note", d) => {
                format!("note: {}: {}", d["config"].as_str().unwrap_or("?"), d["note"].as_str().unwrap_or(""))
            }
            ("ready", d) => format!("ready: {} tools, index {}", d["tools"], d["index"].as_str().unwrap_or("")),
            ("tool_unvalidated" | "tool_skipped", d) => format!(
                "warning: {}: {}",
                d["tool"].as_str().unwrap_or("a tool with no name"),
                d["reason"].as_str().unwrap_or(kind)
            ),
            ("request", d) => format!(
                "{} {} {} -> {} {} ({} ms) [{} {}]",
                d["method"].as_str().unwrap_or("?"),
                d["name"].as_str().unwrap_or("?"),
                d["tool"].as_str().unwrap_or("-"),
                d["upstream"].as_str().unwrap_or("?"),
                d["outcome"].as_str().unwrap_or("?"),
                d["ms"],
                d["request_id"].as_str().unwrap_or("?"),
                d["token"].as_str().unwrap_or("?"),
            ),
            (other, d) => format!("{other}: {d}"),
        };
        say_err!("toolsearch gateway: {}", render::printable(&text));
    }
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    if let Some(action) = &args.action {
        return act(global, action);
    }
    let path = args.config.as_deref().ok_or_else(|| Problem::Usage.because("gateway needs --config FILE"))?;
    toolsearch::gateway::lineage::check().map_err(|e| Problem::InvalidConfig.because(e))?;
    let mut config = GatewayConfig::load(path).map_err(|e| Problem::InvalidConfig.because(e))?;
    let state = args.state.as_deref().map_or_else(|| default_state_dir(&config.path), Path::to_path_buf);
    if args.check {
        if let Some(addr) = args.http {
            // What serving on ADDR would refuse (no tokens off loopback, a guessable token).
            config.settings.http_access(&state).check(addr).map_err(|e| Problem::InvalidConfig.because(e))?;
        }
        return preflight(global, &config, &state);
    }
    let status = Arc::new(StderrStatus { json: global.json });
    for note in &config.notes {
        status.event("config_note", json!({"config": config.path.display().to_string(), "note": note}));
    }
    config.settings.name_tokens(&state).map_err(|e| Problem::InvalidConfig.because(e))?;
    let model = global.model.as_deref().or(config.settings.model.as_deref());
    let files = super::common::choose_model(global, model)?;
    // One session on every core, as `Engine::open` has: one client's new query is answered 1.22x
    // sooner than with the model on one thread, and 8 clients' new queries/s rise 1.19x (medians
    // of four runs each, docs/gateway-performance.md). It loads on a thread of its own while the
    // servers start: `start` waits for it only to build the index.
    let (loaded, model) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let embedder = OnnxEmbedder::load(&files, EmbedderOptions::default());
        let _ = loaded.send(embedder.map(|e| Arc::new(e) as Arc<dyn toolsearch::Embedder>).map_err(|e| e.to_string()));
    });
    let embedder = async move { model.await.unwrap_or_else(|_| Err("the model's loading thread ended".into())) };
    let http = args.http;
    if http.is_none() && config.settings.scopes.is_none() && config.settings.access == Access::Open {
        say_err!(
            "warning: no scopes configured: the stdio client is trusted and sees and calls every tool; \
             set \"scopes\" or \"access\": \"closed\" in the toolsearch section to restrict it"
        );
    }
    let access = config.settings.http_access(&state);
    if let Some(addr) = http {
        access.check(addr).map_err(|e| Problem::InvalidConfig.because(e))?;
    }
    let options = engine_options(global, args.cutoff.min_confidence);
    let (build, replica, audit_dir) = (args.build, args.replica, args.audit_dir.clone());
    if build {
        // No client is waiting: the index built is every server's that starts in time.
        config.settings.startup_wait_secs = config.settings.connect_timeout_secs;
    }
    // One thread serves the clients (stdio or HTTP), so a forwarded call's hops (HTTP
    // parsing, session, SDK, upstream relay, writer) are task switches, not thread wake-ups
    // (docs/gateway-performance.md). Searches, index builds and learning run on the
    // blocking pool, so a search never holds up another client's call.
    // Traces, when configured: installed before the runtime (the exporter's HTTP client is a
    // blocking one on its own thread), flushed when this function returns.
    let _telemetry = toolsearch::mcp::trace::install(config.settings.telemetry.as_ref())
        .map_err(|e| Problem::InvalidConfig.because(format!("toolsearch.telemetry.{e}")))?;
    let runtime = match build {
        false => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        true => tokio::runtime::Runtime::new(),
    }
    .map_err(|e| Problem::Io.because(e))?;
    let result = runtime.block_on(async move {
        let role = match replica {
            true => Role::Replica { audit: audit_dir },
            false => Role::Primary,
        };
        let gateway = start(config, &state, embedder, options, status, role).await?;
        if build {
            return Ok(());
        }
        let hub = gateway.hub.clone();
        let served = match http {
            Some(addr) => {
                let stop = CancellationToken::new();
                tokio::spawn(cancel_on_signal(stop.clone()));
                serve_http(hub, addr, access, stop, |bound| {
                    say_err!("toolsearch gateway: serving MCP over Streamable HTTP at http://{bound}/mcp");
                })
                .await
            }
            None => {
                let (input, output) = stdio_streams();
                serve_io(hub, input, output).await
            }
        };
        drop(gateway);
        served
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result.map_err(|e| match e {
        toolsearch::mcp::ServeError::Model(e) => Problem::Model.because(e),
        e => Problem::Gateway.because(e),
    })
}

/// `gateway --check`: each server started once and reported on.
fn preflight(global: &Global, config: &GatewayConfig, state: &Path) -> Result<(), Failure> {
    use toolsearch::mcp::preflight::{check, report_json};
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Problem::Io.because(e))?;
    let checks = runtime.block_on(check(config, state));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if global.json {
        let mut report = report_json(&checks);
        report["notes"] = json!(config.notes);
        say!("{report}");
    } else {
        for note in &config.notes {
            say!("note: {}", render::printable(note));
        }
        for c in &checks {
            match &c.reason {
                None => say!("{}: up, {} tools", c.server, c.tools.len()),
                Some(r) => say!("{}: DOWN: {}", c.server, render::printable(&toolsearch::mcp::mask_secrets(r))),
            }
            if !c.tools.is_empty() {
                say!("    tools: {}", render::printable(&c.tools.join(", ")));
            }
            if !c.filtered_out.is_empty() {
                say!("    left out by its tool filter: {}", render::printable(&c.filtered_out.join(", ")));
            }
            if !c.prompts.is_empty() {
                say!("    prompts: {}", render::printable(&c.prompts.join(", ")));
            }
            if c.resources + c.templates > 0 {
                say!("    resources: {}, resource templates: {}", c.resources, c.templates);
            }
            for w in &c.warnings {
                say!("    warning: {}", render::printable(w));
            }
        }
    }
    let down: Vec<&str> = checks.iter().filter(|c| !c.up).map(|c| c.server.as_str()).collect();
    match down.is_empty() {
        true => Ok(()),
        false => Err(Problem::Gateway.because(format!("not up: {}", down.join(", ")))),
    }
}

/// Cancels `stop` on Ctrl-C or SIGTERM (Unix; elsewhere Ctrl-C alone).
async fn cancel_on_signal(stop: CancellationToken) {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    #[cfg(not(unix))]
    let mut term: Option<tokio::sync::mpsc::Receiver<()>> = None;
    let terminated = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminated => {}
    }
    stop.cancel();
}
