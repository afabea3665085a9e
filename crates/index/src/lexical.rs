//! The BM25 side of the index: a tantivy index of tool and node documents with an English
//! stemming analyser, queried by analysed terms (never by query syntax, so any user text is a
//! valid query).
//!
//! BM25 statistics (document count, average field length, document frequencies) are computed
//! over a [`View`]: the documents of the kind searched that the caller may see, never over the
//! whole index. A caller therefore gets the same scores as on an index built without the
//! documents it may not see, and no score tells it anything about them.

use std::collections::HashSet;
use std::path::Path;

use std::sync::Arc;

use std::collections::HashMap;
use std::sync::Mutex;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::Bm25StatisticsProvider;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{DocSet, TERMINATED};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::dense::Hit;
use crate::document::LexicalFields;
use crate::error::IndexError;

const ANALYZER: &str = "toolsearch_en";
/// Most distinct query terms used; the rest of a very long query is ignored.
const MAX_QUERY_TERMS: usize = 64;
/// The one text field: every part of a document (name and its words, path, description,
/// parameters, tags), scored by plain BM25 with no field boosts: chosen leave-one-set-out over
/// the four dev sets, it beat boosted per-field scores on three of them and lost 0.008 on the
/// fourth (docs/benchmarks.md).
const TEXT_FIELD: &str = "text";

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
    text: Field,
    scope: Field,
    kind: Field,
    ord: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexing = TextFieldIndexing::default().set_tokenizer(ANALYZER).set_index_option(IndexRecordOption::WithFreqs);
    let text = TextOptions::default().set_indexing_options(indexing);
    let fields = Fields {
        text: b.add_text_field(TEXT_FIELD, text),
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

/// Builds the lexical index in `dir` (a fresh, empty directory): one tantivy index of tools
/// in `dir/tools` and one of categories in `dir/nodes`. Kept apart, a search of either is a
/// plain union of term queries, which tantivy answers with block-max WAND instead of scoring
/// every matching document.
pub(crate) struct LexicalWriter {
    tools: IndexWriter,
    nodes: IndexWriter,
    fields: Fields,
    dir: std::path::PathBuf,
}

/// The tantivy index of one kind under the lexical directory.
fn part_dir(dir: &Path, kind: DocKind) -> std::path::PathBuf {
    dir.join(match kind {
        DocKind::Tool => "tools",
        DocKind::Node => "nodes",
    })
}

impl LexicalWriter {
    pub(crate) fn create(dir: &Path) -> Result<LexicalWriter, IndexError> {
        // Tantivy's smallest budget for the nodes (fewer, shorter documents).
        let writer = |kind: DocKind| -> Result<IndexWriter, IndexError> {
            let dir = part_dir(dir, kind);
            let err = |e: tantivy::TantivyError| IndexError::Lexical(dir.clone(), e.to_string());
            std::fs::create_dir_all(&dir).map_err(crate::error::io(&dir))?;
            let index = Index::create_in_dir(&dir, schema().0).map_err(err)?;
            index.tokenizers().register(ANALYZER, analyzer());
            let budget = match kind {
                DocKind::Tool => 32 << 20,
                DocKind::Node => 15 << 20,
            };
            index.writer_with_num_threads(1, budget).map_err(err)
        };
        Ok(LexicalWriter {
            tools: writer(DocKind::Tool)?,
            nodes: writer(DocKind::Node)?,
            fields: schema().1,
            dir: dir.to_path_buf(),
        })
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
        d.add_text(f.text, doc.all());
        for s in scopes {
            d.add_text(f.scope, s);
        }
        d.add_text(f.kind, kind.term());
        d.add_u64(f.ord, u64::from(ord));
        let writer = match kind {
            DocKind::Tool => &mut self.tools,
            DocKind::Node => &mut self.nodes,
        };
        writer.add_document(d).map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))?;
        Ok(())
    }

    /// Commits and merges into as few segments as tantivy decides, and waits for merges.
    pub(crate) fn finish(self) -> Result<(), IndexError> {
        for mut writer in [self.tools, self.nodes] {
            let err = |e: tantivy::TantivyError| IndexError::Lexical(self.dir.clone(), e.to_string());
            writer.commit().map_err(err)?;
            writer.wait_merging_threads().map_err(err)?;
        }
        Ok(())
    }
}

/// The documents of one kind that a caller may see: the base of every BM25 statistic.
#[derive(Debug, Clone)]
pub struct View {
    /// Identifies the view for caching statistics (equal keys, equal sets).
    key: u64,
    /// Membership by ordinal; `None` = every document of the kind.
    bits: Option<Arc<Vec<u64>>>,
}

impl View {
    /// Every document of the kind.
    pub fn everything() -> View {
        View { key: 0, bits: None }
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
        View { key: key.max(1), bits: Some(Arc::new(bits)) }
    }

    fn contains(&self, ord: u32) -> bool {
        match &self.bits {
            None => true,
            Some(b) => b.get(ord as usize / 64).is_some_and(|w| w & (1 << (ord % 64)) != 0),
        }
    }
}

/// Per document of a segment: its kind, ordinal and text length.
struct DocFacts {
    kind: DocKind,
    ord: u32,
    length: u32,
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
}

/// BM25 statistics over one view of one kind.
struct ViewStats<'a> {
    lexical: &'a Lexical,
    part: &'a Part,
    searcher: &'a tantivy::Searcher,
    kind: DocKind,
    view: &'a View,
}

impl ViewStats<'_> {
    fn member(&self, f: &DocFacts) -> bool {
        f.kind == self.kind && self.view.contains(f.ord)
    }
}

impl ViewStats<'_> {
    /// Documents in the view, and their total text length (cached per view).
    fn totals(&self) -> Totals {
        let key = (self.kind == DocKind::Tool, self.view.key);
        if let Some(t) = self.lexical.totals_cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *t;
        }
        let mut totals = (0u64, 0u64);
        for f in self.part.facts.iter().flatten().filter(|f| self.member(f)) {
            totals.0 += 1;
            totals.1 += u64::from(f.length);
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
            (None, None) => searcher
                .search_with_statistics_provider(&query, &TopDocs::with_limit(k).order_by_score(), &stats)
                .map_err(err)?,
            (Some(a), _) => {
                let a = Arc::clone(a);
                let keep = move |ord: u64| a.binary_search(&(ord as u32)).is_ok();
                let collector = FilterCollector::new("ord".to_string(), keep, TopDocs::with_limit(k).order_by_score());
                searcher.search_with_statistics_provider(&query, &collector, &stats).map_err(err)?
            }
            (None, Some(_)) => {
                let v = view.clone();
                let keep = move |ord: u64| v.contains(ord as u32);
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
                length: norms.fieldnorm(doc),
            });
        }
        out.push(facts);
    }
    Ok(out)
}
