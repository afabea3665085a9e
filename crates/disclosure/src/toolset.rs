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
use toolsearch_catalog::{CategoryPath, Tool};
use toolsearch_query::{
    CallToolRequest, Engine, ExpandToolRequest, ListRequest, Principal, ProtocolError, SearchNodesRequest,
    SearchToolsRequest,
};

use crate::audit::{AuditEvent, AuditTrail};
use crate::definition::{input_schema, ToolDef};
use crate::discovery::{Detail, DiscoveryConfig, DiscoveryTool};
use crate::error::DisclosureError;
use crate::facade::{fold_name, Facade, Inner, Item, Select};
use crate::groups::Availability;
use crate::live::LiveCatalog;
use crate::names::{Diagnostic, Names};

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
}

/// The tools visible to the model now, and the runtime that changes them.
pub struct ToolSet {
    live: Arc<LiveCatalog>,
    availability: Arc<Availability>,
    config: ToolSetConfig,
    derived: Derived,
    shown: Vec<(u64, Entry)>,
    next_seq: u64,
    unfolds: Vec<Unfolded>,
    /// Tools whose full definition the model has seen.
    disclosed: HashSet<String>,
    audit: AuditTrail,
    last_visible: Vec<String>,
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
        let derived = derive(&engine, &config)?;
        for id in &config.pinned {
            if engine.tool(id).is_none() {
                return Err(DisclosureError::Unknown(format!("pinned tool {id:?} is not in the catalogue")));
            }
        }
        let mut set = ToolSet {
            live,
            availability,
            config,
            derived,
            shown: Vec::new(),
            next_seq: 0,
            unfolds: Vec::new(),
            disclosed: HashSet::new(),
            audit: AuditTrail::default(),
            last_visible: Vec::new(),
        };
        let mut initial: Vec<Entry> = set.config.pinned.iter().cloned().map(Entry::Tool).collect();
        initial.extend(set.derived.top_level.iter().cloned().map(Entry::Facade));
        initial.extend(set.derived.discovery.iter().cloned().map(Entry::Discovery));
        set.disclosed.extend(set.config.pinned.iter().cloned());
        for e in initial {
            set.show(e);
        }
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

