//! What `toolsearch serve` runs tools and checks with, from its configuration's `executor`,
//! `checks` and `timeout_secs`, and replaced while it serves when those are edited (`--watch`).
//!
//! The hub holds one runner for good, a [`Switch`]: a call takes the runner current when it
//! starts and keeps it to its end, so an edit never changes a call under way. New checks run
//! once before they replace the old ones (whose threads stop), so a group is never judged by
//! a check that has not run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;
use toolsearch::disclosure::{Availability, LiveCatalog, DEFAULT_TTL};
use toolsearch::exec::CommandExecutor;
use toolsearch::mcp::{
    spawn_command_checks, BoxFuture, CallToolResult, CommandChecks, CommandRunner, Hub, NoRunner, RunContext, RunError,
    ServeConfig, ToolRunner,
};
use toolsearch::{Executor, Tool, ToolFailure};

/// What a call is answered with when the configuration names no executor.
const NO_EXECUTOR: &str = "this server runs no catalogue tools: its configuration names no \"executor\" command; \
     searching, listing and expanding work";

/// The runner the hub holds: whichever the configuration made last.
struct Switch(RwLock<Arc<dyn ToolRunner>>);

impl ToolRunner for Switch {
    fn run(&self, tool: Tool, arguments: Value, cx: RunContext) -> BoxFuture<Result<CallToolResult, RunError>> {
        let current = self.0.read().unwrap_or_else(|p| p.into_inner()).clone();
        current.run(tool, arguments, cx)
    }
}

/// The engine's executor when none is configured: every call says what to configure.
struct NoExecutor;

impl Executor for NoExecutor {
    fn execute(&self, _: &Tool, _: &Value) -> Result<Value, ToolFailure> {
        Err(ToolFailure::Executor(NO_EXECUTOR.into()))
    }
}

/// The settings this part applies: the executor, the checks, and how long either may run.
#[derive(Clone, PartialEq)]
struct Settings {
    executor: Option<Vec<String>>,
    checks: BTreeMap<String, Vec<String>>,
    timeout: Duration,
}

impl Settings {
    fn of(config: &ServeConfig) -> Settings {
        Settings {
            executor: config.executor.clone(),
            checks: config.checks.clone(),
            timeout: Duration::from_secs(config.timeout_secs.unwrap_or(60).max(1)),
        }
    }
}

/// The runner and the checks of a serving process.
pub(crate) struct Running {
    switch: Arc<Switch>,
    live: Arc<LiveCatalog>,
    availability: Arc<Availability>,
    hub: Arc<OnceLock<Arc<Hub>>>,
    runtime: tokio::runtime::Handle,
    /// The settings applied, and the checks' threads they started.
    applied: Mutex<(Settings, CommandChecks)>,
}

impl Running {
    /// Starts what `config` names: its executor for `live`'s calls, its checks (each run once
    /// before this returns) registered with `availability`; changes are announced through the
    /// hub once `hub` holds it.
    pub(crate) fn start(
        config: &ServeConfig,
        live: Arc<LiveCatalog>,
        availability: Arc<Availability>,
        hub: Arc<OnceLock<Arc<Hub>>>,
        runtime: tokio::runtime::Handle,
    ) -> Running {
        let settings = Settings::of(config);
        let switch = Arc::new(Switch(RwLock::new(runner_for(&settings, &live))));
        let checks = checks_for(&settings, &availability, &hub, &runtime);
        Running { switch, live, availability, hub, runtime, applied: Mutex::new((settings, checks)) }
    }

    /// The runner to give the hub: it runs with whatever was applied last.
    pub(crate) fn runner(&self) -> Arc<dyn ToolRunner> {
        self.switch.clone()
    }

    /// Applies `config`'s executor, checks and timeout, where they changed (blocking: new
    /// checks run once first); what changed, named for the operator, empty when nothing did.
    pub(crate) fn apply(&self, config: &ServeConfig) -> Vec<&'static str> {
        let new = Settings::of(config);
        let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
        let old = applied.0.clone();
        let mut changed = Vec::new();
        if new.executor != old.executor || (new.timeout != old.timeout && new.executor.is_some()) {
            *self.switch.0.write().unwrap_or_else(|p| p.into_inner()) = runner_for(&new, &self.live);
            changed.push("executor");
        }
        if new.checks != old.checks || (new.timeout != old.timeout && !new.checks.is_empty()) {
            let checks = checks_for(&new, &self.availability, &self.hub, &self.runtime);
            for gone in old.checks.keys().filter(|name| !new.checks.contains_key(*name)) {
                self.availability.unregister(gone);
            }
            applied.1 = checks;
            changed.push("checks");
        }
        if new.timeout != old.timeout {
            changed.push("timeout_secs");
        }
        applied.0 = new;
        changed
    }
}

/// The runner `settings` make, registering its executor with `live` (or one that refuses).
fn runner_for(settings: &Settings, live: &LiveCatalog) -> Arc<dyn ToolRunner> {
    match &settings.executor {
        Some(argv) => {
            let executor = Arc::new(CommandExecutor { argv: argv.clone(), timeout: settings.timeout });
            live.set_executor(executor.clone());
            Arc::new(CommandRunner(executor))
        }
        None => {
            live.set_executor(Arc::new(NoExecutor));
            Arc::new(NoRunner(NO_EXECUTOR.into()))
        }
    }
}

fn checks_for(
    settings: &Settings,
    availability: &Availability,
    hub: &Arc<OnceLock<Arc<Hub>>>,
    runtime: &tokio::runtime::Handle,
) -> CommandChecks {
    let hub = hub.clone();
    spawn_command_checks(
        &settings.checks,
        settings.timeout,
        DEFAULT_TTL,
        availability,
        move || hub.get().cloned(),
        runtime.clone(),
    )
}
