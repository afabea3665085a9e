//! Facades: unfolding into inner tools (all, by category, by query), the unfold message, folding back.

use super::*;

impl ToolSet {
    pub(super) fn unfold(&mut self, engine: &Engine, name: &str, input: &Value) -> Reply {
        let Some(facade) = self.derived.facades.get(name).cloned() else {
            return Err(refusal(ErrorCode::UnknownTool, &format!("facade {name:?} no longer exists"), vec![]).into());
        };
        let (selection, items) = self.select_items(engine, &facade, input)?;
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
        Ok(self.unfold_message(engine, &facade, selection.as_deref(), &revealed))
    }

    /// The inner entries a call of `facade` with `input` reveals, with the selection made.
    pub(super) fn select_items(
        &self,
        engine: &Engine,
        facade: &Facade,
        input: &Value,
    ) -> Result<(Option<String>, Vec<Entry>), ProtocolError> {
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
                    return Err(refusal(
                        ErrorCode::InvalidArgument,
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
                return Err(refusal(ErrorCode::InvalidArgument, "a category facade needs a catalogue node", vec![]))
            }
            (Select::Query { limit }, inner) => {
                let query = input.get("query").and_then(Value::as_str).map(str::trim).unwrap_or_default();
                if query.is_empty() {
                    return Err(refusal(
                        ErrorCode::InvalidArgument,
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
                    ..SearchToolsRequest::default()
                };
                let found = match engine.search_tool_by_category(who, &req) {
                    Ok(answer) => answer.results,
                    Err(e) => return Err(e),
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
    pub(super) fn categories(&self, engine: &Engine, path: &CategoryPath) -> Vec<String> {
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
    pub(super) fn direct_tools(&self, engine: &Engine, path: &CategoryPath) -> Vec<Entry> {
        // Read from what the engine keeps for the caller's scope set: no time for hidden tools.
        engine.tools_at_for(&self.config.principal, path).into_iter().map(|t| Entry::Tool(t.id.clone())).collect()
    }

    /// What a node stands for: its tools, then for each child category either the child's
    /// facade (nested) or the child's own items.
    pub(super) fn node_items(&self, engine: &Engine, path: &CategoryPath) -> Vec<Entry> {
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

    pub(super) fn unfold_message(
        &self,
        engine: &Engine,
        facade: &Facade,
        selection: Option<&str>,
        revealed: &[Entry],
    ) -> String {
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

    pub(super) fn fold_back(&mut self, facade: &str) {
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
}

pub(super) fn item_entry(item: &Item) -> Entry {
    match item {
        Item::Tool(id) => Entry::Tool(id.clone()),
        Item::Facade(f) => Entry::Facade(f.clone()),
    }
}

pub(super) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}
