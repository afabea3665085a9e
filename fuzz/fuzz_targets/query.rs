//! Query text: any query, over any scope, is answered with at most `limit` pointers whose
//! confidences are probabilities, or with one of the protocol's documented errors.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use toolsearch_catalog::PathSpec;
use toolsearch_query::{ErrorCode, ListRequest, SearchNodesRequest, SearchToolsRequest};

/// Scopes searched: the whole catalogue, categories of the sample catalogue at each depth, and
/// one that does not exist (answered `UNKNOWN_PATH`, whatever the query).
const SCOPES: [Option<&str>; 5] = [None, Some("Coding"), Some("Coding/Git/GitHub"), Some("Communication"), Some("Coding/Nowhere")];
const UNKNOWN_SCOPE: usize = 4;

fuzz_target!(|data: &[u8]| {
    let engine = common::engine();
    let Some((&selector, rest)) = data.split_first() else { return };
    let query = String::from_utf8_lossy(rest).into_owned();
    let limit = (selector as usize % 7) + 1;
    let which = (selector as usize / 7) % SCOPES.len();
    let scope = SCOPES[which].map(|p| PathSpec::Joined(p.into()));
    let scoped_errors: &[ErrorCode] = if which == UNKNOWN_SCOPE {
        &[ErrorCode::UnknownPath]
    } else {
        &[ErrorCode::NoMatchInCategory, ErrorCode::InvalidArgument]
    };
    let req = SearchToolsRequest { query: query.clone(), category_path: scope.clone(), tags: vec![], limit: Some(limit), cursor: None };
    match engine.search_tool_by_category(&req) {
        Ok(answer) => {
            assert!(which != UNKNOWN_SCOPE, "an unknown category was searched");
            assert!(!answer.results.is_empty() && answer.results.len() <= limit);
            for p in &answer.results {
                assert!((0.0..=1.0).contains(&p.confidence), "confidence {}", p.confidence);
                assert!(engine.tool(&p.tool_id).is_some());
            }
        }
        Err(e) if which == UNKNOWN_SCOPE && e.code == ErrorCode::InvalidArgument => {}
        Err(e) => common::check_error(&e, scoped_errors),
    }
    match engine.search_nodes(&SearchNodesRequest { query: query.clone(), limit: Some(limit) }) {
        Ok(answer) => assert!(answer.results.len() <= limit),
        Err(e) => common::check_error(&e, &[ErrorCode::NoMatchInCategory, ErrorCode::InvalidArgument]),
    }
    let list = ListRequest { path: scope, tags: vec![], query: Some(query), limit: Some(limit), cursor: None };
    match engine.list(&list) {
        Ok(answer) => {
            assert!(which != UNKNOWN_SCOPE, "an unknown category was listed");
            assert!(answer.tools.len() <= limit);
        }
        Err(e) if which == UNKNOWN_SCOPE && e.code == ErrorCode::InvalidArgument => {}
        Err(e) => common::check_error(&e, scoped_errors),
    }
});
