//! One function per verb, and how failures are reported.

use std::io::IsTerminal;
use std::path::Path;

use serde::Serialize;
use serde_json::json;
use toolsearch::disclosure::replay::Script;
use toolsearch::disclosure::{render as render_defs, Dialect, LiveCatalog};
use toolsearch::embed::{EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch::eval::{dump_candidates, fit_calibration, load_queries, run_bench, token_report, BenchOptions};
use toolsearch::{
    build_index, BuildOptions, Engine, EngineOptions, ExpandToolRequest, Format, ListRequest, PathSpec, Principal,
    ProtocolError, Retrieval, SearchNodesRequest, SearchToolsRequest,
};

use super::output::{say, say_err};
use super::render;
use super::{Cli, Command};

/// A failed command: either a protocol answer that is an error, or bad input / environment.
pub(crate) enum Failure {
    Protocol(ProtocolError),
    Other {
        code: &'static str,
        message: String,
    },
    /// The tool ran and failed; its result has been printed already.
    Tool {
        tool_id: String,
        message: String,
    },
}

impl Failure {
    fn other(code: &'static str, e: impl std::fmt::Display) -> Failure {
        Failure::Other { code, message: e.to_string() }
    }

    /// Prints the failure (one line on stderr; the error JSON on stdout with `--json`) and
    /// returns the exit code.
    pub(crate) fn report(self, json_out: bool) -> i32 {
        match self {
            Failure::Protocol(e) => {
                if json_out {
                    say!("{}", serde_json::to_string_pretty(&e).unwrap_or_default());
                }
                let hints = if e.hints.is_empty() { String::new() } else { format!(" ({})", e.hints.join("; ")) };
                say_err!("error: {}", render::printable(&format!("{e}{hints}")));
                3
            }
            Failure::Other { code, message } => {
                if json_out {
                    let v = json!({ "code": code, "message": message, "hints": [], "next_action": null });
                    say!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                }
                say_err!("error: {}", render::printable(&message));
                1
            }
            Failure::Tool { tool_id, message } => {
                say_err!("error: {}", render::printable(&format!("tool {tool_id:?} failed: {message}")));
                4
            }
        }
    }
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Self {
        Failure::Protocol(e)
    }
}

pub(crate) fn dispatch(cli: &Cli) -> Result<(), Failure> {
    match &cli.command {
        Command::Index { catalogue, out, format, namespace, quiet } => {
            index(cli, catalogue, out, format.as_deref(), namespace, *quiet)
        }
        Command::Search { index, query, path, page } => {
            let engine = open_until_exit(cli, index)?;
            let req = SearchToolsRequest {
                query: query.clone(),
                category_path: path.clone().map(PathSpec::Joined),
                tags: page.tags.clone(),
                limit: Some(page.limit),
                cursor: page.cursor.clone(),
            };
            let res = engine.search_tool_by_category_as(&principal(cli), &req)?;
            emit(cli, &res, || render::search(query, &res))
        }
        Command::Nodes { index, query, limit } => {
            let engine = open_until_exit(cli, index)?;
            let res = engine
                .search_nodes_as(&principal(cli), &SearchNodesRequest { query: query.clone(), limit: Some(*limit) })?;
            emit(cli, &res, || render::nodes(query, &res))
        }
        Command::List { index, path, query, page } => {
            let engine = open_until_exit(cli, index)?;
            let req = ListRequest {
                path: path.clone().map(PathSpec::Joined),
                query: query.clone(),
                tags: page.tags.clone(),
                limit: Some(page.limit),
                cursor: page.cursor.clone(),
            };
            let res = engine.list_as(&principal(cli), &req)?;
            emit(cli, &res, || render::list(&res))
        }
        Command::Bench { index, queries, mode, k, split, sample, depth, dump_candidates, tokens, dialect } => {
            match (dump_candidates, tokens) {
                (Some(out), _) => dump(cli, index, queries, split.as_deref(), *sample, out),
                (None, true) => token_bench(cli, index, queries, split.as_deref(), *sample, dialect),
                (None, false) => bench(cli, index, queries, mode, k, split.as_deref(), *sample, *depth),
            }
        }
        Command::Serve { index, config } => serve(cli, index, config.as_deref()),
        Command::Gateway { config, state, http } => gateway(cli, config, state.as_deref(), *http),
        Command::Replay { index, script, audit, render } => {
            replay(cli, index, script, audit.as_deref(), render.as_deref())
        }
        Command::Calibrate { index, queries, split, sample, dry_run } => {
            calibrate(cli, index, queries, split.as_deref(), *sample, *dry_run)
        }
        Command::Call { index, tool_id, args, timeout, executor } => {
            call(cli, index, tool_id, args, *timeout, executor)
        }
        Command::Expand { index, tool_id } => {
            let engine = open_until_exit(cli, index)?;
            let res = engine.expand_tool_as(&principal(cli), &ExpandToolRequest { tool_id: tool_id.clone() })?;
            emit(cli, &res, || render::expand(&res))
        }
    }
}

/// The caller the CLI answers as: trusted, or exactly the `--scopes` given.
fn principal(cli: &Cli) -> Principal {
    match &cli.scopes {
        None => Principal::trusted(),
        Some(s) => Principal::with_scopes(s.iter().cloned()).with_public_catalog(cli.public_catalog),
    }
}

fn emit<T: Serialize>(cli: &Cli, value: &T, human: impl FnOnce() -> String) -> Result<(), Failure> {
    if cli.json {
        let text = serde_json::to_string_pretty(value).map_err(|e| Failure::other("INTERNAL", e))?;
        say!("{text}");
    } else {
        super::output::write_out(&render::printable(&human()));
    }
    Ok(())
}

/// Opens the index for a verb that uses it until the process exits. The engine is never
/// dropped: exiting hands its memory back at once, while tearing down a 100k-tool index
/// piece by piece costs about a second.
fn open_until_exit(cli: &Cli, dir: &Path) -> Result<&'static Engine, Failure> {
    Ok(Box::leak(Box::new(open(cli, dir)?)))
}

