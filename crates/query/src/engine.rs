//! [`Engine`]: an opened index plus the query-time model, answering protocol calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use toolsearch_catalog::{display_path, Catalog, CategoryPath, PathSpec, Tool};
use toolsearch_embed::{EmbedError, Embedder, EmbedderOptions, ModelFiles, OnnxEmbedder};
use toolsearch_index::{DocKind, IndexError, IndexReader, OpenOptions};

use crate::cache::Lru;
use crate::call::{validate, CallLog, CallRecord, CallToolRequest, CallToolResponse, Executor};
use crate::cursor::{request_hash, CursorKey};
use crate::error::{ErrorCode, ProtocolError};
use crate::fusion::Scored;
use crate::fusion::{Calibration, Fusion};
use crate::principal::Principal;
use crate::protocol::*;
use crate::scope::PathTable;
use crate::scope::{intersect, Filter};
use crate::suggest::closest;

/// The index metadata extension that holds a fitted [`Calibration`] (JSON).
pub const CALIBRATION_KEY: &str = "calibration";

/// Most bytes each query cache holds, keys included.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// How an [`Engine`] ranks and where it finds its model.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The `models/` directory; found automatically when `None`.
    pub models: Option<PathBuf>,
    /// Fusion method.
    pub fusion: Fusion,
    /// Confidence map; `None` uses the one stored in the index by `toolsearch calibrate`, or
    /// the built-in default.
    pub calibration: Option<Calibration>,
    /// Candidates drawn from each index before fusion.
    pub candidates: usize,
    /// Pointers below this confidence are not returned; when none is left the answer is
    /// `NO_MATCH_IN_CATEGORY`.
    pub min_confidence: f32,
    /// How the index is opened.
    pub open: OpenOptions,
    /// Query embeddings, and ranked results, kept in LRU caches (0 disables them).
    pub query_cache: usize,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            models: None,
            fusion: Fusion::default(),
            calibration: None,
            candidates: 64,
            min_confidence: 0.08,
            open: OpenOptions::default(),
            query_cache: 1024,
        }
    }
}

/// Why an engine could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The index is missing, corrupted, or from another model or format.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The model could not be found or loaded.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// The query engine. `Send + Sync`: share one behind an `Arc` across threads.
pub struct Engine {
    index: IndexReader,
    embedder: Arc<dyn Embedder>,
    paths: PathTable,
    tool_by_id: HashMap<String, u32>,
    calibration: Calibration,
    cursors: CursorKey,
    executor: RwLock<Option<Arc<dyn Executor>>>,
    calls: CallLog,
    vectors: Lru<Vec<f32>>,
    results: Lru<Vec<Scored>>,
    options: EngineOptions,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("index", &self.index).field("options", &self.options).finish()
    }
}

impl Engine {
    /// Opens the index in `dir`, finding and loading the model automatically.
    pub fn open(dir: &Path) -> Result<Engine, EngineError> {
        Engine::open_with(dir, EngineOptions::default())
    }

