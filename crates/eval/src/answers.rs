//! What users get, beside the uncut ranking: the default search path's page (results shown
//! by the engine's own rule, `NO_MATCH_IN_CATEGORY` as an empty page), and "twins" (each query
//! again with its gold tools taken out of the candidates) for the answerability decision.

use serde::Serialize;
use toolsearch_query::{Engine, ErrorCode, Filter, Principal, ProtocolError, Ranked, SearchToolsRequest};

use crate::metrics::{auroc, dcg_ndcg, recall_at};
use crate::queries::LabelledQuery;

/// Page size of the default path measured (the protocol's default).
pub const DEFAULT_LIMIT: usize = 10;

/// Quality of the default search path, and of its answerability decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefaultPath {
    /// nDCG@10 of the first page `search_tool_by_category` answers (an empty page for
    /// `NO_MATCH_IN_CATEGORY`).
    pub ndcg10: f64,
    /// Recall@5 of the same pages.
    pub recall5: f64,
    /// Results shown per query, on average.
    pub shown: f64,
    /// Under this answerability the answer is `NO_MATCH_IN_CATEGORY`.
    pub answerable_threshold: f32,
    /// Share of queries answered `NO_MATCH_IN_CATEGORY` with their gold tools present (the
    /// lower the better).
    pub no_match_present: f64,
    /// The answerability decision on twins, when asked for.
    pub twins: Option<Twins>,
}

/// The answerability decision on twins: each query with its gold tools, against the same
/// query with them taken out of its candidates (as if the catalogue lacked them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Twins {
    /// Pairs measured (queries with a gold tool among their candidates).
    pub pairs: usize,
    /// Area under the ROC curve of `answerable`, originals against twins.
    pub auroc: f64,
    /// Share of twins answered `NO_MATCH_IN_CATEGORY` (the higher the better).
    pub no_match_removed: f64,
    /// Share of those pairs' originals answered `NO_MATCH_IN_CATEGORY` (the lower the better).
    pub no_match_present: f64,
    /// Share of pairs whose original has a gold tool first (the ranking's precision at 1 on
    /// them). When it has not, the twin's list starts with the same tool.
    pub gold_first: f64,
    /// The most AUROC a decision that judges only the best result could reach:
    /// `.5 + .5 x gold_first` (a perfect judge of it, and a coin on the other pairs).
    pub ceiling: f64,
    /// AUROC of `answerable` over the pairs whose original has a gold tool first: how well the
    /// decision judges, apart from how often the ranking puts gold first.
    pub auroc_gold_first: f64,
}

/// Running sums of [`DefaultPath`].
#[derive(Debug, Default)]
pub(crate) struct Tally {
    ndcg: f64,
    recall5: f64,
    shown: usize,
    no_match: usize,
    queries: usize,
    /// (answerable, is the original) of each twin pair's two halves.
    twins: Vec<(f32, bool)>,
    /// The same, of the pairs whose original has a gold tool first.
    twins_gold_first: Vec<(f32, bool)>,
    twin_no_match: (usize, usize),
}

impl Tally {
    /// Asks the engine what a caller gets for `q` by default, and, with `twins`, what it
    /// answers for the query's twin.
    pub(crate) fn add(&mut self, engine: &Engine, q: &LabelledQuery, twins: bool) -> Result<(), ProtocolError> {
        let request = SearchToolsRequest { query: q.text.clone(), limit: Some(DEFAULT_LIMIT), ..Default::default() };
        let page = match engine.search_tool_by_category(&Principal::trusted(), &request) {
            Ok(answer) => Some(answer.results.into_iter().map(|p| p.tool_id).collect::<Vec<_>>()),
            Err(e) if e.code == ErrorCode::NoMatchInCategory => None,
            Err(e) => return Err(e),
        };
        let ids: Vec<&str> = page.iter().flatten().map(String::as_str).collect();
        self.ndcg += dcg_ndcg(&ids, &q.gold, 10);
        self.recall5 += recall_at(&ids, &q.gold, 5);
        self.shown += ids.len();
        self.no_match += usize::from(page.is_none());
        self.queries += 1;
        if twins {
            self.add_twin(engine, q, page.is_none())?;
        }
        Ok(())
    }

