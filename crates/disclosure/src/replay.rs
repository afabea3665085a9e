//! Replaying a script of model tool calls against a tool set: how a user sees what the model
//! would see.
//!
//! A script is JSON Lines. Each line is one of:
//! - `{"config": {...}}` (first line only): a [`ToolSetConfig`] plus optional `"scopes": [..]`;
//! - `{"call": "name", "input": {...}}`: a model tool call;
//! - `{"check": "name", "available": false}`: the host's availability check starts answering so;
//! - `{"advance_secs": 11}`: time passes (checks are cached for their TTL);
//! - `{"fold": "facade"}`: the host folds a facade back; `{"end_interaction": true}`;
//! - `{"register": {"tools": [...]}}`: tools are added to the catalogue at run time;
//! - `{"comment": "..."}`: printed as is.
//!
//! Tool calls are not executed: the replay executor answers with what it was asked to run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use toolsearch_catalog::{Tool, Visibility};
use toolsearch_query::{Executor, Principal, ToolFailure};

use crate::audit::AuditEntry;
use crate::definition::ToolDef;
use crate::error::DisclosureError;
use crate::groups::{Availability, ManualClock};
use crate::live::LiveCatalog;
use crate::names::Diagnostic;
use crate::toolset::{ToolSet, ToolSetConfig};

/// One parsed script line.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A model tool call.
    Call {
        /// The name called.
        name: String,
        /// Its input.
        input: Value,
    },
    /// An availability check changes its answer.
    Check {
        /// The check's name.
        name: String,
        /// What it answers from now on.
        available: bool,
    },
    /// Time passes.
    Advance(Duration),
    /// The host folds a facade.
    Fold(String),
    /// The interaction ends.
    EndInteraction,
    /// Tools registered at run time (a manifest fragment).
    Register(Value),
    /// A remark.
    Comment(String),
}

/// A loaded script.
#[derive(Debug, Clone)]
pub struct Script {
    /// The configuration (default when the script has no `config` line).
    pub config: ToolSetConfig,
    /// The actions with their 1-based line numbers.
    pub actions: Vec<(usize, Action)>,
}

impl Script {
    /// Reads and checks a script; errors name the file and line.
    pub fn load(file: &Path) -> Result<Script, DisclosureError> {
        let text = std::fs::read_to_string(file).map_err(|e| DisclosureError::Script {
            file: file.to_path_buf(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        Script::parse(file, &text)
    }

    /// Parses script text (`file` names it in errors).
    pub fn parse(file: &Path, text: &str) -> Result<Script, DisclosureError> {
        let mut config = ToolSetConfig::default();
        let mut actions = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let bad = |message: String| DisclosureError::Script { file: file.to_path_buf(), line: n, message };
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
            let Some(obj) = value.as_object() else { return Err(bad("each line must be a JSON object".into())) };
            let str_field = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
            let action = if let Some(c) = obj.get("config") {
                if !actions.is_empty() {
                    return Err(bad("`config` must come before every other line".into()));
                }
                let mut c = c.clone();
                let scopes = c.as_object_mut().and_then(|o| o.remove("scopes"));
                config = serde_json::from_value(c).map_err(|e| bad(format!("config: {e}")))?;
                if let Some(scopes) = scopes {
                    let scopes: Vec<String> =
                        serde_json::from_value(scopes).map_err(|e| bad(format!("config.scopes: {e}")))?;
                    config.principal = Principal::with_scopes(scopes);
                }
                continue;
            } else if let Some(name) = str_field("call") {
                let input = obj.get("input").cloned().unwrap_or_else(|| json!({}));
                if !input.is_object() {
                    return Err(bad("`input` must be an object".into()));
                }
                Action::Call { name, input }
            } else if let Some(name) = str_field("check") {
                let available = obj
                    .get("available")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| bad("a `check` line needs \"available\": true or false".into()))?;
                Action::Check { name, available }
            } else if let Some(v) = obj.get("advance_secs") {
                let secs = v.as_f64().filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9);
                Action::Advance(Duration::from_secs_f64(
                    secs.ok_or_else(|| bad("`advance_secs` must be a non-negative number".into()))?,
                ))
            } else if let Some(f) = str_field("fold") {
                Action::Fold(f)
            } else if obj.get("end_interaction").is_some() {
                Action::EndInteraction
            } else if let Some(r) = obj.get("register") {
                Action::Register(r.clone())
            } else if let Some(c) = str_field("comment") {
                Action::Comment(c)
            } else {
                let keys: Vec<&String> = obj.keys().collect();
                return Err(bad(format!(
                    "unknown line {keys:?}: expected one of config, call, check, advance_secs, fold, end_interaction, register, comment"
                )));
            };
            actions.push((n, action));
        }
        Ok(Script { config, actions })
    }

