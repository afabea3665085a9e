//! The safety net under every graph build: no tool that a search can never return.
//!
//! HNSW's neighbour selection prunes links, and an update drops the links that led to removed
//! tools, so in rare cases a point can be left with no link leading to it on layer 0: no
//! search, however broad, would find it. After every build (from scratch, updated or in
//! parts) the written graph is walked from its entry point; each point the walk misses gets
//! one link from its nearest reachable point (found by an ordinary search), and the file is
//! rewritten with those links added. The builder's own insertion is meant to leave nothing to
//! repair (see `graph_build`'s tests); this pass makes reachability hold whatever happens.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::error::{io, IndexError};
use crate::graph::{Graph, HEADER_WORDS, MAGIC};
use crate::graph_walk::{descend, search_layer, Layers, Visited};
use crate::vectors::Vectors;

/// Beam breadth of the search for a lost point's nearest reachable point.
const EF_REPAIR: usize = 64;

/// Makes every point of the graph at `path` (over the first `tools` rows of `vectors`)
/// reachable from its entry point on layer 0, rewriting the file if it must. Returns the
/// number of points that were not.
pub(crate) fn repair(path: &Path, vectors: &Vectors, tools: usize) -> Result<usize, IndexError> {
    let graph = Graph::open(path, tools)?;
    let (lost, added) = reconnect(&graph, tools, graph.entry(), graph.levels(), vectors);
    if lost == 0 {
        return Ok(0);
    }
    let scratch = path.with_extension("repair");
    let written = write_with_links(&scratch, &graph, tools, &added)
        .and_then(|()| std::fs::rename(&scratch, path))
        .map_err(io(path));
    if written.is_err() {
        let _ = std::fs::remove_file(&scratch);
    }
    written.map(|()| lost)
}

/// The layer-0 links (host to points) that make every point of `graph` (`n` points, entry
/// `entry`, `levels` layers) reachable from the entry: each point a walk misses is linked
/// from the nearest reached point a search finds, and what it reaches in turn counts as
/// reached. The search's descent through the upper layers may land in the very part that
/// layer 0 cuts off, so a host is taken only among reached points, and the search starts
/// again on layer 0 from the entry when it found none. Returns the number of points missed,
/// and the links.
pub(crate) fn reconnect(
    graph: &impl Layers,
    n: usize,
    entry: u32,
    levels: usize,
    vectors: &Vectors,
) -> (usize, BTreeMap<u32, Vec<u32>>) {
    let lost = crate::graph_walk::unreachable(graph, n, entry);
    let mut added: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if lost.is_empty() {
        return (0, added);
    }
    let mut reachable = vec![true; n];
    for &o in &lost {
        reachable[o as usize] = false;
    }
    let mut visited = Visited::new(n);
    let mut list: Vec<u32> = Vec::new();
    for &u in &lost {
        if reachable[u as usize] {
            continue; // reached through a link added for an earlier point
        }
        let q = vectors.to_f32(u);
        let mut score = |o: u32| vectors.score(o, &q);
        let start = descend(graph, &mut score, entry, levels.saturating_sub(1), 0);
        let reached = |o: u32| o != u && reachable[o as usize];
        let mut found = search_layer(graph, &mut score, start, EF_REPAIR, 0, &mut visited, reached, |_| {});
        if found.is_empty() {
            let start = crate::graph_walk::Scored(score(entry), entry);
            found = search_layer(graph, &mut score, start, EF_REPAIR, 0, &mut visited, reached, |_| {});
        }
        let host = found.iter().max().map_or(entry, |s| s.1);
        added.entry(host).or_default().push(u);
        let mut queue = vec![u];
        reachable[u as usize] = true;
        while let Some(o) = queue.pop() {
            graph.with_neighbours(0, o, |l| {
                list.clear();
                list.extend_from_slice(l);
            });
            list.extend(added.get(&o).map_or(&[][..], Vec::as_slice));
            for &x in &list {
                if !std::mem::replace(&mut reachable[x as usize], true) {
                    queue.push(x);
                }
            }
        }
    }
    (lost.len(), added)
}

