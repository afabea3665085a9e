//! A restricted view's postings of every word, worked out once and kept with the view.
//!
//! `restricted` keeps a view's postings word by word, so the first time a view met a word it
//! walked the word's whole list, hidden documents included: a caller could time whether the
//! tools hidden from it mention a word it had not asked about before. A [`Lexicon`] walks every
//! word of the index's kind once, when the caller's scope set is worked out (ahead of its
//! requests for the sets a server knows), and keeps the view's share of each list; a view that
//! holds one never walks a list at a request, and a word only hidden documents hold costs the
//! same lookup as a word no document holds.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use tantivy::schema::{Field, IndexRecordOption};

use super::restricted::ViewPostings;
use super::schema::DocKind;
use super::view::ViewStats;
use super::{Lexical, View};
use crate::error::IndexError;

/// Every word's postings inside one view, for the text field (with frequencies) and the
/// category field: what BM25 and the category filter of the view read.
pub struct Lexicon {
    kind: DocKind,
    text: HashMap<Box<str>, Arc<ViewPostings>>,
    scope: HashMap<Box<str>, Arc<ViewPostings>>,
    /// What a word no document of the view holds reads: no document in any segment.
    empty: Arc<ViewPostings>,
    bytes: usize,
}

impl fmt::Debug for Lexicon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lexicon")
            .field("words", &(self.text.len() + self.scope.len()))
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Lexicon {
    /// Bytes it holds (postings, words and their table entries), as the kept scope sets weigh
    /// it.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The view's postings of the word `text` in `field`, when this lexicon holds that field for
    /// `kind`: those of no document when the view holds no document with it.
    pub(super) fn get(&self, lexical: &Lexical, kind: DocKind, field: Field, text: &str) -> Option<Arc<ViewPostings>> {
        let words = match field {
            _ if kind != self.kind => return None,
            f if f == lexical.fields.text => &self.text,
            f if f == lexical.fields.scope => &self.scope,
            _ => return None,
        };
        Some(words.get(text).map_or_else(|| Arc::clone(&self.empty), Arc::clone))
    }
}

/// Bytes a word's entry adds beside its postings (key, table slot, the shared list's header).
const WORD_BYTES: usize = 96;

impl Lexical {
    /// The postings of every word of `kind` inside the restricted `view`, or `None` when the
    /// view is every document (nothing to filter) or they pass `max_bytes`. Takes one walk of
    /// every posting list of the kind.
    pub(crate) fn lexicon(&self, kind: DocKind, view: &View, max_bytes: usize) -> Result<Option<Lexicon>, IndexError> {
        if view.bits.is_none() {
            return Ok(None);
        }
        let part = match kind {
            DocKind::Tool => &self.tools,
            DocKind::Node => &self.nodes,
        };
        let searcher = part.reader.searcher();
        let stats = ViewStats { lexical: self, part, searcher: &searcher, kind, view };
        let segments = searcher.segment_readers().len();
        let err = |e: std::io::Error| IndexError::Lexical(self.dir.clone(), e.to_string());
        let mut bytes = 0usize;
        let mut fields = [(self.fields.text, HashMap::new()), (self.fields.scope, HashMap::new())];
        for (field, words) in &mut fields {
            let option =
                if *field == self.fields.text { IndexRecordOption::WithFreqs } else { IndexRecordOption::Basic };
            let mut lists: HashMap<Box<str>, ViewPostings> = HashMap::new();
            for (seg, (segment, facts)) in searcher.segment_readers().iter().zip(&part.facts).enumerate() {
                let inverted =
                    segment.inverted_index(*field).map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))?;
                let mut stream = inverted.terms().stream().map_err(err)?;
                while stream.advance() {
                    let mut postings = inverted.read_postings_from_terminfo(stream.value(), option).map_err(err)?;
                    let docs = stats.inside(&mut postings, facts, option == IndexRecordOption::WithFreqs);
                    if docs.is_empty() {
                        continue;
                    }
                    let word = String::from_utf8_lossy(stream.key()).into_owned().into_boxed_str();
                    bytes += docs.len() * 8 + if lists.contains_key(&word) { 0 } else { word.len() + WORD_BYTES };
                    if bytes > max_bytes {
                        return Ok(None);
                    }
                    let list = lists
                        .entry(word)
                        .or_insert_with(|| ViewPostings { segments: vec![Vec::new(); segments], docs: 0 });
                    list.docs += docs.len() as u64;
                    list.segments[seg] = docs;
                }
            }
            *words = lists.into_iter().map(|(w, p)| (w, Arc::new(p))).collect();
        }
        let [(_, text), (_, scope)] = fields;
        let empty = Arc::new(ViewPostings { segments: vec![Vec::new(); segments], docs: 0 });
        Ok(Some(Lexicon { kind, text, scope, empty, bytes }))
    }
}