    fn add_twin(&mut self, engine: &Engine, q: &LabelledQuery, original_no_match: bool) -> Result<(), ProtocolError> {
        let depth = engine.options().candidates;
        let candidates = engine.tool_candidates(&q.text, &Filter::default(), depth)?;
        let is_gold = |ord: u32| {
            let id = &engine.catalog().tools[ord as usize].id;
            q.gold.iter().any(|g| g.contains(id))
        };
        if !candidates.iter().any(|c| is_gold(c.ord)) {
            return Ok(()); // nothing to take out: not a twin
        }
        let original = engine.rank_tools_answer(&q.text, &Filter::default(), depth)?;
        let rest: Vec<_> = candidates.into_iter().filter(|c| !is_gold(c.ord)).collect();
        let twin = engine.rank_candidates(&without_gaps(rest));
        self.twins.push((original.answerable, true));
        self.twins.push((twin.answerable, false));
        if original.results.first().is_some_and(|s| is_gold(s.ord)) {
            self.twins_gold_first.push((original.answerable, true));
            self.twins_gold_first.push((twin.answerable, false));
        }
        self.twin_no_match.0 += usize::from(no_match(engine, &twin));
        self.twin_no_match.1 += usize::from(original_no_match);
        Ok(())
    }

    /// (answerable, is the original) of each twin pair's two halves.
    pub(crate) fn twin_pairs(&self) -> &[(f32, bool)] {
        &self.twins
    }

    /// The figures, over the queries added.
    pub(crate) fn report(&self, engine: &Engine, twins: bool) -> DefaultPath {
        let n = self.queries.max(1) as f64;
        let pairs = self.twins.len() / 2;
        let gold_first = (self.twins_gold_first.len() / 2) as f64 / pairs.max(1) as f64;
        DefaultPath {
            ndcg10: self.ndcg / n,
            recall5: self.recall5 / n,
            shown: self.shown as f64 / n,
            answerable_threshold: engine.options().answerability.threshold,
            no_match_present: self.no_match as f64 / n,
            twins: twins.then(|| Twins {
                pairs,
                auroc: auroc(&self.twins),
                no_match_removed: self.twin_no_match.0 as f64 / pairs.max(1) as f64,
                no_match_present: self.twin_no_match.1 as f64 / pairs.max(1) as f64,
                gold_first,
                ceiling: 0.5 + 0.5 * gold_first,
                auroc_gold_first: auroc(&self.twins_gold_first),
            }),
        }
    }
}

/// Whether the engine answers `NO_MATCH_IN_CATEGORY` for this ranking: the decision of
/// `search_tool_by_category` (answerability under its threshold, or nothing at an explicit
/// floor when one is set).
fn no_match(engine: &Engine, ranked: &Ranked) -> bool {
    match engine.options().min_confidence {
        Some(min) => ranked.results.first().is_none_or(|s| s.confidence < min),
        None => ranked.results.is_empty() || engine.options().answerability.abstains(ranked.answerable),
    }
}

/// Candidates with the dense and lexical ranks renumbered after some were taken out.
fn without_gaps(mut rest: Vec<toolsearch_query::fusion::Candidate>) -> Vec<toolsearch_query::fusion::Candidate> {
    let mut renumber = |get: fn(&mut toolsearch_query::fusion::Candidate) -> &mut Option<usize>| {
        let mut ranked: Vec<(usize, usize)> =
            rest.iter_mut().enumerate().filter_map(|(i, c)| get(c).map(|r| (r, i))).collect();
        ranked.sort_unstable();
        for (new, (_, i)) in ranked.into_iter().enumerate() {
            *get(&mut rest[i]) = Some(new);
        }
    };
    renumber(|c| &mut c.dense_rank);
    renumber(|c| &mut c.lexical_rank);
    rest
}
