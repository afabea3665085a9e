//! The discovery protocol end to end: sample manifest -> real index -> every answer and error.

#[path = "../common/mod.rs"]
mod common;
mod matching;

use serde_json::json;
use toolsearch::{
    Engine, EngineOptions, ErrorCode, ExpandToolRequest, ListRequest, PathSpec, Principal, SearchNodesRequest,
    SearchToolsRequest,
};

fn search(query: &str, path: Option<&str>) -> Result<toolsearch::SearchToolsResponse, toolsearch::ProtocolError> {
    common::sample().search_tool_by_category(
        &Principal::trusted(),
        &SearchToolsRequest {
            query: query.into(),
            category_path: path.map(|p| PathSpec::Joined(p.into())),
            limit: None,
            ..Default::default()
        },
    )
}

fn top_id(query: &str, path: Option<&str>) -> String {
    search(query, path).expect("answer").results[0].tool_id.clone()
}

#[test]
fn search_ranks_the_right_tool_first_for_plain_requests() {
    assert_eq!(top_id("rename a variable everywhere in my code", None), "refactor.rename_symbol");
    assert_eq!(top_id("roll back the last release of the api service", None), "deploy.rollback");
    assert_eq!(top_id("transcribe this meeting recording", None), "audio.transcribe");
    assert_eq!(top_id("convert 100 dollars to euros", None), "payments.convert_currency");
}

#[test]
fn search_results_carry_confidences_in_unit_range_sorted_best_first() {
    let r = search("upload a file to a bucket", None).unwrap();
    assert!(!r.results.is_empty() && r.results.len() <= 10);
    assert!(r.results.iter().all(|p| (0.0..=1.0).contains(&p.confidence)));
    assert!(r.results.windows(2).all(|w| w[0].confidence >= w[1].confidence));
    assert_eq!(r.results[0].tool_id, "buckets.upload_object");
}

#[test]
fn pointers_never_carry_a_schema() {
    let v = serde_json::to_value(search("send an email", None).unwrap()).unwrap();
    let p = &v["results"][0];
    assert_eq!(p.as_object().unwrap().keys().collect::<Vec<_>>(), ["confidence", "path", "summary", "tags", "tool_id"]);
}

#[test]
fn search_scoped_to_a_category_returns_only_tools_under_it() {
    let r = search("delete it", Some("Storage/Buckets")).unwrap();
    assert_eq!(r.category_path, "Storage/Buckets");
    assert!(r.results.iter().all(|p| p.path.starts_with("Storage/Buckets")), "{:?}", r.results);
    assert!(r.results.iter().any(|p| p.tool_id == "buckets.delete_object"));
}

