//! Discovery tools: search, list, expand and call answered through the engine.

use super::*;

/// The arguments of any discovery tool, as its input schema allows them (each tool's schema
/// admits only its own fields; they are checked against it before this is read).
#[derive(Debug, Default, Deserialize)]
struct DiscoveryArgs {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    category_path: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    tool_id: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default, rename = "match")]
    match_mode: MatchMode,
    #[serde(default)]
    kind: Option<String>,
}

/// `tags` with the filter a `kind` argument asks for.
fn with_kind(mut tags: Vec<String>, kind: Option<&str>) -> Vec<String> {
    match kind {
        Some("prompt") => tags.push(PROMPT_TAG.to_owned()),
        Some("tool") => tags.push(format!("!{PROMPT_TAG}")),
        _ => {}
    }
    tags
}

/// A pointer's kind, where the catalogue holds more than tools.
fn kind_of(tags: &[String]) -> &'static str {
    if tags.iter().any(|t| t == PROMPT_TAG) {
        "prompt"
    } else {
        "tool"
    }
}

/// A non-blank path as the protocol takes it.
fn joined(path: Option<String>) -> Option<toolsearch_catalog::PathSpec> {
    path.filter(|p| !p.trim().is_empty()).map(toolsearch_catalog::PathSpec::Joined)
}

