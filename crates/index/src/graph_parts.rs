//! Building the graph of a large catalogue in parts, so the build's memory does not grow with
//! the number of tools.
//!
//! [`crate::graph_build`] builds over the memory-mapped vector file: every row ends up
//! resident, with a neighbour list per tool beside it, about 1 KB a tool (a gigabyte at a
//! million). Past [`PART_ROWS`] tools the graph is built the way DiskANN builds one larger than
//! memory instead:
//!
//! 1. spherical k-means over a sample of the rows picks centres, as many as it takes for every
//!    tool to sit in two parts of at most [`PART_ROWS`] rows;
//! 2. each tool goes to its two nearest centres that still have room (the overlap is what
//!    links the parts' graphs into one);
//! 3. each part's rows are read into memory, its graph built by the ordinary builder, and its
//!    layer-0 lists, with their scores, written to a scratch file at the tool's slot;
//! 4. layer 0 of the graph is each tool's two lists merged (best scores first, up to the
//!    degree), read back from the scratch file in order;
//! 5. the upper layers are built over the tools whose level is above 0 (one in 24), like any
//!    small graph, and written after layer 0.
//!
//! At most one part's rows and lists are in memory at a time; the scratch file is deleted
//! once layer 0 is written. The file written is an ordinary graph file: the reader cannot tell
//! how it was built.

use std::io::Write;
use std::path::Path;
use toolsearch_catalog::platform::{read_exact_at, write_all_at};

use crate::dense::dot;
use crate::error::{io, IndexError};
use crate::graph::MAGIC;
use crate::graph_lists::{degree, level_of, Lists, EF_CONSTRUCTION};
use crate::vectors::Vectors;

/// The most tool rows one part of the graph is built from: with its lists, about 200 MB.
pub(crate) const PART_ROWS: usize = 200_000;
/// Beam breadth of an insertion into a part, half the whole-graph builder's
/// ([`crate::graph_build::EF_CONSTRUCTION`]): each tool's list is the merge of two parts' lists,
/// which makes up for the narrower beam. On the first 200k rows of the 1M bench's vectors, in
/// parts of 50k, recall@10 (ef 64) was 0.929 in 59.8 s at this breadth, 0.935 in 99.6 s at 200,
/// against 0.876-0.885 in about 65 s for the graph built whole.
const EF_PARTS: usize = 100;
/// Rows sampled to place the parts' centres.
const SAMPLE: usize = 20_000;
/// Rounds of k-means.
const ROUNDS: usize = 10;
/// Parts each tool is placed in.
const OVERLAP: usize = 2;
/// How full the parts are on average, against their limit (room for uneven clusters).
const FILL: f64 = 0.8;
/// Bytes of one layer-0 slot in the scratch file: `degree(0)` pairs of (ordinal, score).
const SLOT: usize = 8;
/// Rows read at a time while assigning them to parts or merging their lists.
const BLOCK: usize = 4096;

/// Writes the graph of the first `tools` rows of the `dim`-column vector file `vectors` to
/// `path`, built in parts of at most `part_rows` rows. `tools` must be over `part_rows`.
pub(crate) fn write(path: &Path, vectors: &Path, dim: usize, tools: usize, part_rows: usize) -> Result<(), IndexError> {
    let parts = assign(vectors, dim, tools, part_rows)?;
    let scratch = path.with_extension("parts");
    let result = build_parts(&scratch, vectors, dim, tools, &parts).and_then(|()| {
        drop(parts);
        write_graph(path, &scratch, vectors, dim, tools)
    });
    let _ = std::fs::remove_file(&scratch);
    result
}

/// The members of each part, each in ascending order, every tool in [`OVERLAP`] parts.
fn assign(vectors: &Path, dim: usize, tools: usize, part_rows: usize) -> Result<Vec<Vec<u32>>, IndexError> {
    let k = ((OVERLAP * tools) as f64 / (FILL * part_rows as f64)).ceil().max(OVERLAP as f64) as usize;
    let centres = centres(vectors, dim, tools, k)?;
    let mut parts: Vec<Vec<u32>> = vec![Vec::new(); k];
    let mut q = vec![0f32; dim];
    for start in (0..tools).step_by(BLOCK) {
        let ords: Vec<u32> = (start as u32..(start + BLOCK).min(tools) as u32).collect();
        let rows = Vectors::read_rows(vectors, dim, &ords)?;
        for (i, &o) in ords.iter().enumerate() {
            rows.to_f32_into(i as u32, &mut q);
            let mut near: Vec<(f32, usize)> = centres.iter().enumerate().map(|(c, v)| (dot(v, &q), c)).collect();
            near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            // The room is there: the parts hold 1 / FILL times the placements in all.
            let mut placed = 0;
            for (_, c) in near {
                if placed < OVERLAP && parts[c].len() < part_rows {
                    parts[c].push(o);
                    placed += 1;
                }
            }
        }
    }
    Ok(parts)
}