    /// Problems worked around while building the set (duplicate tool names).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.derived.diagnostics
    }

    /// The audit trail so far.
    pub fn audit(&self) -> &AuditTrail {
        &self.audit
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
    /// Never fails: problems are error results the model can act on.
    pub fn call(&mut self, name: &str, input: &Value) -> Outcome {
        self.sync_catalogue();
        let before = self.last_visible.clone();
        let engine = self.live.engine();
        let (text, is_error) = self.dispatch(&engine, name, input);
        let after = self.visible_names();
        let change = diff(&before, &after);
        self.last_visible = after;
        Outcome { text, is_error, added: change.added, removed: change.removed }
    }

    /// Folds an unfolded facade back (the API form of its `fold_<name>` tool).
    pub fn fold(&mut self, facade: &str) -> Result<Change, DisclosureError> {
        if !self.unfolds.iter().any(|u| u.facade == facade) {
            return Err(DisclosureError::Unknown(format!("facade {facade:?} is not unfolded")));
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

    // ---- dispatch ----

    fn dispatch(&mut self, engine: &Engine, name: &str, input: &Value) -> (String, bool) {
        let visible = self.visible_entries(engine);
        if let Some(entry) = visible.iter().find(|e| self.entry_name(e).as_deref() == Some(name)).cloned() {
            return match entry {
                Entry::Facade(f) => self.unfold(engine, &f, input),
                Entry::Fold(f) => {
                    self.fold_back(&f);
                    (format!("Folded {f} back: its tools are hidden again. Call {f} to reveal them."), false)
                }
                Entry::Discovery(d) => self.discover(engine, &d, input),
                Entry::Tool(id) => self.call_tool(engine, &id, input, name),
            };
        }
        let reason = match self.entry_by_name(engine, name) {
            Some(Entry::Tool(id)) if self.shown.iter().any(|(_, e)| e == &Entry::Tool(id.clone())) => {
                if let Some(message) = self.unavailable(engine, &id) {
                    return self.unavailable_call(&id, name, input, message);
                }
                self.not_visible_hint(name)
            }
            Some(_) => self.not_visible_hint(name),
            None => format!("there is no tool called {name:?}"),
        };
        self.audit.push(AuditEvent::Rejected { name: name.to_owned(), reason: reason.clone() });
        (error_text("UNKNOWN_TOOL", &reason, self.recovery_hints()), true)
    }

    fn not_visible_hint(&self, name: &str) -> String {
        match self.unfolds.iter().find(|u| u.exclusive) {
            Some(u) => format!("{name:?} is not available while {} is unfolded", u.facade),
            None => format!("{name:?} is not one of the tools available now"),
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

    // ---- facades ----

    fn unfold(&mut self, engine: &Engine, name: &str, input: &Value) -> (String, bool) {
        let Some(facade) = self.derived.facades.get(name).cloned() else {
            return (error_text("UNKNOWN_TOOL", &format!("facade {name:?} no longer exists"), vec![]), true);
        };
        let (selection, items) = match self.select_items(engine, &facade, input) {
            Ok(v) => v,
            Err(text) => return (text, true),
        };
        let already: HashSet<Entry> = self.shown.iter().map(|(_, e)| e.clone()).collect();
        let fresh: Vec<Entry> = items.into_iter().filter(|e| !already.contains(e)).collect();
        let since = self.next_seq;
        let removed_facade = facade.remove_on_invoke;
        if removed_facade {
            self.shown.retain(|(_, e)| e != &Entry::Facade(name.to_owned()));
        }
        let mut revealed = Vec::new();
        for e in fresh {
            if let Entry::Tool(id) = &e {
                self.disclosed.insert(id.clone());
            }
            self.show(e.clone());
            revealed.push(e);
        }
        if facade.foldable && !already.contains(&Entry::Fold(name.to_owned())) {
            self.show(Entry::Fold(name.to_owned()));
            revealed.push(Entry::Fold(name.to_owned()));
        }
        match self.unfolds.iter_mut().find(|u| u.facade == name) {
            Some(u) => u.revealed.extend(revealed.iter().cloned()),
            None => self.unfolds.push(Unfolded {
                facade: name.to_owned(),
                revealed: revealed.clone(),
                removed_facade,
                exclusive: facade.exclusive,
                since,
            }),
        }
        let names: Vec<String> = revealed.iter().filter_map(|e| self.entry_name(e)).collect();
        self.audit.push(AuditEvent::Unfold { facade: name.to_owned(), selection: selection.clone(), revealed: names });
        (self.unfold_message(engine, &facade, selection.as_deref(), &revealed), false)
    }

    /// The inner entries a call of `facade` with `input` reveals, with the selection made.
    fn select_items(
        &self,
        engine: &Engine,
        facade: &Facade,
        input: &Value,
    ) -> Result<(Option<String>, Vec<Entry>), String> {
        let who = &self.config.principal;
        let usable = |e: &Entry| match e {
            Entry::Tool(id) => engine.tool(id).is_some_and(|t| who.may_use(t)),
            _ => true,
        };
        let (selection, items) = match (&facade.select, &facade.inner) {
            (Select::All, Inner::Node(path)) => (None, self.node_items(engine, path)),
            (Select::All, Inner::Items(items)) => (None, items.iter().map(item_entry).collect()),
            (Select::Category, Inner::Node(path)) => {
                let categories = self.categories(engine, path);
                let chosen = input.get("category").and_then(Value::as_str).map(str::trim).unwrap_or_default();
                let Some(child) = categories.iter().find(|c| c.eq_ignore_ascii_case(chosen)) else {
                    let message = if chosen.is_empty() {
                        format!("{} needs a `category` argument", facade.name)
                    } else {
                        format!("{chosen:?} is not a category of {}", facade.name)
                    };
                    return Err(error_text(
                        "INVALID_ARGUMENT",
                        &message,
                        vec![format!("choose one of: {}", categories.join(", "))],
                    ));
                };
                let mut child_path = path.clone();
                child_path.push(child.clone());
                let mut items = self.direct_tools(engine, path);
                items.extend(self.node_items(engine, &child_path));
                (Some(child.clone()), items)
            }
            (Select::Category, Inner::Items(_)) => {
                return Err(error_text("INVALID_ARGUMENT", "a category facade needs a catalogue node", vec![]))
            }
            (Select::Query { limit }, inner) => {
                let query = input.get("query").and_then(Value::as_str).map(str::trim).unwrap_or_default();
                if query.is_empty() {
                    return Err(error_text(
                        "INVALID_ARGUMENT",
                        &format!("{} needs a `query` argument: what you need to do", facade.name),
                        vec![],
                    ));
                }
                let (category_path, allowed, fetch) = match inner {
                    Inner::Node(path) => (Some(toolsearch_catalog::PathSpec::Segments(path.clone())), None, *limit),
                    Inner::Items(items) => {
                        let ids: HashSet<&str> = items
                            .iter()
                            .filter_map(|i| if let Item::Tool(id) = i { Some(id.as_str()) } else { None })
                            .collect();
                        (None, Some(ids), 50)
                    }
                };
                let req = SearchToolsRequest {
                    query: query.to_owned(),
                    category_path,
                    tags: Vec::new(),
                    limit: Some(fetch),
                    cursor: None,
                };
                let found = match engine.search_tool_by_category_as(who, &req) {
                    Ok(answer) => answer.results,
                    Err(e) => return Err(protocol_error_text(&e)),
                };
                let items = found
                    .into_iter()
                    .filter(|p| allowed.as_ref().is_none_or(|a| a.contains(p.tool_id.as_str())))
                    .take(*limit)
                    .map(|p| Entry::Tool(p.tool_id))
                    .collect();
                (Some(query.to_owned()), items)
            }
        };
        let mut seen = HashSet::new();
        Ok((selection, items.into_iter().filter(|e| usable(e) && seen.insert(e.clone())).collect()))
    }

    /// Child category names of a node facade (the enum a `category` facade advertises).
    fn categories(&self, engine: &Engine, path: &CategoryPath) -> Vec<String> {
        engine
            .catalog()
            .nodes
            .iter()
            .filter(|n| n.path.len() == path.len() + 1 && n.path.starts_with(path))
            .filter(|n| !self.node_items(engine, &n.path).is_empty())
            .map(|n| n.path.last().cloned().unwrap_or_default())
            .collect()
    }

    /// Tools directly in `path` that the caller may use.
    fn direct_tools(&self, engine: &Engine, path: &CategoryPath) -> Vec<Entry> {
        engine
            .catalog()
            .tools
            .iter()
            .filter(|t| t.paths.iter().any(|p| p == path) && self.config.principal.may_use(t))
            .map(|t| Entry::Tool(t.id.clone()))
            .collect()
    }

    /// What a node stands for: its tools, then for each child category either the child's
    /// facade (nested) or the child's own items.
    fn node_items(&self, engine: &Engine, path: &CategoryPath) -> Vec<Entry> {
        let mut items = self.direct_tools(engine, path);
        for child in
            engine.catalog().nodes.iter().filter(|n| n.path.len() == path.len() + 1 && n.path.starts_with(path))
        {
            match self.derived.facade_by_path.get(&child.path) {
                Some(f) => items.push(Entry::Facade(f.clone())),
                None => items.extend(self.node_items(engine, &child.path)),
            }
        }
        let mut seen = HashSet::new();
        items.retain(|e| seen.insert(e.clone()));
        items
    }

    fn unfold_message(&self, engine: &Engine, facade: &Facade, selection: Option<&str>, revealed: &[Entry]) -> String {
        let mut text = match selection {
            Some(s) => format!("Unfolded {} ({s}) for: {}\n", facade.name, facade.purpose.trim()),
            None => format!("Unfolded {} for: {}\n", facade.name, facade.purpose.trim()),
        };
        let mut listed = 0;
        let mut unavailable: Vec<String> = Vec::new();
        for e in revealed.iter().filter(|e| !matches!(e, Entry::Fold(_))) {
            if let Entry::Tool(id) = e {
                if let Some(message) = self.unavailable(engine, id) {
                    if !unavailable.contains(&message) {
                        unavailable.push(message);
                    }
                    continue;
                }
            }
            if let (Some(name), Some(def)) = (self.entry_name(e), self.definition(engine, e)) {
                if listed == 0 {
                    text.push_str("Tools now available for this purpose:\n");
                }
                listed += 1;
                text.push_str(&format!("- {name}: {}\n", first_line(&def.description)));
            }
        }
        if listed == 0 {
            text.push_str("No further tools were revealed (they are already available, or none matched).\n");
        }
        for message in unavailable {
            text.push_str(&format!("Hidden for now: {message}\n"));
        }
        if facade.exclusive {
            text.push_str("Only these tools are available until you are done with them.\n");
        }
        if facade.foldable {
            text.push_str(&format!("Call {} when you are done with them.\n", fold_name(&facade.name)));
        }
        if let Some(notes) = &facade.usage_notes {
            text.push_str("\nUsage notes:\n");
            text.push_str(notes);
        }
        text.trim_end_matches('\n').to_owned()
    }

    fn fold_back(&mut self, facade: &str) {
        let Some(pos) = self.unfolds.iter().position(|u| u.facade == facade) else { return };
        let root = self.unfolds.remove(pos);
        let mut hidden: HashSet<Entry> = root.revealed.iter().cloned().collect();
        // Facades unfolded from inside this one fold with it.
        loop {
            let nested = self.unfolds.iter().position(|u| hidden.contains(&Entry::Facade(u.facade.clone())));
            let Some(i) = nested else { break };
            let u = self.unfolds.remove(i);
            if u.removed_facade {
                hidden.insert(Entry::Facade(u.facade.clone()));
            }
            hidden.extend(u.revealed);
        }
        self.shown.retain(|(_, e)| !hidden.contains(e));
        if root.removed_facade {
            self.show(Entry::Facade(facade.to_owned()));
        }
        self.audit.push(AuditEvent::Fold { facade: facade.to_owned() });
    }

    // ---- discovery ----

    fn discover(&mut self, engine: &Engine, tool: &DiscoveryTool, input: &Value) -> (String, bool) {
        let who = self.config.principal.clone();
        let limit = match input.get("limit") {
            None | Some(Value::Null) => self.config.discovery.limit,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=50) => n as usize,
                _ => return (error_text("INVALID_ARGUMENT", "limit must be an integer from 1 to 50", vec![]), true),
            },
        };
        let text_arg = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
        match tool {
            DiscoveryTool::SearchTools | DiscoveryTool::Domain(_) => {
                let category_path = match tool {
                    DiscoveryTool::Domain(path) => Some(toolsearch_catalog::PathSpec::Segments(path.clone())),
                    _ => text_arg("category_path")
                        .filter(|p| !p.trim().is_empty())
                        .map(toolsearch_catalog::PathSpec::Joined),
                };
                let hidden = self.unavailable_count(engine);
                let req = SearchToolsRequest {
                    query: text_arg("query").unwrap_or_default(),
                    category_path,
                    tags: Vec::new(),
                    limit: Some((limit + hidden).min(50)),
                    cursor: None,
                };
                match engine.search_tool_by_category_as(&who, &req) {
                    Ok(mut answer) => {
                        answer.results.retain(|p| self.unavailable(engine, &p.tool_id).is_none());
                        answer.results.truncate(limit);
                        let ids: Vec<String> = answer.results.iter().map(|p| p.tool_id.clone()).collect();
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: Some(req.query.clone()),
                            category_path: answer.category_path.clone(),
                            results: ids.clone(),
                        });
                        let body = match self.config.discovery.detail {
                            Detail::Names => json!({"category_path": answer.category_path, "tool_ids": ids}),
                            Detail::Summaries => {
                                let results: Vec<Value> = answer
                                    .results
                                    .iter()
                                    .map(|p| json!({"tool_id": p.tool_id, "summary": p.summary, "path": p.path, "confidence": round3(p.confidence)}))
                                    .collect();
                                json!({"category_path": answer.category_path, "results": results})
                            }
                            Detail::Full => {
                                let mut results = Vec::new();
                                for id in &ids {
                                    if let Ok(v) = self.expand(engine, id) {
                                        results.push(v);
                                    }
                                }
                                json!({"category_path": answer.category_path, "results": results})
                            }
                        };
                        (body.to_string(), false)
                    }
                    Err(e) => {
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: Some(req.query.clone()),
                            category_path: req
                                .category_path
                                .as_ref()
                                .map(|p| p.segments().join("/"))
                                .unwrap_or_default(),
                            results: Vec::new(),
                        });
                        (protocol_error_text(&e), true)
                    }
                }
            }
            DiscoveryTool::SearchNodes => {
                let req = SearchNodesRequest { query: text_arg("query").unwrap_or_default(), limit: Some(limit) };
                match engine.search_nodes_as(&who, &req) {
                    Ok(answer) => {
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: Some(req.query),
                            category_path: String::new(),
                            results: answer.results.iter().map(|r| r.path.clone()).collect(),
                        });
                        (serde_json::to_string(&answer).expect("answers serialise"), false)
                    }
                    Err(e) => (protocol_error_text(&e), true),
                }
            }
            DiscoveryTool::List => {
                let req = ListRequest {
                    path: text_arg("path").filter(|p| !p.trim().is_empty()).map(toolsearch_catalog::PathSpec::Joined),
                    tags: Vec::new(),
                    query: None,
                    limit: Some(limit),
                    cursor: None,
                };
                match engine.list_as(&who, &req) {
                    Ok(mut answer) => {
                        answer.tools.retain(|p| self.unavailable(engine, &p.tool_id).is_none());
                        answer.next_cursor = None;
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: None,
                            category_path: answer.path.clone(),
                            results: answer.tools.iter().map(|p| p.tool_id.clone()).collect(),
                        });
                        (serde_json::to_string(&answer).expect("answers serialise"), false)
                    }
                    Err(e) => (protocol_error_text(&e), true),
                }
            }
            DiscoveryTool::Expand => {
                let id = text_arg("tool_id").unwrap_or_default();
                match self.expand(engine, &id) {
                    Ok(v) => (v.to_string(), false),
                    Err(text) => (text, true),
                }
            }
            DiscoveryTool::Call => {
                let id = text_arg("tool_id").unwrap_or_default();
                let arguments = input.get("arguments").cloned().unwrap_or_else(|| json!({}));
                self.call_tool(engine, &id, &arguments, "call_tool")
            }
        }
    }

    /// Discloses tool `id`'s full definition and makes it callable.
    fn expand(&mut self, engine: &Engine, id: &str) -> Result<Value, String> {
        if let Some(message) = self.unavailable(engine, id) {
            return Err(error_text("UNAVAILABLE", &message, vec![]));
        }
        let answer = engine
            .expand_tool_as(&self.config.principal, &ExpandToolRequest { tool_id: id.to_owned() })
            .map_err(|e| protocol_error_text(&e))?;
        self.note_choice(id);
        self.audit.push(AuditEvent::Expand { tool_id: id.to_owned() });
        self.disclosed.insert(id.to_owned());
        if !self.shown.iter().any(|(_, e)| e == &Entry::Tool(id.to_owned())) {
            self.show(Entry::Tool(id.to_owned()));
        }
        let mut value = serde_json::to_value(&answer).expect("answers serialise");
        if let Some(name) = self.derived.names.name(id) {
            value["callable_as"] = Value::from(name);
        }
        Ok(value)
    }

    /// Records that the model picked `id` out of a search, the first time it acts on it.
    fn note_choice(&mut self, id: &str) {
        if self.disclosed.contains(id) {
            return;
        }
        if let Some((rank, search_step)) = self.audit.last_seen_in_search(id) {
            self.audit.push(AuditEvent::Choose { tool_id: id.to_owned(), rank, search_step });
        }
    }

    // ---- calls ----

    fn call_tool(&mut self, engine: &Engine, id: &str, arguments: &Value, via: &str) -> (String, bool) {
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

    fn unavailable_call(&mut self, id: &str, via: &str, arguments: &Value, message: String) -> (String, bool) {
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
    /// suggestion; `None` when it can.
    fn unavailable(&self, engine: &Engine, id: &str) -> Option<String> {
        let tool = engine.tool(id)?;
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
    fn unavailable_count(&self, engine: &Engine) -> usize {
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
        engine.catalog().tools.iter().filter(|t| t.group.as_deref().is_some_and(|g| down.contains(g))).count()
    }

    // ---- entries ----

    fn show(&mut self, entry: Entry) {
        self.shown.push((self.next_seq, entry));
        self.next_seq += 1;
    }

    fn visible_entries(&self, engine: &Engine) -> Vec<Entry> {
        let since = self.unfolds.iter().filter(|u| u.exclusive).map(|u| u.since).min();
        self.shown
            .iter()
            .filter(|(seq, _)| since.is_none_or(|s| *seq >= s))
            .map(|(_, e)| e)
            .filter(|e| match e {
                Entry::Tool(id) => {
                    engine.tool(id).is_some_and(|t| self.config.principal.may_use(t))
                        && self.unavailable(engine, id).is_none()
                }
                Entry::Facade(f) | Entry::Fold(f) => self.derived.facades.contains_key(f),
                Entry::Discovery(d) => self.derived.discovery.contains(d),
            })
            .cloned()
            .collect()
    }

    fn entry_name(&self, entry: &Entry) -> Option<String> {
        match entry {
            Entry::Tool(id) => self.derived.names.name(id).map(str::to_owned),
            Entry::Facade(f) => Some(f.clone()),
            Entry::Fold(f) => Some(fold_name(f)),
            Entry::Discovery(d) => Some(d.name()),
        }
    }

    fn entry_by_name(&self, engine: &Engine, name: &str) -> Option<Entry> {
        if self.derived.facades.contains_key(name) {
            return Some(Entry::Facade(name.to_owned()));
        }
        if let Some(f) = self.derived.facades.keys().find(|f| fold_name(f) == name) {
            return Some(Entry::Fold(f.clone()));
        }
        if let Some(d) = self.derived.discovery.iter().find(|d| d.name() == name) {
            return Some(Entry::Discovery(d.clone()));
        }
        let id = self.derived.names.id(name)?;
        engine.tool(id).filter(|t| self.config.principal.may_use(t)).map(|t| Entry::Tool(t.id.clone()))
    }

    fn definition(&self, engine: &Engine, entry: &Entry) -> Option<ToolDef> {
        match entry {
            Entry::Tool(id) => {
                let tool = engine.tool(id)?;
                Some(tool_definition(tool, self.derived.names.name(id)?))
            }
            Entry::Facade(f) => {
                let facade = self.derived.facades.get(f)?;
                let categories = match (&facade.select, &facade.inner) {
                    (Select::Category, Inner::Node(path)) => self.categories(engine, path),
                    _ => Vec::new(),
                };
                Some(facade.definition(&categories))
            }
            Entry::Fold(f) => Some(self.derived.facades.get(f)?.fold_definition()),
            Entry::Discovery(d) => Some(d.definition(&self.config.discovery, engine.catalog())),
        }
    }

    /// Re-derives facades and names when the catalogue changed under the set.
    fn sync_catalogue(&mut self) {
        let engine = self.live.engine();
        if engine.index().meta().generation == self.derived.generation {
            return;
        }
        // A catalogue change that breaks the configuration keeps the previous derivation:
        // the set goes on working with what it had.
        if let Ok(derived) = derive(&engine, &self.config) {
            self.derived = derived;
        }
    }
}

/// A catalogue tool's definition: its description (with its own usage notes) and arguments.
fn tool_definition(tool: &Tool, name: &str) -> ToolDef {
    let mut description = tool.description.trim().to_owned();
    if description.is_empty() {
        description = tool.summary.clone();
    }
    if let Some(notes) = &tool.usage_notes {
        description.push_str("\n\nUsage notes: ");
        description.push_str(notes.trim());
    }
    ToolDef { name: name.to_owned(), description, input_schema: input_schema(&tool.args_schema) }
}

fn item_entry(item: &Item) -> Entry {
    match item {
        Item::Tool(id) => Entry::Tool(id.clone()),
        Item::Facade(f) => Entry::Facade(f.clone()),
    }
}

/// Facades, nesting, discovery tools and names for the engine's catalogue.
fn derive(engine: &Engine, config: &ToolSetConfig) -> Result<Derived, DisclosureError> {
    let catalog = engine.catalog();
    let mut facades: HashMap<String, Facade> = HashMap::new();
    let mut facade_by_path = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let node_facades = if config.node_facades { catalog.nodes.iter().collect() } else { Vec::new() };
    let mut all: Vec<Facade> = Vec::new();
    for node in node_facades {
        if let Some(f) = Facade::for_node(node)? {
            facade_by_path.insert(node.path.clone(), f.name.clone());
            all.push(f);
        }
    }
    all.extend(config.facades.iter().cloned());
    for f in all {
        if facades.contains_key(&f.name) {
            return Err(DisclosureError::Facade {
                facade: f.name.clone(),
                field: "name".into(),
                message: "two facades have this name".into(),
            });
        }
        if let Inner::Items(items) = &f.inner {
            if f.select == Select::Category {
                return Err(DisclosureError::Facade {
                    facade: f.name.clone(),
                    field: "select".into(),
                    message: "`category` selection needs a catalogue node; list the tools or use `query`".into(),
                });
            }
            for item in items {
                if let Item::Tool(id) = item {
                    if engine.tool(id).is_none() {
                        return Err(DisclosureError::Unknown(format!(
                            "facade {}: tool {id:?} is not in the catalogue",
                            f.name
                        )));
                    }
                }
            }
        }
        order.push(f.name.clone());
        facades.insert(f.name.clone(), f);
    }
    // Children: listed facades, or the nearest facade nodes below a node facade.
    let children = |f: &Facade| -> Result<Vec<String>, DisclosureError> {
        match &f.inner {
            Inner::Items(items) => items
                .iter()
                .filter_map(|i| if let Item::Facade(n) = i { Some(n) } else { None })
                .map(|n| {
                    facades.get(n).map(|c| c.name.clone()).ok_or_else(|| {
                        DisclosureError::Unknown(format!("facade {}: inner facade {n:?} does not exist", f.name))
                    })
                })
                .collect(),
            Inner::Node(path) => Ok(facade_by_path
                .iter()
                .filter(|(p, _)| p.len() > path.len() && p.starts_with(path))
                .filter(|(p, _)| {
                    !facade_by_path.keys().any(|q| q.len() > path.len() && q.len() < p.len() && p.starts_with(q))
                })
                .map(|(_, n)| n.clone())
                .collect()),
        }
    };
    let mut graph: HashMap<String, Vec<String>> = HashMap::new();
    for name in &order {
        graph.insert(name.clone(), children(&facades[name])?);
    }
    let mut nested: HashSet<&String> = HashSet::new();
    for kids in graph.values() {
        nested.extend(kids.iter());
    }
    for name in &order {
        let depth = depth_of(name, &graph, &mut Vec::new())?;
        if depth > config.max_depth {
            return Err(DisclosureError::FacadeTooDeep { facade: name.clone(), depth, max: config.max_depth });
        }
    }
    let top_level: Vec<String> = order.iter().filter(|n| !nested.contains(n)).cloned().collect();
    let discovery = config.discovery.tools(catalog).map_err(DisclosureError::Unknown)?;
    let mut reserved: HashSet<String> = discovery.iter().map(DiscoveryTool::name).collect();
    for name in &order {
        reserved.insert(name.clone());
        reserved.insert(fold_name(name));
    }
    let (names, diagnostics) = Names::assign(catalog, &reserved);
    Ok(Derived {
        generation: engine.index().meta().generation,
        facades,
        facade_by_path,
        top_level,
        discovery,
        names,
        diagnostics,
    })
}

/// Nesting depth below `name` (1 for a facade without inner facades); a cycle is an error.
fn depth_of(
    name: &str,
    graph: &HashMap<String, Vec<String>>,
    stack: &mut Vec<String>,
) -> Result<usize, DisclosureError> {
    if let Some(start) = stack.iter().position(|s| s == name) {
        let mut cycle = stack[start..].to_vec();
        cycle.push(name.to_owned());
        return Err(DisclosureError::FacadeCycle(cycle));
    }
    stack.push(name.to_owned());
    let mut deepest = 0;
    for child in graph.get(name).map(Vec::as_slice).unwrap_or_default() {
        deepest = deepest.max(depth_of(child, graph, stack)?);
    }
    stack.pop();
    Ok(deepest + 1)
}

fn diff(before: &[String], after: &[String]) -> Change {
    let b: HashSet<&String> = before.iter().collect();
    let a: HashSet<&String> = after.iter().collect();
    Change {
        added: after.iter().filter(|n| !b.contains(n)).cloned().collect(),
        removed: before.iter().filter(|n| !a.contains(n)).cloned().collect(),
    }
}

/// A confidence as the model reads it: three decimals, without f32-to-f64 noise.
fn round3(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

/// An error result: `{code, message, hints}`, compact JSON as the model reads it.
fn error_text(code: &str, message: &str, hints: Vec<String>) -> String {
    json!({"code": code, "message": message, "hints": hints}).to_string()
}

fn protocol_error_text(e: &ProtocolError) -> String {
    serde_json::to_string(e).expect("errors serialise")
}
