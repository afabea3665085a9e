//! Calls of catalogue tools, and the availability of their groups.

use super::*;
use crate::render::Dialect;

/// A catalogue tool call that passed every check of the tool set and the engine (visible,
/// available, authorized, arguments valid) and now has to run. Its result goes back through
/// [`ToolSet::finish_call`]; the set is not borrowed meanwhile, so a slow call blocks nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    /// The catalogue tool.
    pub tool_id: String,
    /// Its arguments, valid against its `args_schema`.
    pub arguments: Value,
    via: String,
    without_expand: bool,
    before: Vec<String>,
}

/// What [`ToolSet::begin_call`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The call was answered by the tool set itself (a facade, a discovery tool, an error).
    Done(Outcome),
    /// A catalogue tool must run: run it, then report with [`ToolSet::finish_call`].
    Run(PendingCall),
}

impl ToolSet {
    /// Handles one model tool call up to the point where a catalogue tool has to run. Facades,
    /// discovery and every refusal are answered at once ([`Step::Done`]); a call that passed
    /// every check comes back as [`Step::Run`], for the host to run however it runs tools
    /// (an upstream MCP session, a command) without holding the set.
    pub fn begin_call(&mut self, name: &str, input: &Value) -> Step {
        self.sync_catalogue();
        let before = self.last_visible.clone();
        let engine = self.live.engine();
        self.pending = None;
        self.deferring = true;
        let (text, is_error) = reply_text(self.dispatch(&engine, name, input));
        self.deferring = false;
        if let Some(mut pending) = self.pending.take() {
            pending.before = before;
            return Step::Run(pending);
        }
        let after = self.visible_names();
        let change = diff(&before, &after);
        self.last_visible = after;
        Step::Done(Outcome { text, is_error, added: change.added, removed: change.removed })
    }

    /// Handles every tool call among `items`, a model's response as its API gives it (OpenAI's
    /// `tool_calls` or Responses `output`, Anthropic's `content`, Gemini's `parts`, as JSON;
    /// [`crate::model_calls`]), in order, each as [`ToolSet::call`] does; the answers to send
    /// back, in that API's shape. Arguments that do not parse are answered with an error, unrun.
    /// Refused for [`Dialect::Mcp`], which no model speaks.
    pub fn handle_calls(&mut self, items: &[Value], dialect: Dialect) -> Result<Vec<Value>, DisclosureError> {
        let mut answers = Vec::new();
        for call in crate::model_calls::model_calls(items, dialect)? {
            let (text, is_error) = match &call.unreadable {
                Some(why) => (why.clone(), true),
                None => {
                    let outcome = self.call(&call.name, &call.arguments);
                    (outcome.text, outcome.is_error)
                }
            };
            answers.push(crate::model_calls::model_answer(dialect, &call, &text, is_error)?);
        }
        Ok(answers)
    }

    /// Records how a [`PendingCall`] went (`Ok(text)`, or the tool's own failure) and returns
    /// the outcome with the change to the visible set.
    pub fn finish_call(&mut self, pending: PendingCall, result: Result<String, ToolFailure>) -> Outcome {
        let (text, is_error) = match result {
            Ok(text) => (text, false),
            Err(failure) => (failure.to_string(), true),
        };
        self.audit.push(AuditEvent::Call {
            tool_id: pending.tool_id,
            via: pending.via,
            arguments: pending.arguments,
            outcome: if is_error { CallOutcome::ToolError } else { CallOutcome::Ok },
            called_without_expand: pending.without_expand,
        });
        let after = self.visible_names();
        let change = diff(&pending.before, &after);
        self.last_visible = after;
        Outcome { text, is_error, added: change.added, removed: change.removed }
    }

    /// Refuses a [`PendingCall`] the host will not run after all (a check of its own, such as
    /// the gateway's limits on what a token may call): recorded as refused with `error`'s code,
    /// answered with `error` as every refusal is.
    pub fn refuse_call(&mut self, pending: PendingCall, error: ProtocolError) -> Outcome {
        self.audit.push(AuditEvent::Call {
            tool_id: pending.tool_id,
            via: pending.via,
            arguments: pending.arguments,
            outcome: CallOutcome::Refused(error.code),
            called_without_expand: pending.without_expand,
        });
        let (text, is_error) = reply_text(Err(error.into()));
        let after = self.visible_names();
        let change = diff(&pending.before, &after);
        self.last_visible = after;
        Outcome { text, is_error, added: change.added, removed: change.removed }
    }