/// `k` unit centres by spherical k-means over an evenly spaced sample of the rows.
fn centres(vectors: &Path, dim: usize, tools: usize, k: usize) -> Result<Vec<Vec<f32>>, IndexError> {
    let step = tools.div_ceil(SAMPLE.max(k)).max(1);
    let ords: Vec<u32> = (0..tools as u32).step_by(step).collect();
    let rows = Vectors::read_rows(vectors, dim, &ords)?;
    let sample: Vec<Vec<f32>> = (0..ords.len() as u32).map(|i| rows.to_f32(i)).collect();
    drop(rows);
    let mut centres: Vec<Vec<f32>> = (0..k).map(|c| sample[c * sample.len() / k].clone()).collect();
    for _ in 0..ROUNDS {
        let mut sums = vec![vec![0f32; dim]; k];
        for v in &sample {
            let best = (0..k).max_by(|&a, &b| dot(&centres[a], v).total_cmp(&dot(&centres[b], v)).then(b.cmp(&a)));
            if let Some(c) = best {
                sums[c].iter_mut().zip(v).for_each(|(s, x)| *s += x);
            }
        }
        for (centre, sum) in centres.iter_mut().zip(sums) {
            let norm = dot(&sum, &sum).sqrt();
            // A centre no sample chose stays where it was.
            if norm > 0.0 {
                *centre = sum.into_iter().map(|x| x / norm).collect();
            }
        }
    }
    Ok(centres)
}

/// Builds each part's graph and writes every member's layer-0 list, with scores, to its next
/// free slot in `scratch` (two slots a tool).
fn build_parts(scratch: &Path, vectors: &Path, dim: usize, tools: usize, parts: &[Vec<u32>]) -> Result<(), IndexError> {
    let file = std::fs::File::create(scratch).map_err(io(scratch))?;
    let slot = degree(0) * SLOT;
    file.set_len((tools * OVERLAP * slot) as u64).map_err(io(scratch))?;
    let mut used = vec![0u8; tools];
    for members in parts {
        let rows = Vectors::read_rows(vectors, dim, members)?;
        let levels: Vec<usize> = members.iter().map(|&o| level_of(o)).collect();
        let lists = Lists::build(&rows, &levels, EF_PARTS);
        let mut bytes = vec![0u8; slot];
        for (i, &o) in members.iter().enumerate() {
            let q = rows.to_f32(i as u32);
            bytes.fill(0xFF);
            for (pair, &x) in bytes.chunks_exact_mut(SLOT).zip(lists.list(i as u32, 0).iter()) {
                pair[..4].copy_from_slice(&members[x as usize].to_le_bytes());
                pair[4..].copy_from_slice(&rows.score(x, &q).to_le_bytes());
            }
            let at = (o as usize * OVERLAP + used[o as usize] as usize) * slot;
            used[o as usize] += 1;
            write_all_at(&file, &bytes, at as u64).map_err(io(scratch))?;
        }
        // The next part's rows and lists go where this part's were.
        drop(lists);
        drop(rows);
        toolsearch_embed::memory::give_back();
    }
    Ok(())
}

/// Tool `o`'s layer-0 neighbours: its lists from every part, best first, each neighbour once,
/// up to the degree. `slots` holds its [`OVERLAP`] slots.
fn merged(slots: &[u8], out: &mut Vec<(f32, u32)>) {
    out.clear();
    for pair in slots.chunks_exact(SLOT) {
        let x = u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]);
        if x != u32::MAX {
            out.push((f32::from_le_bytes([pair[4], pair[5], pair[6], pair[7]]), x));
        }
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    out.dedup_by_key(|p| p.1);
    out.truncate(degree(0));
}

/// Calls `each` with every tool's merged layer-0 list, in order, read from `scratch`.
fn each_merged(
    scratch: &Path,
    tools: usize,
    mut each: impl FnMut(&[(f32, u32)]) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let file = std::fs::File::open(scratch).map_err(io(scratch))?;
    let slots = OVERLAP * degree(0) * SLOT;
    let mut block = vec![0u8; BLOCK * slots];
    let mut list = Vec::new();
    for start in (0..tools).step_by(BLOCK) {
        let len = (tools - start).min(BLOCK);
        read_exact_at(&file, &mut block[..len * slots], (start * slots) as u64).map_err(io(scratch))?;
        for chunk in block[..len * slots].chunks_exact(slots) {
            merged(chunk, &mut list);
            each(&list)?;
        }
    }
    Ok(())
}

