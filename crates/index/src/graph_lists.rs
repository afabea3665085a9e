//! The neighbour lists of an HNSW graph being built, and building them from scratch: a point
//! gets a level from a geometric distribution drawn by a hash of its ordinal, descends
//! greedily from the entry point to its level, then on each of its layers runs a beam search
//! of breadth [`EF_CONSTRUCTION`], keeps neighbours by the diversity heuristic and links them
//! both ways, pruning a list that grows past the layer's degree. Two threads insert at once,
//! each list behind its own lock. `crate::graph_build` decides between this, an update of the
//! previous graph, and a build in parts (`crate::graph_parts`).

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rayon::prelude::*;

use crate::error::{io, IndexError};
use crate::graph::{MAGIC, MAX_LAYERS};
use crate::graph_walk::{descend, search_layer, Layers, Scored, Visited};
use crate::vectors::Vectors;

/// Neighbours per point on the upper layers (twice as many on layer 0).
pub(crate) const MAX_CONNECTIONS: usize = 24;
/// How much the neighbour heuristic relaxes its test (DiskANN's alpha): a candidate is left
/// out when a neighbour already kept is nearer to it than `1 / alpha` of its own distance to
/// the point (1.0 is HNSW's heuristic). On realistic vectors (`cargo bench --bench graph`,
/// docs/graph.md) 1.1 took recall@10 at 100k from 0.989 to 0.997 at breadth 192 and at 1M
/// (built in parts) from 0.93 at 256 to 0.97 at 512, for builds 1.4x longer; 1.2 and 1.3 gave
/// less and took longer.
const DIVERSITY_ALPHA: f32 = 1.1;
/// Beam breadth while building.
pub(crate) const EF_CONSTRUCTION: usize = 200;

/// Neighbour lists being built: per point, one per layer it is on (0 to its level), each
/// behind its own lock so that concurrent insertions only wait for the lists they touch.
pub(crate) struct Lists<'v> {
    vectors: &'v Vectors,
    pub(crate) per: Vec<Box<[Mutex<Vec<u32>>]>>,
    pub(crate) entry: u32,
    /// Beam breadth of an insertion.
    ef: usize,
    /// Written to the header: see [`Graph::churn`].
    pub(crate) churn: u32,
}

impl Layers for Lists<'_> {
    fn with_neighbours<R>(&self, layer: usize, ord: u32, f: impl FnOnce(&[u32]) -> R) -> R {
        match self.per[ord as usize].get(layer) {
            Some(list) => f(&lock(list)),
            None => f(&[]),
        }
    }
}

/// A list's lock (a panic elsewhere cannot leave a list half-written: it is replaced whole).
pub(crate) fn lock(list: &Mutex<Vec<u32>>) -> MutexGuard<'_, Vec<u32>> {
    list.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn degree(layer: usize) -> usize {
    if layer == 0 {
        2 * MAX_CONNECTIONS
    } else {
        MAX_CONNECTIONS
    }
}

