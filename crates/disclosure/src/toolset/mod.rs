//! The tool set: what the model sees now, and how each of its tool calls changes that.
//!
//! The host feeds every model tool call to [`ToolSet::call`] and gets the result text plus
//! the change to the visible set (`added`, `removed`). Entries are kept by identity (tool
//! id, facade name, discovery tool), never by position, so a catalogue that changes under
//! the set (tools registered at run time) does not invalidate them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolsearch_catalog::{CategoryPath, Group, Pending, Tool};
use toolsearch_query::{
    CallToolRequest, Engine, ErrorCode, ExpandToolRequest, ListRequest, MatchMode, Principal, ProtocolError,
    SearchNodesRequest, SearchToolsRequest, ToolFailure,
};

use crate::audit::{AuditEvent, AuditTrail, CallOutcome};
use crate::definition::{input_schema, ToolDef};
use crate::discovery::{Detail, DiscoveryConfig, DiscoveryTool, PROMPT_TAG};
use crate::error::DisclosureError;
use crate::facade::{fold_name, is_discovery_name, Facade, Inner, Item, Select};
use crate::groups::Availability;
use crate::live::LiveCatalog;
use crate::names::{Diagnostic, Names};

mod calls;
mod derive;
mod discover;
mod dispatch;
mod entries;
mod unfold;

pub use calls::{PendingCall, Step};
use derive::derive;

/// How deep facades may nest unless configured otherwise.
pub const DEFAULT_MAX_DEPTH: usize = 4;

/// How a tool set is put together.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSetConfig {
    /// Discovery tools.
    pub discovery: DiscoveryConfig,
    /// Catalogue tool ids that are always visible (core tools).
    pub pinned: Vec<String>,
    /// Catalogue tools never deferred, by id or glob on ids (`github.*`, `fs.read_?ile`):
    /// listed ahead of everything else, sorted by id, in every list; tools that appear later
    /// (a server that comes up) join them. On MCP each carries
    /// `_meta["anthropic/alwaysLoad"] = true`. Unlike `pinned`, an id no tool has is no error.
    pub always_load: Vec<String>,
    /// Whether catalogue nodes with `facade` settings become facades.
    pub node_facades: bool,
    /// How deep facades may nest.
    pub max_depth: usize,
    /// Facades built in code, besides the catalogue's.
    #[serde(skip)]
    pub facades: Vec<Facade>,
    /// Who the model acts for: tools its scopes do not allow never appear.
    #[serde(skip)]
    pub principal: Principal,
}

impl Default for ToolSetConfig {
    fn default() -> Self {
        ToolSetConfig {
            discovery: DiscoveryConfig::default(),
            pinned: Vec::new(),
            always_load: Vec::new(),
            node_facades: true,
            max_depth: DEFAULT_MAX_DEPTH,
            facades: Vec::new(),
            principal: Principal::trusted(),
        }
    }
}

/// The answer to one model tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The tool result text for the model.
    pub text: String,
    /// Whether the result is an error (the model should change course).
    pub is_error: bool,
    /// Names that became visible.
    pub added: Vec<String>,
    /// Names that stopped being visible.
    pub removed: Vec<String>,
}

/// A change to the visible set outside a tool call (folding, the end of an interaction, a
/// group's availability changing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Names that became visible.
    pub added: Vec<String>,
    /// Names that stopped being visible.
    pub removed: Vec<String>,
}

/// One thing the set can show.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Entry {
    Tool(String),
    Facade(String),
    Fold(String),
    Discovery(DiscoveryTool),
}

/// An unfolded facade.
#[derive(Debug, Clone)]
struct Unfolded {
    facade: String,
    revealed: Vec<Entry>,
    removed_facade: bool,
    exclusive: bool,
    /// The first sequence number shown after the unfold (exclusive mode shows only these).
    since: u64,
}

/// Everything derived from one catalogue generation.
#[derive(Debug)]
struct Derived {
    generation: u64,
    facades: HashMap<String, Facade>,
    facade_by_path: HashMap<CategoryPath, String>,
    /// Facades not nested in another, in display order.
    top_level: Vec<String>,
    discovery: Vec<DiscoveryTool>,
    names: Names,
    diagnostics: Vec<Diagnostic>,
    /// The tools `always_load` names that the caller may use, sorted by id.
    always: Vec<String>,
}