#[test]
fn scope_accepts_segments_and_any_letter_case() {
    let engine = common::sample();
    let by_segments = engine
        .search_tool_by_category(
            &Principal::trusted(),
            &SearchToolsRequest {
                query: "list objects".into(),
                category_path: Some(PathSpec::Segments(vec!["Storage".into(), "Buckets".into()])),
                limit: Some(3),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(by_segments.category_path, "Storage/Buckets");
    assert_eq!(search("list objects", Some("storage/buckets")).unwrap().category_path, "Storage/Buckets");
}

#[test]
fn unknown_path_suggests_closest_category() {
    let e = search("upload a file", Some("Storage/Bukets")).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnknownPath);
    assert!(e.hints[0].contains("Storage/Buckets"), "{:?}", e.hints);
    let next = e.next_action.unwrap();
    assert_eq!((next.call.as_str(), &next.arguments), ("list", &json!({"path": "Storage/Buckets"})));
}

#[test]
fn no_match_in_category_names_the_category_where_the_query_matches() {
    let e = search("resize a photo to 200 pixels wide", Some("Finance")).unwrap_err();
    assert_eq!(e.code, ErrorCode::NoMatchInCategory);
    assert!(e.hints[0].contains("Media/Images"), "{:?}", e.hints);
    let next = e.next_action.unwrap();
    assert_eq!(next.call.as_str(), "search_tool_by_category");
    assert_eq!(next.arguments["category_path"], "Media/Images");
}

#[test]
fn every_spelling_of_a_tool_name_a_client_uses_finds_it_first() {
    for query in [
        "payments.create_charge",
        "PAYMENTS.CREATE_CHARGE",
        "create_charge",
        "payments__create_charge",
        "mcp__payments__create_charge",
        "mcp__toolsearch__payments.create_charge",
        "select:payments.create_charge",
    ] {
        let r = search(query, None).unwrap_or_else(|e| panic!("{query}: {e:?}"));
        assert_eq!(r.results[0].tool_id, "payments.create_charge", "{query}");
        assert!(r.results[0].confidence >= toolsearch::EXACT_CONFIDENCE, "{query}");
        assert!(r.answerable.unwrap() >= toolsearch::EXACT_CONFIDENCE, "{query}");
    }
    // `select:` takes several names, in the order given.
    let r = search("select:weather.forecast, payments.refund", None).unwrap();
    let first: Vec<&str> = r.results.iter().take(2).map(|p| p.tool_id.as_str()).collect();
    assert_eq!(first, ["weather.forecast", "payments.refund"]);
}

#[test]
fn a_request_that_fits_far_better_elsewhere_is_pointed_there_not_given_weak_guesses() {
    // "resize a photo" inside Finance: the category's best tools are weak guesses, but not
    // so weak on their own that no tool could fit; the whole catalogue has a clear answer.
    let e = search("resize a photo", Some("Finance")).unwrap_err();
    assert_eq!(e.code, ErrorCode::NoMatchInCategory);
    assert!(e.message.contains("elsewhere"), "{}", e.message);
    assert!(e.hints[0].contains("Media/Images"), "{:?}", e.hints);
    assert!(e.hints.iter().any(|h| h.starts_with("closest in scope: \"payments.")), "{:?}", e.hints);
    // Elsewhere means among the tools the caller may see: one without the GitHub scopes
    // learns nothing of the pull-request tools that a trusted caller is pointed to.
    let ask = |who: &Principal| {
        common::sample()
            .search_tool_by_category(
                who,
                &SearchToolsRequest {
                    query: "merge the pull request on GitHub".into(),
                    category_path: Some(PathSpec::Joined("Finance".into())),
                    ..Default::default()
                },
            )
            .map_err(|e| format!("{} {:?}", e.message, e.hints))
    };
    let trusted = ask(&Principal::trusted()).unwrap_err().to_lowercase();
    assert!(trusted.contains("elsewhere") && trusted.contains("github"), "{trusted}");
    let blind = format!("{:?}", ask(&Principal::with_scopes(["payments:read"]))).to_lowercase();
    assert!(!blind.contains("github") && !blind.contains("create_pull_request"), "{blind}");
}

#[test]
fn gibberish_gets_no_match_rather_than_weak_guesses() {
    let e = search("xqzv blorft wibble", None).unwrap_err();
    assert_eq!(e.code, ErrorCode::NoMatchInCategory);
    assert!(e.message.contains("answerable"), "{}", e.message);
    assert!(e.next_action.is_some());
    // The closest tools still come along, for a caller that wants to judge for itself.
    assert_eq!(e.hints.iter().filter(|h| h.starts_with("closest in scope")).count(), 3, "{:?}", e.hints);
}

#[test]
fn a_search_shows_every_result_near_the_best_and_says_how_answerable_it_is() {
    // Showing is not abstaining: the other weather tools are shown (ranked, with their low
    // confidences) although they are unlikely to be what was asked for; only results far
    // under the best one (a small share of its confidence) are left out.
    let r = search("forecast for Paris", Some("Weather")).unwrap();
    assert_eq!(r.results[0].tool_id, "weather.forecast");
    assert!(r.results.len() >= 3, "{:?}", r.results);
    assert!(r.results[1].confidence < 0.08, "shown although under the old cut-off: {:?}", r.results);
    let best = r.results[0].confidence;
    let cut = EngineOptions::default().relative_cut;
    assert!(r.results.iter().all(|p| p.confidence >= cut * best), "{:?}", r.results);
    let answerable = r.answerable.unwrap();
    assert!(answerable > EngineOptions::default().answerability.threshold, "{answerable}");
}

#[test]
fn an_explicit_min_confidence_replaces_the_default_rules() {
    let dir = common::build(&common::sample_catalog(), "explicit-floor");
    let floor = |min: f32| {
        let options = EngineOptions { min_confidence: Some(min), ..EngineOptions::default() };
        Engine::with_embedder(&dir, common::embedder(), options).unwrap()
    };
    let request = |q: &str| SearchToolsRequest { query: q.into(), limit: Some(50), ..Default::default() };
    // With a floor of 0 nothing is cut and gibberish gets its weak guesses, answerable low.
    let all = floor(0.0).search_tool_by_category(&Principal::trusted(), &request("xqzv blorft wibble")).unwrap();
    assert_eq!(all.results.len(), 50);
    assert!(all.answerable.unwrap() < EngineOptions::default().answerability.threshold);
    // A high floor shows only the sure results, and NO_MATCH names the floor.
    let sure = floor(0.5).search_tool_by_category(&Principal::trusted(), &request("forecast for Paris")).unwrap();
    assert_eq!(sure.results.iter().map(|p| p.tool_id.as_str()).collect::<Vec<_>>(), ["weather.forecast"]);
    let none = floor(0.999).search_tool_by_category(&Principal::trusted(), &request("forecast for Paris")).unwrap_err();
    assert!(
        none.message.contains("confidence >= 1.00") || none.message.contains("confidence >= 0.99"),
        "{}",
        none.message
    );
}

#[test]
fn expand_tool_returns_the_full_schema_and_usage_notes() {
    let r = common::sample()
        .expand_tool(&Principal::trusted(), &ExpandToolRequest { tool_id: "payments.create_charge".into() })
        .unwrap();
    assert_eq!(r.path, "Finance/Payments");
    assert_eq!(r.args_schema["required"], json!(["customer_id", "amount_cents", "currency"]));
    assert_eq!(r.args_schema["properties"]["currency"]["pattern"], "^[A-Z]{3}$");
    assert!(r.usage_notes.unwrap().contains("cents"));
}

#[test]
fn tool_not_found_suggests_similar_ids() {
    let e = common::sample()
        .expand_tool(&Principal::trusted(), &ExpandToolRequest { tool_id: "payments.create_charg".into() })
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    assert!(e.hints[0].contains("payments.create_charge"), "{:?}", e.hints);
    assert_eq!(e.next_action.unwrap().arguments, json!({"tool_id": "payments.create_charge"}));
}

#[test]
fn list_root_shows_top_level_categories_with_counts() {
    let r =
        common::sample().list(&Principal::trusted(), &ListRequest { limit: Some(50), ..Default::default() }).unwrap();
    assert_eq!(r.path, "");
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    assert!(names.contains(&"Coding") && names.contains(&"Weather"), "{names:?}");
    let weather = r.nodes.iter().find(|n| n.name == "Weather").unwrap();
    assert_eq!(weather.tool_count, 4);
    assert!(r.tools.is_empty());
}

#[test]
fn list_at_a_leaf_shows_its_tools_and_honours_limit() {
    let r = common::sample()
        .list(
            &Principal::trusted(),
            &ListRequest { path: Some(PathSpec::Joined("Weather".into())), limit: Some(3), ..Default::default() },
        )
        .unwrap();
    assert!(r.nodes.is_empty());
    assert_eq!(r.tools.len(), 3);
    assert!(r.tools.iter().all(|p| p.path == "Weather" && p.confidence == 1.0));
}

#[test]
fn list_with_query_keeps_children_that_match_directly_or_through_their_tools() {
    let r = common::sample()
        .list(
            &Principal::trusted(),
            &ListRequest {
                path: Some(PathSpec::Joined("Storage".into())),
                query: Some("upload a file to a bucket".into()),
                limit: None,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(r.nodes[0].path, "Storage/Buckets");
    assert!(!r.nodes.iter().any(|n| n.path == "Storage/Databases"), "{:?}", r.nodes);
}

#[test]
fn a_tool_under_two_paths_is_found_from_each_with_the_path_it_matched_through() {
    let from_storage = search("who may read this bucket policy", Some("Storage")).unwrap();
    let p = from_storage.results.iter().find(|p| p.tool_id == "buckets.set_bucket_policy").unwrap();
    assert_eq!(p.path, "Storage/Buckets");
    let from_users = search("who may read this bucket policy", Some("User/Permissions")).unwrap();
    let p = from_users.results.iter().find(|p| p.tool_id == "buckets.set_bucket_policy").unwrap();
    assert_eq!(p.path, "User/Permissions");
    let everywhere = search("set bucket policy", None).unwrap();
    assert_eq!(everywhere.results.iter().filter(|p| p.tool_id == "buckets.set_bucket_policy").count(), 1);
}

#[test]
fn search_nodes_ranks_the_relevant_category_first() {
    let r = common::sample()
        .search_nodes(
            &Principal::trusted(),
            &SearchNodesRequest { query: "page the on-call engineer".into(), limit: Some(3) },
        )
        .unwrap();
    assert_eq!(r.results[0].path, "Ops/Incidents");
    assert!(r.results.iter().all(|n| (0.0..=1.0).contains(&n.confidence)));
}

#[test]
fn bad_requests_are_invalid_arguments() {
    assert_eq!(search("   ", None).unwrap_err().code, ErrorCode::InvalidArgument);
    let engine = common::sample();
    for limit in [0, 51] {
        let e = engine.search_tool_by_category(
            &Principal::trusted(),
            &SearchToolsRequest { query: "x".into(), category_path: None, limit: Some(limit), ..Default::default() },
        );
        assert_eq!(e.unwrap_err().code, ErrorCode::InvalidArgument);
    }
    let e =
        engine.handle(&Principal::trusted(), "search_tool_by_category", json!({"query": "x", "bogus": 1})).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(engine.handle(&Principal::trusted(), "nope", json!({})).unwrap_err().code, ErrorCode::InvalidArgument);
}

#[test]
fn a_ten_thousand_character_query_is_answered() {
    let long = "upload a file to a storage bucket ".repeat(300);
    assert_eq!(top_id(&long, None), "buckets.upload_object");
}

#[test]
fn json_dispatch_answers_in_protocol_shapes() {
    let v = common::sample()
        .handle(
            &Principal::trusted(),
            "search_tool_by_category",
            json!({"query": "forecast for Paris", "category_path": "Weather", "limit": 2}),
        )
        .unwrap();
    assert_eq!(v["category_path"], "Weather");
    assert_eq!(v["results"][0]["tool_id"], "weather.forecast");
    assert!(v["answerable"].as_f64().is_some_and(|a| a > 0.5), "{v}");
    assert!(v["next_cursor"].is_string(), "the other weather tools are a page away: {v}");
    let v =
        common::sample().handle(&Principal::trusted(), "expand_tool", json!({"tool_id": "weather.forecast"})).unwrap();
    assert_eq!(v["args_schema"]["properties"]["days"]["maximum"], 14);
}

#[test]
fn engine_is_send_and_sync_and_answers_from_many_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    let engine = common::sample();
    std::thread::scope(|s| {
        for q in ["send an email", "resize an image", "book a flight", "run the tests"] {
            s.spawn(move || {
                let first = engine
                    .search_tool_by_category(
                        &Principal::trusted(),
                        &SearchToolsRequest { query: q.into(), ..Default::default() },
                    )
                    .unwrap();
                for _ in 0..5 {
                    let again = engine
                        .search_tool_by_category(
                            &Principal::trusted(),
                            &SearchToolsRequest { query: q.into(), ..Default::default() },
                        )
                        .unwrap();
                    assert_eq!(again, first);
                }
            });
        }
    });
}

#[test]
fn sixteen_threads_share_one_engine_and_get_the_single_threaded_answers() {
    let engine = common::sample();
    let calls: Vec<(&str, serde_json::Value)> = vec![
        ("search_tool_by_category", json!({"query": "send an email", "limit": 3})),
        ("search_tool_by_category", json!({"query": "delete it", "category_path": "Storage"})),
        ("search_tool_by_category", json!({"query": "security scan", "tags": ["security"]})),
        ("search_nodes", json!({"query": "charts", "limit": 5})),
        ("list", json!({"path": "Coding/Git", "limit": 4})),
        ("list", json!({"path": "Storage", "query": "upload a file"})),
        ("expand_tool", json!({"tool_id": "maps.directions"})),
        ("expand_tool", json!({"tool_id": "maps.direction"})),
    ];
    let expected: Vec<String> =
        calls.iter().map(|(c, a)| format!("{:?}", engine.handle(&Principal::trusted(), c, a.clone()))).collect();
    engine.clear_query_cache();
    std::thread::scope(|s| {
        for t in 0..16 {
            let (calls, expected) = (&calls, &expected);
            s.spawn(move || {
                for round in 0..6 {
                    let i = (t + round) % calls.len();
                    let got = format!("{:?}", engine.handle(&Principal::trusted(), calls[i].0, calls[i].1.clone()));
                    assert_eq!(got, expected[i], "thread {t} call {i}");
                }
            });
        }
    });
}
