//! BM25 inside a restricted view, read from the view's own postings.
//!
//! A tantivy query walks a term's whole posting list, the documents a caller may not see
//! included, and a filter drops them afterwards: its time grows with what is hidden. So for a
//! restricted [`View`](super::View) each term's postings are filtered to the view once, kept
//! (with the document frequency the view's statistics need), and scored here with tantivy's
//! own [`Bm25Weight`]: a repeated term costs only the view's documents that hold it. A view
//! with a lexicon (`lexicon`) has every term's postings already; without one, the first use of
//! a term walks its whole list, as its document frequency always did.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::Bm25Weight;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, DocId, DocSet, Score, Term, TERMINATED};

use super::view::ViewStats;
use super::DocFacts;

/// Bytes of filtered postings kept, over every view and term; past it the cache starts over,
/// and a list over an eighth of it is not kept.
const POSTINGS_BUDGET: usize = 32 << 20;

/// One term's postings inside one view: per segment, the view's documents holding it (in
/// document order), each with the term's frequency there.
#[derive(Debug, Default)]
pub(super) struct ViewPostings {
    pub(super) segments: Vec<Vec<(DocId, u32)>>,
    /// The view's documents holding the term (the view's document frequency).
    pub(super) docs: u64,
}

impl ViewPostings {
    fn bytes(&self) -> usize {
        self.segments.iter().map(|s| s.len() * 8 + 24).sum::<usize>() + 64
    }
}

/// (kind is tool, view key, field, term).
type PostingsKey = (bool, u64, u32, String);

/// Filtered postings by view and term, bounded by bytes.
pub(super) struct PostingsCache {
    map: HashMap<PostingsKey, Arc<ViewPostings>>,
    bytes: usize,
    /// Whole lists walked since the index opened.
    walks: u64,
    /// The bound ([`POSTINGS_BUDGET`]).
    budget: usize,
}

impl Default for PostingsCache {
    fn default() -> PostingsCache {
        PostingsCache { map: HashMap::new(), bytes: 0, walks: 0, budget: POSTINGS_BUDGET }
    }
}

impl super::Lexical {
    /// Whole posting lists walked for restricted views since the index opened.
    #[cfg(test)]
    pub(super) fn postings_walked(&self) -> u64 {
        self.view_postings.lock().unwrap_or_else(|p| p.into_inner()).walks
    }

    /// Bytes of postings kept, and the bound set to `budget` when given.
    #[cfg(test)]
    pub(super) fn postings_kept(&self, budget: Option<usize>) -> usize {
        let mut cache = self.view_postings.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = budget {
            cache.budget = b;
        }
        cache.bytes
    }
}

