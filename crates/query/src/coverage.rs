//! Per-term coverage: the query's content terms that occur in no tool the caller may see. A
//! request that names a product, a format or an action nothing in the caller's view mentions
//! ("sync my weread highlights") is likely asking for a tool that is not there; the
//! `NO_MATCH_IN_CATEGORY` answer names those terms, so the caller knows what is missing rather
//! than only that nothing fits.
//!
//! Counts come from the caller's own view of the lexical index (the statistics BM25 scores
//! with), so an unmatched term says nothing about tools the caller may not see.

use toolsearch_index::{DocKind, TermCount};

use crate::ranker::Ranker;
use crate::scope::Filter;

/// Words that frame a request rather than name what it is about ("I want a tool to find..."):
/// never reported as unmatched, whatever the catalogue says.
const REQUEST_WORDS: &[&str] = &[
    "about",
    "also",
    "any",
    "anything",
    "api",
    "app",
    "application",
    "ask",
    "call",
    "check",
    "data",
    "details",
    "find",
    "function",
    "get",
    "give",
    "help",
    "info",
    "information",
    "just",
    "know",
    "let",
    "like",
    "look",
    "looking",
    "make",
    "need",
    "now",
    "one",
    "plugin",
    "service",
    "show",
    "something",
    "tell",
    "thing",
    "tool",
    "tools",
    "try",
    "use",
    "using",
    "want",
    "way",
];

/// Most unmatched terms named in an answer.
const MOST_NAMED: usize = 5;

/// Content terms of `terms` that no document holds, in query order (surface forms, each
/// once): not request words, not numbers, at least two characters.
pub fn unmatched(terms: &[TermCount]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in terms.iter().filter(|t| t.documents == 0) {
        let s = t.surface.as_str();
        let content = s.chars().count() >= 2
            && !s.chars().all(|c| c.is_ascii_digit())
            && !REQUEST_WORDS.contains(&s)
            && !REQUEST_WORDS.contains(&t.term.as_str());
        if content && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

impl Ranker {
    /// The content terms of `query` that occur in no tool the caller of `filter` may see (at
    /// most five, in query order). Empty when the lexical index cannot say.
    pub fn unmatched_terms(&self, query: &str, filter: &Filter) -> Vec<String> {
        let view = self.tool_view(&filter.scopes);
        let terms = self.index().term_coverage(query, DocKind::Tool, &view).unwrap_or_default();
        let mut out = unmatched(&terms);
        out.truncate(MOST_NAMED);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(surface: &str, documents: u64) -> TermCount {
        TermCount { surface: surface.into(), term: surface.into(), documents }
    }

    #[test]
    fn only_content_terms_no_tool_holds_are_unmatched() {
        let terms = [
            count("want", 0),
            count("sync", 3),
            count("weread", 0),
            count("2024", 0),
            count("x", 0),
            count("highlights", 0),
        ];
        assert_eq!(unmatched(&terms), vec!["weread".to_owned(), "highlights".to_owned()]);
    }

    #[test]
    fn a_fully_covered_query_has_nothing_unmatched() {
        assert!(unmatched(&[count("send", 4), count("email", 2)]).is_empty());
    }
}
