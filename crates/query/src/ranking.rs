//! Retrieval and ranking inside a scope: query embedding (cached), dense and lexical
//! candidates, fusion. The protocol calls in `engine.rs` are built on these.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use toolsearch_index::{DocKind, Hit, IndexError, View};

use crate::cache::Weigh;
use crate::error::{ErrorCode, ProtocolError};
use crate::fusion::{merge, rank, Candidate, Fusion, Scored};
use crate::matching::EXACT_CONFIDENCE;
use crate::ranker::Ranker;
use crate::scope::Filter;

/// Longest query text embedded, in characters (the model reads 256 tokens anyway).
const MAX_QUERY_CHARS: usize = 2_000;

/// Most tools a restricted caller may see for its dense side to be an exact scan (0.35 ms over
/// the graph walk at 7,000 tools, 0.9 ms at 20,000; docs/protocol.md, "Timing"); past it, a
/// filtered graph walk.
const EXACT_FOR_RESTRICTED: usize = 20_000;

/// Which indexes answer a ranking: both (the product), or one alone (for comparison).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retrieval {
    /// Dense and lexical candidates, fused.
    #[default]
    Hybrid,
    /// BM25 only: the query is never embedded.
    Lexical,
    /// Embeddings only.
    Dense,
}

/// Where the time of one ranking went, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimes {
    /// Query embedding (near zero on a cache hit).
    pub embed: f64,
    /// Dense candidate search.
    pub dense: f64,
    /// Lexical candidate search.
    pub lexical: f64,
    /// Merging and fusion.
    pub fuse: f64,
    /// All of it.
    pub total: f64,
}

/// What a ranking is cached by: everything that changes its answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ResultKey {
    retrieval: Retrieval,
    depth: usize,
    filter: Filter,
    query: String,
}

impl Weigh for ResultKey {
    fn weight(&self) -> usize {
        let strings = |v: &[String]| v.iter().map(|s| s.len() + std::mem::size_of::<String>()).sum::<usize>();
        std::mem::size_of::<Self>()
            + self.query.len()
            + strings(&self.filter.path)
            + strings(&self.filter.tags)
            + self.filter.scopes.as_deref().map_or(0, strings)
    }
}

/// A ranking and its answerability.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Every candidate, best first, each with its confidence.
    pub results: Vec<Scored>,
    /// P(some tool the caller may see fits the query), from the engine's
    /// [`Answerability`](crate::Answerability).
    pub answerable: f32,
}

impl Weigh for Ranked {
    fn weight(&self) -> usize {
        self.results.weight() + std::mem::size_of::<f32>()
    }
}

/// What retrieval found: the query vector (absent in lexical mode), dense hits, lexical hits.
type Retrieved = (Option<Vec<f32>>, Vec<Hit>, Vec<Hit>);

impl Ranker {
    /// Every tool the filter allows ranked for `query`, best first, with no confidence cut-off (at
    /// least `depth` candidates are drawn from each index). The benchmark harness ranks with it.
    pub fn rank_tools(&self, query: &str, filter: &Filter, depth: usize) -> Result<Vec<Scored>, ProtocolError> {
        self.rank_tools_answer(query, filter, depth).map(|r| r.results)
    }

    /// [`Ranker::rank_tools`] with the query's answerability: whether any tool fits at all.
    pub fn rank_tools_answer(&self, query: &str, filter: &Filter, depth: usize) -> Result<Ranked, ProtocolError> {
        self.rank_tools_timed(query, filter, depth, Retrieval::Hybrid).map(|(r, _)| r)
    }

