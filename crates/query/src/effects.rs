//! Calls gated by what a tool does: a caller whose scopes include [`READ_ONLY`] may call only
//! tools their server marks read-only (`readOnlyHint: true`), and one whose scopes include
//! [`NO_DESTRUCTIVE`] no tool that may be destructive.
//!
//! These two scopes are limits, not grants: they take tools away from a caller, never add.
//! The tools stay visible (a search may show a read-only caller what exists); only the call is
//! refused, with `NOT_AUTHORIZED` naming the limit. The MCP annotations are hints that the
//! specification makes pessimistic by default, and so is this: a tool without annotations is
//! not read-only and may be destructive (`destructiveHint` defaults to true when
//! `readOnlyHint` is not).

use crate::{ErrorCode, Principal, ProtocolError};
use serde_json::Value;
use toolsearch_catalog::Tool;

/// The scope that limits a caller to tools marked read-only.
pub const READ_ONLY: &str = "read-only";
/// The scope that keeps a caller from tools that may be destructive.
pub const NO_DESTRUCTIVE: &str = "no-destructive";

/// What a tool's server says it does, from its MCP annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effects {
    /// `readOnlyHint: true`.
    pub read_only: bool,
    /// Not read-only, and `destructiveHint` not `false` (the specification's default).
    pub destructive: bool,
}

impl Effects {
    /// The effects of a gateway tool (its server's annotations are in `meta.annotations`).
    pub fn of(tool: &Tool) -> Effects {
        let meta = tool.details.meta.as_ref().map(|m| m.value()).unwrap_or(Value::Null);
        let hint = |name: &str| meta.get("annotations").and_then(|a| a.get(name)).and_then(Value::as_bool);
        let read_only = hint("readOnlyHint") == Some(true);
        Effects { read_only, destructive: !read_only && hint("destructiveHint") != Some(false) }
    }
}

/// Why `who` may not call `tool`, as the refusal the caller gets; `None` when the call may go.
pub fn refusal(who: &Principal, tool: &Tool) -> Option<ProtocolError> {
    let held = who.scopes()?;
    let effects = Effects::of(tool);
    let (limit, why) = if held.contains(READ_ONLY) && !effects.read_only {
        (READ_ONLY, "is not marked read-only by its server (readOnlyHint)")
    } else if held.contains(NO_DESTRUCTIVE) && effects.destructive {
        (NO_DESTRUCTIVE, "may be destructive: its server does not mark it read-only or destructiveHint: false")
    } else {
        return None;
    };
    let message = format!(
        "{} {why}, and this caller's scopes include {limit:?}, which allows only {} tools",
        tool.id,
        if limit == READ_ONLY { "read-only" } else { "non-destructive" }
    );
    Some(ProtocolError::new(ErrorCode::NotAuthorized, message).with_hints(vec![format!(
        "call it with a token whose scopes do not include {limit:?}, or pick a tool that only reads"
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolsearch_catalog::{Json, ToolDetails};

    fn tool(annotations: Option<Value>) -> Tool {
        let meta = annotations.map(|a| Json::from(serde_json::json!({"annotations": a})));
        Tool {
            id: "s.t".into(),
            name: "t".into(),
            details: ToolDetails { meta, ..ToolDetails::default() }.into(),
            ..Tool::default()
        }
    }

    #[test]
    fn limits_follow_the_annotations_pessimistically() {
        let read_only = Principal::with_scopes(["x", READ_ONLY]);
        let careful = Principal::with_scopes([NO_DESTRUCTIVE]);
        let plain = Principal::with_scopes(["x"]);
        let reader = tool(Some(serde_json::json!({"readOnlyHint": true})));
        let additive = tool(Some(serde_json::json!({"readOnlyHint": false, "destructiveHint": false})));
        let eraser = tool(Some(serde_json::json!({"destructiveHint": true})));
        let unmarked = tool(None);
        for t in [&reader, &additive, &eraser, &unmarked] {
            assert!(refusal(&plain, t).is_none(), "no limit, no refusal");
            assert!(refusal(&Principal::trusted(), t).is_none());
        }
        assert!(refusal(&read_only, &reader).is_none());
        for t in [&additive, &eraser, &unmarked] {
            let e = refusal(&read_only, t).expect("refused");
            assert_eq!(e.code, ErrorCode::NotAuthorized);
            assert!(e.message.contains("\"read-only\""), "{}", e.message);
        }
        assert!(refusal(&careful, &reader).is_none());
        assert!(refusal(&careful, &additive).is_none());
        for t in [&eraser, &unmarked] {
            assert!(refusal(&careful, t).expect("refused").message.contains("\"no-destructive\""));
        }
    }
}
