//! Term coverage: which of a query's analysed terms occur in the documents a caller may see,
//! and how many. A query that names something no visible document mentions ("weread", "ICS")
//! is likely asking for a tool that is not there, whatever the ranking's scores say.

use std::collections::HashSet;

use tantivy::query::Bm25StatisticsProvider;
use tantivy::Term;

use super::schema::DocKind;
use super::view::ViewStats;
use super::{Lexical, View};
use crate::error::IndexError;

/// One analysed query term and the number of documents in a view that hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermCount {
    /// The term as the query wrote it (identifiers split into words, as indexed).
    pub surface: String,
    /// The analysed term (lower-cased, stemmed) that documents are matched on.
    pub term: String,
    /// Documents of the kind, in the view, holding the term.
    pub documents: u64,
}

impl Lexical {
    /// Every distinct analysed term of `text` (no cap on their number).
    pub(crate) fn all_terms(&self, text: &str) -> HashSet<String> {
        let mut analyzer = self.analyzer.clone();
        let text = crate::document::expand_identifiers(text);
        let mut stream = analyzer.token_stream(&text);
        let mut out = HashSet::new();
        while let Some(tok) = stream.next() {
            out.insert(tok.text.clone());
        }
        out
    }

    /// The distinct analysed terms of `text` (at most the query's term cap), each with its
    /// surface form and the number of documents of `kind` in `view` that hold it. Counts are
    /// the view's own (cached with the BM25 statistics), so they say nothing of documents
    /// outside it.
    pub(crate) fn coverage(&self, text: &str, kind: DocKind, view: &View) -> Result<Vec<TermCount>, IndexError> {
        let part = match kind {
            DocKind::Tool => &self.tools,
            DocKind::Node => &self.nodes,
        };
        let searcher = part.reader.searcher();
        let stats = ViewStats { lexical: self, part, searcher: &searcher, kind, view };
        let mut analyzer = self.analyzer.clone();
        let expanded = crate::document::expand_identifiers(text);
        let mut stream = analyzer.token_stream(&expanded);
        let mut out: Vec<TermCount> = Vec::new();
        while let Some(tok) = stream.next() {
            if out.iter().any(|c| c.term == tok.text) {
                continue;
            }
            let surface = expanded.get(tok.offset_from..tok.offset_to).unwrap_or(&tok.text).to_lowercase();
            let documents = stats
                .doc_freq(&Term::from_field_text(self.fields.text, &tok.text))
                .map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))?;
            out.push(TermCount { surface, term: tok.text.clone(), documents });
            if out.len() == super::schema::MAX_QUERY_TERMS {
                break;
            }
        }
        Ok(out)
    }
}