    /// [`Ranker::rank_tools_answer`] with a choice of indexes, reporting where the time went.
    /// In [`Retrieval::Lexical`] mode, scores and confidences come from BM25 alone; in either
    /// single-index mode the answerability is the best result's confidence.
    pub fn rank_tools_timed(
        &self,
        query: &str,
        filter: &Filter,
        depth: usize,
        retrieval: Retrieval,
    ) -> Result<(Ranked, StageTimes), ProtocolError> {
        let start = Instant::now();
        let mut t = StageTimes::default();
        let key = ResultKey { retrieval, depth, filter: filter.clone(), query: query.to_owned() };
        if let Some(hit) = self.results.get(&key) {
            t.total = start.elapsed().as_secs_f64();
            return Ok((hit, t));
        }
        let (qv, dense, lexical) = self.retrieve(query, filter, depth, retrieval, &mut t)?;
        let s = Instant::now();
        // Single-index modes rank by that index's own score alone, for honest comparison.
        let single = |alpha: f32| Fusion::Blend { alpha, lexical_k: 0.0 };
        let best_confidence = |results: Vec<Scored>| {
            let answerable = results.first().map_or(0.0, |s| s.confidence);
            Ranked { results, answerable }
        };
        let ranked = match (retrieval, &qv) {
            (Retrieval::Hybrid, Some(v)) => {
                let candidates = merge_scored(&dense, &lexical, |o| self.index().tool_score(o, v))?;
                let mut ranked = self.rank_candidates(&candidates);
                ranked.results = self.promote_exact(query, filter, ranked.results);
                // A tool named exactly fits, whatever the scores say.
                if ranked.results.first().is_some_and(|s| s.confidence >= EXACT_CONFIDENCE) {
                    ranked.answerable = ranked.answerable.max(EXACT_CONFIDENCE);
                }
                ranked
            }
            (Retrieval::Dense, Some(v)) => best_confidence(self.fuse(&dense, &[], v, single(1.0))?),
            _ => best_confidence(rank(&merge(&[], &lexical, |_| 0.0), single(0.0), self.calibration())),
        };
        t.fuse = s.elapsed().as_secs_f64();
        self.results.put(key, ranked.clone());
        t.total = start.elapsed().as_secs_f64();
        Ok((ranked, t))
    }

    /// Hybrid candidates ranked with the fusion and confidence map in force, and their
    /// answerability: what a search answers from them. Benchmarks call it on candidate
    /// lists with the gold tools taken out, to see what the engine would answer without them.
    pub fn rank_candidates(&self, candidates: &[Candidate]) -> Ranked {
        let fusion = self.tool_fusion();
        Ranked {
            results: rank(candidates, fusion, self.calibration()),
            answerable: self.options().answerability.of(candidates, fusion),
        }
    }

    /// Dense and lexical candidates of `query` inside `scope`, before fusion: the query vector
    /// (absent in lexical mode), dense hits and lexical hits, timing each stage into `t`.
    fn retrieve(
        &self,
        query: &str,
        filter: &Filter,
        depth: usize,
        retrieval: Retrieval,
        t: &mut StageTimes,
    ) -> Result<Retrieved, ProtocolError> {
        // Filtering happens before ranking: both indexes only ever see allowed tools, and BM25
        // statistics come from the tools the caller may see.
        let allowed = self.paths().allowed(filter);
        let view = self.tool_view(&filter.scopes);
        if allowed.as_ref().is_some_and(|a| a.is_empty()) {
            return Ok((None, Vec::new(), Vec::new()));
        }
        let depth = depth.max(self.options().candidates);
        let lexical_search = || {
            let s = Instant::now();
            let l = self.lexical(query, DocKind::Tool, &filter.path, allowed.as_ref(), &view, depth);
            (l, s.elapsed().as_secs_f64())
        };
        let embed_timed = |t: &mut StageTimes| {
            let s = Instant::now();
            let v = self.tool_query(query);
            t.embed = s.elapsed().as_secs_f64();
            v
        };
        let (qv, lexical) = match retrieval {
            Retrieval::Lexical => (None, Some(lexical_search())),
            Retrieval::Dense => (Some(embed_timed(t)), None),
            Retrieval::Hybrid => {
                let s = Instant::now();
                match self.cached_tool_query(query) {
                    Some(v) => {
                        t.embed = s.elapsed().as_secs_f64();
                        (Some(Ok(v)), Some(lexical_search()))
                    }
                    // A model on every core runs alone: beside it, BM25 would take a core from it
                    // and slow it by more than BM25's own time (docs/latency.md, "The model on
                    // every core").
                    None if self.embedder().busies_every_core() => {
                        let v = embed_timed(t);
                        (Some(v), Some(lexical_search()))
                    }
                    // A model that leaves a core idle (one a library caller loaded with fewer
                    // threads than cores) has BM25 run beside it: neither needs the other's
                    // result, and the model is the slower of the two, so BM25's time mostly
                    // disappears from the total (docs/latency.md, "BM25 beside the embedding").
                    None => std::thread::scope(|scope| {
                        let lexical = scope.spawn(lexical_search);
                        let v = embed_timed(t);
                        (Some(v), Some(lexical.join().unwrap_or_else(|_| (Err(lexical_panicked()), 0.0))))
                    }),
                }
            }
        };
        let qv = qv.transpose()?;
        let lexical = match lexical {
            Some((l, seconds)) => {
                t.lexical = seconds;
                l?
            }
            None => Vec::new(),
        };
        let dense = match &qv {
            Some(v) => {
                let s = Instant::now();
                let d = match (&filter.scopes, allowed.as_deref()) {
                    // A restricted caller's dense side scans exactly what it may see: a graph walk
                    // filtered to it takes longer where hidden tools crowd the query's
                    // neighbourhood, and so would tell it they are there.
                    (Some(_), a) if a.map_or(self.paths().all().len(), Vec::len) <= EXACT_FOR_RESTRICTED => {
                        self.index().dense_tools_exact(v, depth, a.map_or(self.paths().all(), Vec::as_slice))
                    }
                    (_, a) => self.index().dense_tools(v, depth, a.map(Vec::as_slice)),
                }
                .map_err(internal)?;
                t.dense = s.elapsed().as_secs_f64();
                d
            }
            None => Vec::new(),
        };
        Ok((qv, dense, lexical))
    }

