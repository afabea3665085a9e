//! [`Engine`]: a [`Ranker`] answering the discovery protocol calls (`list`, `search_nodes`,
//! `search_tool_by_category`, `expand_tool`) for a caller, with cursors. Tool calls are in
//! `call.rs`, the hints of error answers in `hints.rs`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use toolsearch_catalog::{display_path, CategoryPath, PathSpec, SchemaValidator, Tool};
use toolsearch_embed::Embedder;

use crate::call::Executor;
use crate::cursor::{request_hash, CursorKey};
use crate::error::{ErrorCode, ProtocolError};
use crate::fusion::Scored;
use crate::hints;
use crate::principal::Principal;
use crate::protocol::*;
use crate::ranker::{EngineError, EngineOptions, Ranker};
use crate::ranking::Ranked;

/// How many times more likely relevant the best tool outside a category must be than the best
/// inside it for a search in that category to answer that the request fits elsewhere.
pub const FITS_ELSEWHERE: f32 = 5.0;
use crate::scope::Filter;

/// The query engine: a [`Ranker`] (reached through `Deref`) plus the protocol. `Send + Sync`:
/// share one behind an `Arc` across threads. Every answer is for a [`Principal`]; pass
/// [`Principal::trusted()`] for a caller that sees every tool.
pub struct Engine {
    ranker: Ranker,
    cursors: CursorKey,
    pub(crate) executor: RwLock<Option<Arc<dyn Executor>>>,
    /// Compiled argument schemas of the tools called lately (see `call::Validators`).
    pub(crate) validators: crate::call::Validators,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("ranker", &self.ranker).finish()
    }
}

impl std::ops::Deref for Engine {
    type Target = Ranker;
    fn deref(&self) -> &Ranker {
        &self.ranker
    }
}

impl Engine {
    /// Opens the index in `dir`, finding and loading the model automatically.
    pub fn open(dir: &Path) -> Result<Engine, EngineError> {
        Engine::open_with(dir, EngineOptions::default())
    }

    /// Opens the index in `dir` with `options`.
    pub fn open_with(dir: &Path, options: EngineOptions) -> Result<Engine, EngineError> {
        Ok(Engine::over(Ranker::open(dir, options)?))
    }

    /// Opens the index in `dir` with an embedder the caller already loaded.
    pub fn with_embedder(
        dir: &Path,
        embedder: Arc<dyn Embedder>,
        options: EngineOptions,
    ) -> Result<Engine, EngineError> {
        Ok(Engine::over(Ranker::with_embedder(dir, embedder, options)?))
    }

    /// The protocol over a ranker.
    pub fn over(ranker: Ranker) -> Engine {
        let cursors = CursorKey::new(ranker.index().meta().generation, &ranker.index().meta().catalog_hash);
        Engine { ranker, cursors, executor: RwLock::new(None), validators: Default::default() }
    }

    /// Dispatches a protocol call given as JSON (`call` is `list`, `search_nodes`,
    /// `search_tool_by_category`, `expand_tool` or `call_tool`) for `who` and returns the JSON
    /// answer.
    pub fn handle(&self, who: &Principal, call: &str, arguments: Value) -> Result<Value, ProtocolError> {
        fn args<T: DeserializeOwned>(v: Value) -> Result<T, ProtocolError> {
            let v = if v.is_null() { json!({}) } else { v };
            serde_json::from_value(v).map_err(|e| ProtocolError::invalid(format!("invalid arguments: {e}")))
        }
        let out = match call {
            "list" => serde_json::to_value(self.list(who, &args(arguments)?)?),
            "search_nodes" => serde_json::to_value(self.search_nodes(who, &args(arguments)?)?),
            "search_tool_by_category" => serde_json::to_value(self.search_tool_by_category(who, &args(arguments)?)?),
            "expand_tool" => serde_json::to_value(self.expand_tool(who, &args(arguments)?)?),
            "call_tool" => serde_json::to_value(self.call_tool(who, &args(arguments)?)?),
            other => {
                return Err(ProtocolError::invalid(format!("unknown call {other:?}")).with_hints(vec![
                    "calls: list, search_nodes, search_tool_by_category, expand_tool, call_tool".into(),
                ]))
            }
        };
        out.map_err(|e| ProtocolError::new(ErrorCode::Internal, e.to_string()))
    }

