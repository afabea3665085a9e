//! The graph alone, outside an index: built over a vector file and searched, for the
//! side-by-side benchmark with hnsw_rs (`cargo bench --bench graph`). Not part of the API.

use std::path::Path;

use crate::dense::exact_top_k;
use crate::error::IndexError;
use crate::graph::Graph;
use crate::vectors::Vectors;

/// Writes `rows` (unit vectors of one dimension) as an f16 vector file, as an index stores them.
pub fn write_vectors(path: &Path, rows: &[Vec<f32>]) -> Result<(), IndexError> {
    crate::vectors::write(path, rows)
}

/// Builds the graph of the `n` rows of the `dim`-column vector file `vectors` at `out`, as an
/// index build does (whole, or in parts past 200k rows, then the repair pass).
/// Returns the number of points the repair pass linked back.
pub fn build_graph(vectors: &Path, dim: usize, n: usize, out: &Path) -> Result<usize, IndexError> {
    crate::graph_build::write_fresh(out, vectors, n, dim, n)?;
    crate::graph_repair::repair(out, &Vectors::open(vectors, n, dim)?, n)
}

/// A vector file, mapped.
pub struct BenchVectors {
    vectors: Vectors,
    n: usize,
}

impl BenchVectors {
    /// Maps the vector file (`n` rows of `dim`).
    pub fn open(vectors: &Path, n: usize, dim: usize) -> Result<BenchVectors, IndexError> {
        Ok(BenchVectors { vectors: Vectors::open(vectors, n, dim)?, n })
    }

    /// The exact top `k` rows for `query` among rows `from..to` (a scan), best first.
    pub fn exact(&self, query: &[f32], k: usize, from: u32, to: u32) -> Vec<(f32, u32)> {
        exact_top_k(&self.vectors, query, from..to.min(self.n as u32), k)
            .into_iter()
            .map(|h| (h.score, h.ord))
            .collect()
    }

    /// Row `i` as stored (f16, widened).
    pub fn row(&self, i: u32) -> Vec<f32> {
        self.vectors.to_f32(i)
    }
}

/// A built graph over its vector file, mapped.
pub struct BenchGraph {
    vectors: Vectors,
    graph: Graph,
}

impl BenchGraph {
    /// Maps the vector file (`n` rows of `dim`) and the graph.
    pub fn open(vectors: &Path, graph: &Path, n: usize, dim: usize) -> Result<BenchGraph, IndexError> {
        Ok(BenchGraph { vectors: Vectors::open(vectors, n, dim)?, graph: Graph::open(graph, n)? })
    }

    /// The graph's approximate top `k` rows for `query`, searched with breadth `ef`.
    pub fn search(&self, query: &[f32], k: usize, ef: usize) -> Vec<u32> {
        self.graph.search(&self.vectors, query, k, ef, None).into_iter().map(|h| h.ord).collect()
    }

    /// Points the graph does not reach from its entry on layer 0.
    pub fn unreachable(&self) -> usize {
        self.graph.unreachable().len()
    }
}
