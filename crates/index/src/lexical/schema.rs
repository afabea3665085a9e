//! The lexical index's schema and analyser: one text field scored by plain BM25, the
//! document kind, the categories it sits under, and its ordinal.

use std::path::{Path, PathBuf};

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};

pub(super) const ANALYZER: &str = "toolsearch_en";
/// Most distinct query terms used; the rest of a very long query is ignored.
pub(super) const MAX_QUERY_TERMS: usize = 64;
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
    pub(super) fn term(self) -> &'static str {
        match self {
            DocKind::Tool => "tool",
            DocKind::Node => "node",
        }
    }
}

#[derive(Clone)]
pub(crate) struct Fields {
    pub(super) text: Field,
    pub(super) scope: Field,
    pub(super) kind: Field,
    pub(super) ord: Field,
}

pub(super) fn schema() -> (Schema, Fields) {
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

pub(super) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(STOP_WORDS.iter().map(|s| s.to_string())))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The tantivy index of one kind under the lexical directory.
pub(super) fn part_dir(dir: &Path, kind: DocKind) -> PathBuf {
    dir.join(match kind {
        DocKind::Tool => "tools",
        DocKind::Node => "nodes",
    })
}