fn open(cli: &Cli, dir: &Path) -> Result<Engine, Failure> {
    let options =
        EngineOptions { models: cli.models.clone(), min_confidence: cli.min_confidence, ..EngineOptions::default() };
    Engine::open_with(dir, options).map_err(|e| Failure::other("INDEX_ERROR", e))
}

fn index(
    cli: &Cli,
    catalogue: &[std::path::PathBuf],
    out: &Path,
    format: Option<&str>,
    namespaces: &[String],
    quiet: bool,
) -> Result<(), Failure> {
    let format = match format {
        None => None,
        Some(name) => Some(Format::from_name(name).ok_or_else(|| {
            Failure::other(
                "INVALID_ARGUMENT",
                format!("unknown --format {name:?}; use manifest, jsonl, mcp, openai or anthropic"),
            )
        })?),
    };
    // `NAME` for every file, or `FILE=NAME` for one.
    let mut everywhere: Option<&str> = None;
    let mut per_file: Vec<(std::path::PathBuf, &str)> = Vec::new();
    for n in namespaces {
        match n.rsplit_once('=') {
            Some((file, name)) if catalogue.iter().any(|c| c.as_os_str() == file) => {
                per_file.push((file.into(), name));
            }
            Some(_) => {
                return Err(Failure::other(
                    "INVALID_ARGUMENT",
                    format!("--namespace {n:?}: the part before `=` is not one of the catalogue files"),
                ))
            }
            None => everywhere = Some(n.as_str()),
        }
    }
    let catalog = toolsearch::catalog::load_paths_as(catalogue, format, |f| {
        per_file.iter().find(|(p, _)| p == f).map(|(_, n)| *n).or(everywhere)
    })
    .map_err(|e| Failure::other("INVALID_CATALOGUE", e))?;
    toolsearch::disclosure::check_node_facades(&catalog).map_err(|e| {
        let files: Vec<String> = catalogue.iter().map(|f| f.display().to_string()).collect();
        Failure::other("INVALID_CATALOGUE", format!("{}: {e}", files.join(", ")))
    })?;
    let files = ModelFiles::locate(cli.models.as_deref()).map_err(|e| Failure::other("MODEL_ERROR", e))?;
    let embedder =
        OnnxEmbedder::load(&files, EmbedderOptions::default()).map_err(|e| Failure::other("MODEL_ERROR", e))?;
    let progress = !quiet && !cli.json && std::io::stderr().is_terminal();
    let report = build_index(&catalog, &embedder, out, &BuildOptions { progress, reuse_from: None })
        .map_err(|e| Failure::other("INDEX_ERROR", e))?;
    emit(cli, &render::BuildSummary::new(out, &report), || render::build(out, &report))
}

