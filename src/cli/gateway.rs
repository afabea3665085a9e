//! `toolsearch gateway`: toolsearch in front of the user's MCP servers.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use toolsearch::embed::{EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch::mcp::gateway::{default_state_dir, start, Status};
use toolsearch::mcp::{serve_http, serve_io, Access, CancellationToken, GatewayConfig, HttpAccess};

use super::common::{engine_options, model_failure, Cutoff, Global};
use super::failure::{Failure, Problem};
use super::output::say_err;
use super::render;

/// Put toolsearch in front of your MCP servers: start or reach each server of an
/// `mcpServers` config, index their tools, and serve search-then-call over all of them
/// (stdio by default, Streamable HTTP with --http).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The config: {"mcpServers": {...}, "toolsearch": {...}} (see docs/gateway.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Where the index is kept (default: NAME.toolsearch beside the config).
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    #[command(flatten)]
    cutoff: Cutoff,
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
            ("indexed", d) => format!(
                "indexed {} tools ({} embedded, {} reused) in {:.1} s",
                d["tools"],
                d["embedded"],
                d["reused"],
                d["seconds"].as_f64().unwrap_or(0.0)
            ),
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
    let config = GatewayConfig::load(&args.config).map_err(|e| Problem::InvalidConfig.because(e))?;
    let state = args.state.as_deref().map_or_else(|| default_state_dir(&config.path), Path::to_path_buf);
    let files = ModelFiles::locate(global.models.as_deref()).map_err(model_failure)?;
    let embedder: Arc<dyn toolsearch::Embedder> = Arc::new(
        OnnxEmbedder::load(&files, EmbedderOptions { intra_threads: Some(1), ..EmbedderOptions::default() })
            .map_err(|e| Problem::Model.because(e))?,
    );
    let http = args.http;
    if http.is_none() && config.settings.scopes.is_none() && config.settings.access == Access::Open {
        say_err!(
            "warning: no scopes configured: the stdio client is trusted and sees and calls every tool; \
             set \"scopes\" or \"access\": \"closed\" in the toolsearch section to restrict it"
        );
    }
    let access = HttpAccess {
        tokens: config.settings.tokens.clone(),
        allowed_origins: config.settings.allowed_origins.clone(),
        limits: config.settings.limits.http,
    };
    if let Some(addr) = http {
        access.check(addr).map_err(|e| Problem::InvalidConfig.because(e))?;
    }
    let options = engine_options(global, args.cutoff.min_confidence);
    let status = Arc::new(StderrStatus { json: global.json });
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Problem::Io.because(e))?;
    let result = runtime.block_on(async move {
        let gateway = start(config, &state, embedder, options, status).await?;
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
            None => serve_io(hub, tokio::io::BufReader::new(tokio::io::stdin()), tokio::io::stdout()).await,
        };
        drop(gateway);
        served
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result.map_err(|e| Problem::Gateway.because(e))
}

/// Cancels `stop` on Ctrl-C or SIGTERM.
async fn cancel_on_signal(stop: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
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
