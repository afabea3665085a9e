//! What `toolsearch serve` runs tools and checks with, from its configuration's `executor`,
//! `checks` and `timeout_secs`, and replaced while it serves when those are edited (`--watch`).
//!
//! The hub holds one runner for good, a [`Switch`]: a call takes the runner current when it
//! starts and keeps it to its end, so an edit never changes a call under way. New checks run
//! once before they replace the old ones (whose threads stop), so a group is never judged by
//! a check that has not run; that first run holds nothing (the old checks serve meanwhile, and
//! the watch goes on), and the checks an edit asked for are dropped unrun if a later edit asked
//! for others first (edits are applied in the order the watch saw them, and numbered so that
//! finished checks know whether they are still the ones asked for).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;
use toolsearch::disclosure::{Availability, LiveCatalog, DEFAULT_TTL};
use toolsearch::exec::CommandExecutor;
use toolsearch::mcp::{
    BoxFuture, CallToolResult, CommandChecks, CommandRunner, FirstRun, Hub, NoRunner, RunContext, RunError,
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

    /// What the executor is made of (its timeout only when there is one).
    fn executor_part(&self) -> (Option<Vec<String>>, Option<Duration>) {
        (self.executor.clone(), self.executor.as_ref().map(|_| self.timeout))
    }

    /// What the checks are made of (their timeout only when there are some).
    fn checks_part(&self) -> (BTreeMap<String, Vec<String>>, Option<Duration>) {
        (self.checks.clone(), (!self.checks.is_empty()).then_some(self.timeout))
    }
}

/// What is applied, and what was asked for (edits numbered in the order they were applied; the
/// start is edit 0).
struct Applied {
    /// The settings of the executor in use (and of `timeout_secs`).
    settings: Settings,
    /// The checks the latest edit that changed them asked for, and that edit.
    checks_asked: Settings,
    checks_asked_edit: u64,
    /// The names of the checks running, and their threads.
    checks_running: Vec<String>,
    checks: CommandChecks,
}

/// New checks an edit asked for, not yet run: [`Running::finish`] runs them once and, if no
/// later edit asked for others meanwhile, puts them in place of the old.
pub(crate) struct Pending {
    edit: u64,
    settings: Settings,
}

/// The runner and the checks of a serving process.
pub(crate) struct Running {
    switch: Arc<Switch>,
    live: Arc<LiveCatalog>,
    availability: Arc<Availability>,
    hub: Arc<OnceLock<Arc<Hub>>>,
    runtime: tokio::runtime::Handle,
    applied: Mutex<Applied>,
    edits: AtomicU64,
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
        let checks = FirstRun::run(&settings.checks, settings.timeout).start(
            DEFAULT_TTL,
            &availability,
            announcer(&hub),
            runtime.clone(),
        );
        let applied = Applied {
            checks_running: settings.checks.keys().cloned().collect(),
            checks_asked: settings.clone(),
            checks_asked_edit: 0,
            settings,
            checks,
        };
        Running { switch, live, availability, hub, runtime, applied: Mutex::new(applied), edits: AtomicU64::new(0) }
    }

    /// The runner to give the hub: it runs with whatever was applied last.
    pub(crate) fn runner(&self) -> Arc<dyn ToolRunner> {
        self.switch.clone()
    }

    /// Applies an edited `config` (edits in the order they were made): its executor and
    /// timeout at once; what changed, named for the operator, and the new checks it asks for,
    /// if any, to [`finish`](Self::finish) (they run first, for up to the timeout, holding
    /// nothing).
    pub(crate) fn apply(&self, config: &ServeConfig) -> (Vec<&'static str>, Option<Pending>) {
        let new = Settings::of(config);
        let edit = self.edits.fetch_add(1, Ordering::SeqCst) + 1;
        let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
        let mut changed = Vec::new();
        if new.executor_part() != applied.settings.executor_part() {
            *self.switch.0.write().unwrap_or_else(|p| p.into_inner()) = runner_for(&new, &self.live);
            changed.push("executor");
        }
        if new.timeout != applied.settings.timeout {
            changed.push("timeout_secs");
        }
        applied.settings = new.clone();
        let mut pending = None;
        if new.checks_part() != applied.checks_asked.checks_part() {
            applied.checks_asked = new.clone();
            applied.checks_asked_edit = edit;
            pending = Some(Pending { edit, settings: new });
        }
        (changed, pending)
    }

    /// Runs `pending`'s checks once, then, if no later edit asked for other checks meanwhile,
    /// puts them in place of the old (whose threads stop; a check no longer named is
    /// forgotten, so its group is unavailable). Whether it did.
    pub(crate) fn finish(&self, pending: Pending) -> bool {
        let first = FirstRun::run(&pending.settings.checks, pending.settings.timeout);
        let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
        if applied.checks_asked_edit != pending.edit {
            return false;
        }
        let checks = first.start(DEFAULT_TTL, &self.availability, announcer(&self.hub), self.runtime.clone());
        for gone in applied.checks_running.iter().filter(|name| !pending.settings.checks.contains_key(*name)) {
            self.availability.unregister(gone);
        }
        applied.checks_running = pending.settings.checks.keys().cloned().collect();
        applied.checks = checks;
        true
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

/// How checks reach the hub to announce a change: once it is there.
fn announcer(hub: &Arc<OnceLock<Arc<Hub>>>) -> impl Fn() -> Option<Arc<Hub>> + Send + Sync + 'static {
    let hub = hub.clone();
    move || hub.get().cloned()
}