#[allow(clippy::too_many_arguments)]
fn bench(
    cli: &Cli,
    index: &Path,
    queries: &Path,
    modes: &str,
    ks: &str,
    split: Option<&str>,
    sample: Option<usize>,
    depth: usize,
) -> Result<(), Failure> {
    let modes: Vec<Retrieval> = modes
        .split(',')
        .map(|m| match m.trim() {
            "hybrid" => Ok(Retrieval::Hybrid),
            "bm25" | "lexical" => Ok(Retrieval::Lexical),
            "dense" => Ok(Retrieval::Dense),
            other => {
                Err(Failure::other("INVALID_ARGUMENT", format!("unknown --mode {other:?}; use hybrid, bm25 or dense")))
            }
        })
        .collect::<Result<_, _>>()?;
    let ks: Vec<usize> =
        ks.split(',').map(|k| k.trim().parse::<usize>().ok().filter(|&k| k > 0)).collect::<Option<_>>().ok_or_else(
            || Failure::other("INVALID_ARGUMENT", format!("--k {ks:?}: expected positive integers like 1,5,10")),
        )?;
    let labelled = load_queries(queries, split, sample).map_err(|e| Failure::other("INVALID_QUERIES", e))?;
    let options = EngineOptions {
        models: cli.models.clone(),
        min_confidence: cli.min_confidence,
        candidates: depth,
        ..EngineOptions::default()
    };
    let engine = Engine::open_with(index, options).map_err(|e| Failure::other("INDEX_ERROR", e))?;
    let mut reports = Vec::new();
    for retrieval in modes {
        engine.clear_query_cache();
        let options = BenchOptions {
            retrieval,
            ks: ks.clone(),
            depth,
            progress: !cli.json && std::io::stderr().is_terminal(),
            ..BenchOptions::default()
        };
        reports.push(run_bench(&engine, &labelled, &options)?);
    }
    emit(cli, &reports, || render::bench(&reports))
}

fn dialect(name: &str) -> Result<Dialect, Failure> {
    Dialect::from_name(name).ok_or_else(|| {
        Failure::other("INVALID_ARGUMENT", format!("unknown format {name:?}; use openai, anthropic or mcp"))
    })
}

fn token_bench(
    cli: &Cli,
    index: &Path,
    queries: &Path,
    split: Option<&str>,
    sample: Option<usize>,
    dialect_name: &str,
) -> Result<(), Failure> {
    let dialect = dialect(dialect_name)?;
    let labelled = load_queries(queries, split, sample).map_err(|e| Failure::other("INVALID_QUERIES", e))?;
    let live = LiveCatalog::new(open(cli, index)?);
    let report = token_report(&live, &labelled, dialect);
    emit(cli, &report, || render::tokens(&report))
}

fn replay(
    cli: &Cli,
    index: &Path,
    script: &Path,
    audit: Option<&Path>,
    dialect_name: Option<&str>,
) -> Result<(), Failure> {
    let dialect = dialect_name.map(dialect).transpose()?;
    let script = Script::load(script).map_err(|e| Failure::other("INVALID_SCRIPT", e))?;
    // A script that registers tools changes the catalogue: run it on a private copy.
    let copy = if script.registers_tools() { Some(PrivateCopy::of(index)?) } else { None };
    let dir = copy.as_ref().map_or(index, |c| c.0.as_path());
    let live = LiveCatalog::new(open(cli, dir)?);
    let mut config = script.config.clone();
    if cli.scopes.is_some() {
        config.principal = principal(cli);
    }
    let script = Script { config, ..script };
    let replay = script.run(live).map_err(|e| Failure::other("REPLAY_ERROR", e))?;
    if let Some(path) = audit {
        let jsonl: String = replay.audit.iter().map(|e| serde_json::to_string(e).unwrap_or_default() + "\n").collect();
        std::fs::write(path, jsonl).map_err(|e| Failure::other("IO_ERROR", format!("{}: {e}", path.display())))?;
    }
    emit(cli, &replay, || render::replay(&replay))?;
    if let Some(d) = dialect {
        say!("{}", serde_json::to_string_pretty(&render_defs(&replay.final_definitions, d)).unwrap_or_default());
    }
    Ok(())
}

fn call(
    cli: &Cli,
    index: &Path,
    tool_id: &str,
    args: &str,
    timeout_secs: u64,
    executor: &[String],
) -> Result<(), Failure> {
    use toolsearch::mcp::CommandExecutor;
    use toolsearch::CallToolRequest;

    let arguments = read_arguments(args)?;
    let engine = open_until_exit(cli, index)?;
    let req = CallToolRequest { tool_id: tool_id.to_owned(), arguments };
    let who = principal(cli);
    if executor.is_empty() {
        engine.check_call_as(&who, &req)?;
        let answer = json!({ "tool_id": req.tool_id, "valid": true, "executed": false });
        return emit(cli, &answer, || {
            format!("arguments are valid for {} (not run: give an executor command after --)\n", req.tool_id)
        });
    }
    let timeout = std::time::Duration::from_secs(timeout_secs.max(1));
    engine.set_executor(std::sync::Arc::new(CommandExecutor { argv: executor.to_vec(), timeout }));
    let res = engine.call_tool_as(&who, &req)?;
    emit(cli, &res, || render::call(&res))?;
    if res.is_error {
        let message = res.result.get("error").and_then(serde_json::Value::as_str).unwrap_or_default();
        return Err(Failure::Tool { tool_id: res.tool_id.clone(), message: message.to_owned() });
    }
    Ok(())
}

