//! The HNSW graph over the tool vectors, in the index's own flat layout.
//!
//! [`crate::graph_build`] builds the graph over the vector file and writes its neighbour lists
//! as plain `u32` arrays that refer to that file by row, so the vectors are stored once. The
//! reader memory-maps the file and searches it in place: opening costs a check of its
//! structure, not a load.
//!
//! Layout, little-endian `u32` words after the 8-byte magic: `n`, `levels`, `entry`, `churn`
//! (tools inserted or removed by updates since the graph was last built from scratch); then for
//! each layer `l` from 0: its member count `m`, the `m` members (sorted tool ordinals; layer 0
//! omits them, its members are all `n` tools), `m + 1` offsets into the neighbour words that
//! follow, and the neighbour words (tool ordinals).

use std::path::Path;

use crate::dense::{top_k, Hit};
use crate::error::{io, IndexError};
use crate::graph_walk::{descend, search_layer, unreachable, Layers, Visited};
use crate::vectors::Vectors;

#[cfg(target_endian = "big")]
compile_error!("the index's memory-mapped files are little-endian");

pub(crate) const MAGIC: &[u8; 8] = b"TSGRAPH\0";
/// Words of the header after the magic: `n`, `levels`, `entry`, `churn`.
pub(crate) const HEADER_WORDS: usize = 4;
/// Most layers a graph may have.
pub(crate) const MAX_LAYERS: usize = 16;

/// Where one layer's arrays start, in words.
#[derive(Debug, Clone, Copy)]
struct Layer {
    /// Member count.
    len: usize,
    /// Start of the sorted members (upper layers only).
    members: Option<usize>,
    /// Start of the `len + 1` offsets.
    offsets: usize,
    /// Start of the neighbour words.
    neighbours: usize,
}

/// The memory-mapped graph.
pub(crate) struct Graph {
    map: memmap2::Mmap,
    n: usize,
    entry: u32,
    churn: usize,
    layers: Vec<Layer>,
}

impl Graph {
    /// Maps the graph file and checks its whole structure (every offset and ordinal in range),
    /// so a search can index it without further checks.
    pub(crate) fn open(path: &Path, tools: usize) -> Result<Graph, IndexError> {
        let file = std::fs::File::open(path).map_err(io(path))?;
        // SAFETY: index files are never modified in place: a rebuild writes a new directory and
        // swaps it in by rename, so the mapped inode keeps its content while it is mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io(path))?;
        let bad = |why: &str| IndexError::Corrupted(path.to_path_buf(), why.to_owned());
        if map.len() < 8 + 4 * HEADER_WORDS || &map[..8] != MAGIC || map.len() % 4 != 0 {
            return Err(bad("not a graph file"));
        }
        let mut graph = Graph { map, n: 0, entry: 0, churn: 0, layers: Vec::new() };
        let words = graph.words();
        let (n, levels, entry, churn) = (words[0] as usize, words[1] as usize, words[2], words[3] as usize);
        if n != tools {
            return Err(bad("point count differs from the metadata"));
        }
        if (n == 0) != (levels == 0) || (n > 0 && entry as usize >= n) || levels > MAX_LAYERS {
            return Err(bad("bad header"));
        }
        let mut layers = Vec::with_capacity(levels);
        let mut at = HEADER_WORDS;
        let word = |i: usize| words.get(i).copied().map(|w| w as usize).ok_or_else(|| bad("truncated"));
        for l in 0..levels {
            let len = word(at)?;
            at += 1;
            let members = (l > 0).then_some(at);
            if l == 0 && len != n {
                return Err(bad("layer 0 does not hold every point"));
            }
            if let Some(m) = members {
                let list = words.get(m..m + len).ok_or_else(|| bad("truncated"))?;
                if list.windows(2).any(|w| w[0] >= w[1]) || list.last().is_some_and(|&x| x as usize >= n) {
                    return Err(bad("layer members out of order or range"));
                }
                at += len;
            }
            let offsets = at;
            let offs = words.get(at..at + len + 1).ok_or_else(|| bad("truncated"))?;
            if offs[0] != 0 || offs.windows(2).any(|w| w[0] > w[1]) {
                return Err(bad("neighbour offsets out of order"));
            }
            at += len + 1;
            let count = offs[len] as usize;
            let neighbours = words.get(at..at + count).ok_or_else(|| bad("truncated"))?;
            // A maximum, not a search for the first fault: it vectorizes (17 million words
            // at a million tools).
            if count > 0 && neighbours.iter().fold(0, |max, &x| max.max(x)) as usize >= n {
                return Err(bad("neighbour out of range"));
            }
            // A link on an upper layer must lead to a point of that layer: looked up in a
            // bitset of the layer's members (a binary search a link cost 60-70 ms at 1M).
            if let Some(m) = members {
                let mut member = vec![0u64; n.div_ceil(64)];
                for &x in &words[m..m + len] {
                    member[x as usize / 64] |= 1 << (x % 64);
                }
                if neighbours.iter().any(|&x| member[x as usize / 64] & (1 << (x % 64)) == 0) {
                    return Err(bad("an upper-layer link leaves its layer"));
                }
            }
            layers.push(Layer { len, members, offsets, neighbours: at });
            at += count;
        }
        if at != words.len() {
            return Err(bad("trailing bytes"));
        }
        if let Some(top) = layers.last() {
            if levels > 1 && graph_member(words, top, entry).is_none() {
                return Err(bad("entry point is not on the top layer"));
            }
        }
        (graph.n, graph.entry, graph.churn, graph.layers) = (n, entry, churn, layers);
        Ok(graph)
    }

