//! The MCP revisions a gateway serves, driven by the official Python client in its
//! session-free 2026-07-28 mode and in its legacy (2025-11-25, `initialize`) mode, over
//! Streamable HTTP and stdio, against `server-everything`: `server/discover`, `resultType`
//! and cache hints, session-free disclosure (a stable `tools/list`; search, expand and call
//! answered as a session answers them), `subscriptions/listen`, completions, and lists in
//! an order a prompt cache keeps across sessions.

#[path = "common/mod.rs"]
mod common;

use common::gateway::{
    ask_session_free, client_mode_steps, client_steps, http_post, message, reference_server, step_json, HttpGateway,
};
use common::write_config;
use serde_json::{json, Value};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "legacy";

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    write_config(
        dir,
        &json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [reference_server("everything"), "stdio"],
                               "always_load": ["echo"]}
            },
            "toolsearch": {
                "tokens": {"token-demo": ["demo"], "token-other": ["demo"], "token-plain": []},
                "requires": {"everything": ["demo"]}
            }
        }),
    )
}

/// The same calls in every mode: what a session-free client and a session client are told.
fn steps() -> Value {
    json!([
        ["revision"],
        ["raw_tools"],
        ["search_tool_by_category", {"query": "add two numbers"}],
        ["expand_tool", {"tool_id": "everything.get-sum"}],
        ["raw_tools"],
        ["get-sum", {"a": 1, "b": 2}],
        ["call", "everything.get-sum", {"a": 3, "b": 4}],
        ["mcp__everything__echo", {"message": "spelled"}],
        ["complete", "prompt", "everything.completable-prompt", "department", "Eng", {}]
    ])
}

