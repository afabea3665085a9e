//! Matching rather than ranking: a query that is a tool id or name, and `match: "regex"` with
//! its paging, bad patterns and scopes.

use super::*;

#[test]
fn a_query_that_is_a_tool_id_or_name_returns_that_tool_first_with_high_confidence() {
    for (query, want) in
        [("git.commit", "git.commit"), ("rename_symbol", "refactor.rename_symbol"), ("  GIT.COMMIT ", "git.commit")]
    {
        let r = search(query, None).expect("answer");
        assert_eq!(r.results[0].tool_id, want, "{query}");
        assert!(r.results[0].confidence >= toolsearch::EXACT_CONFIDENCE, "{query}: {}", r.results[0].confidence);
    }
    // Outside the category asked for, the exact match does not appear.
    let r = search("git.commit", Some("Communication")).map(|r| r.results).unwrap_or_default();
    assert!(r.iter().all(|p| p.tool_id != "git.commit"));
}

fn regex(
    pattern: &str,
    who: &Principal,
    limit: usize,
) -> Result<toolsearch::SearchToolsResponse, toolsearch::ProtocolError> {
    common::sample().search_tool_by_category(
        who,
        &SearchToolsRequest {
            query: pattern.into(),
            limit: Some(limit),
            match_mode: toolsearch::MatchMode::Regex,
            ..Default::default()
        },
    )
}

#[test]
fn regex_match_lists_every_tool_whose_id_or_name_matches_and_pages() {
    let engine = common::sample();
    let want: Vec<String> =
        engine.catalog().tools.iter().filter(|t| t.id.starts_with("git.")).map(|t| t.id.clone()).collect();
    assert!(want.len() > 3);
    let mut got = Vec::new();
    let mut req = SearchToolsRequest {
        query: r"^git\.".into(),
        limit: Some(3),
        match_mode: toolsearch::MatchMode::Regex,
        ..Default::default()
    };
    loop {
        let page = engine.search_tool_by_category(&Principal::trusted(), &req).expect("page");
        assert!(page.results.iter().all(|p| p.confidence == 1.0));
        got.extend(page.results.into_iter().map(|p| p.tool_id));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(got, want, "every match once, in catalogue order");
    // Case-insensitive, and names match as well as ids.
    let by_name = regex("RENAME_SYM", &Principal::trusted(), 10).unwrap();
    assert_eq!(by_name.results[0].tool_id, "refactor.rename_symbol");
    // A semantic cursor is not a regex cursor.
    let semantic = search(r"^git\.", None).unwrap();
    if let Some(c) = semantic.next_cursor {
        req.cursor = Some(c);
        assert_eq!(
            engine.search_tool_by_category(&Principal::trusted(), &req).unwrap_err().code,
            ErrorCode::InvalidCursor
        );
    }
}

#[test]
fn regex_match_refuses_a_bad_pattern_and_never_shows_hidden_tools() {
    let bad = regex("(unclosed", &Principal::trusted(), 10).unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidArgument);
    assert!(bad.message.contains("regular expression"), "{}", bad.message);
    let trusted = regex("^payments\\.", &Principal::trusted(), 50).unwrap();
    assert!(trusted.results.iter().any(|p| p.tool_id == "payments.create_charge"));
    let reader =
        regex("^payments\\.", &Principal::with_scopes(["payments:read"]), 50).map(|r| r.results).unwrap_or_default();
    assert!(reader.iter().all(|p| p.tool_id != "payments.create_charge" && p.tool_id != "payments.refund"));
    let none = regex("create_charge", &Principal::with_scopes(Vec::<String>::new()), 50).unwrap_err();
    assert_eq!(none.code, ErrorCode::NoMatchInCategory);
    assert!(none.message.contains("matches the pattern") && !none.message.contains("confidence"), "{}", none.message);
}
