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

use std::path::Path;

use crate::error::IndexError;
use crate::graph::Graph;
use crate::graph_lists::{random_level, write, Lists, MAX_CONNECTIONS};
use crate::graph_parts::PART_ROWS;
use crate::vectors::Vectors;

/// The largest share of new or changed tools for which the previous graph is updated rather
/// than rebuilt.
pub(crate) const UPDATE_MAX_FRESH: f64 = 0.10;
/// The largest share of the tools that updates may have inserted or removed, together, since
/// the graph was last built from scratch.
pub(crate) const CHURN_MAX: f64 = 0.25;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{mapped, unit_vectors};
    use crate::graph_lists::level_of;

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
            assert_eq!(crate::graph_walk::unreachable(&lists, n, lists.entry()), Vec::<u32>::new(), "build {round}");
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