impl<'v> Lists<'v> {
    /// Empty lists for points of the given levels.
    pub(crate) fn empty(vectors: &'v Vectors, levels: &[usize]) -> Lists<'v> {
        let per = levels
            .iter()
            .map(|&level| (0..=level).map(|l| Mutex::new(Vec::with_capacity(degree(l) + 1))).collect())
            .collect();
        Lists { vectors, per, entry: 0, churn: 0, ef: EF_CONSTRUCTION }
    }

    /// The lists of the first `levels.len()` points of `vectors`, point `i` of level
    /// `levels[i]`, built from scratch with beam breadth `ef`.
    pub(crate) fn build(vectors: &'v Vectors, levels: &[usize], ef: usize) -> Lists<'v> {
        let mut lists = Lists::empty(vectors, levels);
        lists.ef = ef;
        // The entry is the first point of the highest level, inserted first; no point is above it.
        if let Some(entry) = (0..levels.len()).max_by_key(|&o| (levels[o], usize::MAX - o)) {
            lists.entry = entry as u32;
            let rest: Vec<u32> = (0..levels.len() as u32).filter(|&o| o != lists.entry).collect();
            lists.insert_all(&rest);
        }
        lists
    }

    /// The entry point (on the top layer).
    pub(crate) fn entry(&self) -> u32 {
        self.entry
    }

    /// The number of layers (0 when there are no points).
    pub(crate) fn levels(&self) -> usize {
        if self.per.is_empty() {
            0
        } else {
            self.top() + 1
        }
    }

    fn level(&self, ord: u32) -> usize {
        self.per[ord as usize].len().saturating_sub(1)
    }

    /// Point `ord`'s list on `layer` (locked).
    pub(crate) fn list(&self, ord: u32, layer: usize) -> MutexGuard<'_, Vec<u32>> {
        lock(&self.per[ord as usize][layer])
    }

    fn top(&self) -> usize {
        self.per.get(self.entry as usize).map_or(0, |l| l.len().saturating_sub(1))
    }

    /// Inserts every point of `points` (whose lists are empty), two threads at a time. Every
    /// point's level must be at most the entry point's.
    pub(crate) fn insert_all(&self, points: &[u32]) {
        let n = self.per.len();
        points.par_iter().for_each_init(|| Visited::new(n), |visited, &p| self.insert(p, visited));
    }

    /// Inserts point `p` on layers 0 to its level.
    fn insert(&self, p: u32, visited: &mut Visited) {
        let q = self.vectors.to_f32(p);
        let (level, top) = (self.level(p), self.top());
        let mut at = descend(self, &mut |o: u32| self.vectors.score(o, &q), self.entry, top, level.min(top));
        for layer in (0..=level.min(top)).rev() {
            at = self.insert_on(p, &q, layer, at, visited);
        }
    }

    /// Links point `p` (vector `q`) on `layer`, its search starting at `at`; returns the best
    /// point found, where the layer below starts.
    ///
    /// `p`'s own list is set before any other list links to it, and merged with, never
    /// written over, what concurrent insertions linked into it meanwhile: once `p` is linked
    /// on an upper layer another insertion can reach it there, find its lower lists still
    /// empty, and link itself into them as its only neighbour. Overwriting that link left
    /// such a point with nothing leading to it on layer 0 (the flaky
    /// `an_updated_graph_finds_what_an_exact_scan_finds`, reproduced deterministically by
    /// `a_link_made_while_a_point_is_inserted_is_kept`).
    fn insert_on(&self, p: u32, q: &[f32], layer: usize, at: Scored, visited: &mut Visited) -> Scored {
        let mut score = |o: u32| self.vectors.score(o, q);
        let mut found = search_layer(self, &mut score, at, self.ef, layer, visited, |o| o != p, |_| {});
        found.sort_by(|a, b| b.cmp(a));
        let chosen = self.diverse(&found, degree(layer));
        self.adopt(p, q, layer, &chosen);
        for &nb in &chosen {
            self.link(nb, p, layer);
        }
        found.first().copied().unwrap_or(at)
    }

    /// Sets `p`'s list on `layer` to `chosen`, keeping the links concurrent insertions made
    /// to it (pruned by the same heuristic if together they pass the layer's degree).
    fn adopt(&self, p: u32, q: &[f32], layer: usize, chosen: &[u32]) {
        let mut list = lock(&self.per[p as usize][layer]);
        if list.is_empty() {
            list.extend_from_slice(chosen);
            return;
        }
        let mut all: Vec<u32> = chosen.iter().chain(list.iter()).copied().collect();
        all.sort_unstable();
        all.dedup();
        if all.len() <= degree(layer) {
            *list = all;
            return;
        }
        let mut scored: Vec<Scored> = all.iter().map(|&x| Scored(self.vectors.score(x, q), x)).collect();
        scored.sort_by(|a, b| b.cmp(a));
        *list = self.diverse(&scored, degree(layer));
    }

    /// Adds `p` to `nb`'s list on `layer`, pruning it back to the layer's degree.
    fn link(&self, nb: u32, p: u32, layer: usize) {
        let mut list = lock(&self.per[nb as usize][layer]);
        list.push(p);
        if list.len() > degree(layer) {
            let anchor = self.vectors.to_f32(nb);
            let mut scored: Vec<Scored> = list.iter().map(|&x| Scored(self.vectors.score(x, &anchor), x)).collect();
            scored.sort_by(|a, b| b.cmp(a));
            *list = self.diverse(&scored, degree(layer));
        }
    }

    /// HNSW's neighbour heuristic, relaxed by [`DIVERSITY_ALPHA`]: from `candidates` (best
    /// first, scored against the point being linked), keep one unless a neighbour already kept
    /// is nearer to it than `1 / alpha` of its distance to that point, up to `degree`. The others are not kept (as in hnswlib and hnsw_rs): filling the
    /// list up with them gave 2.5 times the links, a graph file that much larger and more rows
    /// scored per search, for recall the diverse links already reach.
    fn diverse(&self, candidates: &[Scored], degree: usize) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(degree + 1);
        for c in candidates {
            if kept.len() == degree {
                break;
            }
            let row = self.vectors.to_f32(c.1);
            let bar = 1.0 - (1.0 - c.0) / DIVERSITY_ALPHA;
            if kept.iter().all(|&k| self.vectors.score(k, &row) < bar) {
                kept.push(c.1);
            }
        }
        kept
    }

