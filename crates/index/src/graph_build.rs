//! Building the HNSW graph over the vector file: from scratch, or by updating the previous
//! index's graph when a rebuild changed few tools.
//!
//! The builder reads the tool rows from the memory-mapped f16 vector file the build has just
//! written and keeps only neighbour lists (about 230 bytes a tool), so its memory does not
//! hold a second copy of the vectors; two threads insert at once, each list behind its own
//! lock. Insertion is HNSW's: a point gets a level from a geometric distribution, descends
//! greedily from the entry point to its level, then on each of its layers runs a beam search
//! of breadth [`EF_CONSTRUCTION`], keeps neighbours by the diversity heuristic and links them
//! both ways, pruning a list that grows past the layer's degree.
//!
//! When at most [`UPDATE_MAX_FRESH`] of the tools are new or changed, the previous graph is
//! kept instead: unchanged tools keep their lists (renumbered, links to removed tools dropped)
//! and only the new or changed tools are inserted; a kept tool whose only incoming links were
//! dropped is linked again from its nearest reachable tool. Dropped links are not otherwise
//! replaced, so the graph counts the tools its updates inserted or removed since it was last built from scratch
//! (its churn); once that passes [`CHURN_MAX`] of the tools, the next build starts over.

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rayon::prelude::*;

use crate::error::{io, IndexError};
use crate::graph::{descend, search_layer, Graph, Layers, Scored, Visited, MAGIC, MAX_LAYERS};
use crate::graph_parts::PART_ROWS;
use crate::vectors::Vectors;

/// Neighbours per point on the upper layers (twice as many on layer 0).
const MAX_CONNECTIONS: usize = 24;
/// How much the neighbour heuristic relaxes its test (DiskANN's alpha): a candidate is left
/// out when a neighbour already kept is nearer to it than `1 / alpha` of its own distance to
/// the point (1.0 is HNSW's heuristic). On realistic vectors (`cargo bench --bench graph`,
/// docs/scaling.md) 1.1 took recall@10 at 100k from 0.989 to 0.997 at breadth 192 and at 1M
/// (built in parts) from 0.93 at 256 to 0.97 at 512, for builds 1.4x longer; 1.2 and 1.3 gave
/// less and took longer.
const DIVERSITY_ALPHA: f32 = 1.1;
/// Beam breadth while building.
pub(crate) const EF_CONSTRUCTION: usize = 200;
/// The largest share of new or changed tools for which the previous graph is updated rather
/// than rebuilt.
pub(crate) const UPDATE_MAX_FRESH: f64 = 0.10;
/// The largest share of the tools that updates may have inserted or removed, together, since
/// the graph was last built from scratch.
pub(crate) const CHURN_MAX: f64 = 0.25;

