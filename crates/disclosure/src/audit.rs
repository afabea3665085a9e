//! The audit trail: every search, choice, expansion, unfold, fold and call, in order.
//!
//! The behavioural rules of discovery are checkable from it: a call to a catalogue tool whose
//! full definition the model never saw (no `expand_tool`, no unfold, not pinned) is flagged
//! `called_without_expand` ("expand before calling"), and an expansion of a tool id that no
//! earlier search, listing or unfold showed is flagged `without_discovery` ("discover before
//! assuming": the model guessed the id).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsearch_query::ErrorCode;

/// How a catalogue tool call went, as the audit trail records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The tool ran and returned a result.
    Ok,
    /// The tool ran and reported its own failure.
    ToolError,
    /// The call was refused before running, with this code.
    Refused(ErrorCode),
}

impl CallOutcome {
    /// The recorded form: `ok`, `tool_error`, or the code in lower case.
    pub fn as_string(self) -> String {
        match self {
            CallOutcome::Ok => "ok".into(),
            CallOutcome::ToolError => "tool_error".into(),
            CallOutcome::Refused(code) => code.as_str().to_lowercase(),
        }
    }
}

impl Serialize for CallOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

impl<'de> Deserialize<'de> for CallOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "ok" => Ok(CallOutcome::Ok),
            "tool_error" => Ok(CallOutcome::ToolError),
            other => ErrorCode::ALL
                .iter()
                .find(|c| c.as_str().eq_ignore_ascii_case(other))
                .map(|&c| CallOutcome::Refused(c))
                .ok_or_else(|| serde::de::Error::custom(format!("unknown call outcome {other:?}"))),
        }
    }
}

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
        /// How it went (`ok`, `tool_error`, or the refusal's error code in lower case, e.g.
        /// `invalid_argument`, `unavailable`).
        outcome: CallOutcome,
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

/// Most bytes of text one audit field keeps (a longer query or name is cut, marked `…`).
pub const MAX_AUDIT_FIELD_BYTES: usize = 1024;
/// Most bytes the trail of one tool set holds; past it the oldest entries are dropped (step
/// numbers go on counting).
pub const MAX_AUDIT_BYTES: usize = 4 * 1024 * 1024;

/// The trail of one tool set, bounded by bytes: a long session, or a client sending huge
/// queries, cannot grow it past `MAX_AUDIT_BYTES`.
#[derive(Debug, Clone, Default)]
pub struct AuditTrail {
    entries: Vec<AuditEntry>,
    /// The JSON size of each entry.
    sizes: Vec<usize>,
    bytes: usize,
    steps: usize,
}

impl AuditTrail {
    /// Appends an event (its text fields cut to [`MAX_AUDIT_FIELD_BYTES`]), returning its step
    /// number.
    pub(crate) fn push(&mut self, event: AuditEvent) -> usize {
        self.steps += 1;
        let step = self.steps;
        let entry = AuditEntry { step, event: bounded(event) };
        let size = serde_json::to_string(&entry).map_or(MAX_AUDIT_FIELD_BYTES, |s| s.len());
        self.bytes += size;
        self.entries.push(entry);
        self.sizes.push(size);
        if self.bytes > MAX_AUDIT_BYTES {
            // Drop the oldest entries down to three quarters of the bound, in one move.
            let mut drop = 0;
            while drop < self.sizes.len() && self.bytes > MAX_AUDIT_BYTES / 4 * 3 {
                self.bytes -= self.sizes[drop];
                drop += 1;
            }
            self.entries.drain(..drop);
            self.sizes.drain(..drop);
        }
        step
    }

    /// Numbers the next entry after `step`: a trail that takes over from another (a set
    /// remade for a session that goes on) keeps its step numbers rising.
    pub(crate) fn continue_after(&mut self, step: usize) {
        self.steps = self.steps.max(step);
    }

    /// The number of the last step taken (0 before the first), kept or dropped.
    pub fn last_step(&self) -> usize {
        self.steps
    }

    /// The bytes the trail holds now (its JSON size).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Every entry kept, in order.
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

/// Cuts `text` to [`MAX_AUDIT_FIELD_BYTES`] on a character boundary.
fn cut(text: String) -> String {
    if text.len() <= MAX_AUDIT_FIELD_BYTES {
        return text;
    }
    let mut end = MAX_AUDIT_FIELD_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Arguments kept as given when small, else a note of their size.
fn cut_value(v: Value) -> Value {
    let size = serde_json::to_string(&v).map_or(usize::MAX, |s| s.len());
    if size <= MAX_AUDIT_FIELD_BYTES {
        v
    } else {
        serde_json::json!({ "truncated_bytes": size })
    }
}

/// The event with every free-text field bounded.
fn bounded(event: AuditEvent) -> AuditEvent {
    match event {
        AuditEvent::Search { tool, query, category_path, results } => AuditEvent::Search {
            tool: cut(tool),
            query: query.map(cut),
            category_path: cut(category_path),
            results: results.into_iter().take(50).map(cut).collect(),
        },
        AuditEvent::Rejected { name, reason } => AuditEvent::Rejected { name: cut(name), reason: cut(reason) },
        AuditEvent::Call { tool_id, via, arguments, outcome, called_without_expand } => AuditEvent::Call {
            tool_id: cut(tool_id),
            via: cut(via),
            arguments: cut_value(arguments),
            outcome,
            called_without_expand,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trail_that_takes_over_numbers_its_steps_on() {
        let step = |trail: &mut AuditTrail| trail.push(AuditEvent::Rejected { name: "x".into(), reason: "y".into() });
        let mut earlier = AuditTrail::default();
        assert_eq!((step(&mut earlier), step(&mut earlier), earlier.last_step()), (1, 2, 2));
        let mut later = AuditTrail::default();
        later.continue_after(earlier.last_step());
        assert_eq!(step(&mut later), 3);
        later.continue_after(1);
        assert_eq!(step(&mut later), 4, "never back");
    }

    #[test]
    fn the_trail_is_bounded_by_bytes_whatever_the_queries() {
        let mut trail = AuditTrail::default();
        let huge = "q".repeat(8 * 1024 * 1024);
        for i in 0..100 {
            trail.push(AuditEvent::Search {
                tool: "search_tool_by_category".into(),
                query: Some(huge.clone()),
                category_path: String::new(),
                results: vec![format!("t{i}")],
            });
            trail.push(AuditEvent::Rejected { name: huge.clone(), reason: "no such tool".into() });
        }
        assert!(trail.bytes() <= MAX_AUDIT_BYTES, "{}", trail.bytes());
        assert!(trail.bytes() < 200 * 4 * MAX_AUDIT_FIELD_BYTES, "{}", trail.bytes());
        assert_eq!(trail.last_seen_in_search("t99"), Some((1, 199)));
        let many = AuditEvent::Rejected { name: "x".repeat(MAX_AUDIT_FIELD_BYTES), reason: String::new() };
        for _ in 0..10_000 {
            trail.push(many.clone());
        }
        assert!(trail.bytes() <= MAX_AUDIT_BYTES, "{}", trail.bytes());
        assert_eq!(trail.entries().last().unwrap().step, 10_200);
    }
}