impl ToolSet {
    pub(super) fn discover(&mut self, engine: &Engine, tool: &DiscoveryTool, input: &Value) -> Reply {
        // The arguments must fit the tool's own input schema, as for any tool.
        let definition = tool.definition(&self.config.discovery, engine.catalog());
        if let Err(problems) = check_arguments(&definition.input_schema, input) {
            let message = format!("arguments of {} do not match its input schema: {}", tool.name(), problems[0]);
            return Err(refusal(ErrorCode::InvalidArgument, &message, problems).into());
        }
        let who = self.config.principal.clone();
        let input = if input.is_null() { json!({}) } else { input.clone() };
        let args: DiscoveryArgs = serde_json::from_value(input)
            .map_err(|e| refusal(ErrorCode::InvalidArgument, &format!("arguments of {}: {e}", tool.name()), vec![]))?;
        let limit = match args.limit {
            None => self.config.discovery.limit,
            Some(n @ 1..=50) => n,
            Some(_) => {
                return Err(refusal(ErrorCode::InvalidArgument, "limit must be an integer from 1 to 50", vec![]).into())
            }
        };
        let DiscoveryArgs { query, category_path, path, tags, cursor, tool_id, arguments, match_mode, kind, .. } = args;
        let tags = with_kind(tags, kind.as_deref());
        let kinds = self.config.discovery.kinds;
        match tool {
            DiscoveryTool::SearchTools | DiscoveryTool::Domain(_) => {
                let category_path = match tool {
                    DiscoveryTool::Domain(path) => Some(toolsearch_catalog::PathSpec::Segments(path.clone())),
                    _ => joined(category_path),
                };
                let hidden = self.unavailable_count(engine);
                let req = SearchToolsRequest {
                    query: query.unwrap_or_default(),
                    category_path,
                    tags,
                    limit: Some((limit + hidden).min(50)),
                    cursor,
                    match_mode,
                };
                match engine.search_tool_by_category(&who, &req) {
                    Ok(mut answer) => {
                        let everywhere = req.category_path.as_ref().is_none_or(|p| p.segments().is_empty());
                        let held = self.hold_back(engine, &mut answer.results, |p| &p.tool_id, limit, everywhere);
                        answer.results.truncate(limit);
                        let ids: Vec<String> = answer.results.iter().map(|p| p.tool_id.clone()).collect();
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: Some(req.query.clone()),
                            category_path: answer.category_path.clone(),
                            results: ids.clone(),
                        });
                        let mut body = match self.config.discovery.detail {
                            Detail::Names => json!({"category_path": answer.category_path, "tool_ids": ids}),
                            Detail::Summaries => {
                                let results: Vec<Value> = answer
                                    .results
                                    .iter()
                                    .map(|p| {
                                        let mut v = json!({"tool_id": p.tool_id, "summary": p.summary, "path": p.path, "confidence": round3(p.confidence)});
                                        if kinds {
                                            v["kind"] = json!(kind_of(&p.tags));
                                        }
                                        v
                                    })
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
                        if let Some(next) = &answer.next_cursor {
                            body["next_cursor"] = json!(next);
                        }
                        if let Some(answerable) = answer.answerable {
                            body["answerable"] = json!(round3(answerable));
                        }
                        if let Some(held) = held {
                            body["unavailable"] = held;
                        }
                        Ok(body.to_string())
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
                        Err(e.into())
                    }
                }
            }
            DiscoveryTool::SearchNodes => {
                let req = SearchNodesRequest { query: query.unwrap_or_default(), limit: Some(limit) };
                match engine.search_nodes(&who, &req) {
                    Ok(answer) => {
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: Some(req.query),
                            category_path: String::new(),
                            results: answer.results.iter().map(|r| r.path.clone()).collect(),
                        });
                        Ok(serde_json::to_string(&answer).expect("answers serialise"))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            DiscoveryTool::List => {
                let req = ListRequest { path: joined(path), tags, query: None, limit: Some(limit), cursor };
                match engine.list(&who, &req) {
                    Ok(mut answer) => {
                        let root = req.path.as_ref().is_none_or(|p| p.segments().is_empty());
                        let held = self.hold_back(engine, &mut answer.tools, |p| &p.tool_id, usize::MAX, root);
                        self.audit.push(AuditEvent::Search {
                            tool: tool.name(),
                            query: None,
                            category_path: answer.path.clone(),
                            results: answer.tools.iter().map(|p| p.tool_id.clone()).collect(),
                        });
                        let mut body = serde_json::to_value(&answer).expect("answers serialise");
                        if let Some(held) = held {
                            body["unavailable"] = held;
                        }
                        Ok(body.to_string())
                    }
                    Err(e) => Err(e.into()),
                }
            }
            DiscoveryTool::Expand => {
                let id = tool_id.unwrap_or_default();
                self.expand(engine, &id).map(|v| v.to_string()).map_err(Refused::from)
            }
            DiscoveryTool::Call => {
                let id = tool_id.unwrap_or_default();
                let arguments = arguments.unwrap_or_else(|| json!({}));
                self.call_tool(engine, &id, &arguments, "call_tool")
            }
        }
    }

    /// Discloses tool `id`'s full definition and makes it callable.
    pub(super) fn expand(&mut self, engine: &Engine, id: &str) -> Result<Value, ProtocolError> {
        if let Some(message) = self.unavailable(engine, id) {
            return Err(refusal(ErrorCode::Unavailable, &message, vec![]));
        }
        let answer = engine.expand_tool(&self.config.principal, &ExpandToolRequest { tool_id: id.to_owned() })?;
        let id = answer.tool_id.as_str();
        let without_discovery = !self.disclosed.contains(id) && self.audit.last_seen_in_search(id).is_none();
        self.note_choice(id);
        self.audit.push(AuditEvent::Expand { tool_id: id.to_owned(), without_discovery });
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
    pub(super) fn note_choice(&mut self, id: &str) {
        if self.disclosed.contains(id) {
            return;
        }
        if let Some((rank, search_step)) = self.audit.last_seen_in_search(id) {
            self.audit.push(AuditEvent::Choose { tool_id: id.to_owned(), rank, search_step });
        }
    }
}

/// Checks `input` against a discovery tool's input schema; every problem, each naming the
/// argument at fault (`query`: 5 is not of type "string"; `color`: unknown argument).
pub(super) fn check_arguments(schema: &Value, input: &Value) -> Result<(), Vec<String>> {
    let Some(validator) = compiled(schema) else {
        return Ok(());
    };
    let problems: Vec<String> = validator
        .iter_errors(input)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            let field = at.trim_start_matches('/');
            match e.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    format!(
                        "unknown argument(s) {}",
                        unexpected.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", ")
                    )
                }
                _ if field.is_empty() => e.to_string(),
                _ => format!("argument `{field}`: {e}"),
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Compiles a discovery tool's input schema now, when a tool set is made, so that its first
/// call does not pay for it (about 2 ms: the first call of a server's first session took
/// 2.9 ms instead of 0.6; docs/protocol.md, "Timing"). Kept per process, as at a call.
pub(super) fn compile_ahead(schema: &Value) {
    let _ = compiled(schema);
}

/// The compiled form of a discovery tool's input schema. The few schemas there are (one per
/// discovery tool and configuration) are compiled once per process: compiling, which checks
/// the schema against the meta-schema, costs far more than checking a call's arguments.
fn compiled(schema: &Value) -> Option<std::sync::Arc<jsonschema::Validator>> {
    let key = schema.to_string();
    let cache = COMPILED.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return v.clone();
    }
    let v = jsonschema::validator_for(schema).ok().map(std::sync::Arc::new);
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(key, v.clone());
    v
}

/// The compiled schemas of this process, by their JSON text ([`compiled`]).
static COMPILED: std::sync::OnceLock<std::sync::Mutex<Compiled>> = std::sync::OnceLock::new();
type Compiled = HashMap<String, Option<std::sync::Arc<jsonschema::Validator>>>;

/// A confidence as the model reads it: three decimals, without f32-to-f64 noise.
pub(super) fn round3(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_compiled_ahead_is_the_one_a_call_checks_with() {
        let schema =
            json!({"type": "object", "properties": {"ahead": {"type": "string"}}, "additionalProperties": false});
        let kept = || COMPILED.get().is_some_and(|c| c.lock().unwrap().contains_key(&schema.to_string()));
        assert!(!kept());
        compile_ahead(&schema);
        assert!(kept(), "not compiled ahead");
        let (first, again) = (compiled(&schema).unwrap(), compiled(&schema).unwrap());
        assert!(std::sync::Arc::ptr_eq(&first, &again), "compiled again at the call");
        assert_eq!(check_arguments(&schema, &json!({"ahead": "x"})), Ok(()));
        let problems = check_arguments(&schema, &json!({"ahead": 1, "other": 2})).unwrap_err();
        assert!(problems.iter().any(|p| p.contains("`other`")), "{problems:?}");
    }
}
