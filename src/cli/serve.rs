//! `toolsearch serve`: the catalogue as an MCP server over stdio.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use toolsearch::disclosure::{Availability, LiveCatalog};
use toolsearch::mcp::{serve_io, Access, Hub, ServeConfig};
use toolsearch::Principal;

use super::common::{open, Caller, Cutoff, Global};
use super::failure::{Failure, Problem};
use super::output::say_err;
use super::serve_running::Running;
use super::serve_watch::{Seen, Watched};

/// Serve the catalogue to one MCP client over stdio (JSON-RPC 2.0, one message per line):
/// tools/list is the visible tool set, tools/call drives facades and discovery.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The index directory.
    index: PathBuf,
    /// Server configuration (tool set, scopes, check and executor commands; see docs/disclosure.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    caller: Caller,
    #[command(flatten)]
    cutoff: Cutoff,
    /// Every SECS seconds, check whether the index was rebuilt, recalibrated or relearned, or
    /// the configuration's tool set or scopes edited, since, and serve the new ones (the client
    /// is told `list_changed` when what it sees moved); 0: never, at most 86400
    #[arg(long, value_name = "SECS", default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=86400))]
    watch: u64,
}

/// Who the client is served as: the `--scopes` given, else the configuration's `scopes`, else
/// what its `access` says.
fn served_as(config: &ServeConfig, caller: &Caller) -> Principal {
    match (&config.scopes, &caller.scopes, config.access) {
        (_, Some(_), _) => caller.principal(),
        (Some(s), None, _) => Principal::with_scopes(s.iter().cloned()),
        (None, None, Access::Closed) => Principal::with_scopes(Vec::<String>::new()),
        (None, None, Access::Open) => Principal::trusted(),
    }
}

pub(crate) fn run(global: &Global, args: &Args) -> Result<(), Failure> {
    // Read before what they describe is loaded: a change made meanwhile is seen by the watch.
    let seen = Seen::now(&args.index, args.config.as_deref());
    let config = match &args.config {
        Some(path) => ServeConfig::load(path).map_err(|e| Problem::InvalidConfig.because(e))?,
        None => ServeConfig::default(),
    };
    let live = LiveCatalog::new(open(global, &args.index, args.cutoff.min_confidence)?);
    if (&config.scopes, &args.caller.scopes, config.access) == (&None, &None, Access::Open) {
        say_err!(
            "warning: no scopes configured: the client is trusted and sees and calls every tool; \
             give --scopes, or \"scopes\" or \"access\": \"closed\" in the config, to restrict it"
        );
    }
    let principal = served_as(&config, &args.caller);
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Problem::Io.because(e))?;
    let availability = Arc::new(Availability::default());
    let shared: Arc<OnceLock<Arc<Hub>>> = Arc::new(OnceLock::new());
    let running =
        Arc::new(Running::start(&config, live.clone(), availability.clone(), shared.clone(), runtime.handle().clone()));
    let hub = Hub::new(live.clone(), availability, config.toolset.clone(), principal, running.runner());
    let set = hub.check().map_err(|e| Problem::InvalidConfig.because(e))?;
    for d in set.diagnostics() {
        say_err!("note: {d}");
    }
    say_err!("toolsearch serve: MCP over stdio, index {}, {} tools visible", args.index.display(), set.visible().len());
    drop(set);
    let _ = shared.set(hub.clone());
    if args.watch > 0 {
        let caller = args.caller.clone();
        let watched = Watched {
            hub: hub.clone(),
            live,
            running,
            index: args.index.clone(),
            config: args.config.clone(),
            principal: Box::new(move |config| served_as(config, &caller)),
            seen,
        };
        runtime.spawn(watched.watch(Duration::from_secs(args.watch)));
    }
    let result = runtime.block_on(async move {
        let (input, output) = toolsearch::mcp::stdio_streams();
        serve_io(hub, input, output).await
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    result.map_err(|e| Problem::Io.because(e))
}