/// The tools visible to the model now, and the runtime that changes them.
///
/// A clone is a set of its own that starts where this one is: cheap (what is derived from the
/// catalogue is shared), so a host that serves many short-lived sets (one per request of a
/// session-free client) builds one per caller and clones it.
#[derive(Clone)]
pub struct ToolSet {
    live: Arc<LiveCatalog>,
    availability: Arc<Availability>,
    config: ToolSetConfig,
    /// Shared by clones; replaced (never changed in place) when the catalogue changes.
    derived: Arc<Derived>,
    shown: Vec<(u64, Entry)>,
    next_seq: u64,
    /// The sequence numbers below this one are the set's start (pinned tools, facades,
    /// discovery tools): listed in that order, ahead of all shown later.
    stable: u64,
    unfolds: Vec<Unfolded>,
    /// Tools whose full definition the model has seen.
    disclosed: HashSet<String>,
    audit: AuditTrail,
    last_visible: Vec<String>,
    /// Set while [`ToolSet::begin_call`] dispatches: catalogue tool calls are handed to the
    /// host rather than run through the engine's executor.
    deferring: bool,
    /// The call handed over by the current [`ToolSet::begin_call`].
    pending: Option<PendingCall>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet").field("visible", &self.last_visible).finish()
    }
}

impl ToolSet {
    /// A tool set over `live`, with group availability from `availability` (share one per
    /// host). Fails on unusable facade settings, facade cycles or over-deep nesting, unknown
    /// pinned tools or discovery domains.
    pub fn new(
        live: Arc<LiveCatalog>,
        availability: Arc<Availability>,
        config: ToolSetConfig,
    ) -> Result<ToolSet, DisclosureError> {
        let engine = live.engine();
        let derived = Arc::new(derive(&engine, &config)?);
        for id in &config.pinned {
            if engine.tool(id).is_none() {
                return Err(DisclosureError::UnknownPinnedTool(id.clone()));
            }
        }
        let mut set = ToolSet {
            live,
            availability,
            config,
            derived,
            shown: Vec::new(),
            next_seq: 0,
            stable: 0,
            unfolds: Vec::new(),
            disclosed: HashSet::new(),
            audit: AuditTrail::default(),
            last_visible: Vec::new(),
            deferring: false,
            pending: None,
        };
        let mut initial: Vec<Entry> = set.config.pinned.iter().cloned().map(Entry::Tool).collect();
        initial.extend(set.derived.top_level.iter().cloned().map(Entry::Facade));
        initial.extend(set.derived.discovery.iter().cloned().map(Entry::Discovery));
        set.disclosed.extend(set.config.pinned.iter().cloned());
        for e in initial {
            set.show(e);
        }
        set.stable = set.next_seq;
        set.last_visible = set.visible_names();
        Ok(set)
    }

    /// The definitions visible now, in order.
    pub fn visible(&self) -> Vec<ToolDef> {
        let engine = self.live.engine();
        self.visible_entries(&engine).iter().filter_map(|e| self.definition(&engine, e)).collect()
    }

    /// The names visible now, in order.
    pub fn visible_names(&self) -> Vec<String> {
        let engine = self.live.engine();
        self.visible_entries(&engine).iter().filter_map(|e| self.entry_name(e)).collect()
    }

    /// The definition a name stands for, visible or not (facades, discovery tools and every
    /// catalogue tool the caller may use).
    pub fn definition_of(&self, name: &str) -> Option<ToolDef> {
        let engine = self.live.engine();
        let entry = self.entry_by_name(&engine, name)?;
        self.definition(&engine, &entry)
    }

    /// The name catalogue tool `id` is called by in this set (its sanitised name, or its
    /// sanitised id when the name clashes).
    pub fn tool_name(&self, id: &str) -> Option<String> {
        self.derived.names.name(id).map(str::to_owned)
    }

    /// Whether catalogue tool `id` is one `always_load` names (listed ahead, never deferred).
    pub fn always_loaded(&self, id: &str) -> bool {
        self.derived.always.binary_search_by(|a| a.as_str().cmp(id)).is_ok()
    }

    /// The catalogue tool a name stands for in this set, if it stands for one.
    pub fn tool_id(&self, name: &str) -> Option<String> {
        self.derived.names.id(name).map(str::to_owned)
    }