    /// Writes the graph file (layout in [`crate::graph`]).
    pub(crate) fn write(&self, path: &Path) -> Result<(), IndexError> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io(path))?);
        self.encode(&mut out).and_then(|()| out.flush()).map_err(io(path))
    }

    fn encode(&self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        let n = self.per.len();
        let levels = self.levels();
        let header = [n as u32, levels as u32, if n == 0 { 0 } else { self.entry }, self.churn];
        header.iter().try_for_each(|w| out.write_all(&w.to_le_bytes()))?;
        for layer in 0..levels {
            self.encode_layer(out, layer, layer > 0, |o| o)?;
        }
        Ok(())
    }

    /// Writes `layer` as a layer of the graph file: member count, members (when `listed`),
    /// offsets and neighbours, each ordinal passed through `global`, which must keep their
    /// order.
    pub(crate) fn encode_layer(
        &self,
        out: &mut impl Write,
        layer: usize,
        listed: bool,
        global: impl Fn(u32) -> u32,
    ) -> std::io::Result<()> {
        let mut put = |w: u32| out.write_all(&w.to_le_bytes());
        let members: Vec<u32> = (0..self.per.len() as u32).filter(|&o| self.level(o) >= layer).collect();
        put(members.len() as u32)?;
        if listed {
            members.iter().try_for_each(|&m| put(global(m)))?;
        }
        put(0)?;
        let mut offset = 0u32;
        for &m in &members {
            offset += lock(&self.per[m as usize][layer]).len() as u32;
            put(offset)?;
        }
        for &m in &members {
            for &x in lock(&self.per[m as usize][layer]).iter() {
                put(global(x))?;
            }
        }
        Ok(())
    }
}

/// Writes the graph of the first `tools` rows of `vectors` to `path`, built from scratch.
pub(crate) fn write(path: &Path, vectors: &Vectors, tools: usize) -> Result<(), IndexError> {
    let levels: Vec<usize> = (0..tools as u32).map(level_of).collect();
    Lists::build(vectors, &levels, EF_CONSTRUCTION).write(path)
}

/// Tool `ord`'s level in a graph built from scratch.
pub(crate) fn level_of(ord: u32) -> usize {
    random_level(ord, 1.0 / (MAX_CONNECTIONS as f64).ln())
}

/// A point's level, drawn from HNSW's geometric distribution by a hash of its ordinal (so a
/// rebuild is reproducible).
pub(crate) fn random_level(ord: u32, scale: f64) -> usize {
    let mut x = u64::from(ord).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let u = ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    ((-u.ln() * scale) as usize).min(MAX_LAYERS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{mapped, unit_vectors};

    #[test]
    fn a_link_made_while_a_point_is_inserted_is_kept() {
        // Point 0 is the entry and point 1 the point being inserted, both on layer 1; point 2
        // sits right beside point 1 on layer 0 and is inserted between point 1's layer-1 and
        // layer-0 steps, the interleaving two build threads can produce.
        let dir = tempfile::tempdir().unwrap();
        let mut rows = unit_vectors(12, 8);
        rows[2] = rows[1].iter().enumerate().map(|(i, x)| x + if i == 0 { 0.02 } else { 0.0 }).collect();
        let norm = crate::dense::dot(&rows[2], &rows[2]).sqrt();
        rows[2].iter_mut().for_each(|x| *x /= norm);
        let vectors = mapped(&dir.path().join("v"), &rows);
        let mut levels = vec![0; 12];
        levels[..2].fill(1);
        let lists = Lists::empty(&vectors, &levels);
        let mut visited = Visited::new(12);
        for o in 3..12 {
            lists.insert(o, &mut visited);
        }
        let q = vectors.to_f32(1);
        let at = descend(&lists, &mut |o| vectors.score(o, &q), 0, 1, 1);
        let at = lists.insert_on(1, &q, 1, at, &mut visited);
        // Point 2 reaches point 1 on layer 1, finds its layer-0 list still empty, and links
        // itself there as point 1's only neighbour.
        lists.insert(2, &mut visited);
        assert_eq!(*lists.list(2, 0), [1]);
        lists.insert_on(1, &q, 0, at, &mut visited);
        assert!(lists.list(1, 0).contains(&2), "the link to point 2 survives point 1's own step");
        assert_eq!(crate::graph_walk::unreachable(&lists, 12, 0), Vec::<u32>::new());
    }
}