/// Writes the graph file: header, layer 0 merged from `scratch`, then the upper layers.
fn write_graph(path: &Path, scratch: &Path, vectors: &Path, dim: usize, tools: usize) -> Result<(), IndexError> {
    // The upper layers: a graph over the tools above layer 0, one layer down.
    let upper: Vec<u32> = (0..tools as u32).filter(|&o| level_of(o) > 0).collect();
    let rows = Vectors::read_rows(vectors, dim, &upper)?;
    let levels: Vec<usize> = upper.iter().map(|&o| level_of(o) - 1).collect();
    let top = Lists::build(&rows, &levels, EF_CONSTRUCTION);
    let entry = upper.get(top.entry() as usize).copied().unwrap_or(0);

    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io(path))?);
    let words = |out: &mut std::io::BufWriter<std::fs::File>, ws: &[u32]| {
        ws.iter().try_for_each(|w| out.write_all(&w.to_le_bytes())).map_err(io(path))
    };
    // Header (points, layers, entry, churn), then layer 0: its member count and first offset.
    out.write_all(MAGIC).map_err(io(path))?;
    words(&mut out, &[tools as u32, 1 + top.levels() as u32, entry, 0, tools as u32, 0])?;
    // Two passes over the scratch file: the offsets first, then the neighbours.
    let mut offset = 0u32;
    each_merged(scratch, tools, |list| {
        offset += list.len() as u32;
        words(&mut out, &[offset])
    })?;
    let mut ords = Vec::new();
    each_merged(scratch, tools, |list| {
        ords.clear();
        ords.extend(list.iter().map(|&(_, x)| x));
        words(&mut out, &ords)
    })?;
    for layer in 0..top.levels() {
        top.encode_layer(&mut out, layer, true, |o| upper[o as usize]).map_err(io(path))?;
    }
    out.flush().map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{mapped, unit_vectors};
    use crate::graph::Graph;

    /// Recall@10 of `graph` against an exact scan, over 200 queries.
    fn recall(graph: &Graph, vectors: &Vectors, n: usize) -> f64 {
        let mut found = 0;
        for q in unit_vectors(n + 200, 24).iter().skip(n) {
            let exact = crate::dense::exact_top_k(vectors, q, 0..n as u32, 10);
            let approx = graph.search(vectors, q, 10, 64, None);
            found += approx.iter().filter(|h| exact.iter().any(|e| e.ord == h.ord)).count();
        }
        found as f64 / 2000.0
    }

    #[test]
    fn a_graph_built_in_parts_finds_what_one_built_whole_finds() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let n = 6000;
        let rows = unit_vectors(n, 24);
        let vectors = mapped(&d.join("v"), &rows);
        // Parts of at most 1,500 rows: ten parts, each tool in two.
        let parts = assign(&d.join("v"), 24, n, 1500).unwrap();
        assert_eq!(parts.len(), 10);
        assert!(parts.iter().all(|p| p.len() <= 1500 && p.windows(2).all(|w| w[0] < w[1])));
        let mut placed = vec![0; n];
        parts.iter().flatten().for_each(|&o| placed[o as usize] += 1);
        assert!(placed.iter().all(|&c| c == OVERLAP), "every tool in two parts");

        write(&d.join("parts"), &d.join("v"), 24, n, 1500).unwrap();
        assert!(!d.join("parts.parts").exists(), "the scratch file is deleted");
        let in_parts = Graph::open(&d.join("parts"), n).unwrap();
        crate::graph_lists::write(&d.join("whole"), &vectors, n).unwrap();
        let whole = Graph::open(&d.join("whole"), n).unwrap();
        let (r_parts, r_whole) = (recall(&in_parts, &vectors, n), recall(&whole, &vectors, n));
        assert!(r_parts >= 0.95 && r_parts >= r_whole - 0.03, "recall@10 in parts {r_parts}, whole {r_whole}");
        // The upper layers are those of a graph over the same points: same levels, same entry.
        assert_eq!((in_parts.levels(), in_parts.entry()), (whole.levels(), whole.entry()));
        // Every tool is reachable: it is its own nearest neighbour.
        let lost = (0..n).filter(|&i| in_parts.search(&vectors, &rows[i], 1, 64, None)[0].ord != i as u32).count();
        assert!(lost <= n / 500, "{lost} tools not found by their own vector");
    }
}