/// Neighbour lists being built: per point, one per layer it is on (0 to its level), each
/// behind its own lock so that concurrent insertions only wait for the lists they touch.
pub(crate) struct Lists<'v> {
    vectors: &'v Vectors,
    per: Vec<Box<[Mutex<Vec<u32>>]>>,
    entry: u32,
    /// Beam breadth of an insertion.
    ef: usize,
    /// Written to the header: see [`Graph::churn`].
    churn: u32,
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
    fn empty(vectors: &'v Vectors, levels: &[usize]) -> Lists<'v> {
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
    fn insert_all(&self, points: &[u32]) {
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
    fn write(&self, path: &Path) -> Result<(), IndexError> {
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

/// Writes the graph of the first `tools` rows of the vector file at `vectors` (`documents`
/// rows of `dim`) to `path`, built from scratch: whole, or in parts past [`PART_ROWS`] tools,
/// where holding every row and list at once would outgrow the build's memory.
pub(crate) fn write_fresh(
    path: &Path,
    vectors: &Path,
    documents: usize,
    dim: usize,
    tools: usize,
) -> Result<(), IndexError> {
    if tools > PART_ROWS {
        crate::graph_parts::write(path, vectors, dim, tools, PART_ROWS)
    } else {
        write(path, &Vectors::open(vectors, documents, dim)?, tools)
    }
}

/// Writes the graph of the first `tools` rows of `vectors` to `path`, built from scratch.
pub(crate) fn write(path: &Path, vectors: &Vectors, tools: usize) -> Result<(), IndexError> {
    let levels: Vec<usize> = (0..tools as u32).map(level_of).collect();
    Lists::build(vectors, &levels, EF_CONSTRUCTION).write(path)
}

/// Writes the graph of the first `previous.len()` rows of `vectors` (the tools) to `path` by
/// updating `old`, the previous index's graph. `previous[i]` is the old ordinal of tool `i`
/// when its vector is unchanged (each old ordinal at most once). Returns `false`, writing
/// nothing, when too much changed for an update to be worth it, in this build or in all the
/// updates since `old` was built from scratch (the caller then builds from scratch).
pub(crate) fn write_updated(
    path: &Path,
    old: &Graph,
    previous: &[Option<u32>],
    vectors: &Vectors,
) -> Result<bool, IndexError> {
    let n = previous.len();
    let fresh: Vec<u32> = (0..n as u32).filter(|&i| previous[i as usize].is_none()).collect();
    let mut new_of_old = vec![u32::MAX; old.points()];
    for (i, p) in previous.iter().enumerate() {
        if let Some(&o) = p.as_ref().filter(|&&o| (o as usize) < new_of_old.len()) {
            new_of_old[o as usize] = i as u32;
        }
    }
    let kept = n - fresh.len();
    let removed = old.points().saturating_sub(kept);
    let churn = old.churn() + fresh.len() + removed;
    if kept == 0 || fresh.len() as f64 > UPDATE_MAX_FRESH * n as f64 || churn as f64 > CHURN_MAX * n as f64 {
        return Ok(false);
    }
    // Unchanged tools keep their levels and lists, renumbered; links to removed tools are
    // dropped. New ones draw a level, at most the kept graph's top so the entry stays valid.
    let old_level = |o: u32| (0..old.levels()).take_while(|&l| old.on_layer(l, o)).count().saturating_sub(1);
    let top = previous.iter().flatten().map(|&o| old_level(o)).max().unwrap_or(0);
    let scale = 1.0 / (MAX_CONNECTIONS as f64).ln();
    let levels: Vec<usize> = previous
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Some(o) => old_level(*o),
            None => random_level(i as u32, scale).min(top),
        })
        .collect();
    let mut lists = Lists::empty(vectors, &levels);
    for (i, p) in previous.iter().enumerate() {
        let Some(o) = *p else { continue };
        for (l, list) in lists.per[i].iter_mut().enumerate() {
            let list = list.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
            list.extend(old.layer_neighbours(l, o).iter().map(|&x| new_of_old[x as usize]).filter(|&x| x != u32::MAX));
        }
    }
    // The entry: the old one if kept, else a kept point of the highest level.
    lists.entry = match new_of_old.get(old.entry() as usize) {
        Some(&e) if e != u32::MAX => e,
        _ => (0..n as u32)
            .filter(|&i| previous[i as usize].is_some())
            .max_by_key(|&i| (levels[i as usize], u32::MAX - i))
            .unwrap_or(0),
    };
    lists.churn = u32::try_from(churn).unwrap_or(u32::MAX);
    lists.insert_all(&fresh);
    // The dropped links may have been the only ones leading to a kept point: link each
    // point the entry no longer reaches from its nearest point that it does.
    let (_, links) = crate::graph_repair::reconnect(&lists, n, lists.entry, lists.levels(), vectors);
    for (host, points) in links {
        lists.list(host, 0).extend(points);
    }
    lists.write(path)?;
    Ok(true)
}

/// Tool `ord`'s level in a graph built from scratch.
pub(crate) fn level_of(ord: u32) -> usize {
    random_level(ord, 1.0 / (MAX_CONNECTIONS as f64).ln())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{mapped, unit_vectors};

    #[test]
    fn an_updated_graph_finds_what_an_exact_scan_finds() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut rows = unit_vectors(3000, 24);
        write(&d.join("old"), &mapped(&d.join("v0"), &rows), 3000).unwrap();
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
        let vectors = mapped(&d.join("v"), &rows);
        assert!(write_updated(&d.join("new"), &old, &previous, &vectors).unwrap(), "5% changed: updated");
        let graph = Graph::open(&d.join("new"), rows.len()).unwrap();
        assert_eq!(graph.unreachable(), Vec::<u32>::new());
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
        assert_eq!(crate::graph::unreachable(&lists, 12, 0), Vec::<u32>::new());
    }

    #[test]
    fn every_point_is_reachable_after_parallel_builds_and_updates() {
        // Many small builds and updates, each inserting on two threads: none leaves a point
        // that layer 0 does not reach from the entry. A build needs no reconnection for it
        // (its lists are checked as inserted); an update reconnects what dropped links cut off.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for round in 0..12usize {
            let n = 600 + 37 * round;
            let rows: Vec<Vec<f32>> = unit_vectors(n + 10 * round, 6 + round % 4).split_off(10 * round);
            let vectors = mapped(&d.join(format!("v{round}")), &rows);
            let levels: Vec<usize> = (0..n as u32).map(level_of).collect();
            let lists = Lists::build(&vectors, &levels, 40);
            assert_eq!(crate::graph::unreachable(&lists, n, lists.entry()), Vec::<u32>::new(), "build {round}");
            lists.write(&d.join(format!("g{round}"))).unwrap();
            let old = Graph::open(&d.join(format!("g{round}")), n).unwrap();
            let previous: Vec<Option<u32>> = (0..n as u32).map(|i| (i % 13 != 5).then_some(i)).collect();
            assert!(write_updated(&d.join(format!("u{round}")), &old, &previous, &vectors).unwrap());
            let updated = Graph::open(&d.join(format!("u{round}")), n).unwrap();
            assert_eq!(updated.unreachable(), Vec::<u32>::new(), "update {round}");
        }
    }

    #[test]
    fn updates_add_up_until_the_graph_is_built_from_scratch_again() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let n = 2000;
        let mut rows = unit_vectors(n, 16);
        let spare = unit_vectors(n + 1000, 16);
        write(&d.join("g0"), &mapped(&d.join("v0"), &rows), n).unwrap();
        assert_eq!(Graph::open(&d.join("g0"), n).unwrap().churn(), 0, "a fresh graph");
        // Each round changes 5% of the tools (each a removal and an insertion: a churn of 10%),
        // well inside one update's limit; the third round would take the total past 25%.
        let mut updated = Vec::new();
        for round in 1..=3 {
            let old = Graph::open(&d.join(format!("g{}", round - 1)), n).unwrap();
            let mut previous: Vec<Option<u32>> = (0..n as u32).map(Some).collect();
            for i in (round..n).step_by(20) {
                rows[i] = spare[n + round * 300 + i / 20].clone();
                previous[i] = None;
            }
            let vectors = mapped(&d.join(format!("v{round}")), &rows);
            let path = d.join(format!("g{round}"));
            let update = write_updated(&path, &old, &previous, &vectors).unwrap();
            if !update {
                write(&path, &vectors, n).unwrap();
            }
            updated.push((update, Graph::open(&path, n).unwrap().churn()));
        }
        assert_eq!(updated, [(true, 200), (true, 400), (false, 0)]);
    }

    #[test]
    fn too_many_changes_rebuild_from_scratch() {
        let dir = tempfile::tempdir().unwrap();
        let vectors = mapped(&dir.path().join("v"), &unit_vectors(500, 8));
        write(&dir.path().join("old"), &vectors, 500).unwrap();
        let old = Graph::open(&dir.path().join("old"), 500).unwrap();
        let previous: Vec<Option<u32>> = (0..500).map(|i| (i % 5 != 0).then_some(i)).collect();
        assert!(!write_updated(&dir.path().join("new"), &old, &previous, &vectors).unwrap());
        assert!(!dir.path().join("new").exists());
    }
}
