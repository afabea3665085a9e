//! Token accounting: what loading every schema up front costs a model, against what a
//! scripted agent spends reaching the gold tool through discovery (search -> expand -> call).
//!
//! Both sides are counted with a real tokenizer (tiktoken `o200k_base`) over the exact JSON a
//! model API receives. The discovery side runs the real [`ToolSet`] and engine: every turn it
//! pays for the visible definitions again, plus the conversation so far (calls and results),
//! as a chat API bills it. The up-front side is one turn: every definition and the final call.

use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use toolsearch_disclosure::{
    Availability, Detail, Dialect, DiscoveryConfig, LiveCatalog, TokenCounter, ToolDef, ToolSet, ToolSetConfig,
};

use crate::metrics::Percentiles;
use crate::queries::LabelledQuery;

/// Token costs over a query set.
#[derive(Debug, Clone, Serialize)]
pub struct TokenReport {
    /// Queries run.
    pub queries: usize,
    /// Tools in the catalogue.
    pub tools: usize,
    /// The definition format counted.
    pub dialect: Dialect,
    /// Every tool definition, loaded up front.
    pub upfront_definitions: usize,
    /// Up front, per query: the definitions plus the model's call.
    pub upfront_per_query: f64,
    /// Through discovery, per query: input tokens over all turns (mean).
    pub discovery_per_query: f64,
    /// Percentiles of the discovery cost per query.
    pub discovery_percentiles: Percentiles,
    /// The discovery tools' definitions (paid every turn).
    pub discovery_definitions: usize,
    /// Mean turns per query.
    pub turns: f64,
    /// `upfront_per_query / discovery_per_query`.
    pub ratio: f64,
    /// Share of queries where the script reached a gold tool.
    pub reached: f64,
}

/// Runs the scripted agent over `queries` on `live`'s catalogue.
///
/// Per query: search (5 pointers); if no gold tool is among them, search once more for 20; then
/// expand the first gold tool found (or the top pointer if none) and call it.
pub fn token_report(live: &Arc<LiveCatalog>, queries: &[LabelledQuery], dialect: Dialect) -> TokenReport {
    let counter = TokenCounter::new();
    let engine = live.engine();
    let catalog = engine.catalog();
    let availability = Arc::new(Availability::default());
    let config = ToolSetConfig {
        discovery: DiscoveryConfig { detail: Detail::Summaries, limit: 5, ..DiscoveryConfig::default() },
        node_facades: false,
        ..ToolSetConfig::default()
    };
    let probe = ToolSet::new(live.clone(), availability.clone(), config.clone()).expect("a plain discovery set builds");
    let all: Vec<ToolDef> =
        catalog.tools.iter().filter_map(|t| probe.tool_name(&t.id).and_then(|n| probe.definition_of(&n))).collect();
    let upfront_definitions = counter.definitions(&all, dialect);
    let discovery_definitions = counter.definitions(&probe.visible(), dialect);
    let mut costs = Vec::with_capacity(queries.len());
    let mut upfront_total = 0.0;
    let mut turns_total = 0usize;
    let mut reached = 0usize;
    for q in queries {
        let mut set = ToolSet::new(live.clone(), availability.clone(), config.clone()).expect("set builds");
        let is_gold = |id: &str| q.gold.iter().any(|g| g.iter().any(|x| x == id));
        let mut history = 0usize;
        let mut billed = 0usize;
        let mut turns = 0usize;
        let mut turn = |set: &mut ToolSet, name: &str, input: serde_json::Value| -> String {
            let call = json!({"name": name, "arguments": input}).to_string();
            billed += counter.definitions(&set.visible(), dialect) + history + counter.count(&call);
            turns += 1;
            let out = set.call(name, &input);
            history += counter.count(&call) + counter.count(&out.text);
            out.text
        };
        let mut chosen: Option<String> = None;
        let mut top: Option<String> = None;
        for limit in [5, 20] {
            let text = turn(&mut set, "search_tool_by_category", json!({"query": q.text, "limit": limit}));
            let ids = pointer_ids(&text);
            top = top.or_else(|| ids.first().cloned());
            chosen = ids.into_iter().find(|id| is_gold(id));
            if chosen.is_some() {
                break;
            }
        }
        if chosen.is_some() {
            reached += 1;
        }
        let mut final_call = 0;
        if let Some(id) = chosen.or(top) {
            turn(&mut set, "expand_tool", json!({"tool_id": id}));
            let name = set.tool_name(&id).unwrap_or(id);
            let call = json!({"name": name, "arguments": {}}).to_string();
            final_call = counter.count(&call);
            billed += counter.definitions(&set.visible(), dialect) + history + final_call;
            turns += 1;
        }
        upfront_total += (upfront_definitions + final_call) as f64;
        turns_total += turns;
        costs.push(billed as f64);
    }
    let n = queries.len().max(1) as f64;
    let discovery_per_query = costs.iter().sum::<f64>() / n;
    let upfront_per_query = upfront_total / n;
    TokenReport {
        queries: queries.len(),
        tools: catalog.tools.len(),
        dialect,
        upfront_definitions,
        upfront_per_query,
        discovery_per_query,
        discovery_percentiles: Percentiles::of(&costs),
        discovery_definitions,
        turns: turns_total as f64 / n,
        ratio: if discovery_per_query > 0.0 { upfront_per_query / discovery_per_query } else { 0.0 },
        reached: reached as f64 / n,
    }
}

/// Tool ids in a search answer's text (empty for an error answer).
fn pointer_ids(text: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else { return Vec::new() };
    v["results"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["tool_id"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}
