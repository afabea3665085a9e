//! Calls of catalogue tools, and the availability of their groups.

use super::*;

impl ToolSet {
    pub(super) fn call_tool(&mut self, engine: &Engine, id: &str, arguments: &Value, via: &str) -> (String, bool) {
        if let Some(message) = self.unavailable(engine, id) {
            return self.unavailable_call(id, via, arguments, message);
        }
        let without_expand = !self.disclosed.contains(id);
        self.note_choice(id);
        let req = CallToolRequest { tool_id: id.to_owned(), arguments: arguments.clone() };
        let (text, is_error, outcome) = match engine.call_tool_as(&self.config.principal, &req) {
            Ok(answer) => {
                let text = match &answer.result {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let outcome = if answer.is_error { "tool_error" } else { "ok" };
                (text, answer.is_error, outcome.to_owned())
            }
            Err(e) => (protocol_error_text(&e), true, e.code.as_str().to_lowercase()),
        };
        self.audit.push(AuditEvent::Call {
            tool_id: id.to_owned(),
            via: via.to_owned(),
            arguments: arguments.clone(),
            outcome,
            called_without_expand: without_expand,
        });
        (text, is_error)
    }

    pub(super) fn unavailable_call(
        &mut self,
        id: &str,
        via: &str,
        arguments: &Value,
        message: String,
    ) -> (String, bool) {
        self.audit.push(AuditEvent::Call {
            tool_id: id.to_owned(),
            via: via.to_owned(),
            arguments: arguments.clone(),
            outcome: "unavailable".into(),
            called_without_expand: !self.disclosed.contains(id),
        });
        (error_text("UNAVAILABLE", &message, vec!["tell the user what to start or configure, then retry".into()]), true)
    }

    /// Why tool `id` cannot be used right now (its group is unavailable), with the group's
    /// suggestion; `None` when it can. Authorization comes first: for a tool the caller may not
    /// use this says nothing (`None`), so the caller gets the same "no such tool" answer as
    /// for an id that does not exist, never the group's state or its suggestion.
    pub(super) fn unavailable(&self, engine: &Engine, id: &str) -> Option<String> {
        let tool = engine.tool(id).filter(|t| self.config.principal.may_use(t))?;
        let group = engine.catalog().groups.iter().find(|g| Some(&g.id) == tool.group.as_ref())?;
        if self.availability.is_available(group) {
            return None;
        }
        let suggestion = group.suggestion.clone().unwrap_or_else(|| match &group.check {
            Some(check) if self.availability.has_check(check) => format!("wait until the check {check:?} passes"),
            Some(check) => format!("the host has not registered the availability check {check:?}"),
            None => "the group names no availability check".to_owned(),
        });
        Some(format!("tool {id:?} is unavailable: group {:?} is not available right now. {suggestion}", group.id))
    }

    /// How many catalogue tools are in unavailable groups (searches fetch that many more).
    pub(super) fn unavailable_count(&self, engine: &Engine) -> usize {
        let down: HashSet<&str> = engine
            .catalog()
            .groups
            .iter()
            .filter(|g| !self.availability.is_available(g))
            .map(|g| g.id.as_str())
            .collect();
        if down.is_empty() {
            return 0;
        }
        let who = &self.config.principal;
        engine
            .catalog()
            .tools
            .iter()
            .filter(|t| who.may_use(t) && t.group.as_deref().is_some_and(|g| down.contains(g)))
            .count()
    }
}