    /// `search_tool_by_category`: the best tools for a query inside a category, with tags,
    /// a page at a time, among the tools `who` may see.
    pub fn search_tool_by_category(
        &self,
        who: &Principal,
        req: &SearchToolsRequest,
    ) -> Result<SearchToolsResponse, ProtocolError> {
        let query = checked_query(&req.query)?;
        let limit = checked_limit(req.limit)?;
        let scopes = scopes_of(who);
        let scope = self.scope(req.category_path.as_ref(), "category_path", &scopes)?;
        let filter = Filter { path: scope.clone(), tags: checked_tags(&req.tags)?, scopes };
        let call = match req.match_mode {
            MatchMode::Semantic => "search_tool_by_category",
            MatchMode::Regex => "search_tool_by_category/regex",
        };
        let request = request_hash(call, query, &filter);
        let offset = match &req.cursor {
            Some(c) => self.cursors.decode(c, request)?,
            None => 0,
        };
        // Every page slices the same ranking (fixed depth, ties by ordinal): pages never
        // repeat or skip a tool.
        let ranked = match req.match_mode {
            MatchMode::Semantic => self.rank_tools_answer(query, &filter, self.options().candidates)?,
            MatchMode::Regex => Ranked { results: self.match_tools(query, &filter)?, answerable: 1.0 },
        };
        let shown = self.shown(&ranked.results);
        let semantic = req.match_mode == MatchMode::Semantic && self.options().min_confidence.is_none();
        let abstains = semantic
            && (self.options().answerability.abstains(ranked.answerable)
                || self.fits_elsewhere(query, &filter, &ranked)?);
        if shown.is_empty() || abstains {
            return Err(match req.match_mode {
                MatchMode::Semantic => hints::no_match(self, query, &filter, &ranked),
                MatchMode::Regex => hints::no_pattern_match(self, query, &filter),
            });
        }
        let page: Vec<ToolPointer> =
            shown.iter().skip(offset).take(limit).map(|s| self.pointer(s.ord, &scope, s.confidence)).collect();
        let next = offset + page.len();
        let next_cursor = (next < shown.len()).then(|| self.cursors.encode(next, request));
        let answerable = (req.match_mode == MatchMode::Semantic).then_some(ranked.answerable);
        Ok(SearchToolsResponse { category_path: display_path(&scope), results: page, next_cursor, answerable })
    }

    /// Whether a search inside a category is far better answered outside it: the whole
    /// catalogue (as the caller sees it) is answerable and its best tool lies outside the
    /// category with over [`FITS_ELSEWHERE`] times the category's best confidence. Then the
    /// answer is `NO_MATCH_IN_CATEGORY` naming where the request fits, not weak guesses.
    fn fits_elsewhere(&self, query: &str, filter: &Filter, ranked: &Ranked) -> Result<bool, ProtocolError> {
        if filter.path.is_empty() {
            return Ok(false);
        }
        let everywhere = self.rank_tools_answer(query, &filter.at(&[]), self.options().candidates)?;
        let inside = ranked.results.first().map_or(0.0, |s| s.confidence);
        Ok(!self.options().answerability.abstains(everywhere.answerable)
            && everywhere.results.first().is_some_and(|best| {
                best.confidence > FITS_ELSEWHERE * inside && !ranked.results.iter().any(|s| s.ord == best.ord)
            }))
    }

