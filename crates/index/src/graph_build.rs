//! Writing the HNSW graph: a full build with hnsw_rs, or an update of the previous index's
//! graph when a rebuild changed few tools.
//!
//! A full build costs most of a rebuild that embeds little (hnsw_rs takes ~43 s for 100k tools
//! on 2 cores), so when at most [`UPDATE_MAX_FRESH`] of the tools are new or changed, the
//! previous graph is kept: unchanged tools keep their neighbour lists (renumbered, with links
//! to removed tools dropped) and each new or changed tool is inserted the HNSW way (descend,
//! beam search with breadth [`EF_CONSTRUCTION`] on each of its layers, neighbours chosen by
//! the diversity heuristic, links made both ways and pruned to the layer's degree).

use std::path::Path;

use hnsw_rs::prelude::{DistDot, Hnsw};

use crate::dense::dot;
use crate::error::{io, IndexError};
use crate::graph::{descend, search_layer, Graph, Layers, Scored, MAGIC, MAX_LAYERS};

/// Neighbours per point on the upper layers (twice as many on layer 0).
const MAX_CONNECTIONS: usize = 24;
/// Beam breadth while building.
const EF_CONSTRUCTION: usize = 200;
/// The largest share of new or changed tools for which the previous graph is updated rather
/// than rebuilt.
pub(crate) const UPDATE_MAX_FRESH: f64 = 0.10;

/// Neighbour lists in memory: per point, per layer it is on (0 to its level).
struct Lists {
    per: Vec<Vec<Vec<u32>>>,
    entry: u32,
}

impl Layers for Lists {
    fn points(&self) -> usize {
        self.per.len()
    }

    fn neighbours(&self, layer: usize, ord: u32) -> &[u32] {
        self.per[ord as usize].get(layer).map_or(&[], Vec::as_slice)
    }
}

impl Lists {
    fn top(&self) -> usize {
        self.per.get(self.entry as usize).map_or(0, |l| l.len().saturating_sub(1))
    }