    /// Whether the script changes the catalogue (so it should run on a copy of the index).
    pub fn registers_tools(&self) -> bool {
        self.actions.iter().any(|(_, a)| matches!(a, Action::Register(_)))
    }

    /// Runs the script against `live`. Every conditional group's check starts available.
    pub fn run(&self, live: Arc<LiveCatalog>) -> Result<Replay, DisclosureError> {
        let clock = Arc::new(ManualClock::default());
        let availability = Arc::new(Availability::new(clock.clone()));
        let mut flags: HashMap<String, Arc<AtomicBool>> = HashMap::new();
        let engine = live.engine();
        for group in engine.catalog().groups.iter().filter(|g| g.visibility == Visibility::Conditional) {
            if let Some(check) = &group.check {
                let flag = flags.entry(check.clone()).or_insert_with(|| Arc::new(AtomicBool::new(true))).clone();
                availability.register(check.clone(), move || flag.load(Ordering::SeqCst));
            }
        }
        live.set_executor(Arc::new(ReplayExecutor));
        let mut set = ToolSet::new(live.clone(), availability, self.config.clone())?;
        let mut replay = Replay {
            system_prompt: set.system_prompt(),
            diagnostics: set.diagnostics().to_vec(),
            initial: set.visible_names(),
            steps: Vec::new(),
            audit: Vec::new(),
            final_definitions: Vec::new(),
        };
        for (line, action) in &self.actions {
            let mut step = Step { line: *line, action: describe(action), ..Step::default() };
            match action {
                Action::Call { name, input } => {
                    let outcome = set.call(name, input);
                    step.result = Some(outcome.text);
                    step.is_error = outcome.is_error;
                    step.added = outcome.added;
                    step.removed = outcome.removed;
                }
                Action::Check { name, available } => {
                    let Some(flag) = flags.get(name) else {
                        return Err(DisclosureError::Script {
                            file: PathBuf::from("script"),
                            line: *line,
                            message: format!("no conditional group uses the check {name:?}"),
                        });
                    };
                    flag.store(*available, Ordering::SeqCst);
                    step.change_only(set.refresh());
                }
                Action::Advance(by) => {
                    clock.advance(*by);
                    step.change_only(set.refresh());
                }
                Action::Fold(f) => step.change_only(set.fold(f)?),
                Action::EndInteraction => step.change_only(set.end_interaction()),
                Action::Register(fragment) => {
                    let added = live.register_tools(fragment)?;
                    step.result = Some(format!("registered {added} tool(s); the index was rebuilt"));
                    step.change_only(set.refresh());
                }
                Action::Comment(_) => {}
            }
            step.visible = set.visible_names();
            replay.steps.push(step);
        }
        replay.audit = set.audit().entries().to_vec();
        replay.final_definitions = set.visible();
        Ok(replay)
    }
}

/// What a replay showed.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    /// The system-prompt snippet of the configured set.
    pub system_prompt: String,
    /// Problems the set worked around (duplicate names).
    pub diagnostics: Vec<Diagnostic>,
    /// The names visible before the first step.
    pub initial: Vec<String>,
    /// One entry per script line.
    pub steps: Vec<Step>,
    /// The audit trail.
    pub audit: Vec<AuditEntry>,
    /// The definitions visible at the end (not serialised: render them in a model's format).
    #[serde(skip)]
    pub final_definitions: Vec<ToolDef>,
}

/// One replayed line.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Step {
    /// Script line.
    pub line: usize,
    /// What happened, in words.
    pub action: String,
    /// The tool result text (tool calls and registrations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Whether the result is an error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Names that became visible.
    pub added: Vec<String>,
    /// Names that stopped being visible.
    pub removed: Vec<String>,
    /// Names visible afterwards.
    pub visible: Vec<String>,
}

impl Step {
    fn change_only(&mut self, change: crate::toolset::Change) {
        self.added = change.added;
        self.removed = change.removed;
    }
}

fn describe(action: &Action) -> String {
    match action {
        Action::Call { name, input } => format!("call {name} {input}"),
        Action::Check { name, available } => {
            format!("check {name} now answers {}", if *available { "available" } else { "unavailable" })
        }
        Action::Advance(by) => format!("{} s pass", by.as_secs_f64()),
        Action::Fold(f) => format!("host folds {f}"),
        Action::EndInteraction => "the interaction ends".into(),
        Action::Register(fragment) => {
            let ids: Vec<&str> = fragment
                .get("tools")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|t| t.get("id").and_then(Value::as_str)).collect())
                .unwrap_or_default();
            format!("register tools {}", ids.join(", "))
        }
        Action::Comment(c) => format!("# {c}"),
    }
}

/// Answers calls without running anything.
struct ReplayExecutor;

impl Executor for ReplayExecutor {
    fn execute(&self, tool: &Tool, arguments: &Value) -> Result<Value, ToolFailure> {
        Ok(json!({"replayed": true, "tool_id": tool.id, "arguments": arguments}))
    }
}