    /// The file's words after the magic (header, then layers).
    pub(crate) fn words(&self) -> &[u32] {
        // SAFETY: u32 has no invalid bit patterns; the map is page-aligned, so the words after
        // the 8-byte magic are 4-byte aligned and `align_to` yields no prefix (checked).
        let (prefix, words, _) = unsafe { self.map[8..].align_to::<u32>() };
        debug_assert!(prefix.is_empty());
        words
    }

    /// The entry point (on the top layer).
    pub(crate) fn entry(&self) -> u32 {
        self.entry
    }

    /// Tools inserted or removed by updates since the graph was last built from scratch: the
    /// links an update drops with a removed tool are never repaired, so past a share of this
    /// the builder starts over.
    pub(crate) fn churn(&self) -> usize {
        self.churn
    }

    /// Points in the graph.
    pub(crate) fn points(&self) -> usize {
        self.n
    }

    /// Layers (0 for an empty graph).
    pub(crate) fn levels(&self) -> usize {
        self.layers.len()
    }

    /// Whether `ord` is on `layer`.
    pub(crate) fn on_layer(&self, layer: usize, ord: u32) -> bool {
        self.layers.get(layer).is_some_and(|l| graph_member(self.words(), l, ord).is_some())
    }

    /// The neighbours of `ord` on `layer` (empty when it is not on that layer).
    pub(crate) fn layer_neighbours(&self, layer: usize, ord: u32) -> &[u32] {
        let words = self.words();
        let Some(l) = self.layers.get(layer) else { return &[] };
        let Some(i) = graph_member(words, l, ord) else { return &[] };
        let (from, to) = (words[l.offsets + i] as usize, words[l.offsets + i + 1] as usize);
        &words[l.neighbours + from..l.neighbours + to]
    }

    /// Approximate top `k` by cosine with breadth `ef`; `allowed` (sorted ordinals) restricts
    /// the answer (the walk still passes through other points).
    pub(crate) fn search(
        &self,
        vectors: &Vectors,
        query: &[f32],
        k: usize,
        ef: usize,
        allowed: Option<&[u32]>,
    ) -> Vec<Hit> {
        if self.n == 0 || k == 0 {
            return Vec::new();
        }
        let mut score = |o: u32| vectors.score(o, query);
        let start = descend(self, &mut score, self.entry, self.layers.len().saturating_sub(1), 0);
        let ok = |o: u32| allowed.is_none_or(|a| a.binary_search(&o).is_ok());
        let mut visited = Visited::new(self.n);
        let found = search_layer(self, &mut score, start, ef.max(k), 0, &mut visited, ok, |o| vectors.prefetch(o));
        let mut hits: Vec<Hit> = found.into_iter().map(|s| Hit { ord: s.1, score: s.0 }).collect();
        top_k(&mut hits, k);
        hits
    }
}

impl Graph {
    /// The points that cannot be reached from the entry point by following layer-0 links
    /// (ascending). A search can never return such a point, so every build leaves none
    /// (see [`crate::graph_repair`]).
    pub(crate) fn unreachable(&self) -> Vec<u32> {
        unreachable(self, self.n, self.entry)
    }

    /// Word index just past layer 0 (where the upper layers start).
    pub(crate) fn layer0_end(&self) -> usize {
        self.layers.first().map_or(HEADER_WORDS, |l| l.neighbours + self.words()[l.offsets + l.len] as usize)
    }
}

impl Layers for Graph {
    fn with_neighbours<R>(&self, layer: usize, ord: u32, f: impl FnOnce(&[u32]) -> R) -> R {
        f(self.layer_neighbours(layer, ord))
    }
}

