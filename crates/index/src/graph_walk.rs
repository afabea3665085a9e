//! Walking a layered proximity graph, the same for the mapped file a search reads and the
//! lists a build is making: greedy descent, the beam search of one layer, the marks of what a
//! search has seen, and the points a walk cannot reach.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A layered proximity graph a walk can follow: the mapped file, or lists being built.
pub(crate) trait Layers {
    /// Calls `f` with the neighbours of `ord` on `layer` (empty when it is not on that
    /// layer). `f` must not look at the graph again (a list being built is locked meanwhile).
    fn with_neighbours<R>(&self, layer: usize, ord: u32, f: impl FnOnce(&[u32]) -> R) -> R;
}

/// The points a beam search has seen: a bit per point, cleared word by word after each search
/// so a builder can reuse it for every insertion.
pub(crate) struct Visited {
    bits: Vec<u64>,
    touched: Vec<u32>,
}

impl Visited {
    /// Room for `points` points.
    pub(crate) fn new(points: usize) -> Visited {
        Visited { bits: vec![0; points.div_ceil(64)], touched: Vec::new() }
    }

    /// Marks `o`; true if it was marked before.
    fn see(&mut self, o: u32) -> bool {
        let (w, b) = (o as usize / 64, 1u64 << (o % 64));
        let word = &mut self.bits[w];
        if *word == 0 {
            self.touched.push(w as u32);
        }
        let was = *word & b != 0;
        *word |= b;
        was
    }

    /// Forgets every mark.
    fn clear(&mut self) {
        for w in self.touched.drain(..) {
            self.bits[w as usize] = 0;
        }
    }
}

/// The points of `0..n` that a walk over layer 0 from `entry` never reaches (ascending).
pub(crate) fn unreachable(graph: &impl Layers, n: usize, entry: u32) -> Vec<u32> {
    if n == 0 {
        return Vec::new();
    }
    let mut seen = vec![false; n];
    let mut queue = vec![entry];
    seen[entry as usize] = true;
    while let Some(o) = queue.pop() {
        graph.with_neighbours(0, o, |list| {
            for &x in list {
                if !std::mem::replace(&mut seen[x as usize], true) {
                    queue.push(x);
                }
            }
        });
    }
    (0..n as u32).filter(|&o| !seen[o as usize]).collect()
}

/// Greedy descent from `entry` on layer `from` down to layer `to + 1`: on each layer, move to
/// the best-scoring neighbour until none is better. Returns the point reached with its score.
pub(crate) fn descend(
    graph: &impl Layers,
    score: &mut impl FnMut(u32) -> f32,
    entry: u32,
    from: usize,
    to: usize,
) -> Scored {
    let (mut at, mut best) = (entry, score(entry));
    let mut list: Vec<u32> = Vec::new();
    for layer in (to + 1..=from).rev() {
        loop {
            let mut moved = false;
            graph.with_neighbours(layer, at, |n| {
                list.clear();
                list.extend_from_slice(n);
            });
            for &nb in &list {
                let s = score(nb);
                if s > best {
                    (best, at, moved) = (s, nb, true);
                }
            }
            if !moved {
                break;
            }
        }
    }
    Scored(best, at)
}

/// The beam search of one layer from `start` with breadth `ef`: the (at most `ef`) best points
/// for which `ok` holds, unordered. `prefetch` is told each batch of rows about to be scored.
/// `visited` is clear on entry and on return.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_layer(
    graph: &impl Layers,
    score: &mut impl FnMut(u32) -> f32,
    start: Scored,
    ef: usize,
    layer: usize,
    visited: &mut Visited,
    ok: impl Fn(u32) -> bool,
    prefetch: impl Fn(u32),
) -> Vec<Scored> {
    visited.see(start.1);
    let mut candidates = BinaryHeap::from([start]);
    let mut results: BinaryHeap<Reverse<Scored>> = BinaryHeap::new();
    if ok(start.1) {
        results.push(Reverse(start));
    }
    let mut fresh: Vec<u32> = Vec::with_capacity(64);
    while let Some(Scored(s, c)) = candidates.pop() {
        if results.len() >= ef && results.peek().is_some_and(|w| s < w.0 .0) {
            break;
        }
        // The rows to score are scattered over the file: ask for all of them before scoring
        // the first, so their loads overlap instead of queueing.
        fresh.clear();
        graph.with_neighbours(layer, c, |n| fresh.extend(n.iter().copied().filter(|&nb| !visited.see(nb))));
        for &nb in &fresh {
            prefetch(nb);
        }
        for &nb in &fresh {
            let t = score(nb);
            if results.len() < ef || results.peek().is_some_and(|w| t > w.0 .0) {
                candidates.push(Scored(t, nb));
                if ok(nb) {
                    results.push(Reverse(Scored(t, nb)));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
    }
    visited.clear();
    results.into_iter().map(|r| r.0).collect()
}

/// A score with an ordinal, ordered by score (total order), then ordinal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored(pub(crate) f32, pub(crate) u32);

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}
