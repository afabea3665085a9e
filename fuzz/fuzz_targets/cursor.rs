//! Cursor decoding: an arbitrary cursor, or a genuine one with bytes changed, is either the
//! genuine cursor (and gives exactly its page) or is refused with `INVALID_CURSOR`.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use toolsearch_query::{ErrorCode, ListRequest, SearchToolsRequest};

fuzz_target!(|data: &[u8]| {
    let engine = common::engine();
    let Some((&mode, rest)) = data.split_first() else { return };
    let list = |cursor: Option<String>| {
        engine.list(&ListRequest { path: None, tags: vec![], query: None, limit: Some(3), cursor })
    };
    let search = |cursor: Option<String>| {
        engine.search_tool_by_category(&SearchToolsRequest {
            query: "create a pull request".into(),
            category_path: None,
            tags: vec![],
            limit: Some(2),
            cursor,
        })
    };
    let genuine_list = list(None).expect("first page").next_cursor.expect("more pages");
    let genuine_search = search(None).expect("first page").next_cursor.expect("more pages");
    let cursor = match mode % 3 {
        // Arbitrary text.
        0 => String::from_utf8_lossy(rest).into_owned(),
        // The genuine list cursor with bytes xored in.
        1 => xor(&genuine_list, rest),
        // The genuine search cursor with bytes xored in.
        _ => xor(&genuine_search, rest),
    };
    let list_answer = list(Some(cursor.clone()));
    let search_answer = search(Some(cursor.clone()));
    match list_answer {
        Ok(page) => {
            assert_eq!(cursor.trim(), genuine_list, "a forged cursor was accepted by list");
            assert_eq!(page, list(Some(genuine_list.clone())).expect("genuine page"));
        }
        Err(e) => common::check_error(&e, &[ErrorCode::InvalidCursor]),
    }
    match search_answer {
        Ok(_) => assert_eq!(cursor.trim(), genuine_search, "a forged cursor was accepted by search"),
        Err(e) => common::check_error(&e, &[ErrorCode::InvalidCursor]),
    }
});

fn xor(cursor: &str, noise: &[u8]) -> String {
    let mut bytes = cursor.as_bytes().to_vec();
    for (i, n) in noise.iter().enumerate() {
        if i < bytes.len() {
            bytes[i] ^= n;
        } else {
            bytes.push(*n);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
