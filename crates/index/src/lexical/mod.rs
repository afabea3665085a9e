//! The BM25 side of the index: a tantivy index of tool and node documents with an English
//! stemming analyser, queried by analysed terms (never by query syntax, so any user text is a
//! valid query).
//!
//! BM25 statistics (document count, average field length, document frequencies) are computed
//! over a [`View`]: the documents of the kind searched that the caller may see, never over the
//! whole index. A caller therefore gets the same scores as on an index built without the
//! documents it may not see, and no score tells it anything about them. A restricted view is
//! also searched over postings filtered to it (`restricted`, or all of them worked out ahead:
//! `lexicon`), so a query word reads no hidden document and its time says nothing about them
//! either.

mod coverage;
mod lexicon;
mod restricted;
mod schema;
#[cfg(test)]
mod tests;
mod view;
mod writer;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocSet, Index, IndexReader, ReloadPolicy, Term, TERMINATED};

use crate::dense::Hit;
use crate::error::IndexError;
use schema::{analyzer, part_dir, schema, Fields, ANALYZER, MAX_QUERY_TERMS};
use view::ViewStats;

pub use coverage::TermCount;
pub use lexicon::Lexicon;
pub use schema::DocKind;
pub use view::View;
pub(crate) use writer::LexicalWriter;

/// Per document of a segment: its kind, ordinal and text length (as tantivy encodes it).
struct DocFacts {
    kind: DocKind,
    ord: u32,
    /// Its text length as tantivy encodes it (what BM25 scores read).
    norm_id: u8,
}

/// Documents in a view and their total text length.
type Totals = (u64, u64);

/// Most document frequencies cached.
const DF_CACHE: usize = 200_000;

/// The opened tantivy index of one kind.
struct Part {
    reader: IndexReader,
    /// Per segment (in searcher order), per document.
    facts: Vec<Vec<DocFacts>>,
}

/// The lexical index, opened for search.
pub(crate) struct Lexical {
    tools: Part,
    nodes: Part,
    fields: Fields,
    analyzer: TextAnalyzer,
    dir: std::path::PathBuf,
    /// Document frequency by (kind, view key, field, term) for views seen.
    df_cache: Mutex<HashMap<(bool, u64, u32, String), u64>>,
    /// Documents and total text length by (kind, view key).
    totals_cache: Mutex<HashMap<(bool, u64), Totals>>,
    /// Postings filtered to restricted views, by view and term.
    view_postings: Mutex<restricted::PostingsCache>,
}

impl Lexical {
    pub(crate) fn open(dir: &Path) -> Result<Lexical, IndexError> {
        let fields = schema().1;
        let part = |kind: DocKind| -> Result<Part, IndexError> {
            let dir = part_dir(dir, kind);
            let err = |e: tantivy::TantivyError| IndexError::Lexical(dir.clone(), e.to_string());
            let index = Index::open_in_dir(&dir).map_err(err)?;
            index.tokenizers().register(ANALYZER, analyzer());
            let reader: IndexReader =
                index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(err)?;
            let facts = doc_facts(&reader.searcher(), &fields).map_err(err)?;
            if facts.iter().flatten().any(|f| f.kind != kind) {
                return Err(IndexError::Corrupted(dir.clone(), "holds documents of another kind".into()));
            }
            Ok(Part { reader, facts })
        };
        Ok(Lexical {
            tools: part(DocKind::Tool)?,
            nodes: part(DocKind::Node)?,
            fields,
            analyzer: analyzer(),
            dir: dir.to_path_buf(),
            df_cache: Mutex::new(HashMap::new()),
            totals_cache: Mutex::new(HashMap::new()),
            view_postings: Mutex::default(),
        })
    }

    /// The analysed, de-duplicated terms of `text` (at most [`MAX_QUERY_TERMS`]).
    pub(crate) fn terms(&self, text: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let text = crate::document::expand_identifiers(text);
        let mut stream = analyzer.token_stream(&text);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while let Some(tok) = stream.next() {
            if seen.insert(tok.text.clone()) {
                out.push(tok.text.clone());
                if out.len() == MAX_QUERY_TERMS {
                    break;
                }
            }
        }
        out
    }