    /// The results a search shows: those at the explicit `min_confidence` or more when one
    /// is set, else those at least [`EngineOptions::relative_cut`] of the best result's
    /// confidence.
    fn shown<'a>(&self, ranked: &'a [Scored]) -> Vec<&'a Scored> {
        let best = ranked.first().map_or(0.0, |s| s.confidence);
        let floor = self.options().min_confidence.unwrap_or(self.options().relative_cut * best);
        ranked.iter().filter(|s| s.confidence >= floor).collect()
    }

    /// `search_nodes`: the categories that best match a query; categories holding none of the
    /// tools `who` may see are not there.
    pub fn search_nodes(
        &self,
        who: &Principal,
        req: &SearchNodesRequest,
    ) -> Result<SearchNodesResponse, ProtocolError> {
        self.search_nodes_for(req, &scopes_of(who))
    }

    pub(crate) fn search_nodes_for(
        &self,
        req: &SearchNodesRequest,
        scopes: &Option<Vec<String>>,
    ) -> Result<SearchNodesResponse, ProtocolError> {
        let query = checked_query(&req.query)?;
        let limit = checked_limit(req.limit)?;
        let visible = self.paths().visible_nodes(scopes);
        let all: Vec<u32> = (0..self.catalog().nodes.len() as u32)
            .filter(|&n| visible.as_ref().is_none_or(|v| v[n as usize]))
            .collect();
        // A category matches through its own text or through the best of the tools under it
        // that the caller may see (category documents carry no tool names, so no category
        // ever matches through a tool the caller cannot see).
        let mut best: HashMap<u32, f32> = HashMap::new();
        for s in self.rank_nodes(query, &all, &[], limit, scopes)? {
            best.insert(s.ord, s.confidence);
        }
        let filter = Filter { scopes: scopes.clone(), ..Filter::default() };
        for s in self.rank_tools(query, &filter, self.options().candidates)? {
            for p in &self.catalog().tools[s.ord as usize].paths {
                self.paths().ancestors(p, |n| {
                    let e = best.entry(n).or_insert(0.0);
                    *e = e.max(s.confidence);
                });
            }
        }
        let mut ranked: Vec<(u32, f32)> = best.into_iter().collect();
        // On a tie (a category and its parent share their best tool), the more specific first.
        let depth = |n: u32| self.catalog().nodes[n as usize].path.len();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(depth(b.0).cmp(&depth(a.0))).then(a.0.cmp(&b.0)));
        let results = ranked
            .into_iter()
            .take(limit)
            .map(|(ord, confidence)| {
                let n = &self.catalog().nodes[ord as usize];
                NodeHit { path: display_path(&n.path), summary: n.summary.clone(), confidence }
            })
            .collect();
        Ok(SearchNodesResponse { results })
    }

    /// `list`: child categories and tools at a path, optionally filtered by tags and a query,
    /// a page at a time (categories first, then tools), among the tools `who` may see.
    pub fn list(&self, who: &Principal, req: &ListRequest) -> Result<ListResponse, ProtocolError> {
        let limit = checked_limit(req.limit)?;
        let scopes = scopes_of(who);
        let path = self.scope(req.path.as_ref(), "path", &scopes)?;
        let query = req.query.as_deref().map(checked_query).transpose()?;
        let filter = Filter { path: path.clone(), tags: checked_tags(&req.tags)?, scopes };
        let request = request_hash("list", query.unwrap_or(""), &filter);
        let offset = match &req.cursor {
            Some(c) => self.cursors.decode(c, request)?,
            None => 0,
        };
        // What the caller's scopes allow is read from what is kept for its scope set, and a
        // category's count too, so that no answer takes longer for the tools it hides.
        let scoped = filter.scopes.as_deref().map(|s| self.paths().scoped(s));
        let tagged = (!filter.tags.is_empty()).then(|| self.paths().allowed(&filter)).flatten();
        let may = |o: u32| {
            scoped.as_ref().is_none_or(|s| s.tool_view.contains(o))
                && tagged.as_ref().is_none_or(|a| a.binary_search(&o).is_ok())
        };
        // Kept cut to its scopes, a category's lists cost nothing for the hidden.
        let (paths, kept) = (self.paths(), scoped.as_deref());
        let count_under = |n: u32| match (&tagged, &scoped) {
            (Some(_), _) => paths.under(n, kept).iter().filter(|&&o| may(o)).count(),
            (None, Some(s)) => self.paths().allowed_under(n, s),
            (None, None) => self.paths().tools_under(&self.catalog().nodes[n as usize].path).len(),
        };
        // A restricted caller, or one asking for tags, sees a category only when it holds a
        // tool for it.
        let children =
            kept.and_then(|s| paths.allowed_children(&path, s)).unwrap_or_else(|| paths.children(&path).to_vec());
        let child_nodes: Vec<u32> =
            children.into_iter().filter(|&n| !filter.restricts() || count_under(n) > 0).collect();
        let direct_tools: Vec<u32> = paths.tools_at_in(&path, kept).into_iter().filter(|&o| may(o)).collect();
        let (nodes, tools): (Vec<OrdConfidence>, Vec<OrdConfidence>) = match query {
            None => (child_nodes.iter().map(|&o| (o, 1.0)).collect(), direct_tools.iter().map(|&o| (o, 1.0)).collect()),
            Some(q) => {
                let min = self.options().min_confidence.unwrap_or(hints::MATCH_FLOOR);
                // A child category matches through its own text or through its best tool.
                let under = self.rank_tools(q, &filter, self.options().candidates)?;
                let best_tool = |node: u32| {
                    let inside = paths.under(node, kept);
                    under
                        .iter()
                        .filter(|s| inside.binary_search(&s.ord).is_ok())
                        .map(|s| s.confidence)
                        .fold(0.0, f32::max)
                };
                let mut nodes: Vec<(u32, f32)> = self
                    .rank_nodes(q, &child_nodes, &path, child_nodes.len(), &filter.scopes)?
                    .iter()
                    .map(|s| (s.ord, s.confidence.max(best_tool(s.ord))))
                    .filter(|&(_, c)| c >= min)
                    .collect();
                nodes.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let tools = self.rank_direct_tools(q, &path, &direct_tools, &filter.scopes)?;
                let tools = tools.iter().filter(|s| s.confidence >= min).map(|s| (s.ord, s.confidence)).collect();
                (nodes, tools)
            }
        };
        let total = nodes.len() + tools.len();
        let node_page: Vec<NodeEntry> =
            nodes.iter().skip(offset).take(limit).map(|&(o, _)| self.node_entry(o, count_under(o))).collect();
        let tool_skip = offset.saturating_sub(nodes.len());
        let room = limit - node_page.len();
        let tool_page: Vec<ToolPointer> =
            tools.iter().skip(tool_skip).take(room).map(|&(o, c)| self.pointer(o, &path, c)).collect();
        let next = offset + node_page.len() + tool_page.len();
        let next_cursor = (next < total).then(|| self.cursors.encode(next, request));
        Ok(ListResponse { path: display_path(&path), nodes: node_page, tools: tool_page, next_cursor })
    }

    /// `expand_tool`: the full definition of one tool. A tool the caller may not use gets
    /// `TOOL_NOT_FOUND`, as if it did not exist, unless the caller's catalogue is declared public
    /// ([`Principal::with_public_catalog`]): then `NOT_AUTHORIZED` names the missing scopes.
    pub fn expand_tool(&self, who: &Principal, req: &ExpandToolRequest) -> Result<ExpandToolResponse, ProtocolError> {
        let mut t = self.usable_tool(who, &req.tool_id)?;
        let details = std::mem::take(&mut t.details).into_inner();
        let meta = details.meta.as_ref().map(|m| m.value());
        Ok(ExpandToolResponse {
            path: display_path(&t.paths[0]),
            paths: t.paths.iter().map(|p| display_path(p)).collect(),
            title: meta.as_ref().and_then(|m| m.get("title")).and_then(Value::as_str).map(str::to_owned),
            annotations: meta.as_ref().and_then(|m| m.get("annotations")).filter(|a| a.is_object()).cloned(),
            tool_id: t.id,
            name: t.name,
            summary: t.summary,
            description: details.description,
            tags: t.tags,
            validation: SchemaValidator::new(&details.args_schema.value()).validation().describe(),
            args_schema: details.args_schema.value(),
            result_schema: details.result_schema.map(|s| s.value()),
            usage_notes: details.usage_notes,
        })
    }

    /// The tool with this id if the caller may use it; otherwise the error `expand_tool` and
    /// `call_tool` both give (`TOOL_NOT_FOUND`, or `NOT_AUTHORIZED` for a public catalogue).
    ///
    /// The tool comes back whole: its record (schemas and all) is read from the index once the
    /// caller is known to may use it.
    pub(crate) fn usable_tool(&self, who: &Principal, id: &str) -> Result<Tool, ProtocolError> {
        let Some(t) = self.tool(id.trim()) else {
            return Err(hints::tool_not_found(self, id, &scopes_of(who)));
        };
        let missing = who.missing(t);
        if missing.is_empty() {
            return match self.full_tool(&t.id) {
                Ok(Some(full)) => Ok(full),
                Ok(None) => Err(hints::tool_not_found(self, id, &scopes_of(who))),
                Err(e) => Err(ProtocolError::new(ErrorCode::Internal, e.to_string())),
            };
        }
        if !who.public_catalog() {
            return Err(hints::tool_not_found(self, id, &scopes_of(who)));
        }
        Err(ProtocolError::new(
            ErrorCode::NotAuthorized,
            format!("tool {:?} requires scopes the caller does not hold: {}", t.id, missing.join(", ")),
        )
        .with_hints(vec![format!("ask for the scopes {missing:?}, or choose another tool")]))
    }

    /// Resolves an optional requested path; `UNKNOWN_PATH` names the closest existing ones.
    fn scope(
        &self,
        spec: Option<&PathSpec>,
        field: &str,
        scopes: &Option<Vec<String>>,
    ) -> Result<CategoryPath, ProtocolError> {
        let Some(spec) = spec else {
            return Ok(Vec::new());
        };
        let segments = spec.parse().map_err(|e| {
            ProtocolError::invalid(format!("{field}: {e}")).with_hints(vec![
                "write a category path like \"Coding/Git\", or omit it for the whole catalogue".into(),
            ])
        })?;
        // For a restricted caller a category holding none of its tools does not exist, for
        // exact and case-insensitive matches alike.
        let visible = self.paths().visible_nodes(scopes);
        let is_visible = |n: u32| visible.as_ref().is_none_or(|v| v[n as usize]);
        if let Some(p) = self.paths().resolve(segments, is_visible) {
            return Ok(p);
        }
        Err(hints::unknown_path(self, spec, field, visible.as_deref().map(Vec::as_slice)))
    }

    fn pointer(&self, ord: u32, scope: &[String], confidence: f32) -> ToolPointer {
        let t = &self.catalog().tools[ord as usize];
        let path = t.paths.iter().find(|p| p.starts_with(scope)).unwrap_or(&t.paths[0]);
        ToolPointer {
            tool_id: t.id.clone(),
            path: display_path(path),
            summary: t.summary.clone(),
            tags: t.tags.clone(),
            confidence: (confidence * 1000.0).round() / 1000.0,
        }
    }

    /// The entry of the node `ord` holding `tool_count` tools the caller may see.
    fn node_entry(&self, ord: u32, tool_count: usize) -> NodeEntry {
        let n = &self.catalog().nodes[ord as usize];
        NodeEntry {
            name: n.path.last().cloned().unwrap_or_default(),
            path: display_path(&n.path),
            summary: n.summary.clone(),
            tags: n.tags.clone(),
            tool_count,
        }
    }
}

