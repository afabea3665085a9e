//! Dispatching one model tool call by name: to a facade, a fold, a discovery tool or a
//! catalogue tool, a tool id or a client's spelling of one when `call_tool` is offered, and
//! the refusal, with the closest tools and the way back, when the name is nothing visible.

use super::*;
use toolsearch_query::{quoted, MAX_SUGGESTED};

/// `name` as the audit trail keeps a refused one: at most [`MAX_SUGGESTED`] bytes, so a huge
/// name sent to it does not make a huge trail line.
fn bounded(name: &str) -> String {
    let mut end = name.len().min(MAX_SUGGESTED);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

impl ToolSet {
    pub(super) fn dispatch(&mut self, engine: &Engine, name: &str, input: &Value) -> Reply {
        let visible = self.visible_entries(engine);
        if let Some(entry) = visible.iter().find(|e| self.entry_name(e).as_deref() == Some(name)).cloned() {
            return match entry {
                Entry::Facade(f) => self.unfold(engine, &f, input),
                Entry::Fold(f) => {
                    self.fold_back(&f);
                    Ok(format!("Folded {f} back: its tools are hidden again. Call {f} to reveal them."))
                }
                Entry::Discovery(d) => self.discover(engine, &d, input),
                Entry::Tool(id) => self.call_tool(engine, &id, input, name),
            };
        }
        // With call_tool offered, a tool id is accepted as a tool name too (models call what a
        // search returned): exactly a call_tool call, with all its checks (a tool the caller
        // may not see answers as if it did not exist).
        let usable = self.usable_tool(engine, name).is_some();
        let offers_call = self.derived.discovery.contains(&DiscoveryTool::Call);
        if offers_call && usable {
            return self.call_tool(engine, name, input, name);
        }
        // A tool the session has not revealed, called by a name in any spelling clients use
        // (`TOOL`, `SERVER__TOOL`, `mcp__SERVER__TOOL`, any case): with call_tool offered it
        // runs when the caller may use it, as call_tool would run it (every check included),
        // unless an exclusive unfold holds all else back. Models call what they remember.
        if offers_call && !self.unfolds.iter().any(|u| u.exclusive) {
            // An id under a pending group's prefix (its tools not listed yet), in any spelling:
            // its state, before a bare name could be read as another server's tool.
            if let Some(message) = self.not_listed_yet(engine, name) {
                return self.unavailable_call(name, name, input, message);
            }
            let who = &self.config.principal;
            let meant: Vec<String> =
                engine.tools_called(name, |t| who.may_use(t)).into_iter().map(|t| t.id.clone()).collect();
            match meant.as_slice() {
                [id] => return self.call_tool(engine, id, input, name),
                [] => {}
                several => {
                    let reason = format!("{} names several tools: {}", quoted(name), several.join(", "));
                    self.audit.push(AuditEvent::Rejected { name: bounded(name), reason: reason.clone() });
                    let hint = "call call_tool with one of these as tool_id".to_owned();
                    return Err(refusal(ErrorCode::UnknownTool, &reason, vec![hint]).into());
                }
            }
        }
        let reason = match self.entry_by_name(engine, name) {
            Some(Entry::Tool(id)) if self.shown.iter().any(|(_, e)| e == &Entry::Tool(id.clone())) => {
                if let Some(message) = self.unavailable(engine, &id) {
                    return self.unavailable_call(&id, name, input, message);
                }
                self.not_visible_hint(name)
            }
            Some(_) => self.not_visible_hint(name),
            None => format!("there is no tool called {}", quoted(name)),
        };
        self.audit.push(AuditEvent::Rejected { name: bounded(name), reason: reason.clone() });
        let mut hints = self.closest_hint(engine, name);
        hints.extend(self.recovery_hints());
        Err(refusal(ErrorCode::UnknownTool, &reason, hints).into())
    }

    /// With call_tool offered, the tools the caller may use whose names come closest to `name`
    /// (a search for it, its `_`, `-` and `.` read as spaces), for a model that called a tool
    /// that is not there. Drawn from those tools only, as any search is: the hint depends on
    /// the name asked, never on a hidden tool. None while an exclusive unfold holds call_tool
    /// back with everything else: the way on is its fold tool.
    fn closest_hint(&self, engine: &Engine, name: &str) -> Vec<String> {
        let exclusive = self.unfolds.iter().any(|u| u.exclusive);
        if exclusive || !self.derived.discovery.contains(&DiscoveryTool::Call) || name.len() > MAX_SUGGESTED {
            return Vec::new();
        }
        let query: String = name.chars().map(|c| if matches!(c, '_' | '-' | '.') { ' ' } else { c }).collect();
        let req = SearchToolsRequest { query, limit: Some(3), ..SearchToolsRequest::default() };
        let Ok(answer) = engine.search_tool_by_category(&self.config.principal, &req) else {
            return Vec::new();
        };
        let ids: Vec<&str> = answer
            .results
            .iter()
            .filter(|p| self.unavailable(engine, &p.tool_id).is_none())
            .map(|p| p.tool_id.as_str())
            .collect();
        match ids.is_empty() {
            true => Vec::new(),
            false => vec![format!("the closest tools you may use: {} (call_tool with one as tool_id)", ids.join(", "))],
        }
    }

    fn not_visible_hint(&self, name: &str) -> String {
        match self.unfolds.iter().find(|u| u.exclusive) {
            Some(u) => format!("{} is not available while {} is unfolded", quoted(name), u.facade),
            None => format!("{} is not one of the tools available now", quoted(name)),
        }
    }

    fn recovery_hints(&self) -> Vec<String> {
        let mut hints = Vec::new();
        if let Some(u) = self.unfolds.iter().find(|u| u.exclusive) {
            let facade = self.derived.facades.get(&u.facade);
            if facade.is_some_and(|f| f.foldable) {
                hints.push(format!("call {} to return to the other tools", fold_name(&u.facade)));
            }
        } else if self.derived.discovery.contains(&DiscoveryTool::SearchTools) {
            hints.push("call search_tool_by_category to find a tool for the task, then expand_tool".into());
        } else if let Some(d) = self.derived.discovery.iter().find(|d| matches!(d, DiscoveryTool::Domain(_))) {
            hints.push(format!("call {} to find a tool for the task, then expand_tool", d.name()));
        }
        hints.push(format!("the tools available now are: {}", self.last_visible.join(", ")));
        hints
    }
}