fn names(list: &Value) -> Vec<String> {
    list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// The answers that must not depend on the revision: search, expand, the two calls, the
/// spelled name and the completion.
fn answers(out: &[Value]) -> Vec<Value> {
    [2, 3, 5, 6, 7, 8].iter().map(|&i| json!([out[i]["is_error"], out[i]["text"]])).collect()
}

#[test]
fn a_session_free_client_and_a_session_client_get_the_same_answers_over_http_and_stdio() {
    let dir = common::scratch().join("gateway-revisions");
    let config = config(&dir);
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let stdio = format!("stdio:{}:{}", config.display(), dir.join("state-stdio").display());
    let mut seen = Vec::new();
    for (target, token) in [(gateway.url(), "token-demo"), (stdio, "-")] {
        let modern = client_mode_steps(MODERN, &target, token, &steps());
        let legacy = client_mode_steps(LEGACY, &target, token, &steps());
        assert_eq!(modern[0]["text"], MODERN, "{target}");
        assert_eq!(legacy[0]["text"], "2025-11-25", "{target}");

        // Session-free: every list is the same (the always-loaded tool and the discovery
        // tools), complete, with cache hints; expanding a tool does not move it.
        let (first, after) = (step_json(&modern[1]), step_json(&modern[4]));
        assert_eq!(first["resultType"], "complete", "{first}");
        assert_eq!(first["ttlMs"], 60000, "{first}");
        assert_eq!(first["cacheScope"], "private", "{first}");
        assert_eq!(
            names(&first),
            ["echo", "search_tool_by_category", "search_nodes", "list", "expand_tool", "call_tool"]
        );
        assert_eq!(first["tools"], after["tools"], "a session-free list never depends on earlier calls");
        assert_eq!(first["tools"][0]["_meta"]["anthropic/alwaysLoad"], true);
        // With a session, the expanded tool joins the list after the stable part.
        let (legacy_first, legacy_after) = (step_json(&legacy[1]), step_json(&legacy[4]));
        assert_eq!(legacy_first["tools"], first["tools"], "both start alike");
        assert_eq!(names(&legacy_after)[..6], names(&first)[..]);
        assert_eq!(names(&legacy_after)[6..], ["get-sum"]);

        // The same answers either way, the unrevealed tool's call by name included.
        assert_eq!(answers(&modern), answers(&legacy), "{target}");
        let found = step_json(&modern[2]);
        assert_eq!(found["results"][0]["tool_id"], "everything.get-sum", "{found}");
        assert_eq!(modern[5]["text"], "The sum of 1 and 2 is 3.");
        assert_eq!(modern[6]["text"], "The sum of 3 and 4 is 7.");
        assert!(modern[7]["text"].as_str().unwrap().contains("spelled"), "{}", modern[7]);
        assert_eq!(step_json(&modern[8])["completion"]["values"], json!(["Engineering"]), "{}", modern[8]);
        seen.push(answers(&modern));

        // A client that probes (`auto`) settles on the session-free revision.
        let auto = client_mode_steps("auto", &target, token, &json!([["revision"]]));
        assert_eq!(auto[0]["text"], MODERN, "{target}");
    }
    assert_eq!(seen[0], seen[1], "HTTP and stdio answer alike");

    // A session-free caller without the server's scope sees nothing of it: its requests
    // start from a tool set of its own, never from the other caller's.
    let plain = client_mode_steps(MODERN, &gateway.url(), "token-plain", &steps());
    assert_eq!(
        names(&step_json(&plain[1])),
        ["search_tool_by_category", "search_nodes", "list", "expand_tool", "call_tool"]
    );
    assert!(!plain[2]["text"].as_str().unwrap().contains("everything."), "{}", plain[2]);
    for i in [3, 5, 6, 7] {
        let text = plain[i]["text"].as_str().unwrap();
        assert!(plain[i]["is_error"].as_bool().unwrap() && !text.contains("sum of"), "{}", plain[i]);
    }
}

#[test]
fn a_listen_stream_carries_what_it_asked_for() {
    let dir = common::scratch().join("gateway-listen");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let watched = "toolsearch://everything/demo://resource/dynamic/text/1";
    let gzip = json!({"name": "listened.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"});
    let out = client_mode_steps(
        MODERN,
        &gateway.url(),
        "token-demo",
        &json!([[
            "listen",
            {"tools_list_changed": true, "resources_list_changed": true, "resource_subscriptions": [watched]},
            12,
            [
                ["call_tool", {"tool_id": "everything.toggle-subscriber-updates", "arguments": {}}],
                ["call_tool", {"tool_id": "everything.gzip-file-as-resource", "arguments": gzip}]
            ]
        ]]),
    );
    let got = step_json(&out[0]);
    assert_eq!(got["honored"]["resourceSubscriptions"], json!([watched]), "{got}");
    let events = got["events"].as_array().unwrap();
    assert!(events.contains(&json!(["ResourceUpdated", watched])), "the upstream's update, namespaced: {got}");
    assert!(events.contains(&json!(["ResourcesListChanged", null])), "the new resource: {got}");
    // Nothing a call does changes a session-free client's tools.
    assert!(!events.iter().any(|e| e[0] == "ToolsListChanged"), "{got}");
}

#[test]
fn discovery_and_the_protocol_checks_answer_as_the_revision_says() {
    let dir = common::scratch().join("gateway-discover");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let meta = |version: &str| {
        json!({"io.modelcontextprotocol/protocolVersion": version,
               "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}})
    };
    let auth = ("Authorization", "Bearer token-demo");
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta(MODERN)}});
    let (status, body) = http_post(
        &gateway.addr,
        &discover.to_string(),
        &[auth, ("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "server/discover")],
    );
    let answer = message(&body);
    assert_eq!(status, 200, "{body}");
    let versions = &answer["result"]["supportedVersions"];
    assert_eq!(versions, &json!(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN]), "{body}");
    assert!(answer["result"]["instructions"].as_str().unwrap().contains("search"), "{body}");
    assert_eq!(answer["result"]["cacheScope"], "private", "{body}");

    // A revision the gateway does not speak: -32022, naming those it does.
    let future = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta("2099-01-01")}});
    let (_, body) = http_post(
        &gateway.addr,
        &future.to_string(),
        &[auth, ("Mcp-Protocol-Version", "2099-01-01"), ("Mcp-Method", "tools/list")],
    );
    let answer = message(&body);
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert!(answer["error"]["data"]["supported"].as_array().unwrap().contains(&json!(MODERN)), "{answer}");

    // A header that contradicts the body is refused before anything runs.
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta(MODERN)}});
    let (status, body) = http_post(
        &gateway.addr,
        &list.to_string(),
        &[auth, ("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call")],
    );
    assert_eq!(status, 400, "{body}");

    // Without a token, nothing: a session-free request is checked like any other.
    let (status, _) = http_post(
        &gateway.addr,
        &discover.to_string(),
        &[("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "server/discover")],
    );
    assert_eq!(status, 401);
}

#[test]
fn sessions_that_reveal_the_same_tools_in_any_order_list_them_alike() {
    let dir = common::scratch().join("gateway-order");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let reveal = |ids: [&str; 3]| {
        let mut steps = vec![json!(["tools"])];
        for id in ids {
            steps.push(json!(["expand_tool", {"tool_id": id}]));
            steps.push(json!(["tools"]));
        }
        client_steps(&gateway.url(), "token-demo", &Value::Array(steps))
    };
    let list = |step: &Value| -> Vec<String> {
        step_json(step)["items"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let one = reveal(["everything.get-sum", "everything.get-env", "everything.get-tiny-image"]);
    let two = reveal(["everything.get-tiny-image", "everything.get-sum", "everything.get-env"]);
    assert_eq!(step_json(&one[6])["items"], step_json(&two[6])["items"], "the same tools, the same list");
    let start = list(&one[0]);
    assert_eq!(list(&one[6])[start.len()..], ["get-env", "get-sum", "get-tiny-image"]);
    // Each reveal leaves what came before the revealed part where it was.
    for out in [&one, &two] {
        for i in [2, 4, 6] {
            assert_eq!(list(&out[i])[..start.len()], start[..]);
        }
    }
}

#[test]
fn an_upstream_that_speaks_only_the_session_free_revision_is_reached() {
    let dir = common::scratch().join("gateway-modern-upstream");
    let config = write_config(
        &dir,
        &json!({"mcpServers": {
            "modern": {"command": common::python(), "args": [common::repo().join("tests/mcp/modern_server.py")]},
            "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]}
        }}),
    );
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    gateway.wait_for_status("ready", std::time::Duration::from_secs(30));
    let status = gateway.status.lock().unwrap().clone();
    assert!(
        !status.iter().any(|l| l.contains("modern") && l.contains("unavailable")),
        "never reported down: {status:?}"
    );
    for mode in [MODERN, LEGACY] {
        let out = client_mode_steps(
            mode,
            &gateway.url(),
            "-",
            &json!([
                ["search_tool_by_category", {"query": "weather forecast for tomorrow"}],
                ["call", "modern.forecast", {"city": "Oslo"}],
                ["forecast", {"city": "Bergen"}],
                ["call", "everything.get-sum", {"a": 2, "b": 2}],
                ["call", "modern.confirm", {"action": "deploy"}],
                ["client_prompt", "modern.greeting", {"who": "Grace"}],
                ["client_read", "toolsearch://modern/modern://motto"],
                ["call", "modern.greeting", {"who": "Alan"}]
            ]),
        );
        assert_eq!(step_json(&out[0])["results"][0]["tool_id"], "modern.forecast", "{mode}: {}", out[0]);
        // The upstream checks each request's `_meta` and quotes the revision it named.
        assert_eq!(out[1]["text"], "sunny in Oslo (2026-07-28)", "{mode}: {}", out[1]);
        assert_eq!(out[2]["text"], "sunny in Bergen (2026-07-28)", "{mode}: {}", out[2]);
        assert_eq!(out[3]["text"], "The sum of 2 and 2 is 4.", "{mode}: {}", out[3]);
        // Its own `input_required` round reaches the client that called, and the answer it.
        assert_eq!(out[4]["text"], "deploy: accept by Ada Lovelace", "{mode}: {}", out[4]);
        // So do those of a prompt and of a read, asked for directly or as a tool.
        let prompt = step_json(&out[5]);
        assert_eq!(prompt["messages"][0]["content"]["text"], "Hello Grace, from Ada Lovelace.", "{mode}: {prompt}");
        let read = step_json(&out[6]);
        assert_eq!(read["contents"][0]["text"], "Measure twice (Ada Lovelace).", "{mode}: {read}");
        assert_eq!(read["contents"][0]["uri"], "toolsearch://modern/modern://motto", "{mode}: {read}");
        assert!(out[7]["text"].as_str().unwrap().contains("Hello Alan, from Ada Lovelace."), "{mode}: {}", out[7]);
    }
}

/// #60 T4b: another caller's call open on the same (older-revision) upstream no longer gets a
/// question declined on its owner's behalf: the question waits for that call to finish, and
/// its owner is then asked.
#[test]
fn a_question_waits_for_another_callers_call_instead_of_being_declined() {
    let dir = common::scratch().join("gateway-asks-busy");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let url = gateway.url();
    let long = json!([["call", "everything.trigger-long-running-operation", {"duration": 6, "steps": 3}]]);
    let busy = std::thread::spawn(move || client_mode_steps(LEGACY, &url, "token-other", &long));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let asked = json!([["call", "everything.trigger-elicitation-request", {}], ["asked"]]);
    let out = client_mode_steps(LEGACY, &gateway.url(), "token-demo", &asked);
    assert!(out[0]["text"].as_str().unwrap().contains("Name: Ada Lovelace"), "{}", out[0]);
    let other = busy.join().unwrap();
    assert!(!other[0]["is_error"].as_bool().unwrap(), "{other:?}");
}

/// #60 T5: a session-free round belongs to the token that began it. Another token with the
/// same scopes that retries with its `requestState` is told the state is unknown, and the
/// owner's round is still there: its own retry gets the result.
#[test]
fn a_round_answers_only_the_token_that_began_it_and_survives_anothers_retry() {
    let dir = common::scratch().join("gateway-rounds-owner");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let call = |token: &str, extra: Value| ask_session_free(&gateway.addr, token, extra);
    let asked = call("token-demo", json!({}));
    let state = asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{asked}")).to_owned();
    let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Mallory", "check": true}}});
    let stolen = call("token-other", json!({"requestState": state, "inputResponses": answer}));
    let text = stolen["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("unknown or expired") && !text.contains("Mallory"), "{stolen}");
    let answer = json!({key: {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}});
    let owned = call("token-demo", json!({"requestState": state, "inputResponses": answer}));
    assert!(owned["result"]["content"].to_string().contains("Name: Ada Lovelace"), "{owned}");
}

#[test]
fn an_upstreams_questions_reach_the_client_whose_call_it_is() {
    let dir = common::scratch().join("gateway-asks");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let steps = json!([
        ["call", "everything.trigger-elicitation-request", {}],
        ["call", "everything.trigger-sampling-request", {"prompt": "hello", "maxTokens": 10}],
        ["asked"]
    ]);
    // A client with a session is asked through it; a session-free client in `input_required`
    // rounds of its call (answered by the SDK's client with the same callbacks). Either way
    // its answers reach the server.
    for mode in [LEGACY, MODERN] {
        let out = client_mode_steps(mode, &gateway.url(), "token-demo", &steps);
        assert!(out[0]["text"].as_str().unwrap().contains("Name: Ada Lovelace"), "{mode}: {}", out[0]);
        assert!(out[1]["text"].as_str().unwrap().contains("sampled by the test client"), "{mode}: {}", out[1]);
        let asked = step_json(&out[2]);
        assert_eq!(asked[0][0], "elicitation", "{mode}: {asked}");
        assert_eq!(asked[1], json!(["sampling", 1]), "{mode}: {asked}");
    }
    // A retry naming a round the gateway does not hold is answered as such.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let retry = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "call_tool", "arguments": {"tool_id": "everything.get-sum", "arguments": {"a": 1, "b": 1}},
                                  "requestState": "not-a-round", "inputResponses": {}, "_meta": meta}});
    let headers = [
        ("Authorization", "Bearer token-demo"),
        ("Mcp-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "call_tool"),
    ];
    let (_, body) = http_post(&gateway.addr, &retry.to_string(), &headers);
    let answer = message(&body);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("unknown or expired"), "{answer}");
    // So is a prompt's.
    let retry = json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
                       "params": {"name": "everything.simple-prompt", "requestState": "not-a-round",
                                  "inputResponses": {}, "_meta": meta}});
    let headers = [headers[0], headers[1], ("Mcp-Method", "prompts/get"), ("Mcp-Name", "everything.simple-prompt")];
    let (_, body) = http_post(&gateway.addr, &retry.to_string(), &headers);
    let answer = message(&body);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("unknown or expired"), "{answer}");
}