/// `--args`: inline JSON, `@FILE`, or `-` for standard input.
fn read_arguments(spec: &str) -> Result<serde_json::Value, Failure> {
    let (source, text) = match spec {
        "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| Failure::other("IO_ERROR", format!("standard input: {e}")))?;
            ("standard input".to_owned(), text)
        }
        s if s.starts_with('@') => {
            let path = &s[1..];
            let text = std::fs::read_to_string(path).map_err(|e| Failure::other("IO_ERROR", format!("{path}: {e}")))?;
            (path.to_owned(), text)
        }
        s => ("--args".to_owned(), s.to_owned()),
    };
    serde_json::from_str(&text).map_err(|e| Failure::other("INVALID_ARGUMENT", format!("{source}: not JSON: {e}")))
}

fn serve(cli: &Cli, index: &Path, config: Option<&Path>) -> Result<(), Failure> {
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;
    use toolsearch::disclosure::{Availability, DEFAULT_TTL};
    use toolsearch::mcp::{
        serve_io, spawn_command_checks, Access, CommandExecutor, CommandRunner, Hub, NoRunner, ServeConfig, ToolRunner,
    };

    let config = match config {
        Some(path) => ServeConfig::load(path).map_err(|e| Failure::other("INVALID_CONFIG", e))?,
        None => ServeConfig::default(),
    };
    let timeout = Duration::from_secs(config.timeout_secs.unwrap_or(60).max(1));
    let live = LiveCatalog::new(open(cli, index)?);
    let runner: Arc<dyn ToolRunner> = match &config.executor {
        Some(argv) => {
            let executor = Arc::new(CommandExecutor { argv: argv.clone(), timeout });
            live.set_executor(executor.clone());
            Arc::new(CommandRunner(executor))
        }
        None => Arc::new(NoRunner(
            "this server runs no catalogue tools: its configuration names no \"executor\" command; \
             searching, listing and expanding work"
                .into(),
        )),
    };
    let principal = match (&config.scopes, &cli.scopes, config.access) {
        (_, Some(_), _) => principal(cli),
        (Some(s), None, _) => Principal::with_scopes(s.iter().cloned()),
        (None, None, Access::Closed) => Principal::with_scopes(Vec::<String>::new()),
        (None, None, Access::Open) => {
            say_err!(
                "warning: no scopes configured: the client is trusted and sees and calls every tool; \
                 give --scopes, or \"scopes\" or \"access\": \"closed\" in the config, to restrict it"
            );
            Principal::trusted()
        }
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Failure::other("IO_ERROR", e))?;
    let availability = Arc::new(Availability::default());
    let shared: Arc<OnceLock<Arc<Hub>>> = Arc::new(OnceLock::new());
    let for_checks = shared.clone();
    spawn_command_checks(
        &config.checks,
        timeout,
        DEFAULT_TTL,
        &availability,
        move || for_checks.get().cloned(),
        runtime.handle().clone(),
    );
    let hub = Hub::new(live, availability, config.toolset.clone(), principal, runner);
    let set = hub.check().map_err(|e| Failure::other("INVALID_CONFIG", e))?;
    for d in set.diagnostics() {
        say_err!("note: {d}");
    }
    say_err!("toolsearch serve: MCP over stdio, index {}, {} tools visible", index.display(), set.visible().len());
    drop(set);
    let _ = shared.set(hub.clone());
    let input = tokio::io::BufReader::new(tokio::io::stdin());
    let result = runtime.block_on(serve_io(hub, input, tokio::io::stdout()));
    runtime.shutdown_timeout(Duration::from_millis(100));
    result.map_err(|e| Failure::other("IO_ERROR", e))
}

/// Gateway status on stderr: a line per event, or a JSON line with `--json`.
struct StderrStatus {
    json: bool,
}

