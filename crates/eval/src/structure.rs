//! Structure evidence for the candidate dumps: how relevant a candidate's category node (its
//! server, its API) is to the query, by the node's own document and by what its tools say.
//! Measured offline (issue #63 item 3, `scripts/tune-structure.py`) before any weight of it
//! enters the ranking.

use std::collections::HashMap;

use toolsearch_index::NO_NODE;
use toolsearch_query::Engine;

/// Each tool's category node and each node's tools, read once per dump.
pub(crate) struct NodeEvidence {
    tools_of: HashMap<u32, Vec<u32>>,
}

impl NodeEvidence {
    pub(crate) fn new(engine: &Engine) -> NodeEvidence {
        let mut tools_of: HashMap<u32, Vec<u32>> = HashMap::new();
        for (ord, &node) in engine.index().tool_nodes().iter().enumerate() {
            if node != NO_NODE {
                tools_of.entry(node).or_default().push(ord as u32);
            }
        }
        NodeEvidence { tools_of }
    }

    /// For tool `ord` and the query vector `query`: the cosine of its node's own document, and
    /// the mean cosine of the node's tools (`None` for a tool outside any node). `seen` caches
    /// nodes within one query.
    pub(crate) fn of(
        &self,
        engine: &Engine,
        query: &[f32],
        ord: u32,
        seen: &mut HashMap<u32, (f32, f32)>,
    ) -> Result<Option<(f32, f32)>, String> {
        let node = engine.index().tool_nodes().get(ord as usize).copied().unwrap_or(NO_NODE);
        if node == NO_NODE {
            return Ok(None);
        }
        if let Some(v) = seen.get(&node) {
            return Ok(Some(*v));
        }
        let index = engine.index();
        let own = index.node_score(node, query).map_err(|e| e.to_string())?;
        let tools = self.tools_of.get(&node).map(Vec::as_slice).unwrap_or_default();
        let mut sum = 0.0;
        for &t in tools {
            sum += index.tool_score(t, query).map_err(|e| e.to_string())?;
        }
        let v = (own, sum / tools.len().max(1) as f32);
        seen.insert(node, v);
        Ok(Some(v))
    }
}