    /// The hybrid candidates of `query` in `scope` with all their evidence, before fusion
    /// (for tuning fusion and calibration offline).
    pub fn tool_candidates(&self, query: &str, filter: &Filter, depth: usize) -> Result<Vec<Candidate>, ProtocolError> {
        let (qv, dense, lexical) =
            self.retrieve(query, filter, depth, Retrieval::Hybrid, &mut StageTimes::default())?;
        match qv {
            Some(v) => merge_scored(&dense, &lexical, |o| self.index().tool_score(o, &v)),
            None => Ok(Vec::new()),
        }
    }

    /// Merges and ranks candidates.
    fn fuse(&self, dense: &[Hit], lexical: &[Hit], qv: &[f32], fusion: Fusion) -> Result<Vec<Scored>, ProtocolError> {
        let candidates = merge_scored(dense, lexical, |o| self.index().tool_score(o, qv))?;
        Ok(rank(&candidates, fusion, self.calibration()))
    }

    /// The statistics base of a caller's tool searches: the tools it may see.
    pub(crate) fn tool_view(&self, scopes: &Option<Vec<String>>) -> View {
        match scopes {
            None => View::everything(),
            Some(s) => self.paths().scoped(s).tool_view.clone(),
        }
    }

    /// The statistics base of a caller's category searches: the categories it may see.
    pub(crate) fn node_view(&self, scopes: &Option<Vec<String>>) -> View {
        match scopes {
            None => View::everything(),
            Some(s) => self.paths().scoped(s).node_view.clone(),
        }
    }

    /// The tools directly at `path` (`direct`, sorted, all visible to the caller), ranked for
    /// `query`.
    pub(crate) fn rank_direct_tools(
        &self,
        query: &str,
        path: &[String],
        direct: &[u32],
        scopes: &Option<Vec<String>>,
    ) -> Result<Vec<Scored>, ProtocolError> {
        if direct.is_empty() {
            return Ok(Vec::new());
        }
        let qv = self.tool_query(query)?;
        let dense = self.index().dense_tools(&qv, direct.len(), Some(direct)).map_err(internal)?;
        let allowed = Arc::new(direct.to_vec());
        let view = self.tool_view(scopes);
        let lexical = self.lexical(query, DocKind::Tool, path, Some(&allowed), &view, direct.len())?;
        self.fuse(&dense, &lexical, &qv, self.tool_fusion())
    }

    /// The nodes `among` (all visible to the caller) ranked for `query` (lexical candidates
    /// restricted to `scope`) by their own text.
    pub(crate) fn rank_nodes(
        &self,
        query: &str,
        among: &[u32],
        scope: &[String],
        k: usize,
        scopes: &Option<Vec<String>>,
    ) -> Result<Vec<Scored>, ProtocolError> {
        if among.is_empty() {
            return Ok(Vec::new());
        }
        let qv = self.embed_query(query)?;
        let depth = k.max(self.options().candidates);
        let dense = self.index().dense_nodes(&qv, depth, among.iter().copied()).map_err(internal)?;
        let mut sorted = among.to_vec();
        sorted.sort_unstable();
        let view = self.node_view(scopes);
        let lexical = self.lexical(query, DocKind::Node, scope, Some(&Arc::new(sorted)), &view, depth)?;
        let candidates = merge_scored(&dense, &lexical, |o| self.index().node_score(o, &qv))?;
        Ok(rank(&candidates, self.options().fusion, self.calibration()))
    }

