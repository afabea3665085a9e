//! What each caller may see of the catalogue, as one digest per set of scopes: how the hub
//! tells whether a rebuild changed anything a session's caller may see.

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use toolsearch_disclosure::LiveCatalog;
use toolsearch_query::Principal;

/// What callers may see of the catalogue, as one digest per set of scopes, for one index
/// generation: a rebuild that changes only tools a caller may not see leaves its digest as it
/// was, so the caller is not told that anything changed.
#[derive(Default)]
pub(crate) struct Digests {
    generation: Option<u64>,
    /// Each tool's digest (its whole record: description and schemas too), by ordinal.
    tools: Vec<u64>,
    /// The sum of the digests of the tools each set of scopes may see (`None`: every tool).
    by_scopes: HashMap<Option<BTreeSet<String>>, u64>,
}

/// The digest of what `who` may see of `live`'s catalogue now (computed once per index
/// generation and set of scopes; the first call after a rebuild reads every tool record).
pub(crate) fn visible_digest(live: &LiveCatalog, digests: &Mutex<Digests>, who: &Principal) -> u64 {
    let engine = live.engine();
    let mut d = digests.lock().unwrap_or_else(|p| p.into_inner());
    let generation = engine.index().meta().generation;
    if d.generation != Some(generation) {
        let tools = (0..engine.catalog().tools.len() as u32)
            .map(|o| {
                let mut h = std::hash::DefaultHasher::new();
                match engine.index().tool_record_bytes(o) {
                    Ok(bytes) => bytes.hash(&mut h),
                    Err(_) => o.hash(&mut h),
                }
                h.finish()
            })
            .collect();
        *d = Digests { generation: Some(generation), tools, by_scopes: HashMap::new() };
    }
    let key = who.scopes().cloned();
    if let Some(&v) = d.by_scopes.get(&key) {
        return v;
    }
    // A sum, not a chain: the order of tools in the index is not part of what a caller sees.
    // Over the tools the engine keeps for the caller's scope set: a pass over every tool would
    // take longer for the hidden ones.
    let v = engine.tools_for(who).fold(0u64, |acc, (o, _)| acc.wrapping_add(d.tools[o as usize]));
    d.by_scopes.insert(key, v);
    v
}