    pub(super) fn call_tool(&mut self, engine: &Engine, id: &str, arguments: &Value, via: &str) -> Reply {
        // The id as the catalogue has it: a padded one is found as the engine finds it, and
        // the host that runs the call looks it up as given here.
        let id = id.trim();
        if let Some(message) = self.unavailable(engine, id) {
            return self.unavailable_call(id, via, arguments, message);
        }
        let without_expand = !self.disclosed.contains(id);
        self.note_choice(id);
        let req = CallToolRequest { tool_id: id.to_owned(), arguments: arguments.clone() };
        if self.deferring {
            // The host runs the tool: check everything the engine checks, then hand it over.
            match engine.check_call(&self.config.principal, &req) {
                Ok(()) => {
                    self.pending = Some(PendingCall {
                        tool_id: id.to_owned(),
                        arguments: arguments.clone(),
                        via: via.to_owned(),
                        without_expand,
                        before: Vec::new(),
                    });
                    return Ok(String::new());
                }
                Err(e) => {
                    self.audit.push(AuditEvent::Call {
                        tool_id: id.to_owned(),
                        via: via.to_owned(),
                        arguments: arguments.clone(),
                        outcome: CallOutcome::Refused(e.code),
                        called_without_expand: without_expand,
                    });
                    return Err(e.into());
                }
            }
        }
        let (reply, outcome) = match engine.call_tool(&self.config.principal, &req) {
            Ok(answer) => {
                let text = match &answer.result {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                match answer.is_error {
                    true => (Err(Refused::ToolFailed(text)), CallOutcome::ToolError),
                    false => (Ok(text), CallOutcome::Ok),
                }
            }
            Err(e) => (Err(Refused::from(e.clone())), CallOutcome::Refused(e.code)),
        };
        self.audit.push(AuditEvent::Call {
            tool_id: id.to_owned(),
            via: via.to_owned(),
            arguments: arguments.clone(),
            outcome,
            called_without_expand: without_expand,
        });
        reply
    }

    pub(super) fn unavailable_call(&mut self, id: &str, via: &str, arguments: &Value, message: String) -> Reply {
        self.audit.push(AuditEvent::Call {
            tool_id: id.to_owned(),
            via: via.to_owned(),
            arguments: arguments.clone(),
            outcome: CallOutcome::Refused(ErrorCode::Unavailable),
            called_without_expand: !self.disclosed.contains(id),
        });
        let hints = vec!["tell the user what to start or configure, then retry".into()];
        Err(refusal(ErrorCode::Unavailable, &message, hints).into())
    }

    /// Why tool `id` cannot be used right now (its group is unavailable), with the group's
    /// suggestion; `None` when it can. Authorization comes first: a tool the caller may not use
    /// is answered exactly as an id no tool has, never with its group's state or suggestion:
    /// as [`ToolSet::not_listed_yet`] answers it (`None` unless a pending group covers it).
    pub(super) fn unavailable(&self, engine: &Engine, id: &str) -> Option<String> {
        match self.usable_tool(engine, id) {
            Some(tool) => {
                let group = self.down_group_of(engine, tool)?;
                Some(format!("tool {id:?} is unavailable: {}", self.why_down(group)))
            }
            None => self.not_listed_yet(engine, id),
        }
    }

    /// Why `name`, which no tool the caller may use has, names a tool that is not listed yet: a
    /// reading of it (the id itself, or `SERVER.TOOL` for a client's `SERVER__TOOL` or
    /// `mcp__SERVER__TOOL`) is an id a down pending group the caller may be told of covers (the
    /// longest prefix wins). `None` when no such group covers one, and when `name` or a
    /// `SERVER.TOOL` reading of it is the id or name of a tool the caller may use. A tool the
    /// caller may not use is never looked at (it answers as any id under the prefix does), and
    /// a tool of another server is never called for a server still starting.
    pub(super) fn not_listed_yet(&self, engine: &Engine, name: &str) -> Option<String> {
        let pending: Vec<(&Group, &Pending)> = self.pending_groups(engine).collect();
        if pending.is_empty() {
            return None;
        }
        let readings = engine.unnamed_readings(name, |t| self.config.principal.may_use(t))?;
        let covered = pending.into_iter().filter_map(|(g, p)| Some((g, p, readings.iter().find(|r| p.covers(r))?)));
        let (group, _, id) = covered.max_by_key(|(_, p, _)| p.prefix.len())?;
        Some(format!("no tool {id:?} is listed yet: {}", self.why_down(group)))
    }

    /// The pending groups (tools not listed yet) that are down and that the caller holds the
    /// scopes to be told of.
    fn pending_groups<'e>(&'e self, engine: &'e Engine) -> impl Iterator<Item = (&'e Group, &'e Pending)> + 'e {
        let groups = engine.catalog().groups.iter();
        groups
            .filter_map(|g| Some((g, g.pending.as_ref()?)))
            .filter(|(g, p)| self.config.principal.holds(&p.requires) && !self.availability.is_available(g))
    }

    /// The unavailable group of tool `id`; `None` when the tool is usable, or is not the
    /// caller's to use.
    fn down_group<'e>(&self, engine: &'e Engine, id: &str) -> Option<&'e Group> {
        self.down_group_of(engine, self.usable_tool(engine, id)?)
    }

    /// The unavailable group of `tool`, one the caller may use.
    pub(super) fn down_group_of<'e>(&self, engine: &'e Engine, tool: &Tool) -> Option<&'e Group> {
        let group = engine.catalog().groups.iter().find(|g| Some(&g.id) == tool.group.as_ref())?;
        (!self.availability.is_available(group)).then_some(group)
    }

    /// Why an unavailable `group` is down: its check's reason, else its suggestion.
    fn why_down(&self, group: &Group) -> String {
        if let Some(reason) = group.check.as_deref().and_then(|c| self.availability.reason(c)) {
            return reason;
        }
        let suggestion = group.suggestion.clone().unwrap_or_else(|| match &group.check {
            Some(check) if self.availability.has_check(check) => format!("wait until the check {check:?} passes"),
            Some(check) => format!("the host has not registered the availability check {check:?}"),
            None => "the group names no availability check".to_owned(),
        });
        format!("group {:?} is not available right now. {suggestion}", group.id)
    }

    /// Drops from a discovery answer's `items` the tools held back because their group is
    /// unavailable, and says which of them were among its first `shown` (the best matches of a
    /// search, a list's page) and why, one entry per group: `[{"tool_ids": [...], "reason":
    /// "..."}]`, or `None` when none were. A search whose best match is down then says so
    /// rather than offering the next best as if nothing better existed. Only tools the caller
    /// may use are ever named (the others are not in its answers to begin with). With
    /// `with_pending` (a search or list not narrowed to a category), the down pending groups
    /// the caller may be told of are named too, `{"unlisted_tools": "PREFIX*", "reason": ...}`:
    /// their tools may fit but are not listed yet.
    pub(super) fn hold_back<T>(
        &self,
        engine: &Engine,
        items: &mut Vec<T>,
        id: impl Fn(&T) -> &str,
        shown: usize,
        with_pending: bool,
    ) -> Option<Value> {
        let mut held: Vec<(&Group, Vec<String>)> = Vec::new();
        let mut position = 0;
        items.retain(|item| {
            position += 1;
            let Some(group) = self.down_group(engine, id(item)) else { return true };
            if position <= shown {
                match held.iter_mut().find(|(g, _)| g.id == group.id) {
                    Some((_, ids)) => ids.push(id(item).to_owned()),
                    None => held.push((group, vec![id(item).to_owned()])),
                }
            }
            false
        });
        // The reason once per group, for those named only.
        let mut notes: Vec<Value> =
            held.into_iter().map(|(g, ids)| json!({"tool_ids": ids, "reason": self.why_down(g)})).collect();
        if with_pending {
            notes.extend(
                self.pending_groups(engine)
                    .map(|(g, p)| json!({"unlisted_tools": format!("{}*", p.prefix), "reason": self.why_down(g)})),
            );
        }
        (!notes.is_empty()).then_some(Value::Array(notes))
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
        engine
            .tools_for(&self.config.principal)
            .filter(|(_, t)| t.group.as_deref().is_some_and(|g| down.contains(g)))
            .count()
    }
}