    /// BM25 top `k` documents of `kind` for `text`, restricted to the category `scope`
    /// (display form of a path; `None` = everything) and, when given, to the ordinals in
    /// `allowed` (sorted), applied while collecting so the top `k` are all allowed. Scores use
    /// the statistics of `view` (which must contain `allowed`).
    pub(crate) fn search(
        &self,
        text: &str,
        kind: DocKind,
        scope: Option<&str>,
        allowed: Option<&Arc<Vec<u32>>>,
        view: &View,
        k: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        let f = &self.fields;
        let part = match kind {
            DocKind::Tool => &self.tools,
            DocKind::Node => &self.nodes,
        };
        let searcher = part.reader.searcher();
        let stats = ViewStats { lexical: self, part, searcher: &searcher, kind, view };
        // Every query term counts: BM25's idf already weighs common terms down, and dropping
        // them (as an earlier version did) measured worse on catalogues it was not tuned on.
        let terms = self.terms(text);
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let should: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| -> (Occur, Box<dyn Query>) {
                let q = TermQuery::new(Term::from_field_text(f.text, t), IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(q))
            })
            .collect();
        let filter = |field: Field, value: &str| -> (Occur, Box<dyn Query>) {
            let q = TermQuery::new(Term::from_field_text(field, value), IndexRecordOption::Basic);
            (Occur::Must, Box::new(ConstScoreQuery::new(Box::new(q), 0.0)))
        };
        // Without a scope the query is a plain union of term queries: block-max WAND skips
        // the documents that cannot reach the top k.
        let query = match scope.filter(|s| !s.is_empty()) {
            None => BooleanQuery::new(should),
            Some(s) => BooleanQuery::new(vec![(Occur::Must, Box::new(BooleanQuery::new(should))), filter(f.scope, s)]),
        };
        let err = |e: tantivy::TantivyError| IndexError::Lexical(self.dir.clone(), e.to_string());
        let top = match (allowed, &view.bits) {
            // A restricted view reads its own postings, never the hidden documents' (see
            // `restricted`).
            (_, Some(_)) => {
                let terms: Vec<Term> = terms.iter().map(|t| Term::from_field_text(f.text, t)).collect();
                let within = scope.filter(|s| !s.is_empty()).map(|s| Term::from_field_text(f.scope, s));
                stats.top_k(&terms, within.as_ref(), allowed, k).map_err(err)?
            }
            (None, None) => searcher
                .search_with_statistics_provider(&query, &TopDocs::with_limit(k).order_by_score(), &stats)
                .map_err(err)?,
            (Some(a), None) => {
                let a = Arc::clone(a);
                let keep = move |ord: u64| a.binary_search(&(ord as u32)).is_ok();
                let collector = FilterCollector::new("ord".to_string(), keep, TopDocs::with_limit(k).order_by_score());
                searcher.search_with_statistics_provider(&query, &collector, &stats).map_err(err)?
            }
        };
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            // Ordinals were read once at open (a missing one is u32::MAX there).
            let ord = part
                .facts
                .get(addr.segment_ord as usize)
                .and_then(|f| f.get(addr.doc_id as usize))
                .map(|f| f.ord)
                .filter(|&o| o != u32::MAX)
                .ok_or_else(|| IndexError::Corrupted(self.dir.clone(), "a document has no ordinal".into()))?;
            hits.push(Hit { ord, score });
        }
        Ok(hits)
    }
}

/// Kind, ordinal and text length of every document, per segment, read once at open.
fn doc_facts(searcher: &tantivy::Searcher, fields: &Fields) -> tantivy::Result<Vec<Vec<DocFacts>>> {
    let mut out = Vec::new();
    for segment in searcher.segment_readers() {
        let max = segment.max_doc();
        let ords = segment.fast_fields().u64("ord")?;
        let norms = segment.get_fieldnorms_reader(fields.text)?;
        let mut is_tool = vec![false; max as usize];
        let term = Term::from_field_text(fields.kind, DocKind::Tool.term());
        if let Some(mut postings) =
            segment.inverted_index(fields.kind)?.read_postings(&term, IndexRecordOption::Basic)?
        {
            let mut doc = postings.doc();
            while doc != TERMINATED {
                is_tool[doc as usize] = true;
                doc = postings.advance();
            }
        }
        let mut facts = Vec::with_capacity(max as usize);
        for doc in 0..max {
            facts.push(DocFacts {
                kind: if is_tool[doc as usize] { DocKind::Tool } else { DocKind::Node },
                ord: ords.first(doc).unwrap_or(u64::MAX) as u32,
                norm_id: norms.fieldnorm_id(doc),
            });
        }
        out.push(facts);
    }
    Ok(out)
}