impl ViewStats<'_> {
    /// The view's postings of `term` (with frequencies in the text field): from the view's
    /// lexicon when it has one, else from the cache or by one walk of the term's whole list.
    pub(super) fn postings(&self, term: &Term) -> tantivy::Result<Arc<ViewPostings>> {
        let value = term.value();
        let text = value.as_str().unwrap_or_default();
        if let Some(p) = self.view.lexicon.as_ref().and_then(|l| l.get(self.lexical, self.kind, term.field(), text)) {
            return Ok(p);
        }
        let freqs = term.field() == self.lexical.fields.text;
        let key = (self.kind == super::DocKind::Tool, self.view.key, term.field().field_id(), text.to_owned());
        let cache = &self.lexical.view_postings;
        if let Some(p) = cache.lock().unwrap_or_else(|p| p.into_inner()).map.get(&key) {
            return Ok(Arc::clone(p));
        }
        let option = if freqs { IndexRecordOption::WithFreqs } else { IndexRecordOption::Basic };
        let mut out = ViewPostings::default();
        for (segment, facts) in self.searcher.segment_readers().iter().zip(&self.part.facts) {
            let docs = match segment.inverted_index(term.field())?.read_postings(term, option)? {
                Some(mut postings) => self.inside(&mut postings, facts, freqs),
                None => Vec::new(),
            };
            out.docs += docs.len() as u64;
            out.segments.push(docs);
        }
        let out = Arc::new(out);
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.walks += 1;
        if let Some(p) = cache.map.get(&key) {
            return Ok(Arc::clone(p)); // another request kept it meanwhile
        }
        if out.bytes() > cache.budget / 8 {
            return Ok(out);
        }
        if cache.bytes + out.bytes() > cache.budget {
            cache.map.clear();
            cache.bytes = 0;
        }
        cache.bytes += out.bytes();
        cache.map.insert(key, Arc::clone(&out));
        Ok(out)
    }

    /// The documents of `postings` (a list of the segment whose documents `facts` describes)
    /// that are in the view, each with the term's frequency there (1 unless `freqs`).
    pub(super) fn inside(&self, postings: &mut SegmentPostings, facts: &[DocFacts], freqs: bool) -> Vec<(DocId, u32)> {
        let mut docs = Vec::new();
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if facts.get(doc as usize).is_some_and(|f| self.member(f)) {
                docs.push((doc, if freqs { postings.term_freq() } else { 1 }));
            }
            doc = postings.advance();
        }
        docs
    }

    /// BM25 top `k` of the view for the analysed `terms` (summed in their order, as tantivy's
    /// union sums its term scorers), among the documents holding the category `within` and,
    /// when given, with an ordinal in `allowed` (sorted). Ties go to the lower address, as in
    /// tantivy's top-k collector.
    pub(super) fn top_k(
        &self,
        terms: &[Term],
        within: Option<&Term>,
        allowed: Option<&Arc<Vec<u32>>>,
        k: usize,
    ) -> tantivy::Result<Vec<(Score, DocAddress)>> {
        let (docs, tokens) = self.totals();
        let average = tokens as Score / docs.max(1) as Score;
        let mut lists = Vec::with_capacity(terms.len());
        for term in terms {
            let p = self.postings(term)?;
            lists.push((Bm25Weight::for_one_term_without_explain(p.docs, docs, average), p));
        }
        let within = within.map(|t| self.postings(t)).transpose()?;
        let mut found: Vec<(Score, DocAddress)> = Vec::new();
        for (seg, facts) in self.part.facts.iter().enumerate() {
            let keep = |doc: DocId| {
                let inside =
                    within.as_ref().is_none_or(|w| w.segments[seg].binary_search_by_key(&doc, |p| p.0).is_ok());
                let ord = facts.get(doc as usize).map_or(u32::MAX, |f| f.ord);
                inside && allowed.is_none_or(|a| a.binary_search(&ord).is_ok())
            };
            // A k-way merge by document: each document's score is summed in term order.
            let mut heap: BinaryHeap<Reverse<(DocId, usize, usize)>> = BinaryHeap::new();
            for (t, (_, p)) in lists.iter().enumerate() {
                if let Some(&(doc, _)) = p.segments[seg].first() {
                    heap.push(Reverse((doc, t, 0)));
                }
            }
            let mut current: Option<(DocId, Score)> = None;
            while let Some(Reverse((doc, t, i))) = heap.pop() {
                let (weight, p) = &lists[t];
                let list = &p.segments[seg];
                let norm = facts.get(doc as usize).map_or(0, |f| f.norm_id);
                let score = weight.score(norm, list[i].1);
                current = match current {
                    Some((d, s)) if d == doc => Some((d, s + score)),
                    done => {
                        if let Some((d, s)) = done.filter(|&(d, _)| keep(d)) {
                            found.push((s, DocAddress::new(seg as u32, d)));
                        }
                        Some((doc, score))
                    }
                };
                if let Some(&(next, _)) = list.get(i + 1) {
                    heap.push(Reverse((next, t, i + 1)));
                }
            }
            if let Some((d, s)) = current.filter(|&(d, _)| keep(d)) {
                found.push((s, DocAddress::new(seg as u32, d)));
            }
        }
        let order = |a: &(Score, DocAddress), b: &(Score, DocAddress)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if found.len() > k && k > 0 {
            found.select_nth_unstable_by(k - 1, order);
            found.truncate(k);
        }
        found.sort_unstable_by(order);
        found.truncate(k);
        Ok(found)
    }
}