#[test]
fn upstream_log_messages_reach_the_clients_that_asked_for_them_and_may_see_the_server() {
    let dir = common::scratch().join("gateway-logs");
    let gateway = HttpGateway::start(&config(&dir), &dir.join("state"), &[]);
    let logs = |token: &str, steps: Value| {
        let out = client_mode_steps(LEGACY, &gateway.url(), token, &steps);
        let last = out.last().unwrap();
        assert_eq!(last["is_error"], false, "{out:?}");
        step_json(last).as_array().unwrap().clone()
    };
    // A client that set a level gets the server's messages, named as the server's; the
    // server sends one at once when its simulated logging starts, then one every 5 s.
    let seen = logs(
        "token-demo",
        json!([["set_level", "debug"], ["call", "everything.toggle-simulated-logging", {}], ["logs", 3]]),
    );
    assert!(!seen.is_empty(), "a message within 3 s");
    for m in &seen {
        assert_eq!(m[1], "everything", "{m}");
        // ("Debug-level message", .., "Alert level-message")
        assert!(m[2].as_str().unwrap().contains("level"), "{m}");
    }
    // One that may not see the server gets none of them, nor does one that set no level.
    assert_eq!(logs("token-plain", json!([["set_level", "debug"], ["logs", 6]])), Vec::<Value>::new());
    assert_eq!(logs("token-demo", json!([["logs", 6]])), Vec::<Value>::new());
    // A level keeps what is below it away.
    let rank = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
    let seen = logs("token-demo", json!([["set_level", "error"], ["logs", 11]]));
    for m in &seen {
        let level = rank.iter().position(|l| m[0] == *l).unwrap();
        assert!(level >= 4, "{m}");
    }
}

#[test]
fn an_upstream_that_floods_log_messages_is_cut_to_a_rate_and_the_gateway_keeps_answering() {
    let dir = common::scratch().join("gateway-logs-flood");
    let chatty = json!([common::repo().join("tests/mcp/hostile_server.py"), "chatty"]);
    let config = write_config(&dir, &json!({"mcpServers": {"chatty": {"command": common::python(), "args": chatty}}}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    // The server sends about 20,000 a second; at most 100 a second are passed on.
    let out = client_mode_steps(
        LEGACY,
        &gateway.url(),
        "-",
        &json!([["set_level", "debug"], ["logs", 3], ["search_tool_by_category", {"query": "say nothing"}]]),
    );
    let seen = step_json(&out[1]).as_array().unwrap().len();
    assert!((1..=400).contains(&seen), "{seen} messages in 3 s");
    assert!(step_json(&out[2])["results"][0]["tool_id"] == "chatty.quiet", "{}", out[2]);
}