    pub(crate) fn lexical(
        &self,
        query: &str,
        kind: DocKind,
        scope: &[String],
        allowed: Option<&Arc<Vec<u32>>>,
        view: &View,
        k: usize,
    ) -> Result<Vec<Hit>, ProtocolError> {
        let scope = (!scope.is_empty()).then(|| toolsearch_catalog::display_path(scope));
        self.index().lexical(query, kind, scope.as_deref(), allowed, view, k).map_err(internal)
    }

    /// The query vector tool searches use: the embedding, moved by the adapter if one is in
    /// force.
    pub fn tool_query(&self, query: &str) -> Result<Vec<f32>, ProtocolError> {
        Ok(self.adapted(self.embed_query(query)?))
    }

    /// [`Ranker::tool_query`] if the query vector is in the cache, else nothing (the caller
    /// then knows the model has to run).
    fn cached_tool_query(&self, query: &str) -> Option<Vec<f32>> {
        self.vectors.get(&query_text(query)).map(|v| self.adapted(v))
    }

    /// A query vector moved by the adapter, if one is in force.
    fn adapted(&self, v: Vec<f32>) -> Vec<f32> {
        match self.adapter() {
            Some(a) => a.apply(&v),
            None => v,
        }
    }

    /// The BM25 hits of `query` over the whole catalogue, at the depth a ranking draws (for
    /// fitting an adapter: they do not depend on the query vector, so they are drawn once).
    pub fn lexical_tools(&self, query: &str) -> Result<Vec<Hit>, ProtocolError> {
        self.lexical(query, DocKind::Tool, &[], None, &View::everything(), self.options().candidates)
    }

    /// The whole catalogue ranked with the query vector `qv` given, the query's `lexical` hits
    /// ([`Ranker::lexical_tools`]) and `fusion` (for fitting an adapter: the caller embeds and
    /// moves the vector itself). No cache, no exact-match promotion, every tool allowed.
    pub fn rank_with_vector(&self, qv: &[f32], lexical: &[Hit], fusion: Fusion) -> Result<Vec<Scored>, ProtocolError> {
        let dense = self.index().dense_tools(qv, self.options().candidates, None).map_err(internal)?;
        self.fuse(&dense, lexical, qv, fusion)
    }

    /// The query's unit vector, from the cache when this exact text was embedded recently.
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>, ProtocolError> {
        let text = query_text(query);
        if let Some(v) = self.vectors.get(&text) {
            return Ok(v);
        }
        let v =
            self.embedder().embed_query(&text).map_err(|e| ProtocolError::new(ErrorCode::Internal, e.to_string()))?;
        self.vectors.put(text, v.clone());
        Ok(v)
    }
}

/// The text of `query` that is embedded (and cached by): at most [`MAX_QUERY_CHARS`].
fn query_text(query: &str) -> String {
    query.chars().take(MAX_QUERY_CHARS).collect()
}

/// An index fault (a corrupted block met by a search, say) as the error a caller gets.
fn internal(e: IndexError) -> ProtocolError {
    ProtocolError::new(ErrorCode::Internal, e.to_string())
}

/// [`merge`] with each candidate's cosine read from the index: an error, not an answer, if
/// one came from a corrupted block.
fn merge_scored(
    dense: &[Hit],
    lexical: &[Hit],
    cosine_of: impl Fn(u32) -> Result<f32, IndexError>,
) -> Result<Vec<Candidate>, ProtocolError> {
    let fault = std::cell::RefCell::new(None);
    let merged = merge(dense, lexical, |o| {
        cosine_of(o).unwrap_or_else(|e| {
            fault.borrow_mut().get_or_insert(e);
            0.0
        })
    });
    match fault.into_inner() {
        Some(e) => Err(internal(e)),
        None => Ok(merged),
    }
}

/// The error of a BM25 search whose thread panicked (a bug; reported, never propagated as a
/// panic).
fn lexical_panicked() -> ProtocolError {
    ProtocolError::new(ErrorCode::Internal, "the lexical search failed unexpectedly")
}
