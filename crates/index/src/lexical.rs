//! The BM25 side of the index: a tantivy index of tool and node documents with an English
//! stemming analyser, queried by analysed terms (never by query syntax, so any user text is a
//! valid query).

use std::collections::HashSet;
use std::path::Path;

use std::sync::Arc;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::dense::Hit;
use crate::document::LexicalFields;
use crate::error::IndexError;

const ANALYZER: &str = "toolsearch_en";
/// Most distinct query terms used; the rest of a very long query is ignored.
const MAX_QUERY_TERMS: usize = 64;
/// Terms in more than this share of documents are not scored.
const COMMON_TERM_SHARE: f64 = 0.3;
/// Most query terms scored (the rarest ones).
const MAX_SCORED_TERMS: usize = 32;
/// Field boosts: (name, path, body, params, tags).
const BOOSTS: [f32; 5] = [2.5, 1.5, 1.0, 0.6, 0.8];

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "for", "from", "had", "has", "have",
    "he", "her", "his", "how", "i", "i'm", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our",
    "please", "she", "so", "some", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to",
    "us", "was", "we", "were", "what", "when", "which", "who", "will", "with", "would", "you", "your", "m", "s", "t",
];

/// Which kind of document a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// A tool.
    Tool,
    /// A category node.
    Node,
}

impl DocKind {
    fn term(self) -> &'static str {
        match self {
            DocKind::Tool => "tool",
            DocKind::Node => "node",
        }
    }
}

#[derive(Clone)]
pub(crate) struct Fields {
    text: [Field; 5],
    scope: Field,
    kind: Field,
    ord: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexing = TextFieldIndexing::default().set_tokenizer(ANALYZER).set_index_option(IndexRecordOption::WithFreqs);
    let text = TextOptions::default().set_indexing_options(indexing);
    let fields = Fields {
        text: ["name", "path", "body", "params", "tags"].map(|n| b.add_text_field(n, text.clone())),
        scope: b.add_text_field("scope", STRING),
        kind: b.add_text_field("kind", STRING),
        ord: b.add_u64_field("ord", INDEXED | STORED | FAST),
    };
    (b.build(), fields)
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(STOP_WORDS.iter().map(|s| s.to_string())))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Builds the lexical index in `dir` (a fresh, empty directory).
pub(crate) struct LexicalWriter {
    writer: IndexWriter,
    fields: Fields,
    dir: std::path::PathBuf,
}

impl LexicalWriter {
    pub(crate) fn create(dir: &Path) -> Result<LexicalWriter, IndexError> {
        let err = |e: tantivy::TantivyError| IndexError::Lexical(dir.to_path_buf(), e.to_string());
        std::fs::create_dir_all(dir).map_err(crate::error::io(dir))?;
        let (schema, fields) = schema();
        let index = Index::create_in_dir(dir, schema).map_err(err)?;
        index.tokenizers().register(ANALYZER, analyzer());
        let writer = index.writer_with_num_threads(1, 64 * 1024 * 1024).map_err(err)?;
        Ok(LexicalWriter { writer, fields, dir: dir.to_path_buf() })
    }

    /// Adds one document. `scopes` are the display forms of every category prefix the
    /// document sits under (the root is `""`).
    pub(crate) fn add(
        &mut self,
        kind: DocKind,
        ord: u32,
        doc: &LexicalFields,
        scopes: &[String],
    ) -> Result<(), IndexError> {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        for (field, value) in f.text.iter().zip([&doc.name, &doc.path, &doc.body, &doc.params, &doc.tags]) {
            d.add_text(*field, value);
        }
        for s in scopes {
            d.add_text(f.scope, s);
        }
        d.add_text(f.kind, kind.term());
        d.add_u64(f.ord, u64::from(ord));
        self.writer.add_document(d).map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))?;
        Ok(())
    }

    /// Commits and merges into as few segments as tantivy decides, and waits for merges.
    pub(crate) fn finish(mut self) -> Result<(), IndexError> {
        let err = |e: tantivy::TantivyError| IndexError::Lexical(self.dir.clone(), e.to_string());
        self.writer.commit().map_err(err)?;
        self.writer.wait_merging_threads().map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))
    }
}

