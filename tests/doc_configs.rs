//! Every config and manifest the documents show is read by the program as the page prints it:
//! a gateway config (or a fragment of one), `serve`'s config, a native manifest and a JSON
//! Lines record. A key renamed in the code, or a typo on the page, would otherwise hand a
//! newcomer a file the gateway refuses (every section refuses unknown fields).
//!
//! A gateway fragment is completed only with what it leaves out on purpose: a stub server when
//! it names none, and a Client ID Metadata Document URL when it has none, so that
//! `toolsearch gateway client-metadata --config FILE` (which reads the whole config and starts
//! and reaches nothing) can read it. Each `${VAR}` the fragment names is set. The configs a
//! page gives a client to start the gateway itself (an entry named `toolsearch`) are not the
//! gateway's: tests/client_entries.rs runs them, and tests/gateway_configs.rs covers how the
//! gateway reads such a file.

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

/// A JSON block of a page: where it is, and what it holds.
struct Block {
    place: String,
    text: String,
}

/// Every ```json block of the README and docs/*.md, but docs/protocol.md's requests and
/// answers (tests/protocol_page.rs runs those).
fn json_blocks() -> Vec<Block> {
    let mut found = Vec::new();
    for (name, text) in crate::docs::documents().into_iter().filter(|(name, _)| name != "docs/protocol.md") {
        for (fence, body) in crate::docs::json_fences(&text) {
            let line = text[..fence].lines().count() + 2;
            found.push(Block { place: format!("{name}:{line}"), text: body.to_owned() });
        }
    }
    found
}

fn run(args: &[&str], env: &[(String, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("binary runs")
}

/// The `${VAR}` names of a text, each with a value that passes as a token or secret.
fn variables(text: &str) -> Vec<(String, String)> {
    text.split("${")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|name| (name.to_owned(), format!("value-of-{name}-0123456789abcdef0123456789")))
        .collect()
}

/// A gateway config as the page shows it, completed as the module says; `None` for a
/// client's config that starts the gateway itself.
fn gateway_config(config: &Value) -> Option<Value> {
    let servers = config.get("mcpServers").or_else(|| config.get("servers"));
    if servers.and_then(|s| s.get("toolsearch")).is_some() {
        return None;
    }
    let mut config = config.clone();
    if servers.is_none() {
        config["mcpServers"] = json!({"stub": {"command": "true"}});
    }
    let auth = &mut config["toolsearch"]["auth"];
    if auth.get("client_metadata_url").is_none() {
        auth["client_metadata_url"] = json!("https://gateway.example/oauth/client-metadata.json");
    }
    Some(config)
}

fn failure(place: &str, what: &str, out: &Output) -> String {
    format!("{place}: {what} exits {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr).trim())
}

#[test]
fn every_config_and_manifest_the_documents_show_is_read_as_printed() {
    let dir = common::scratch().join("doc-configs");
    std::fs::create_dir_all(&dir).unwrap();
    let index = common::build(&common::sample_catalog(), "doc-configs-sample");
    let (mut wrong, mut read) = (Vec::new(), std::collections::BTreeMap::<&str, usize>::new());
    for (n, block) in json_blocks().into_iter().enumerate() {
        let Ok(value) = serde_json::from_str::<Value>(&block.text) else { continue };
        let Some(top) = value.as_object() else { continue };
        let file = |ext: &str, text: &str| -> String {
            let path = dir.join(format!("block-{n}.{ext}"));
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let place = block.place.as_str();
        if ["mcpServers", "servers", "toolsearch"].iter().any(|k| top.contains_key(*k)) {
            let Some(config) = gateway_config(&value) else { continue };
            let path = file("json", &serde_json::to_string_pretty(&config).unwrap());
            let out = run(&["gateway", "client-metadata", "--config", &path], &variables(&block.text));
            match serde_json::from_slice::<Value>(&out.stdout) {
                Ok(document) if out.status.success() && document["client_id"].is_string() => {
                    *read.entry("gateway").or_default() += 1
                }
                _ => wrong.push(failure(place, "a gateway config", &out)),
            }
        } else if top.contains_key("toolset") || top.contains_key("executor") {
            let path = file("json", &block.text);
            let out = run(&["serve", index.to_str().unwrap(), "--config", &path], &[]);
            if out.status.success() {
                *read.entry("serve").or_default() += 1
            } else {
                wrong.push(failure(place, "serve's config", &out))
            }
        } else if top.contains_key("tools") || (top.contains_key("id") && top.contains_key("name")) {
            let ext = if top.contains_key("tools") { "json" } else { "jsonl" };
            let path = file(ext, &block.text);
            let out_dir = dir.join(format!("index-{n}"));
            let out = run(&["index", &path, "--out", out_dir.to_str().unwrap()], &[]);
            if out.status.success() {
                *read.entry(ext).or_default() += 1
            } else {
                wrong.push(failure(place, "a manifest", &out))
            }
        }
    }
    assert!(wrong.is_empty(), "the documents show files the program refuses:\n{}", wrong.join("\n"));
    // What the pages hold today: gateway configs, serve's config, a manifest, a JSON Lines record.
    let at_least = [("gateway", 10), ("serve", 1), ("json", 1), ("jsonl", 1)];
    assert!(at_least.iter().all(|(kind, n)| read.get(kind).is_some_and(|r| r >= n)), "read {read:?}");
}

#[test]
fn a_page_config_with_a_misspelt_key_is_refused_naming_it() {
    let dir = common::scratch().join("doc-configs-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let page = json!({"toolsearch": {"rate_limits": {"calls_per_principle": {"per_minute": 5}}}});
    let path = dir.join("gateway.json");
    std::fs::write(&path, gateway_config(&page).unwrap().to_string()).unwrap();
    let out = run(&["gateway", "client-metadata", "--config", path.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("calls_per_principle"), "{err}");
    // serve's config names the field at fault too (it is read before the index is opened).
    let serve = dir.join("serve.json");
    std::fs::write(&serve, r#"{"toolset": {"discovery": {"mode": "general", "detail": "summary"}}}"#).unwrap();
    let out = run(&["serve", dir.join("no-index").to_str().unwrap(), "--config", serve.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("serve.json: toolset.discovery.detail: unknown variant `summary`") && err.contains("line 1"),
        "{err}"
    );
    assert_eq!(
        variables("{\"a\": \"${OPS_TOKEN}\", \"b\": \"${input:x}\"}"),
        [("OPS_TOKEN".to_owned(), "value-of-OPS_TOKEN-0123456789abcdef0123456789".to_owned())]
    );
    assert!(gateway_config(&json!({"mcpServers": {"toolsearch": {"command": "toolsearch"}}})).is_none());
}
