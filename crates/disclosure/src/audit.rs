//! The audit trail: every search, choice, expansion, unfold, fold and call, in order.
//!
//! The behavioural rules of discovery are checkable from it: a call to a catalogue tool whose
//! full definition the model never saw (no `expand_tool`, no unfold, not pinned) is flagged
//! `called_without_expand` ("expand before calling"), and an expansion of a tool id that no
//! earlier search, listing or unfold showed is flagged `without_discovery` ("discover before
//! assuming": the model guessed the id).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One step of an agent's interaction with its tool set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AuditEvent {
    /// A discovery search (`search_tool_by_category`, a `discover_*` tool, `search_nodes`, `list`).
    Search {
        /// The discovery tool called.
        tool: String,
        /// The query, if any.
        query: Option<String>,
        /// The category searched or listed ("" for the whole catalogue).
        category_path: String,
        /// Tool ids (or, for category searches, paths) in the answer, best first.
        results: Vec<String>,
    },
    /// The model picked a tool that an earlier search returned.
    Choose {
        /// The tool.
        tool_id: String,
        /// Its 1-based rank in that search.
        rank: usize,
        /// The step number of that search.
        search_step: usize,
    },
    /// The full definition of a tool was disclosed through `expand_tool` or a `full` search.
    Expand {
        /// The tool.
        tool_id: String,
        /// Set when no earlier search, listing or unfold showed this tool: the model assumed
        /// the id instead of discovering it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        without_discovery: bool,
    },
    /// A facade unfolded.
    Unfold {
        /// The facade's tool name.
        facade: String,
        /// The category or query chosen, for selectable facades.
        selection: Option<String>,
        /// Names of the tools it revealed.
        revealed: Vec<String>,
    },
    /// A facade folded back.
    Fold {
        /// The facade's tool name.
        facade: String,
    },
    /// A catalogue tool was called (directly or through `call_tool`).
    Call {
        /// The tool.
        tool_id: String,
        /// The name the model called (`call_tool` when through the meta-tool).
        via: String,
        /// The arguments given.
        arguments: Value,
        /// `ok`, `tool_error`, `invalid_argument`, `unavailable`, or another protocol error code.
        outcome: String,
        /// Set when the model never saw this tool's full definition before calling it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        called_without_expand: bool,
    },
    /// A call the set could not route: an unknown name, or a tool hidden right now.
    Rejected {
        /// The name called.
        name: String,
        /// Why.
        reason: String,
    },
}

impl AuditEvent {
    /// True for a call made without expanding the tool first, or an expansion of an id the
    /// model never discovered.
    pub fn breaks_a_rule(&self) -> bool {
        matches!(
            self,
            AuditEvent::Call { called_without_expand: true, .. } | AuditEvent::Expand { without_discovery: true, .. }
        )
    }
}

/// One numbered entry of the trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// 1-based position in the trail.
    pub step: usize,
    /// What happened.
    #[serde(flatten)]
    pub event: AuditEvent,
}

/// The trail of one tool set.
#[derive(Debug, Clone, Default)]
pub struct AuditTrail {
    entries: Vec<AuditEntry>,
}

impl AuditTrail {
    /// Appends an event, returning its step number.
    pub(crate) fn push(&mut self, event: AuditEvent) -> usize {
        let step = self.entries.len() + 1;
        self.entries.push(AuditEntry { step, event });
        step
    }

    /// Every entry, in order.
    pub fn entries(&self) -> &[AuditEntry] {
        &self.entries
    }

    /// The trail as JSON Lines, one entry per line.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            out.push_str(&serde_json::to_string(e).expect("audit entries serialise"));
            out.push('\n');
        }
        out
    }

    /// The steps that broke a rule: calls made without expanding the tool first, and
    /// expansions of ids the model never discovered.
    pub fn violations(&self) -> Vec<&AuditEntry> {
        self.entries.iter().filter(|e| e.event.breaks_a_rule()).collect()
    }

    /// The rank and step of the latest search that returned `tool_id`, if any.
    pub(crate) fn last_seen_in_search(&self, tool_id: &str) -> Option<(usize, usize)> {
        self.entries.iter().rev().find_map(|e| match &e.event {
            AuditEvent::Search { results, .. } => results.iter().position(|r| r == tool_id).map(|i| (i + 1, e.step)),
            _ => None,
        })
    }
}
