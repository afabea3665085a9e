//! The hints of error answers: which categories a query does match, which ids look like a
//! mistyped one, which paths are near a wrong one. Built only from what the caller may see.

use serde_json::json;
use toolsearch_catalog::{display_path, Node, PathSpec};
use toolsearch_index::DocKind;

use crate::engine::Engine;
use crate::error::{Call, ErrorCode, ProtocolError};
use crate::protocol::SearchNodesRequest;
use crate::ranking::Ranked;
use crate::scope::Filter;
use crate::suggest::{closest, quoted, MAX_SUGGESTED};

/// The confidence a category (through its best tool) or a listed entry needs to count as
/// matching a query: in `list`'s query filter and in the hints of `NO_MATCH_IN_CATEGORY`.
pub(crate) const MATCH_FLOOR: f32 = 0.08;
/// Closest tools in scope named in the hints of `NO_MATCH_IN_CATEGORY`.
const CLOSEST_HINTS: usize = 3;

/// `UNKNOWN_PATH` for `spec` (the request's `field`), naming the closest categories among
/// `visible` ones (every category when `None`).
pub(crate) fn unknown_path(engine: &Engine, spec: &PathSpec, field: &str, visible: Option<&[bool]>) -> ProtocolError {
    let asked = spec.as_written();
    let nodes: Vec<&Node> = match visible {
        None => engine.catalog().nodes.iter().collect(),
        Some(v) => engine.catalog().nodes.iter().zip(v).filter(|(_, visible)| **visible).map(|(n, _)| n).collect(),
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
    err.with_next(Call::List, json!({ "path": next_path }))
}

/// "the catalogue", or the quoted category path.
fn where_of(scope: &[String]) -> String {
    if scope.is_empty() {
        "the catalogue".to_owned()
    } else {
        format!("{:?}", display_path(scope))
    }
}

/// `NO_MATCH_IN_CATEGORY` because no tool the caller may see in scope carries the tags.
fn no_tool_with_tags(engine: &Engine, query: &str, filter: &Filter) -> Option<ProtocolError> {
    let scope = filter.path.as_slice();
    if filter.tags.is_empty() || !engine.paths().allowed(filter).is_some_and(|a| a.is_empty()) {
        return None;
    }
    let message = format!("no tool in {} carries all the tags {:?}", where_of(scope), filter.tags);
    Some(
        ProtocolError::new(ErrorCode::NoMatchInCategory, message)
            .with_hints(vec!["drop or change a tag".into()])
            .with_next(Call::SearchToolByCategory, json!({ "query": query, "category_path": display_path(scope) })),
    )
}

/// `NO_MATCH_IN_CATEGORY` for `match: "regex"`: no tool id or name the caller may see in scope
/// matches the pattern (nothing is ranked, so there is no confidence to speak of).
pub(crate) fn no_pattern_match(engine: &Engine, pattern: &str, filter: &Filter) -> ProtocolError {
    if let Some(e) = no_tool_with_tags(engine, pattern, filter) {
        return e;
    }
    let scope = filter.path.as_slice();
    let message = format!("no tool id or name in {} matches the pattern {}", where_of(scope), quoted(pattern));
    ProtocolError::new(ErrorCode::NoMatchInCategory, message)
        .with_hints(vec![
            "the pattern is matched case-insensitively anywhere in tool ids and names: try a shorter part of a name"
                .into(),
            "or describe the task and search by meaning (match \"semantic\")".into(),
        ])
        .with_next(Call::SearchToolByCategory, json!({ "query": pattern, "category_path": display_path(scope) }))
}

/// `NO_MATCH_IN_CATEGORY` for `query` under `filter`: no tool the caller may see in scope
/// fits (`ranked`, the scope's ranking, is under the answerability threshold or, with an
/// explicit `min_confidence`, has nothing above it). Names the categories where the query
/// does fit (among the tools the caller may see) and the closest tools in scope as hints.
pub(crate) fn no_match(engine: &Engine, query: &str, filter: &Filter, ranked: &Ranked) -> ProtocolError {
    let scope = filter.path.as_slice();
    let where_ = where_of(scope);
    if let Some(e) = no_tool_with_tags(engine, query, filter) {
        return e;
    }
    let options = engine.options();
    let said = quoted(query);
    let message = match options.min_confidence {
        Some(min) => format!("no tool in {where_} matches {said} with confidence >= {min:.2}"),
        None if options.answerability.abstains(ranked.answerable) => format!(
            "no tool in {where_} fits {said} (answerable {:.2}, under {:.2})",
            ranked.answerable, options.answerability.threshold
        ),
        None => format!("no tool in {where_} fits {said}: tools elsewhere fit it far better"),
    };
    let mut err = ProtocolError::new(ErrorCode::NoMatchInCategory, message);
    // What the request names that nothing the caller may see mentions: it says what is
    // missing, not only that nothing fits (after where the request does fit, if anywhere).
    let unmatched = unmatched_hint(&engine.unmatched_terms(query, filter));
    // Where does the query fit? Rank over the whole catalogue, report the best categories.
    let everywhere = if scope.is_empty() {
        None
    } else {
        let fits = |r: &Ranked| options.min_confidence.is_some() || !options.answerability.abstains(r.answerable);
        // The depth a search draws, so a search that found the request fits elsewhere finds
        // this ranking in the cache.
        engine.rank_tools_answer(query, &filter.at(&[]), options.candidates).ok().filter(fits)
    };
    let mut categories: Vec<(String, f32, String)> = Vec::new();
    for s in everywhere
        .iter()
        .flat_map(|r| &r.results)
        .filter(|s| s.confidence >= options.min_confidence.unwrap_or(MATCH_FLOOR))
    {
        let t = &engine.catalog().tools[s.ord as usize];
        let cat = display_path(&t.paths[0]);
        if !categories.iter().any(|c| c.0 == cat) {
            categories.push((cat, s.confidence, t.name.clone()));
        }
        if categories.len() == 3 {
            break;
        }
    }
    // The closest tools in scope, for a caller that wants to judge for itself.
    let closest: Vec<String> = ranked
        .results
        .iter()
        .take(CLOSEST_HINTS)
        .map(|s| {
            let t = &engine.catalog().tools[s.ord as usize];
            format!("closest in scope: {:?} ({}), confidence {:.2}", t.id, t.name, s.confidence)
        })
        .collect();
    if let Some(best) = categories.first() {
        err.hints.extend(
            categories.iter().map(|(c, conf, name)| format!("{c:?} matches (best: {name}, confidence {conf:.2})")),
        );
        err.hints.extend(unmatched);
        err.hints.extend(closest);
        return err.with_next(Call::SearchToolByCategory, json!({ "query": query, "category_path": best.0 }));
    }
    err.hints.extend(unmatched);
    err.hints.push("rephrase the request with the action and the object, or browse with list".into());
    err.hints.extend(closest);
    let nodes = engine
        .search_nodes_for(&SearchNodesRequest { query: query.to_owned(), limit: Some(3) }, &filter.scopes)
        .map(|r| r.results)
        .unwrap_or_default();
    err.hints.extend(
        nodes.iter().filter(|n| n.confidence >= MATCH_FLOOR).map(|n| format!("category {:?} may be related", n.path)),
    );
    err.with_next(
        Call::List,
        json!({ "path": if scope.is_empty() { json!(null) } else { json!(display_path(scope)) } }),
    )
}

/// "nothing here mentions "weread" or "ics"", or nothing when every term is matched.
fn unmatched_hint(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms.iter().map(|t| format!("{t:?}")).collect();
    match quoted.split_last() {
        None => None,
        Some((last, [])) => Some(format!("nothing here mentions {last}")),
        Some((last, rest)) => Some(format!("nothing here mentions {} or {last}", rest.join(", "))),
    }
}

/// `TOOL_NOT_FOUND` for `id`, suggesting similar ids among the tools the caller may see.
pub(crate) fn tool_not_found(engine: &Engine, id: &str, scopes: &Option<Vec<String>>) -> ProtocolError {
    // Suggestions come only from tools the caller may see, read from its kept list of them (a
    // pass over every tool would take longer for the hidden ones).
    let allowed = engine.paths().allowed(&Filter { scopes: scopes.clone(), ..Filter::default() });
    let tools = &engine.catalog().tools;
    let ids: Box<dyn Iterator<Item = &str>> = match allowed.as_deref() {
        Some(a) => Box::new(a.iter().map(|&o| tools[o as usize].id.as_str())),
        None => Box::new(tools.iter().map(|t| t.id.as_str())),
    };
    let mut similar: Vec<String> = closest(id, ids, 3, 0.4).into_iter().map(str::to_owned).collect();
    let view = engine.tool_view(scopes);
    let lexical = (id.len() <= MAX_SUGGESTED)
        .then(|| engine.index().lexical(id, DocKind::Tool, None, allowed.as_ref(), &view, 3).ok())
        .flatten();
    for h in lexical.unwrap_or_default() {
        let tid = &engine.catalog().tools[h.ord as usize].id;
        if similar.len() < 5 && !similar.contains(tid) {
            similar.push(tid.clone());
        }
    }
    let mut err = ProtocolError::new(ErrorCode::ToolNotFound, format!("no tool has id {}", quoted(id)));
    err.hints = similar.iter().map(|s| format!("did you mean {s:?}?")).collect();
    match similar.first() {
        Some(best) => err.with_next(Call::ExpandTool, json!({ "tool_id": best })),
        None if id.len() <= MAX_SUGGESTED => err.with_next(Call::SearchToolByCategory, json!({ "query": id })),
        None => err,
    }
}
