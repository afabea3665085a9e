//! The files a newcomer already has work as they are: VS Code's `servers` with its `inputs`
//! and `${input:...}` forms (in JSON with comments and trailing commas, as VS Code writes it), a Claude Desktop file with its other keys, the docs' partial
//! `toolset` (which must leave `call_tool` on), and a file that lists the gateway itself for
//! its client (the entry skipped; no chain of gateways through any wrapper).

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::gateway::{client_mode_steps, reference_server, HttpGateway};
use serde_json::{json, Value};

/// The `toolsearch.toolset` of docs/gateway.md's example config, as the page prints it.
fn docs_toolset() -> Value {
    let page = std::fs::read_to_string(common::repo().join("docs/gateway.md")).unwrap();
    let config = page.split("```json\n").nth(1).and_then(|b| b.split("```").next()).expect("the example config");
    let config: Value = serde_json::from_str(config).expect("the example config is JSON");
    config["toolsearch"]["toolset"].clone()
}

#[test]
fn a_vs_code_file_with_inputs_and_the_docs_partial_toolset_serves_and_calls_by_every_name() {
    let dir = common::scratch().join("gateway-vscode");
    let vscode = dir.join(".vscode");
    std::fs::create_dir_all(&vscode).unwrap();
    let config = vscode.join("mcp.json");
    let file = json!({
        "inputs": [{"type": "promptString", "id": "greeting", "description": "A word", "password": true}],
        "servers": {
            "everything": {"type": "stdio", "command": "node", "args": [reference_server("everything"), "stdio"],
                           "env": {"GREETING": "${input:greeting}"}},
            "memory": {"type": "stdio", "command": "node", "args": [reference_server("memory")],
                       "env": {"MEMORY_FILE_PATH": "${workspaceFolder}/memory.jsonl"}}
        },
        "toolsearch": {"toolset": docs_toolset()}
    });
    // As VS Code writes it: JSON with comments and trailing commas.
    let pretty = serde_json::to_string_pretty(&file).unwrap();
    let (head, tail) = pretty.rsplit_once('}').unwrap();
    let jsonc = format!("{{\n  // this workspace's servers\n  /* \"url\": \"none\" */{},\n}}{tail}", &head[1..]);
    std::fs::write(&config, jsonc).unwrap();
    let gateway = HttpGateway::start_env(&config, &dir.join("state"), &[], &[("TOOLSEARCH_INPUT_GREETING", "hello")]);
    // The SDK's default client settles on the session-free revision: it calls by every name.
    let steps = json!([
        ["mcp__memory__read_graph", {}],
        ["memory.read_graph", {}],
        ["call", "memory.create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}],
        ["call", "everything.get-env", {}]
    ]);
    let out = client_mode_steps("auto", &gateway.url(), "-", &steps);
    for (i, step) in out.iter().enumerate() {
        assert!(!step["is_error"].as_bool().unwrap_or(true), "step {i}: {step}");
    }
    assert!(dir.join("memory.jsonl").is_file(), "${{workspaceFolder}} is the folder holding .vscode/");
    let env = out[3]["text"].as_str().unwrap();
    assert!(env.contains("GREETING") && env.contains("hello"), "the input reached the server: {env}");
    assert!(
        env.contains("TOOLSEARCH_GATEWAY_DEPTH") && env.contains("\"1\""),
        "children know a gateway started them: {env}"
    );
}

/// `toolsearch gateway --check` on `config`, with `env`: (success, stdout, stderr).
fn check(config: &std::path::Path, json: bool, env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsearch"));
    if json {
        cmd.arg("--json");
    }
    let out = cmd
        .args(["gateway", "--config", config.to_str().unwrap(), "--check"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_claude_desktop_file_with_its_other_keys_and_the_gateway_listed_in_it_checks_clean() {
    let dir = common::scratch().join("gateway-claude-desktop");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("claude_desktop_config.json");
    let bin = env!("CARGO_BIN_EXE_toolsearch");
    let file = json!({
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]},
            "toolsearch": {"command": bin, "args": ["gateway", "--config", config.to_str().unwrap()]}
        }
    });
    std::fs::write(&config, file.to_string()).unwrap();
    let (ok, out, err) = check(&config, false, &[]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("note: left alone: globalShortcut"), "{out}");
    assert!(out.contains("mcpServers.toolsearch: skipped: it starts this gateway itself"), "{out}");
    assert!(out.contains("everything: up"), "{out}");
    assert!(!out.contains("toolsearch: up"), "{out}");
    let (ok, out, _) = check(&config, true, &[]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(ok && report["notes"].as_array().unwrap().len() == 2, "{report}");
    assert_eq!(report["servers"].as_array().unwrap().len(), 1, "{report}");
}

#[test]
fn a_wrapped_gateway_on_its_own_file_stops_after_one_link_and_deeper_ones_refuse() {
    let dir = common::scratch().join("gateway-chain");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("mcp.json");
    let bin = env!("CARGO_BIN_EXE_toolsearch");
    // A wrapper the entry check cannot see through: only the depth marker stops the chain.
    let file = json!({"mcpServers": {
        "everything": {"command": "node", "args": [reference_server("everything"), "stdio"]},
        "wrapped": {"command": "sh", "args": ["-c", "exec \"$0\" gateway --config \"$1\" --state \"$2\"", bin,
                                               config.to_str().unwrap(), dir.join("inner-state").to_str().unwrap()]}
    }, "toolsearch": {"connect_timeout_secs": 60}});
    std::fs::write(&config, file.to_string()).unwrap();
    let started = Instant::now();
    let (ok, out, err) = check(&config, false, &[]);
    assert!(started.elapsed() < Duration::from_secs(90), "{:?}", started.elapsed());
    // One link: the gateway it started serves (in front of `everything`); that one's own
    // `wrapped` child, at depth 2, refused to start.
    assert!(ok && out.contains("wrapped: up") && out.contains("everything: up"), "{out}\n{err}");
    // The depth-2 child, respawned by the inner gateway's retries, may be refusing to start
    // right as the chain is ended: it exits by itself within a moment (one run in twelve
    // caught it), and none may stay.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = loop {
        let left = Command::new("pgrep").args(["-f", config.to_str().unwrap()]).output().unwrap();
        if left.stdout.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(left.stdout.is_empty(), "no gateway left running: {}", String::from_utf8_lossy(&left.stdout));

    let (ok, _, err) = check(&config, false, &[("TOOLSEARCH_GATEWAY_DEPTH", "2")]);
    assert!(!ok && err.contains("refused to start") && err.contains("TOOLSEARCH_GATEWAY_DEPTH=2"), "{err}");
}

#[test]
fn bad_vs_code_forms_and_settings_are_named() {
    let dir = common::scratch().join("gateway-vscode-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            json!({"servers": {"a": {"type": "stdio", "command": "x", "env": {"K": "${input:nope}"}}}}),
            "servers.a.env.K: no input \"nope\"",
        ),
        (
            json!({"inputs": [{"id": "k"}], "servers": {"a": {"command": "x", "env": {"K": "${input:k}"}}}}),
            "TOOLSEARCH_INPUT_K",
        ),
        (json!({"servers": {"a": {"type": "sse", "command": "x"}}}), "servers.a.type: \"sse\" does not fit the entry"),
        (json!({"servers": {"a": {"command": "x", "envFile": "/nonexistent/.env"}}}), "servers.a.envFile"),
        (json!({"mcpServers": {"a": {"command": "x"}}, "servers": {}}), "both mcpServers and servers"),
        (json!({"servers": {"a": {"command": "x", "nope": 1}}}), "servers.a.nope: unknown field `nope`"),
        (
            json!({"mcpServers": {"a": {"command": "x"}}, "toolsearch": {"toolset": {"discovery": {"limit": "5"}}}}),
            "toolsearch.toolset: discovery.limit",
        ),
        (
            json!({"mcpServers": {"a": {"command": "x"}}, "toolsearch": {"examples": {"b.tool": ["find it"]}}}),
            "toolsearch.examples.\"b.tool\": \"b\" is not a server of this config",
        ),
        (
            json!({"mcpServers": {"a": {"command": "x"}}, "toolsearch": {"examples": {"a.tool": [""]}}}),
            "toolsearch.examples.\"a.tool\"[0]: give a request as text",
        ),
        (
            json!({"mcpServers": {"a": {"command": "x"}}, "toolsearch": {"limits": {"list": {"page": 0}}}}),
            "toolsearch.limits.list.page: 0 would refuse everything it bounds; give at least 1",
        ),
    ];
    for (i, (file, want)) in cases.iter().enumerate() {
        let config = dir.join(format!("c{i}.json"));
        std::fs::write(&config, file.to_string()).unwrap();
        let (ok, out, err) = check(&config, false, &[]);
        assert!(!ok && err.contains(want) && err.contains(&format!("c{i}.json")), "case {i}: {out}\n{err}");
    }
}

#[test]
fn a_config_that_is_not_utf8_or_nests_too_deep_is_told_where() {
    let dir = common::scratch().join("gateway-config-bytes");
    std::fs::create_dir_all(&dir).unwrap();
    let deep = format!(
        "{{\"mcpServers\": {{\"a\": {{\"command\": \"x\", \"env\": {}1{}}}}}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let cases: [(&[u8], &str); 2] = [
        (
            b"{\"mcpServers\": {\n  \"a\": {\"command\": \"caf\xe9\"}}}",
            "is not UTF-8 text: byte 0xe9 at line 2, byte 24 of the line",
        ),
        (deep.as_bytes(), "nested more than 128 levels deep, the most read (flatten what nests here) at line 1"),
    ];
    for (i, (bytes, want)) in cases.iter().enumerate() {
        let config = dir.join(format!("c{i}.json"));
        std::fs::write(&config, bytes).unwrap();
        let (ok, out, err) = check(&config, false, &[]);
        assert!(!ok && err.contains(want) && err.contains(&format!("c{i}.json")), "case {i}: {out}\n{err}");
        if i > 0 {
            continue; // `serve` reads its config into its own fields: it meets no such depth.
        }
        // `serve --config` reads its bytes the same way.
        let serve = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["serve", "no-index", "--config", config.to_str().unwrap()])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&serve.stderr);
        assert!(!serve.status.success() && said.contains(want), "case {i}: {said}");
    }
}