    /// Opens the index in `dir` with `options`.
    pub fn open_with(dir: &Path, options: EngineOptions) -> Result<Engine, EngineError> {
        // The model loads while the index opens; a bad index is reported first.
        let (index, embedder) = std::thread::scope(|s| {
            let model = s.spawn(|| -> Result<OnnxEmbedder, EngineError> {
                let files = ModelFiles::locate(options.models.as_deref())?;
                let embedder_options = EmbedderOptions { intra_threads: Some(1), ..EmbedderOptions::default() };
                Ok(OnnxEmbedder::load(&files, embedder_options)?)
            });
            let index = IndexReader::open_with(dir, options.open.clone());
            (index, model.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        let index = index?;
        let embedder = embedder?;
        Engine::from_parts(index, Arc::new(embedder), options)
    }

    /// Opens the index in `dir` with an embedder the caller already loaded.
    pub fn with_embedder(
        dir: &Path,
        embedder: Arc<dyn Embedder>,
        options: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let index = IndexReader::open_with(dir, options.open.clone())?;
        Engine::from_parts(index, embedder, options)
    }

    fn from_parts(
        index: IndexReader,
        embedder: Arc<dyn Embedder>,
        options: EngineOptions,
    ) -> Result<Engine, EngineError> {
        index.check_model(embedder.as_ref())?;
        let stored = index.meta().extensions.get(CALIBRATION_KEY).and_then(|j| serde_json::from_str(j).ok());
        let calibration = options.calibration.or(stored).unwrap_or_default();
        let paths = PathTable::new(index.catalog());
        let cursors = CursorKey::new(index.meta().generation, &index.meta().catalog_hash);
        let tool_by_id = index.catalog().tools.iter().enumerate().map(|(i, t)| (t.id.clone(), i as u32)).collect();
        Ok(Engine {
            index,
            embedder,
            paths,
            tool_by_id,
            cursors,
            executor: RwLock::new(None),
            calls: CallLog::default(),
            calibration,
            vectors: Lru::new(options.query_cache, CACHE_BYTES),
            results: Lru::new(options.query_cache, CACHE_BYTES),
            options,
        })
    }

    pub(crate) fn paths(&self) -> &PathTable {
        &self.paths
    }

    /// The confidence map in force (from the options, the index, or the default).
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    pub(crate) fn vector_cache(&self) -> &Lru<Vec<f32>> {
        &self.vectors
    }

    pub(crate) fn result_cache(&self) -> &Lru<Vec<Scored>> {
        &self.results
    }

    /// Forgets every cached query embedding (benchmarks call it between runs).
    pub fn clear_query_cache(&self) {
        self.vectors.clear();
        self.results.clear();
    }

    /// The opened index.
    pub fn index(&self) -> &IndexReader {
        &self.index
    }

    /// The catalogue served.
    pub fn catalog(&self) -> &Catalog {
        self.index.catalog()
    }

    /// The options in force.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The embedder used for queries.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Dispatches a protocol call given as JSON (`call` is `list`, `search_nodes`,
    /// `search_tool_by_category` or `expand_tool`) and returns the JSON answer.
    pub fn handle(&self, call: &str, arguments: Value) -> Result<Value, ProtocolError> {
        self.handle_as(&Principal::trusted(), call, arguments)
    }

    /// [`Engine::handle`] for a caller who sees only the tools its scopes allow.
    pub fn handle_as(&self, who: &Principal, call: &str, arguments: Value) -> Result<Value, ProtocolError> {
        fn args<T: DeserializeOwned>(v: Value) -> Result<T, ProtocolError> {
            let v = if v.is_null() { json!({}) } else { v };
            serde_json::from_value(v).map_err(|e| ProtocolError::invalid(format!("invalid arguments: {e}")))
        }
        let out = match call {
            "list" => serde_json::to_value(self.list_as(who, &args(arguments)?)?),
            "search_nodes" => serde_json::to_value(self.search_nodes_as(who, &args(arguments)?)?),
            "search_tool_by_category" => serde_json::to_value(self.search_tool_by_category_as(who, &args(arguments)?)?),
            "expand_tool" => serde_json::to_value(self.expand_tool_as(who, &args(arguments)?)?),
            "call_tool" => serde_json::to_value(self.call_tool_as(who, &args(arguments)?)?),
            other => {
                return Err(ProtocolError::invalid(format!("unknown call {other:?}")).with_hints(vec![
                    "calls: list, search_nodes, search_tool_by_category, expand_tool, call_tool".into(),
                ]))
            }
        };
        out.map_err(|e| ProtocolError::new(ErrorCode::Internal, e.to_string()))
    }

    /// `search_tool_by_category`: the best tools for a query inside a category, with tags,
    /// a page at a time.
    pub fn search_tool_by_category(&self, req: &SearchToolsRequest) -> Result<SearchToolsResponse, ProtocolError> {
        self.search_tool_by_category_as(&Principal::trusted(), req)
    }

    /// [`Engine::search_tool_by_category`] for a caller who sees only the tools its scopes allow.
    pub fn search_tool_by_category_as(
        &self,
        who: &Principal,
        req: &SearchToolsRequest,
    ) -> Result<SearchToolsResponse, ProtocolError> {
        let query = checked_query(&req.query)?;
        let limit = checked_limit(req.limit)?;
        let scopes = scopes_of(who);
        let scope = self.scope(req.category_path.as_ref(), "category_path", &scopes)?;
        let filter = Filter { path: scope.clone(), tags: req.tags.clone(), scopes };
        let request = request_hash(&[
            "search_tool_by_category",
            query,
            &display_path(&scope),
            &req.tags.join("\u{1f}"),
            &format!("{:?}", filter.scopes),
        ]);
        let offset = match &req.cursor {
            Some(c) => self.cursors.decode(c, request)?,
            None => 0,
        };
        // Every page slices the same ranking (fixed depth, ties by ordinal): pages never
        // repeat or skip a tool.
        let ranked = self.rank_tools(query, &filter, self.options.candidates)?;
        let confident: Vec<&Scored> = ranked.iter().filter(|s| s.confidence >= self.options.min_confidence).collect();
        if confident.is_empty() {
            return Err(self.no_match(query, &filter));
        }
        let page: Vec<ToolPointer> =
            confident.iter().skip(offset).take(limit).map(|s| self.pointer(s.ord, &scope, s.confidence)).collect();
        let next = offset + page.len();
        let next_cursor = (next < confident.len()).then(|| self.cursors.encode(next, request));
        Ok(SearchToolsResponse { category_path: display_path(&scope), results: page, next_cursor })
    }

    /// `search_nodes`: the categories that best match a query.
    pub fn search_nodes(&self, req: &SearchNodesRequest) -> Result<SearchNodesResponse, ProtocolError> {
        self.search_nodes_as(&Principal::trusted(), req)
    }

    /// [`Engine::search_nodes`] for a caller: categories holding none of its tools are not there.
    pub fn search_nodes_as(
        &self,
        who: &Principal,
        req: &SearchNodesRequest,
    ) -> Result<SearchNodesResponse, ProtocolError> {
        self.search_nodes_for(req, &scopes_of(who))
    }

    fn search_nodes_for(
        &self,
        req: &SearchNodesRequest,
        scopes: &Option<Vec<String>>,
    ) -> Result<SearchNodesResponse, ProtocolError> {
        let query = checked_query(&req.query)?;
        let limit = checked_limit(req.limit)?;
        let visible = self.paths.visible_nodes(scopes, self.catalog());
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
        for s in self.rank_tools(query, &filter, self.options.candidates)? {
            for p in &self.catalog().tools[s.ord as usize].paths {
                for d in 1..=p.len() {
                    if let Some(n) = self.paths.node_ord(&p[..d]) {
                        let e = best.entry(n).or_insert(0.0);
                        *e = e.max(s.confidence);
                    }
                }
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
    /// a page at a time (categories first, then tools).
    pub fn list(&self, req: &ListRequest) -> Result<ListResponse, ProtocolError> {
        self.list_as(&Principal::trusted(), req)
    }

    /// [`Engine::list`] for a caller who sees only the tools its scopes allow.
    pub fn list_as(&self, who: &Principal, req: &ListRequest) -> Result<ListResponse, ProtocolError> {
        let limit = checked_limit(req.limit)?;
        let scopes = scopes_of(who);
        let path = self.scope(req.path.as_ref(), "path", &scopes)?;
        let query = req.query.as_deref().map(checked_query).transpose()?;
        let request = request_hash(&[
            "list",
            query.unwrap_or(""),
            &display_path(&path),
            &req.tags.join("\u{1f}"),
            &format!("{scopes:?}"),
        ]);
        let offset = match &req.cursor {
            Some(c) => self.cursors.decode(c, request)?,
            None => 0,
        };
        let filter = Filter { path: path.clone(), tags: req.tags.clone(), scopes };
        let allowed = self.paths.allowed(&filter);
        let visible = |tools: &[u32]| -> Vec<u32> {
            match &allowed {
                Some(a) => intersect(tools, a),
                None => tools.to_vec(),
            }
        };
        // With tags, a category is listed only when it holds matching tools.
        let child_nodes: Vec<u32> = self
            .paths
            .children(&path)
            .iter()
            .copied()
            .filter(|&n| {
                !filter.restricts()
                    || !visible(self.paths.tools_under(&self.catalog().nodes[n as usize].path)).is_empty()
            })
            .collect();
        let direct_tools = visible(self.paths.tools_at(&path));
        let (nodes, tools): (Vec<OrdConfidence>, Vec<OrdConfidence>) = match query {
            None => (child_nodes.iter().map(|&o| (o, 1.0)).collect(), direct_tools.iter().map(|&o| (o, 1.0)).collect()),
            Some(q) => {
                let min = self.options.min_confidence;
                // A child category matches through its own text or through its best tool.
                let under = self.rank_tools(q, &filter, self.options.candidates)?;
                let best_tool = |node: u32| {
                    let inside = self.paths.tools_under(&self.catalog().nodes[node as usize].path);
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
            nodes.iter().skip(offset).take(limit).map(|&(o, _)| self.node_entry(o, &filter)).collect();
        let tool_skip = offset.saturating_sub(nodes.len());
        let room = limit - node_page.len();
        let tool_page: Vec<ToolPointer> =
            tools.iter().skip(tool_skip).take(room).map(|&(o, c)| self.pointer(o, &path, c)).collect();
        let next = offset + node_page.len() + tool_page.len();
        let next_cursor = (next < total).then(|| self.cursors.encode(next, request));
        Ok(ListResponse { path: display_path(&path), nodes: node_page, tools: tool_page, next_cursor })
    }

    /// `expand_tool`: the full definition of one tool.
    pub fn expand_tool(&self, req: &ExpandToolRequest) -> Result<ExpandToolResponse, ProtocolError> {
        self.expand_tool_as(&Principal::trusted(), req)
    }

    /// [`Engine::expand_tool`] for a caller. A tool the caller may not use gets
    /// `TOOL_NOT_FOUND`, as if it did not exist, unless the caller's catalogue is declared public
    /// ([`Principal::with_public_catalog`]): then `NOT_AUTHORIZED` names the missing scopes.
    pub fn expand_tool_as(
        &self,
        who: &Principal,
        req: &ExpandToolRequest,
    ) -> Result<ExpandToolResponse, ProtocolError> {
        let t = self.usable_tool(who, &req.tool_id)?;
        Ok(ExpandToolResponse {
            tool_id: t.id.clone(),
            name: t.name.clone(),
            path: display_path(&t.paths[0]),
            paths: t.paths.iter().map(|p| display_path(p)).collect(),
            summary: t.summary.clone(),
            description: t.description.clone(),
            tags: t.tags.clone(),
            args_schema: t.args_schema.clone(),
            result_schema: t.result_schema.clone(),
            usage_notes: t.usage_notes.clone(),
            title: t.meta.as_ref().and_then(|m| m.get("title")).and_then(Value::as_str).map(str::to_owned),
            annotations: t.meta.as_ref().and_then(|m| m.get("annotations")).filter(|a| a.is_object()).cloned(),
        })
    }

    /// Registers the executor that runs `call_tool` (replacing any previous one).
    pub fn set_executor(&self, executor: Arc<dyn Executor>) {
        *self.executor.write().unwrap_or_else(|p| p.into_inner()) = Some(executor);
    }

    /// Every call made since the last drain (at most the 10,000 latest), oldest first.
    pub fn drain_calls(&self) -> Vec<CallRecord> {
        self.calls.drain()
    }

    /// `call_tool` as a trusted caller.
    pub fn call_tool(&self, req: &CallToolRequest) -> Result<CallToolResponse, ProtocolError> {
        self.call_tool_as(&Principal::trusted(), req)
    }

    /// `call_tool`: checks the caller may use the tool (as `expand_tool` does), validates the
    /// arguments against its `args_schema` (`INVALID_ARGUMENT` with the failing JSON pointers),
    /// and hands the call to the registered [`Executor`]. Every call is recorded.
    pub fn call_tool_as(&self, who: &Principal, req: &CallToolRequest) -> Result<CallToolResponse, ProtocolError> {
        let outcome = self.call_checked(who, req);
        match &outcome {
            Ok(r) => self.calls.push(
                &req.tool_id,
                &req.arguments,
                if r.is_error { "tool_error" } else { "ok" },
                r.result.clone(),
            ),
            Err(e) => self.calls.push(&req.tool_id, &req.arguments, e.code.as_str(), json!(e.message)),
        }
        outcome
    }

    /// The tool with this id if the caller may use it; otherwise the error `expand_tool` and
    /// `call_tool` both give (`TOOL_NOT_FOUND`, or `NOT_AUTHORIZED` for a public catalogue).
    fn usable_tool(&self, who: &Principal, id: &str) -> Result<&Tool, ProtocolError> {
        let Some(t) = self.tool(id.trim()) else {
            return Err(self.tool_not_found(id, &scopes_of(who)));
        };
        let missing = who.missing(t);
        if missing.is_empty() {
            return Ok(t);
        }
        if !who.public_catalog() {
            return Err(self.tool_not_found(id, &scopes_of(who)));
        }
        Err(ProtocolError::new(
            ErrorCode::NotAuthorized,
            format!("tool {:?} requires scopes the caller does not hold: {}", t.id, missing.join(", ")),
        )
        .with_hints(vec![format!("ask for the scopes {missing:?}, or choose another tool")]))
    }

    /// Everything `call_tool` checks before running a call, without running it (nor
    /// recording it): the caller may use the tool and the arguments match its `args_schema`.
    /// The same errors as `call_tool`.
    pub fn check_call_as(&self, who: &Principal, req: &CallToolRequest) -> Result<(), ProtocolError> {
        self.checked_tool(who, req).map(|_| ())
    }

    fn checked_tool(&self, who: &Principal, req: &CallToolRequest) -> Result<&Tool, ProtocolError> {
        let tool = self.usable_tool(who, &req.tool_id)?;
        validate(tool, &req.arguments)?;
        Ok(tool)
    }

    fn call_checked(&self, who: &Principal, req: &CallToolRequest) -> Result<CallToolResponse, ProtocolError> {
        let tool = self.checked_tool(who, req)?;
        let executor = self.executor.read().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(executor) = executor else {
            return Err(ProtocolError::new(
                ErrorCode::Internal,
                "no executor is registered: the host must call Engine::set_executor",
            ));
        };
        Ok(match executor.execute(tool, &req.arguments) {
            Ok(result) => CallToolResponse { tool_id: tool.id.clone(), result, is_error: false },
            Err(message) => {
                CallToolResponse { tool_id: tool.id.clone(), result: json!({ "error": message }), is_error: true }
            }
        })
    }

    /// The tool with this id, if any.
    pub fn tool(&self, id: &str) -> Option<&Tool> {
        self.tool_by_id.get(id).map(|&o| &self.catalog().tools[o as usize])
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
        let segments = spec.parse().map_err(|message| {
            ProtocolError::invalid(format!("{field}: {message}")).with_hints(vec![
                "write a category path like \"Coding/Git\", or omit it for the whole catalogue".into(),
            ])
        })?;
        // For a restricted caller a category holding none of its tools does not exist, for
        // exact and case-insensitive matches alike.
        let visible = self.paths.visible_nodes(scopes, self.catalog());
        let is_visible = |n: u32| visible.as_ref().is_none_or(|v| v[n as usize]);
        if let Some(p) = self.paths.resolve(segments, self.catalog(), is_visible) {
            return Ok(p);
        }
        let asked = spec.as_written();
        let nodes: Vec<&toolsearch_catalog::Node> = match &visible {
            None => self.catalog().nodes.iter().collect(),
            Some(v) => self.catalog().nodes.iter().zip(v).filter(|(_, visible)| **visible).map(|(n, _)| n).collect(),
        };
        let displays: Vec<String> = nodes.iter().map(|n| display_path(&n.path)).collect();
        // Compare with paths of the same depth first: a typo rarely changes the depth.
        let depth = spec.segments().len();
        let same_depth = nodes.iter().zip(&displays).filter(|(n, _)| n.path.len() == depth).map(|(_, d)| d.as_str());
        let mut near = closest(&asked, same_depth, 3, 0.3);
        if near.is_empty() {
            near = closest(&asked, displays.iter().map(String::as_str), 3, 0.0);
        }
        let mut err = ProtocolError::new(ErrorCode::UnknownPath, format!("no category at {field} {asked:?}"));
        err.hints = near.iter().map(|p| format!("did you mean {p:?}?")).collect();
        if err.hints.is_empty() {
            err.hints.push("the catalogue has no categories; search without a path".into());
        }
        let next_path = near.first().map_or(json!(null), |p| json!(p));
        Err(err.with_next("list", json!({ "path": next_path })))
    }

    fn no_match(&self, query: &str, filter: &Filter) -> ProtocolError {
        let scope = filter.path.as_slice();
        let where_ = if scope.is_empty() { "the catalogue".to_owned() } else { format!("{:?}", display_path(scope)) };
        if !filter.tags.is_empty() && self.paths.allowed(filter).is_some_and(|a| a.is_empty()) {
            let message = format!("no tool in {where_} carries all the tags {:?}", filter.tags);
            return ProtocolError::new(ErrorCode::NoMatchInCategory, message)
                .with_hints(vec!["drop or change a tag".into()])
                .with_next("search_tool_by_category", json!({ "query": query, "category_path": display_path(scope) }));
        }
        let message =
            format!("no tool in {where_} matches {query:?} with confidence >= {:.2}", self.options.min_confidence);
        let mut err = ProtocolError::new(ErrorCode::NoMatchInCategory, message);
        // Where does the query match? Rank over the whole catalogue, report the best categories.
        let ranked =
            if scope.is_empty() { Vec::new() } else { self.rank_tools(query, &filter.at(&[]), 10).unwrap_or_default() };
        let mut categories: Vec<(String, f32, String)> = Vec::new();
        for s in ranked.iter().filter(|s| s.confidence >= self.options.min_confidence) {
            let t = &self.catalog().tools[s.ord as usize];
            let cat = display_path(&t.paths[0]);
            if !categories.iter().any(|c| c.0 == cat) {
                categories.push((cat, s.confidence, t.name.clone()));
            }
            if categories.len() == 3 {
                break;
            }
        }
        if let Some(best) = categories.first() {
            err.hints = categories
                .iter()
                .map(|(c, conf, name)| format!("{c:?} matches (best: {name}, confidence {conf:.2})"))
                .collect();
            return err.with_next("search_tool_by_category", json!({ "query": query, "category_path": best.0 }));
        }
        err.hints.push("rephrase the request with the action and the object, or browse with list".into());
        let nodes = self
            .search_nodes_for(&SearchNodesRequest { query: query.to_owned(), limit: Some(3) }, &filter.scopes)
            .map(|r| r.results)
            .unwrap_or_default();
        err.hints.extend(
            nodes
                .iter()
                .filter(|n| n.confidence >= self.options.min_confidence)
                .map(|n| format!("category {:?} may be related", n.path)),
        );
        err.with_next(
            "list",
            json!({ "path": if scope.is_empty() { json!(null) } else { json!(display_path(scope)) } }),
        )
    }

    fn tool_not_found(&self, id: &str, scopes: &Option<Vec<String>>) -> ProtocolError {
        // Suggestions come only from tools the caller may see.
        let allowed = self.paths.allowed(&Filter { scopes: scopes.clone(), ..Filter::default() }).map(Arc::new);
        let may_see = |o: u32| allowed.as_ref().is_none_or(|a| a.binary_search(&o).is_ok());
        let ids =
            self.catalog().tools.iter().enumerate().filter(|(o, _)| may_see(*o as u32)).map(|(_, t)| t.id.as_str());
        let mut similar: Vec<String> = closest(id, ids, 3, 0.4).into_iter().map(str::to_owned).collect();
        let view = self.tool_view(scopes);
        if let Ok(hits) = self.index.lexical(id, DocKind::Tool, None, allowed.as_ref(), &view, 3) {
            for h in hits {
                let tid = &self.catalog().tools[h.ord as usize].id;
                if similar.len() < 5 && !similar.contains(tid) {
                    similar.push(tid.clone());
                }
            }
        }
        let mut err = ProtocolError::new(ErrorCode::ToolNotFound, format!("no tool has id {id:?}"));
        err.hints = similar.iter().map(|s| format!("did you mean {s:?}?")).collect();
        match similar.first() {
            Some(best) => err.with_next("expand_tool", json!({ "tool_id": best })),
            None => err.with_next("search_tool_by_category", json!({ "query": id })),
        }
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

    fn node_entry(&self, ord: u32, request: &Filter) -> NodeEntry {
        let n = &self.catalog().nodes[ord as usize];
        let filter = request.at(&n.path);
        NodeEntry {
            name: n.path.last().cloned().unwrap_or_default(),
            path: display_path(&n.path),
            summary: n.summary.clone(),
            tags: n.tags.clone(),
            tool_count: self.paths.allowed(&filter).map_or_else(|| self.paths.tools_under(&n.path).len(), |a| a.len()),
        }
    }
}

/// The scope list a filter carries for a caller (`None` for a trusted one).
fn scopes_of(who: &Principal) -> Option<Vec<String>> {
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

fn checked_limit(limit: Option<usize>) -> Result<usize, ProtocolError> {
    match limit.unwrap_or(DEFAULT_LIMIT) {
        l @ 1..=MAX_LIMIT => Ok(l),
        l => Err(ProtocolError::invalid(format!("limit {l} is out of range: use 1 to {MAX_LIMIT}"))),
    }
}
