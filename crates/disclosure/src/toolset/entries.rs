//! What the set shows: entries, their names and definitions, and catalogue changes.

use super::*;

impl ToolSet {
    pub(super) fn show(&mut self, entry: Entry) {
        self.shown.push((self.next_seq, entry));
        self.next_seq += 1;
    }

    /// The order of every list, so that a prompt cache keeps it: the tools `always_load`
    /// names first (by id), then the set's start in its configured order (pinned tools, top
    /// facades, discovery tools), then everything shown since (revealed tools, unfolded
    /// facades' items), by the name it is listed under. Two sessions that hold the same tools
    /// list them alike, whatever order they revealed them in, and a reveal never moves what
    /// comes before the revealed part. An exclusive unfold hides all else, these tools too.
    pub(super) fn visible_entries(&self, engine: &Engine) -> Vec<Entry> {
        let since = self.unfolds.iter().filter(|u| u.exclusive).map(|u| u.since).min();
        let always = self.derived.always.iter().filter(|_| since.is_none()).map(|id| Entry::Tool(id.clone()));
        let shown = self
            .shown
            .iter()
            .filter(|(seq, _)| since.is_none_or(|s| *seq >= s))
            .filter(|(_, e)| !matches!(e, Entry::Tool(id) if self.always_loaded(id)));
        let (start, mut later): (Vec<_>, Vec<_>) = shown.partition(|(seq, _)| *seq < self.stable);
        later.sort_by_cached_key(|(_, e)| self.entry_name(e));
        always
            .chain(start.into_iter().chain(later).map(|(_, e)| e.clone()))
            .filter(|e| match e {
                Entry::Tool(id) => {
                    self.usable_tool(engine, id).is_some_and(|t| self.down_group_of(engine, t).is_none())
                }
                Entry::Facade(f) | Entry::Fold(f) => self.derived.facades.contains_key(f),
                Entry::Discovery(d) => self.derived.discovery.contains(d),
            })
            .collect()
    }

    pub(super) fn entry_name(&self, entry: &Entry) -> Option<String> {
        match entry {
            Entry::Tool(id) => self.derived.names.name(id).map(str::to_owned),
            Entry::Facade(f) => Some(f.clone()),
            Entry::Fold(f) => Some(fold_name(f)),
            Entry::Discovery(d) => Some(d.name()),
        }
    }

    pub(super) fn entry_by_name(&self, engine: &Engine, name: &str) -> Option<Entry> {
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
        self.usable_tool(engine, id).map(|t| Entry::Tool(t.id.clone()))
    }

    /// Catalogue tool `id`, when the caller may use it (else it reads as no tool at all).
    pub(super) fn usable_tool<'e>(&self, engine: &'e Engine, id: &str) -> Option<&'e Tool> {
        engine.tool(id).filter(|t| self.config.principal.may_use(t))
    }

    pub(super) fn definition(&self, engine: &Engine, entry: &Entry) -> Option<ToolDef> {
        match entry {
            Entry::Tool(id) => {
                let tool = engine.full_tool(id).ok()??;
                Some(tool_definition(&tool, self.derived.names.name(id)?))
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
    pub(super) fn sync_catalogue(&mut self) {
        let engine = self.live.engine();
        if engine.index().meta().generation == self.derived.generation {
            return;
        }
        // A catalogue change that breaks the configuration keeps the previous derivation:
        // the set goes on working with what it had.
        if let Ok(derived) = derive(&engine, &self.config) {
            self.derived = std::sync::Arc::new(derived);
        }
    }
}

/// A catalogue tool's definition: its description (with its own usage notes) and arguments.
pub(super) fn tool_definition(tool: &Tool, name: &str) -> ToolDef {
    let mut description = tool.details.description.trim().to_owned();
    if description.is_empty() {
        description = tool.summary.clone();
    }
    if let Some(notes) = &tool.details.usage_notes {
        description.push_str("\n\nUsage notes: ");
        description.push_str(notes.trim());
    }
    ToolDef { name: name.to_owned(), description, input_schema: input_schema(&tool.details.args_schema.value()) }
}
