//! Paging with cursors and the tags filter, on the sample catalogue.

#[path = "common/mod.rs"]
mod common;

use std::collections::HashSet;

use toolsearch::{ErrorCode, ListRequest, PathSpec, Principal, SearchToolsRequest};

fn search(
    query: &str,
    tags: &[&str],
    limit: usize,
    cursor: Option<String>,
) -> Result<toolsearch::SearchToolsResponse, toolsearch::ProtocolError> {
    common::sample().search_tool_by_category(
        &Principal::trusted(),
        &SearchToolsRequest {
            query: query.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            limit: Some(limit),
            cursor,
            ..Default::default()
        },
    )
}

#[test]
fn search_pages_never_repeat_or_skip_and_match_one_big_page() {
    let all = search("upload or download files in a storage bucket", &[], 50, None).unwrap();
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = search("upload or download files in a storage bucket", &[], 2, cursor).unwrap();
        assert!(page.results.len() <= 2);
        paged.extend(page.results.into_iter().map(|p| p.tool_id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let ids: Vec<String> = all.results.iter().map(|p| p.tool_id.clone()).collect();
    assert_eq!(paged.len(), paged.iter().collect::<HashSet<_>>().len(), "no repeats");
    assert_eq!(paged[..ids.len().min(paged.len())], ids[..ids.len().min(paged.len())], "same order as one page");
    assert!(paged.len() > 2, "more than one page");
}

#[test]
fn list_pages_walk_categories_then_tools() {
    let engine = common::sample();
    let req = |cursor| ListRequest {
        path: Some(PathSpec::Joined("Coding/Git".into())),
        limit: Some(3),
        cursor,
        ..Default::default()
    };
    let whole = engine
        .list(
            &Principal::trusted(),
            &ListRequest { path: Some(PathSpec::Joined("Coding/Git".into())), limit: Some(50), ..Default::default() },
        )
        .unwrap();
    let (mut nodes, mut tools, mut cursor) = (Vec::new(), Vec::new(), None);
    loop {
        let page = engine.list(&Principal::trusted(), &req(cursor)).unwrap();
        nodes.extend(page.nodes.into_iter().map(|n| n.path));
        tools.extend(page.tools.into_iter().map(|t| t.tool_id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(nodes, whole.nodes.iter().map(|n| n.path.clone()).collect::<Vec<_>>());
    assert_eq!(tools, whole.tools.iter().map(|t| t.tool_id.clone()).collect::<Vec<_>>());
}

#[test]
fn tampered_foreign_and_garbage_cursors_are_invalid() {
    let first = search("send a message", &[], 2, None).unwrap();
    let cursor = first.next_cursor.expect("a second page");
    let mut tampered = cursor.clone().into_bytes();
    tampered[3] = if tampered[3] == b'a' { b'b' } else { b'a' };
    for bad in [String::from_utf8(tampered).unwrap(), "not-a-cursor".into(), String::new()] {
        let e = search("send a message", &[], 2, Some(bad)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidCursor);
        assert!(!e.hints.is_empty());
    }
    let e = search("book a flight", &[], 2, Some(cursor.clone())).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidCursor);
    assert!(e.message.contains("another request"), "{}", e.message);
    // A cursor of another index (here: another build of the same catalogue) is refused.
    let other = common::open(&common::build(&common::sample_catalog(), "sample-rebuilt"));
    let e = other
        .search_tool_by_category(
            &Principal::trusted(),
            &SearchToolsRequest {
                query: "send a message".into(),
                limit: Some(2),
                cursor: Some(cursor),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidCursor);
}

#[test]
fn tags_filter_keeps_only_tools_with_every_tag() {
    let r = search("scan the code", &["security"], 50, None).unwrap();
    assert!(!r.results.is_empty());
    assert!(r.results.iter().all(|p| p.tags.iter().any(|t| t == "security")), "{:?}", r.results);
    let both = search("bucket access", &["S3", "security"], 50, None).unwrap();
    assert_eq!(both.results.iter().map(|p| p.tool_id.as_str()).collect::<Vec<_>>(), ["buckets.set_bucket_policy"]);
    let none = search("bucket access", &["no-such-tag"], 10, None).unwrap_err();
    assert_eq!(none.code, ErrorCode::NoMatchInCategory);
    assert!(none.message.contains("carries all the tags"), "{}", none.message);
    assert_eq!(none.next_action.unwrap().arguments["query"], "bucket access");
    // An empty tag (a trailing comma, a bare `!`) can match nothing: it is refused by name.
    for tags in [&["security", ""][..], &[" ! "]] {
        let e = search("scan the code", tags, 10, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{tags:?}");
        assert_eq!(e.message, format!("tags[{}] is empty", tags.len() - 1));
    }
    let e = common::sample()
        .list(&Principal::trusted(), &ListRequest { tags: vec!["".into()], ..Default::default() })
        .unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidArgument, "tags[0] is empty"));
}

#[test]
fn list_with_tags_counts_and_shows_only_matching_tools() {
    let r = common::sample()
        .list(&Principal::trusted(), &ListRequest { tags: vec!["slack".into()], limit: Some(50), ..Default::default() })
        .unwrap();
    assert_eq!(r.nodes.iter().map(|n| (n.path.as_str(), n.tool_count)).collect::<Vec<_>>(), [("Communication", 6)]);
}