    /// The graph file's bytes (layout in [`crate::graph`]).
    fn encode(&self) -> Vec<u8> {
        let n = self.per.len();
        let levels = if n == 0 { 0 } else { self.top() + 1 };
        let mut words: Vec<u32> = vec![n as u32, levels as u32, if n == 0 { 0 } else { self.entry }];
        for layer in 0..levels {
            let members: Vec<u32> = (0..n as u32).filter(|&o| self.per[o as usize].len() > layer).collect();
            words.push(members.len() as u32);
            if layer > 0 {
                words.extend(&members);
            }
            let mut offset = 0u32;
            words.push(0);
            for &m in &members {
                offset += self.per[m as usize][layer].len() as u32;
                words.push(offset);
            }
            for &m in &members {
                words.extend(&self.per[m as usize][layer]);
            }
        }
        let mut bytes = Vec::with_capacity(8 + words.len() * 4);
        bytes.extend_from_slice(MAGIC);
        for w in words {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        bytes
    }
}

/// Builds the graph over `vectors` (tool rows) with hnsw_rs.
fn build(vectors: &[Vec<f32>]) -> Lists {
    let n = vectors.len();
    if n == 0 {
        return Lists { per: Vec::new(), entry: 0 };
    }
    let hnsw: Hnsw<f32, DistDot> = Hnsw::new(MAX_CONNECTIONS, n, MAX_LAYERS, EF_CONSTRUCTION, DistDot {});
    let data: Vec<(&Vec<f32>, usize)> = vectors.iter().zip(0..).collect();
    hnsw.parallel_insert(&data);
    let mut per: Vec<Vec<Vec<u32>>> = vec![Vec::new(); n];
    let (mut top, mut entry) = (0usize, 0u32);
    for point in hnsw.get_point_indexation() {
        let ord = point.get_origin_id();
        let level = point.get_point_id().0 as usize;
        let neighbours = point.get_neighborhood_id();
        per[ord] = (0..=level)
            .map(|l| neighbours.get(l).map_or_else(Vec::new, |v| v.iter().map(|nb| nb.d_id as u32).collect()))
            .collect();
        if level > top || (level == top && (ord as u32) < entry) {
            (top, entry) = (level, ord as u32);
        }
    }
    // hnsw_rs may list, on an upper layer, a neighbour that is not on that layer: a walk of
    // that layer could not go on from it, so such links are dropped.
    let levels: Vec<usize> = per.iter().map(Vec::len).collect();
    for lists in &mut per {
        for (layer, list) in lists.iter_mut().enumerate().skip(1) {
            list.retain(|&x| levels[x as usize] > layer);
        }
    }
    Lists { per, entry }
}

/// Writes the graph of `vectors` to `path`, built from scratch.
pub(crate) fn write(path: &Path, vectors: &[Vec<f32>]) -> Result<(), IndexError> {
    std::fs::write(path, build(vectors).encode()).map_err(io(path))
}

/// Writes the graph of `vectors` to `path` by updating `old`, the previous index's graph.
/// `previous[i]` is the old ordinal of tool `i` when its vector is unchanged (each old
/// ordinal at most once). Returns `false`, writing nothing, when too much changed for an
/// update to be worth it (the caller then builds from scratch).
pub(crate) fn write_updated(
    path: &Path,
    old: &Graph,
    previous: &[Option<u32>],
    vectors: &[Vec<f32>],
) -> Result<bool, IndexError> {
    let n = vectors.len();
    let fresh: Vec<u32> = (0..n as u32).filter(|&i| previous[i as usize].is_none()).collect();
    let mut new_of_old = vec![u32::MAX; old.points()];
    for (i, p) in previous.iter().enumerate() {
        if let Some(&o) = p.as_ref().filter(|&&o| (o as usize) < new_of_old.len()) {
            new_of_old[o as usize] = i as u32;
        }
    }
    let kept = n - fresh.len();
    if kept == 0 || fresh.len() as f64 > UPDATE_MAX_FRESH * n as f64 {
        return Ok(false);
    }
    // Unchanged tools keep their lists, renumbered; links to removed tools are dropped.
    let mut per: Vec<Vec<Vec<u32>>> = vec![Vec::new(); n];
    for (i, p) in previous.iter().enumerate() {
        let Some(o) = *p else { continue };
        per[i] = (0..old.levels())
            .take_while(|&l| old.on_layer(l, o))
            .map(|l| old.neighbours(l, o).iter().map(|&x| new_of_old[x as usize]).filter(|&x| x != u32::MAX).collect())
            .collect();
    }
    // The entry: the old one if kept, else a kept point of the highest level.
    let entry = match new_of_old.get(old.entry() as usize) {
        Some(&e) if e != u32::MAX => e,
        _ => (0..n as u32)
            .filter(|&i| !per[i as usize].is_empty())
            .max_by_key(|&i| (per[i as usize].len(), u32::MAX - i))
            .unwrap_or(0),
    };
    let mut lists = Lists { per, entry };
    let level_scale = 1.0 / (MAX_CONNECTIONS as f64).ln();
    for &p in &fresh {
        insert(&mut lists, vectors, p, random_level(p, level_scale));
    }
    std::fs::write(path, lists.encode()).map_err(io(path))?;
    Ok(true)
}

/// A point's level, drawn from HNSW's geometric distribution by a hash of its ordinal (so a
/// rebuild is reproducible).
fn random_level(ord: u32, scale: f64) -> usize {
    let mut x = u64::from(ord).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let u = ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    ((-u.ln() * scale) as usize).min(MAX_LAYERS - 1)
}

/// Inserts point `p` (whose lists are empty) on layers 0 to `level`.
fn insert(lists: &mut Lists, vectors: &[Vec<f32>], p: u32, level: usize) {
    let q = &vectors[p as usize];
    let mut score = |o: u32| dot(&vectors[o as usize], q);
    let top = lists.top();
    let mut at = descend(lists, &mut score, lists.entry, top, level.min(top));
    lists.per[p as usize] = vec![Vec::new(); level + 1];
    for layer in (0..=level.min(top)).rev() {
        let mut found = search_layer(lists, &mut score, at, EF_CONSTRUCTION, layer, |o| o != p, |_| {});
        found.sort_by(|a, b| b.cmp(a));
        if let Some(&best) = found.first() {
            at = best;
        }
        let degree = if layer == 0 { 2 * MAX_CONNECTIONS } else { MAX_CONNECTIONS };
        let chosen = diverse(vectors, &found, degree);
        for &nb in &chosen {
            let list = &mut lists.per[nb as usize][layer];
            list.push(p);
            if list.len() > degree {
                let anchor = &vectors[nb as usize];
                let mut scored: Vec<Scored> =
                    list.iter().map(|&x| Scored(dot(&vectors[x as usize], anchor), x)).collect();
                scored.sort_by(|a, b| b.cmp(a));
                *list = diverse(vectors, &scored, degree);
            }
        }
        lists.per[p as usize][layer] = chosen;
    }
    if level > top {
        lists.entry = p;
    }
}

/// HNSW's neighbour heuristic: from `candidates` (best first, scored against the point being
/// linked), keep one only if it is closer to that point than to every one already kept, up to
/// `degree`; then fill up with the closest of the rest.
fn diverse(vectors: &[Vec<f32>], candidates: &[Scored], degree: usize) -> Vec<u32> {
    let mut kept: Vec<u32> = Vec::with_capacity(degree);
    let mut rest: Vec<u32> = Vec::new();
    for c in candidates {
        if kept.len() == degree {
            break;
        }
        let row = &vectors[c.1 as usize];
        if kept.iter().all(|&k| dot(row, &vectors[k as usize]) < c.0) {
            kept.push(c.1);
        } else {
            rest.push(c.1);
        }
    }
    for r in rest {
        if kept.len() == degree {
            break;
        }
        kept.push(r);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::unit_vectors;
    use crate::vectors::Vectors;

    #[test]
    fn an_updated_graph_finds_what_an_exact_scan_finds() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut rows = unit_vectors(3000, 24);
        write(&d.join("old"), &rows).unwrap();
        let old = Graph::open(&d.join("old"), 3000).unwrap();
        // 5% of the tools change; the new catalogue also drops the first ten and adds ten.
        let replacement = unit_vectors(3160, 24);
        let mut previous: Vec<Option<u32>> = (0..3000).map(Some).collect();
        for i in (0..3000).step_by(20) {
            rows[i] = replacement[3000 + i / 20].clone();
            previous[i] = None;
        }
        let rows: Vec<Vec<f32>> = rows[10..].iter().cloned().chain(replacement[..10].iter().cloned()).collect();
        let previous: Vec<Option<u32>> = previous[10..].iter().copied().chain([None; 10]).collect();
        assert!(write_updated(&d.join("new"), &old, &previous, &rows).unwrap(), "5% changed: updated");
        let graph = Graph::open(&d.join("new"), rows.len()).unwrap();
        crate::vectors::write(&d.join("v"), &rows).unwrap();
        let vectors = Vectors::open(&d.join("v"), rows.len(), 24).unwrap();
        let mut found = 0;
        for q in unit_vectors(3200, 24).iter().skip(3180) {
            let exact = crate::dense::exact_top_k(&vectors, q, 0..rows.len() as u32, 10);
            let approx = graph.search(&vectors, q, 10, 64, None);
            found += approx.iter().filter(|h| exact.iter().any(|e| e.ord == h.ord)).count();
        }
        assert!(found as f64 / 200.0 >= 0.95, "recall@10 {}", found as f64 / 200.0);
        // Every new and changed point is reachable: it is its own nearest neighbour.
        for i in (0..rows.len()).filter(|&i| previous[i].is_none()) {
            assert_eq!(graph.search(&vectors, &rows[i], 1, 64, None)[0].ord, i as u32, "point {i}");
        }
    }

    #[test]
    fn too_many_changes_rebuild_from_scratch() {
        let dir = tempfile::tempdir().unwrap();
        let rows = unit_vectors(500, 8);
        write(&dir.path().join("old"), &rows).unwrap();
        let old = Graph::open(&dir.path().join("old"), 500).unwrap();
        let previous: Vec<Option<u32>> = (0..500).map(|i| (i % 5 != 0).then_some(i)).collect();
        assert!(!write_updated(&dir.path().join("new"), &old, &previous, &rows).unwrap());
        assert!(!dir.path().join("new").exists());
    }
}