impl toolsearch::mcp::gateway::Status for StderrStatus {
    fn event(&self, kind: &str, detail: serde_json::Value) {
        if self.json {
            let mut v = json!({"event": kind});
            if let (Some(o), serde_json::Value::Object(d)) = (v.as_object_mut(), detail) {
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
            (other, d) => format!("{other}: {d}"),
        };
        say_err!("toolsearch gateway: {}", render::printable(&text));
    }
}

fn gateway(cli: &Cli, config: &Path, state: Option<&Path>, http: Option<std::net::SocketAddr>) -> Result<(), Failure> {
    use std::sync::Arc;
    use toolsearch::mcp::gateway::{default_state_dir, start};
    use toolsearch::mcp::{serve_http, serve_io, GatewayConfig, HttpAccess};

    let config = GatewayConfig::load(config).map_err(|e| Failure::other("INVALID_CONFIG", e))?;
    let state = state.map_or_else(|| default_state_dir(&config.path), Path::to_path_buf);
    let files = ModelFiles::locate(cli.models.as_deref()).map_err(|e| Failure::other("MODEL_ERROR", e))?;
    let embedder: Arc<dyn toolsearch::Embedder> = Arc::new(
        OnnxEmbedder::load(&files, EmbedderOptions { intra_threads: Some(1), ..EmbedderOptions::default() })
            .map_err(|e| Failure::other("MODEL_ERROR", e))?,
    );
    if http.is_none() && config.settings.scopes.is_none() && config.settings.access == toolsearch::mcp::Access::Open {
        say_err!(
            "warning: no scopes configured: the stdio client is trusted and sees and calls every tool; \
             set \"scopes\" or \"access\": \"closed\" in the toolsearch section to restrict it"
        );
    }
    let access =
        HttpAccess { tokens: config.settings.tokens.clone(), allowed_origins: config.settings.allowed_origins.clone() };
    if let Some(addr) = http {
        access.check(addr).map_err(|e| Failure::other("INVALID_CONFIG", e))?;
    }
    let options =
        EngineOptions { models: cli.models.clone(), min_confidence: cli.min_confidence, ..EngineOptions::default() };
    let status = Arc::new(StderrStatus { json: cli.json });
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Failure::other("IO_ERROR", e))?;
    let result = runtime.block_on(async move {
        let gateway = start(config, &state, embedder, options, status).await?;
        let hub = gateway.hub.clone();
        let served = match http {
            Some(addr) => {
                let stop = toolsearch::mcp::CancellationToken::new();
                let on_signal = stop.clone();
                tokio::spawn(async move {
                    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
                    }
                    on_signal.cancel();
                });
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
    result.map_err(|e| Failure::other("GATEWAY_ERROR", e))
}

/// A copy of an index directory, removed when dropped.
struct PrivateCopy(std::path::PathBuf);

impl PrivateCopy {
    fn of(index: &Path) -> Result<PrivateCopy, Failure> {
        let dir = std::env::temp_dir().join(format!("toolsearch-replay-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(index, &dir).map_err(|e| Failure::other("IO_ERROR", format!("copying {}: {e}", index.display())))?;
        Ok(PrivateCopy(dir))
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn dump(
    cli: &Cli,
    index: &Path,
    queries: &Path,
    split: Option<&str>,
    sample: Option<usize>,
    out: &Path,
) -> Result<(), Failure> {
    let labelled = load_queries(queries, split, sample).map_err(|e| Failure::other("INVALID_QUERIES", e))?;
    let engine = open_until_exit(cli, index)?;
    let file = std::fs::File::create(out).map_err(|e| Failure::other("IO_ERROR", format!("{}: {e}", out.display())))?;
    let mut w = std::io::BufWriter::new(file);
    dump_candidates(engine, &labelled, 100, &mut w).map_err(|e| Failure::other("IO_ERROR", e))?;
    say_err!("wrote candidates of {} queries to {}", labelled.len(), out.display());
    Ok(())
}

fn calibrate(
    cli: &Cli,
    index: &Path,
    queries: &Path,
    split: Option<&str>,
    sample: Option<usize>,
    dry_run: bool,
) -> Result<(), Failure> {
    let labelled = load_queries(queries, split, sample).map_err(|e| Failure::other("INVALID_QUERIES", e))?;
    let engine = open_until_exit(cli, index)?;
    let report = fit_calibration(engine, &labelled)?;
    if !dry_run {
        let json = serde_json::to_string(&report.fitted).map_err(|e| Failure::other("INTERNAL", e))?;
        toolsearch::index::IndexMeta::set_extension(index, toolsearch::CALIBRATION_KEY, &json)
            .map_err(|e| Failure::other("INDEX_ERROR", e))?;
    }
    emit(cli, &report, || render::calibration(&report, dry_run))
}