/// The scope list a filter carries for a caller (`None` for a trusted one).
pub(crate) fn scopes_of(who: &Principal) -> Option<Vec<String>> {
    who.scopes().map(|s| s.iter().cloned().collect())
}

/// An ordinal with its confidence.
type OrdConfidence = (u32, f32);

fn checked_query(q: &str) -> Result<&str, ProtocolError> {
    let q = q.trim();
    if q.is_empty() {
        return Err(ProtocolError::invalid("query is empty")
            .with_hints(vec!["describe the task, e.g. \"resize an image\"".into()]));
    }
    Ok(q)
}

/// The request's tags; an empty one (or a bare `!`) is refused, naming it: it can match nothing.
fn checked_tags(tags: &[String]) -> Result<Vec<String>, ProtocolError> {
    match tags.iter().position(|t| t.trim().trim_start_matches('!').trim().is_empty()) {
        Some(i) => Err(ProtocolError::invalid(format!("tags[{i}] is empty"))
            .with_hints(vec!["name a tag, or `!tag` for tools without it; drop the empty one".into()])),
        None => Ok(tags.to_vec()),
    }
}

fn checked_limit(limit: Option<usize>) -> Result<usize, ProtocolError> {
    match limit.unwrap_or(DEFAULT_LIMIT) {
        l @ 1..=MAX_LIMIT => Ok(l),
        l => Err(ProtocolError::invalid(format!("limit {l} is out of range: use 1 to {MAX_LIMIT}"))),
    }
}
