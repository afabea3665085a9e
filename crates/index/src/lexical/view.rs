//! What a caller may see, and BM25 statistics computed over exactly that.

use std::sync::Arc;

use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, Term, TERMINATED};

use super::lexicon::Lexicon;
use super::schema::DocKind;
use super::{DocFacts, Lexical, Part, Totals, DF_CACHE};

/// The documents of one kind that a caller may see: the base of every BM25 statistic.
#[derive(Debug, Clone)]
pub struct View {
    /// Identifies the view for caching statistics (equal keys, equal sets).
    pub(super) key: u64,
    /// Membership by ordinal; `None` = every document of the kind.
    pub(super) bits: Option<Arc<Vec<u64>>>,
    /// Every word's postings inside the view, when worked out ([`View::with_lexicon`]): then no
    /// request walks a word's whole list.
    pub(super) lexicon: Option<Arc<Lexicon>>,
}

impl View {
    /// Every document of the kind.
    pub fn everything() -> View {
        View { key: 0, bits: None, lexicon: None }
    }

    /// The documents with the ordinals `ords`. `key` must identify the set (e.g. a hash of
    /// the caller's scopes); 0 is reserved for [`View::everything`].
    pub fn of(key: u64, ords: &[u32], len: usize) -> View {
        let mut bits = vec![0u64; len.div_ceil(64)];
        for &o in ords {
            if let Some(w) = bits.get_mut(o as usize / 64) {
                *w |= 1 << (o % 64);
            }
        }
        View { key: key.max(1), bits: Some(Arc::new(bits)), lexicon: None }
    }

    /// The view reading its words' postings from `lexicon` (worked out for this view by
    /// [`IndexReader::view_lexicon`](crate::IndexReader::view_lexicon)).
    pub fn with_lexicon(mut self, lexicon: Arc<Lexicon>) -> View {
        self.lexicon = Some(lexicon);
        self
    }

    /// Bytes of the postings it keeps ([`View::with_lexicon`]), 0 when none.
    pub fn lexicon_bytes(&self) -> usize {
        self.lexicon.as_ref().map_or(0, |l| l.bytes())
    }

    /// Whether the document with the ordinal `ord` is in the view.
    pub fn contains(&self, ord: u32) -> bool {
        match &self.bits {
            None => true,
            Some(b) => b.get(ord as usize / 64).is_some_and(|w| w & (1 << (ord % 64)) != 0),
        }
    }
}

/// BM25 statistics over one view of one kind.
pub(super) struct ViewStats<'a> {
    pub(super) lexical: &'a Lexical,
    pub(super) part: &'a Part,
    pub(super) searcher: &'a tantivy::Searcher,
    pub(super) kind: DocKind,
    pub(super) view: &'a View,
}

impl ViewStats<'_> {
    pub(super) fn member(&self, f: &DocFacts) -> bool {
        f.kind == self.kind && self.view.contains(f.ord)
    }
}

impl ViewStats<'_> {
    /// Documents in the view, and their total text length (cached per view).
    pub(super) fn totals(&self) -> Totals {
        let key = (self.kind == DocKind::Tool, self.view.key);
        if let Some(t) = self.lexical.totals_cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *t;
        }
        let mut totals = (0u64, 0u64);
        for f in self.part.facts.iter().flatten().filter(|f| self.member(f)) {
            totals.0 += 1;
            totals.1 += u64::from(tantivy::fieldnorm::FieldNormReader::id_to_fieldnorm(f.norm_id));
        }
        let mut cache = self.lexical.totals_cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= 4096 {
            cache.clear();
        }
        cache.insert(key, totals);
        totals
    }
}

impl Bm25StatisticsProvider for ViewStats<'_> {
    fn total_num_tokens(&self, _field: Field) -> tantivy::Result<u64> {
        Ok(self.totals().1)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.totals().0)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if self.view.bits.is_some() {
            return Ok(self.postings(term)?.docs);
        }
        let text = term.value().as_str().unwrap_or_default().to_owned();
        let key = (self.kind == DocKind::Tool, self.view.key, term.field().field_id(), text);
        if let Some(&df) = self.lexical.df_cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(df);
        }
        let mut df = 0u64;
        for (segment, facts) in self.searcher.segment_readers().iter().zip(&self.part.facts) {
            let inverted = segment.inverted_index(term.field())?;
            if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if facts.get(doc as usize).is_some_and(|f| self.member(f)) {
                        df += 1;
                    }
                    doc = postings.advance();
                }
            }
        }
        let mut cache = self.lexical.df_cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= DF_CACHE {
            cache.clear();
        }
        cache.insert(key, df);
        Ok(df)
    }
}