/// The position of `ord` among `layer`'s members.
fn graph_member(words: &[u32], layer: &Layer, ord: u32) -> Option<usize> {
    match layer.members {
        None => ((ord as usize) < layer.len).then_some(ord as usize),
        Some(m) => words[m..m + layer.len].binary_search(&ord).ok(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` unit vectors of `dim` columns from a fixed pseudo-random sequence.
    pub(crate) fn unit_vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|_| {
                let v: Vec<f32> = (0..dim)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                    })
                    .collect();
                let norm = crate::dense::dot(&v, &v).sqrt();
                v.into_iter().map(|x| x / norm).collect()
            })
            .collect()
    }

    /// `rows` written to a vector file at `path`, mapped.
    pub(crate) fn mapped(path: &Path, rows: &[Vec<f32>]) -> Vectors {
        crate::vectors::write(path, rows).unwrap();
        Vectors::open(path, rows.len(), rows.first().map_or(0, Vec::len)).unwrap()
    }

    fn written(dir: &Path, rows: &[Vec<f32>]) -> (Graph, Vectors) {
        let vectors = mapped(&dir.join("v"), rows);
        crate::graph_lists::write(&dir.join("g"), &vectors, rows.len()).unwrap();
        (Graph::open(&dir.join("g"), rows.len()).unwrap(), vectors)
    }

    #[test]
    fn the_mapped_graph_finds_what_an_exact_scan_finds() {
        let dir = tempfile::tempdir().unwrap();
        let rows = unit_vectors(3000, 24);
        let (graph, vectors) = written(dir.path(), &rows);
        let mut found = 0;
        for q in unit_vectors(40, 24).iter().skip(20) {
            let exact = crate::dense::exact_top_k(&vectors, q, 0..3000, 10);
            let approx = graph.search(&vectors, q, 10, 64, None);
            assert_eq!(approx.len(), 10);
            assert!(approx.windows(2).all(|w| w[0].score >= w[1].score), "best first");
            found += approx.iter().filter(|h| exact.iter().any(|e| e.ord == h.ord)).count();
        }
        assert!(found as f64 / 200.0 >= 0.95, "recall@10 {}", found as f64 / 200.0);
    }

    #[test]
    fn a_filtered_search_answers_only_allowed_points() {
        let dir = tempfile::tempdir().unwrap();
        let rows = unit_vectors(2000, 16);
        let (graph, vectors) = written(dir.path(), &rows);
        let allowed: Vec<u32> = (0..2000).filter(|o| o % 7 == 3).collect();
        let hits = graph.search(&vectors, &rows[5], 10, 64, Some(&allowed));
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|h| allowed.binary_search(&h.ord).is_ok()));
        let exact = crate::dense::exact_top_k(&vectors, &rows[5], allowed.iter().copied(), 1);
        assert_eq!(hits[0].ord, exact[0].ord);
    }

    #[test]
    fn an_empty_graph_opens_and_finds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (graph, vectors) = written(dir.path(), &[]);
        assert!(graph.search(&vectors, &[], 10, 64, None).is_empty());
    }

    #[test]
    fn a_neighbour_out_of_range_is_refused_on_open() {
        let dir = tempfile::tempdir().unwrap();
        written(dir.path(), &unit_vectors(200, 8));
        let mut bytes = std::fs::read(dir.path().join("g")).unwrap();
        // Layer 0's first neighbour: after the magic, the header, the member count and 201 offsets.
        let at = 8 + 4 * (HEADER_WORDS + 1 + 201);
        bytes[at..at + 4].copy_from_slice(&500u32.to_le_bytes());
        std::fs::write(dir.path().join("g"), bytes).unwrap();
        let err = Graph::open(&dir.path().join("g"), 200).err().expect("refused");
        assert!(err.to_string().contains("out of range"), "{err}");
        assert!(Graph::open(&dir.path().join("g"), 201).is_err(), "a point count other than the metadata's");
    }

    #[test]
    fn an_upper_layer_link_to_a_point_off_its_layer_is_refused_on_open() {
        let dir = tempfile::tempdir().unwrap();
        written(dir.path(), &unit_vectors(2000, 8));
        let mut bytes = std::fs::read(dir.path().join("g")).unwrap();
        let word = |b: &[u8], i: usize| u32::from_le_bytes(b[8 + 4 * i..12 + 4 * i].try_into().unwrap()) as usize;
        assert!(word(&bytes, 1) > 1, "2,000 points make an upper layer");
        // Layer 1 starts after layer 0's count, its 2,001 offsets and its neighbours.
        let layer1 = HEADER_WORDS + 1 + 2000 + 1 + word(&bytes, HEADER_WORDS + 1 + 2000);
        let len = word(&bytes, layer1);
        let members: Vec<usize> = (0..len).map(|i| word(&bytes, layer1 + 1 + i)).collect();
        let stranger = (0..2000).find(|o| members.binary_search(o).is_err()).unwrap() as u32;
        let first_link = layer1 + 1 + len + len + 1;
        assert!(word(&bytes, layer1 + 1 + len + len) > 0, "layer 1 has links");
        bytes[8 + 4 * first_link..12 + 4 * first_link].copy_from_slice(&stranger.to_le_bytes());
        std::fs::write(dir.path().join("g"), bytes).unwrap();
        let err = Graph::open(&dir.path().join("g"), 2000).err().expect("refused");
        assert!(err.to_string().contains("leaves its layer"), "{err}");
    }
}