/// `gateway --check` names an example whose tool the server does not offer.
#[test]
fn check_names_an_example_for_a_tool_the_server_does_not_offer() {
    let dir = common::scratch().join("gateway-search-check");
    let memory = json!({"command": "node", "args": [reference_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    let examples = json!({"memory.create_entities": ["save a new fact about someone"], "memory.remember": ["x"]});
    let config =
        common::write_config(&dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": {"examples": examples}}));
    let (_, out, err) = check(&config, false, &[]);
    let text = out + &err;
    assert!(text.contains(r#"toolsearch.examples."memory.remember": memory offers no such tool"#), "{text}");
    assert!(!text.contains("memory.create_entities\": memory offers no such tool"), "{text}");
}

/// A Cline or Roo Code file as it is: their names for the gateway's fields are read as those
/// (`transportType`, `disabledTools`, `timeout`), their own settings are left alone with a
/// note, and a misspelt field of the gateway's is still refused.
#[test]
fn a_cline_or_roo_code_file_checks_clean_and_a_tool_they_turned_off_stays_off() {
    let dir = common::scratch().join("gateway-cline");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("cline_mcp_settings.json");
    let memory = reference_server("memory");
    let entry = json!({
        "command": "node", "args": [memory], "transportType": "stdio", "disabled": false,
        "autoApprove": ["read_graph"], "alwaysAllow": [], "timeout": 300, "disabledTools": ["delete_entities"]
    });
    std::fs::write(&config, json!({"mcpServers": {"memory": entry}}).to_string()).unwrap();
    let (ok, out, err) = check(&config, true, &[]);
    assert!(ok, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["notes"],
        json!(["mcpServers.memory: `autoApprove`, `alwaysAllow`: another client's settings, left alone (approval \
                is your client's)"])
    );
    let server = &report["servers"][0];
    assert_eq!(server["filtered_out"], json!(["delete_entities"]), "{report}");
    let tools: Vec<&str> = server["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"read_graph") && !tools.contains(&"delete_entities"), "{tools:?}");
    // A field neither the gateway's nor a known client's is refused, by name.
    let mut typo = entry.clone();
    typo["trsut"] = json!("auto");
    std::fs::write(&config, json!({"mcpServers": {"memory": typo}}).to_string()).unwrap();
    let (ok, _, err) = check(&config, false, &[]);
    assert!(!ok && err.contains("mcpServers.memory.trsut: unknown field `trsut`"), "{err}");
}

/// Gemini CLI's `settings.json` as it is: its `$NAME` variables, `includeTools` and
/// `excludeTools`, boolean `trust`, `timeout` in milliseconds and `mcp.excluded` are read as
/// Gemini CLI reads them, and its Google credentials are refused with the header that sends
/// them instead.
#[test]
fn a_gemini_cli_settings_file_checks_clean_with_its_variables_tool_lists_and_excluded_servers() {
    let dir = common::scratch().join("gateway-gemini").join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("settings.json");
    let memory = reference_server("memory");
    let entry = json!({
        "command": "node", "args": ["$TOOLSEARCH_TEST_MEMORY_SERVER"], "trust": true, "timeout": 600000,
        "description": "a knowledge graph", "includeTools": ["read_graph", "search_*", "delete_entities"],
        "excludeTools": ["delete_entities"]
    });
    let file = |entry: &Value| {
        let broken = json!({"command": "/nonexistent/server"});
        json!({"theme": "Dracula", "mcp": {"excluded": ["broken"]}, "mcpServers": {"memory": entry, "broken": broken}})
    };
    std::fs::write(&config, file(&entry).to_string()).unwrap();
    let env = [("TOOLSEARCH_TEST_MEMORY_SERVER", memory.to_str().unwrap())];
    let (ok, out, err) = check(&config, true, &env);
    assert!(ok, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let notes: Vec<&str> = report["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(notes.contains(&"not started: broken (left out by `mcp.allowed` or `mcp.excluded`)"), "{notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("left alone: theme")), "{notes:?}");
    let own = "mcpServers.memory: `description`, `trust`: another client's settings, left alone";
    assert!(notes.iter().any(|n| n.starts_with(own)), "{notes:?}");
    let servers = report["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{report}");
    let tools: Vec<&str> = servers[0]["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(tools, ["read_graph", "search_nodes"], "{report}");
    assert!(servers[0]["filtered_out"].as_array().unwrap().contains(&json!("delete_entities")), "{report}");
    // Its `timeout` is in milliseconds (600000, its default, would be out of range as seconds):
    // one that is not is named in that unit.
    let mut odd = entry.clone();
    odd["timeout"] = json!(0.5);
    std::fs::write(&config, file(&odd).to_string()).unwrap();
    let (ok, _, err) = check(&config, false, &env);
    assert!(!ok && err.contains("mcpServers.memory.timeout: 0.5 is not a call timeout: use milliseconds"), "{err}");
    std::fs::write(&config, file(&entry).to_string()).unwrap();
    // Its `$NAME` is read: unset, it is named.
    let (ok, _, err) = check(&config, false, &[]);
    assert!(
        !ok && err.contains(
            "mcpServers.memory.args[0]: the environment variable \"TOOLSEARCH_TEST_MEMORY_SERVER\" is not set"
        ),
        "{err}"
    );
    // An error names a field as the file wrote it, in Gemini CLI's names.
    let hand = json!({"authorizationUrl": "https://as.example/authorize", "tokenUrl": "https://as.example/token"});
    for (entry, said) in [
        (json!({"httpUrl": "ftp://h/mcp"}), "mcpServers.memory.httpUrl: \"ftp://h/mcp\" is not an http(s) URL"),
        (
            json!({"httpUrl": "https://h/mcp", "oauth": hand}),
            "mcpServers.memory.oauth.tokenUrl: give oauth.clientId with it",
        ),
    ] {
        std::fs::write(&config, file(&entry).to_string()).unwrap();
        let (ok, _, err) = check(&config, false, &env);
        assert!(!ok && err.contains(said), "{err}");
    }
    // Google's own credentials are not read; the error says what to send instead.
    let mut google = entry.clone();
    google["authProviderType"] = json!("google_credentials");
    std::fs::write(&config, file(&google).to_string()).unwrap();
    let (ok, _, err) = check(&config, false, &env);
    assert!(!ok && err.contains("mcpServers.memory.authProviderType: \"google_credentials\""), "{err}");
    assert!(err.contains("\"print-access-token\"], \"prefix\": \"Bearer \""), "{err}");
}
