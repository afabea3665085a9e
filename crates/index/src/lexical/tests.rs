//! The lexical index's tests: a restricted view scores as an index of its documents alone,
//! and reads no hidden document's postings for a term it has read before, nor for any term
//! when it keeps a lexicon.

use std::sync::Arc;

use super::{DocKind, Lexical, LexicalWriter, View};
use crate::document::LexicalFields;

/// Twenty tools on payments and mail; the odd ones (hidden from the view) say "refund" more.
fn text(ord: u32) -> String {
    let subject = if ord % 4 < 2 { "refund the payment of a customer" } else { "send mail to a customer" };
    let extra = if ord % 2 == 1 { " refund refund payment" } else { "" };
    format!("{subject}{extra} number{ord} {}", "word ".repeat(ord as usize % 5))
}

/// A lexical index of the tools `ords` (each under the category `c{ord % 3}`).
fn build(dir: &std::path::Path, ords: impl Iterator<Item = u32>) -> Lexical {
    let mut w = LexicalWriter::create(dir).unwrap();
    for ord in ords {
        let doc = LexicalFields { body: text(ord), ..LexicalFields::default() };
        w.add(DocKind::Tool, ord, &doc, &[String::new(), format!("c{}", ord % 3)]).unwrap();
    }
    w.finish().unwrap();
    Lexical::open(dir).unwrap()
}

fn visible() -> Vec<u32> {
    (0..20).filter(|o| o % 2 == 0).collect()
}

#[test]
fn a_restricted_view_scores_as_an_index_of_its_documents_alone() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (all, alone) = (build(a.path(), 0..20), build(b.path(), visible().into_iter()));
    let plain = View::of(7, &visible(), 20);
    let lexicon =
        Arc::new(all.lexicon(DocKind::Tool, &plain, usize::MAX).unwrap().expect("a restricted view's lexicon"));
    let some = Arc::new(vec![0, 2, 4, 6, 8, 12]);
    let queries = ["refund the payment", "customer mail", "number4 word", "refund", "number3", "nothing matches"];
    for (query, view) in
        queries.iter().flat_map(|q| [(*q, plain.clone()), (*q, plain.clone().with_lexicon(Arc::clone(&lexicon)))])
    {
        for scope in [None, Some("c1")] {
            for allowed in [None, Some(&some)] {
                let got = all.search(query, DocKind::Tool, scope, allowed, &view, 5).unwrap();
                let want = alone.search(query, DocKind::Tool, scope, allowed, &View::everything(), 5).unwrap();
                let at = format!("{query:?} in {scope:?}, allowed {allowed:?}");
                assert_eq!(
                    got.iter().map(|h| h.ord).collect::<Vec<_>>(),
                    want.iter().map(|h| h.ord).collect::<Vec<_>>(),
                    "{at}"
                );
                for (g, w) in got.iter().zip(&want) {
                    assert!((g.score - w.score).abs() <= 1e-5 * w.score.abs(), "{at}: {} vs {}", g.score, w.score);
                }
                assert!(got.iter().all(|h| h.ord % 2 == 0), "{at}: a hidden tool answered");
            }
        }
        let counts = |l: &Lexical, v: &View| l.coverage(query, DocKind::Tool, v).unwrap();
        assert_eq!(counts(&all, &view), counts(&alone, &View::everything()), "{query:?}: term counts");
    }
}

#[test]
fn a_term_a_view_has_read_is_not_walked_again() {
    let dir = tempfile::tempdir().unwrap();
    let all = build(dir.path(), 0..20);
    let (view, other) = (View::of(7, &visible(), 20), View::of(8, &[1, 3], 20));
    let first = all.search("refund payment", DocKind::Tool, Some("c0"), None, &view, 5).unwrap();
    let walked = all.postings_walked();
    assert!(walked >= 3, "two terms and a category were walked: {walked}");
    let again = all.search("payment refund", DocKind::Tool, Some("c0"), None, &view, 5).unwrap();
    assert_eq!(all.postings_walked(), walked, "a repeated term read its whole list again");
    assert_eq!(first.iter().map(|h| h.ord).collect::<Vec<_>>(), again.iter().map(|h| h.ord).collect::<Vec<_>>());
    all.search("refund payment", DocKind::Tool, None, None, &other, 5).unwrap();
    assert_eq!(all.postings_walked(), walked + 2, "another view reads its own postings");
}

#[test]
fn the_postings_kept_stay_within_their_bound_and_answers_do_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let all = build(dir.path(), 0..20);
    let view = View::of(7, &visible(), 20);
    let before = all.search("refund payment customer", DocKind::Tool, None, None, &view, 5).unwrap();
    all.postings_kept(Some(2_000));
    let mut most = 0;
    for i in 0..200 {
        all.search(&format!("number{} word mail", i % 20), DocKind::Tool, None, None, &view, 5).unwrap();
        most = most.max(all.postings_kept(None));
        assert!(most <= 2_000, "{most} bytes kept");
    }
    assert!(most > 1_000, "the lists were kept until the bound: {most} bytes at most");
    let after = all.search("refund payment customer", DocKind::Tool, None, None, &view, 5).unwrap();
    assert_eq!(
        before.iter().map(|h| (h.ord, h.score)).collect::<Vec<_>>(),
        after.iter().map(|h| (h.ord, h.score)).collect::<Vec<_>>()
    );
}

#[test]
fn a_view_with_a_lexicon_walks_no_list_for_any_word() {
    let dir = tempfile::tempdir().unwrap();
    let all = build(dir.path(), 0..20);
    let plain = View::of(7, &visible(), 20);
    let lexicon = Arc::new(all.lexicon(DocKind::Tool, &plain, usize::MAX).unwrap().unwrap());
    let view = plain.clone().with_lexicon(Arc::clone(&lexicon));
    // "number3" and "number17" only hidden tools hold; "refund" hidden tools hold most of.
    for query in ["refund payment", "number3 number17", "customer", "mail number2", "absent words"] {
        for scope in [None, Some("c0"), Some("c2")] {
            let walked = all.postings_walked();
            let got = all.search(query, DocKind::Tool, scope, None, &view, 5).unwrap();
            assert_eq!(all.postings_walked(), walked, "{query:?} in {scope:?} walked a whole list");
            let want = all.search(query, DocKind::Tool, scope, None, &plain, 5).unwrap();
            assert_eq!(
                got.iter().map(|h| (h.ord, h.score)).collect::<Vec<_>>(),
                want.iter().map(|h| (h.ord, h.score)).collect::<Vec<_>>(),
                "{query:?} in {scope:?}"
            );
        }
        let walked = all.postings_walked();
        let counts = all.coverage(query, DocKind::Tool, &view).unwrap();
        assert_eq!(all.postings_walked(), walked, "{query:?}: its counts walked a whole list");
        assert_eq!(counts, all.coverage(query, DocKind::Tool, &plain).unwrap(), "{query:?}: term counts");
    }
    assert!(lexicon.bytes() > 0);
    assert!(all.lexicon(DocKind::Tool, &plain, lexicon.bytes() - 1).unwrap().is_none(), "over the bound");
    assert!(all.lexicon(DocKind::Tool, &plain, lexicon.bytes()).unwrap().is_some(), "at the bound");
    assert!(all.lexicon(DocKind::Tool, &View::everything(), usize::MAX).unwrap().is_none(), "nothing to filter");
    // A lexicon worked out for tools answers nothing for the node part.
    let nodes = View::of(9, &[0], 1).with_lexicon(lexicon);
    assert!(all.search("refund", DocKind::Node, None, None, &nodes, 5).unwrap().is_empty());
}