/// The lexical index, opened for search.
pub(crate) struct Lexical {
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    dir: std::path::PathBuf,
}

impl Lexical {
    pub(crate) fn open(dir: &Path) -> Result<Lexical, IndexError> {
        let err = |e: tantivy::TantivyError| IndexError::Lexical(dir.to_path_buf(), e.to_string());
        let index = Index::open_in_dir(dir).map_err(err)?;
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(err)?;
        Ok(Lexical { reader, fields: schema().1, analyzer: analyzer(), dir: dir.to_path_buf() })
    }

    /// The analysed, de-duplicated terms of `text` (at most [`MAX_QUERY_TERMS`]).
    pub(crate) fn terms(&self, text: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
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

    /// Drops terms found in more than [`COMMON_TERM_SHARE`] of the documents (long posting
    /// lists, almost no ranking signal) and keeps the [`MAX_SCORED_TERMS`] rarest of the rest.
    fn informative_terms(&self, searcher: &tantivy::Searcher, terms: Vec<String>) -> Result<Vec<String>, IndexError> {
        let docs = searcher.num_docs().max(1) as f64;
        let body = self.fields.text[2];
        let mut scored = Vec::with_capacity(terms.len());
        for t in terms {
            let df = searcher
                .doc_freq(&Term::from_field_text(body, &t))
                .map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))? as f64;
            if df / docs <= COMMON_TERM_SHARE {
                scored.push((df, t));
            }
        }
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(scored.into_iter().take(MAX_SCORED_TERMS).map(|(_, t)| t).collect())
    }

    /// BM25 top `k` documents of `kind` for `text`, restricted to the category `scope`
    /// (display form of a path; `None` = everything) and, when given, to the ordinals in
    /// `allowed` (sorted), applied while collecting so the top `k` are all allowed.
    pub(crate) fn search(
        &self,
        text: &str,
        kind: DocKind,
        scope: Option<&str>,
        allowed: Option<&Arc<Vec<u32>>>,
        k: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        let f = &self.fields;
        let searcher = self.reader.searcher();
        let terms = self.informative_terms(&searcher, self.terms(text))?;
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for t in &terms {
            for (field, boost) in f.text.iter().zip(BOOSTS) {
                let q = TermQuery::new(Term::from_field_text(*field, t), IndexRecordOption::WithFreqs);
                should.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
            }
        }
        let filter = |field: Field, value: &str| -> (Occur, Box<dyn Query>) {
            let q = TermQuery::new(Term::from_field_text(field, value), IndexRecordOption::Basic);
            (Occur::Must, Box::new(ConstScoreQuery::new(Box::new(q), 0.0)))
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(BooleanQuery::new(should)))];
        clauses.push(filter(f.kind, kind.term()));
        if let Some(s) = scope.filter(|s| !s.is_empty()) {
            clauses.push(filter(f.scope, s));
        }
        let query = BooleanQuery::new(clauses);
        let err = |e: tantivy::TantivyError| IndexError::Lexical(self.dir.clone(), e.to_string());
        let top = match allowed {
            None => searcher.search(&query, &TopDocs::with_limit(k).order_by_score()).map_err(err)?,
            Some(a) => {
                let a = Arc::clone(a);
                let keep = move |ord: u64| a.binary_search(&(ord as u32)).is_ok();
                let collector = FilterCollector::new("ord".to_string(), keep, TopDocs::with_limit(k).order_by_score());
                searcher.search(&query, &collector).map_err(err)?
            }
        };
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = searcher.segment_reader(addr.segment_ord).fast_fields().u64("ord").map_err(err)?;
            let ord = column
                .first(addr.doc_id)
                .ok_or_else(|| IndexError::Corrupted(self.dir.clone(), "a document has no ordinal".into()))?;
            hits.push(Hit { ord: ord as u32, score });
        }
        Ok(hits)
    }
}