    /// Problems worked around while building the set (duplicate tool names).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.derived.diagnostics
    }

    /// The audit trail so far.
    pub fn audit(&self) -> &AuditTrail {
        &self.audit
    }

    /// Takes over from `earlier`, a set this one replaces in the same session (its
    /// configuration changed): its audit steps are numbered on from `earlier`'s.
    pub fn continue_from(&mut self, earlier: &ToolSet) {
        self.audit.continue_after(earlier.audit.last_step());
    }

    /// The configuration.
    pub fn config(&self) -> &ToolSetConfig {
        &self.config
    }

    /// The facades of this set (code-built and from the catalogue), by name.
    pub fn facades(&self) -> Vec<&Facade> {
        let mut v: Vec<&Facade> = self.derived.facades.values().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Names of the discovery tools of this set.
    pub fn discovery_names(&self) -> Vec<String> {
        self.derived.discovery.iter().map(DiscoveryTool::name).collect()
    }

    /// Recomputes visibility (groups whose availability changed, a catalogue that changed)
    /// and reports the change since the last call or refresh.
    pub fn refresh(&mut self) -> Change {
        self.sync_catalogue();
        let now = self.visible_names();
        let change = diff(&self.last_visible, &now);
        self.last_visible = now;
        change
    }

    /// Handles one model tool call: `name` as the model called it, `input` its arguments.
    /// Never fails: problems are error results the model can act on. Catalogue tools run
    /// through the engine's executor, inside this call.
    pub fn call(&mut self, name: &str, input: &Value) -> Outcome {
        self.sync_catalogue();
        let before = self.last_visible.clone();
        let engine = self.live.engine();
        let (text, is_error) = reply_text(self.dispatch(&engine, name, input));
        let after = self.visible_names();
        let change = diff(&before, &after);
        self.last_visible = after;
        Outcome { text, is_error, added: change.added, removed: change.removed }
    }

    /// Folds an unfolded facade back (the API form of its `fold_<name>` tool).
    pub fn fold(&mut self, facade: &str) -> Result<Change, DisclosureError> {
        if !self.unfolds.iter().any(|u| u.facade == facade) {
            return Err(DisclosureError::NotUnfolded(facade.to_owned()));
        }
        self.fold_back(facade);
        Ok(self.refresh())
    }

    /// Ends the interaction: exclusive facades fold back, so every other tool returns.
    pub fn end_interaction(&mut self) -> Change {
        let exclusive: Vec<String> = self.unfolds.iter().filter(|u| u.exclusive).map(|u| u.facade.clone()).collect();
        for f in exclusive.iter().rev() {
            if self.unfolds.iter().any(|u| &u.facade == f) {
                self.fold_back(f);
            }
        }
        self.refresh()
    }
}

fn diff(before: &[String], after: &[String]) -> Change {
    let b: HashSet<&String> = before.iter().collect();
    let a: HashSet<&String> = after.iter().collect();
    Change {
        added: after.iter().filter(|n| !b.contains(n)).cloned().collect(),
        removed: before.iter().filter(|n| !a.contains(n)).cloned().collect(),
    }
}

/// What a model tool call answers: the text the model reads, or why it was refused.
pub(crate) type Reply = Result<String, Refused>;

/// A tool call that did not succeed.
#[derive(Debug, Clone)]
pub(crate) enum Refused {
    /// Refused by the set or the engine; the model reads the error as compact JSON
    /// (`{code, message, hints, next_action}`).
    Protocol(ProtocolError),
    /// The tool ran and failed; the model reads its own words.
    ToolFailed(String),
}

impl From<ProtocolError> for Refused {
    fn from(e: ProtocolError) -> Refused {
        Refused::Protocol(e)
    }
}

/// The text and error flag the model sees for a reply.
pub(crate) fn reply_text(reply: Reply) -> (String, bool) {
    match reply {
        Ok(text) => (text, false),
        Err(Refused::Protocol(e)) => (serde_json::to_string(&e).expect("errors serialise"), true),
        Err(Refused::ToolFailed(text)) => (text, true),
    }
}

/// A refusal with hints and no next action.
fn refusal(code: ErrorCode, message: &str, hints: Vec<String>) -> ProtocolError {
    ProtocolError::new(code, message).with_hints(hints)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_move_between_threads_and_availability_is_shared() {
        fn send<T: Send>() {}
        fn sync<T: Send + Sync>() {}
        send::<ToolSet>();
        sync::<Availability>();
        sync::<LiveCatalog>();
    }

    #[test]
    fn changes_list_what_appeared_and_disappeared_in_order() {
        let before = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let after = vec!["c".to_owned(), "d".to_owned(), "a".to_owned()];
        let change = diff(&before, &after);
        assert_eq!(change.added, vec!["d"]);
        assert_eq!(change.removed, vec!["b"]);
    }
}