/// Writes `graph` to `path` with the layer-0 links in `added` (host to points) appended to
/// their hosts' lists; every other word is copied as it is.
fn write_with_links(path: &Path, graph: &Graph, n: usize, added: &BTreeMap<u32, Vec<u32>>) -> std::io::Result<()> {
    let words = graph.words();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let put = |out: &mut std::io::BufWriter<std::fs::File>, w: u32| out.write_all(&w.to_le_bytes());
    out.write_all(MAGIC)?;
    for &w in &words[..HEADER_WORDS] {
        put(&mut out, w)?;
    }
    put(&mut out, n as u32)?;
    let extra = |o: u32| added.get(&o).map_or(&[][..], Vec::as_slice);
    let mut offset = 0u32;
    put(&mut out, 0)?;
    for o in 0..n as u32 {
        offset += (graph.layer_neighbours(0, o).len() + extra(o).len()) as u32;
        put(&mut out, offset)?;
    }
    for o in 0..n as u32 {
        for &x in graph.layer_neighbours(0, o).iter().chain(extra(o)) {
            put(&mut out, x)?;
        }
    }
    for &w in &words[graph.layer0_end()..] {
        put(&mut out, w)?;
    }
    out.flush()?;
    out.get_ref().sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{mapped, unit_vectors};

    #[test]
    fn points_cut_off_on_layer_0_are_linked_back_and_found() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let rows = unit_vectors(400, 12);
        let vectors = mapped(&d.join("v"), &rows);
        crate::graph_lists::write(&d.join("g"), &vectors, 400).unwrap();
        assert_eq!(repair(&d.join("g"), &vectors, 400).unwrap(), 0, "a fresh build leaves nothing to repair");
        // Cut points 7 and 8 off: every layer-0 link to them is pointed at the entry instead
        // (same file size, so the layout stays valid).
        let graph = Graph::open(&d.join("g"), 400).unwrap();
        let entry = graph.entry();
        let start = HEADER_WORDS + 1 + 401; // layer 0's neighbour words
        let end = graph.layer0_end();
        let mut words = graph.words().to_vec();
        drop(graph);
        for w in &mut words[start..end] {
            if *w == 7 || *w == 8 {
                *w = entry;
            }
        }
        let mut bytes = MAGIC.to_vec();
        words.iter().for_each(|w| bytes.extend_from_slice(&w.to_le_bytes()));
        std::fs::write(d.join("g"), bytes).unwrap();
        assert_eq!(Graph::open(&d.join("g"), 400).unwrap().unreachable(), [7, 8]);

        assert_eq!(repair(&d.join("g"), &vectors, 400).unwrap(), 2);
        let graph = Graph::open(&d.join("g"), 400).unwrap();
        assert!(graph.unreachable().is_empty());
        for o in [7u32, 8] {
            assert_eq!(graph.search(&vectors, &rows[o as usize], 1, 64, None)[0].ord, o, "point {o}");
        }
        assert!(!d.join("g.repair").exists(), "no scratch file left");
    }

    /// Lists per layer per point.
    struct Fixed(Vec<Vec<Vec<u32>>>);

    impl Layers for Fixed {
        fn with_neighbours<R>(&self, layer: usize, ord: u32, f: impl FnOnce(&[u32]) -> R) -> R {
            f(self.0[layer].get(ord as usize).map_or(&[][..], Vec::as_slice))
        }
    }

    #[test]
    fn a_lost_point_is_never_linked_from_another_lost_point() {
        // Layer 0: 0 <-> 1 (the entry's part) and 2 <-> 3 (cut off). Layer 1 links 0 and 2, so
        // the descent for 2 or 3 lands in the part that is cut off.
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![vec![1.0, 0.0], vec![0.9, 0.1], vec![0.0, 1.0], vec![0.1, 0.99]];
        let vectors = mapped(&dir.path().join("v"), &rows);
        let graph = Fixed(vec![vec![vec![1], vec![0], vec![3], vec![2]], vec![vec![2], vec![], vec![0], vec![]]]);
        let (lost, added) = reconnect(&graph, 4, 0, 2, &vectors);
        assert_eq!(lost, 2);
        // 2 hangs from 1 (its nearest reached point), and 3 is reached through 2.
        assert_eq!(added, BTreeMap::from([(1, vec![2])]));
    }
}
