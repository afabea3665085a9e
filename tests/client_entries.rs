//! The entries docs/gateway.md gives a client to start or reach the gateway work as printed:
//! the stdio entry for Claude Desktop and Cursor, the `claude mcp add` line for Claude Code,
//! and the Streamable HTTP entry for VS Code with the command that serves it. Each is run by
//! the official Python MCP SDK (`tests/mcp/client_entry.py`) with only the page's example
//! paths and port pointed at this machine: `toolsearch` is found on `PATH` as a client finds
//! it, the gateway fronts the memory reference server, and a search and a call go through.
//! The HTTP entry's token must be one the page's config declares. (The `uvx` entry is run by
//! scripts/test-uvx, from the wheels.)

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::gateway::{free_port, http_post, reference_server, Killed};
use common::{python, repo, scratch, write_config};
use serde_json::{json, Value};

/// Where the page's entries keep the gateway's config.
const PAGE_CONFIG: &str = "/home/me/.config/toolsearch/gateway.json";

fn page() -> String {
    std::fs::read_to_string(repo().join("docs/gateway.md")).expect("docs/gateway.md reads")
}

/// The page's ```json blocks, each with the text before it.
fn json_blocks(page: &str) -> Vec<(&str, Value)> {
    let parse = |body: &str| serde_json::from_str(body).unwrap_or_else(|e| panic!("a JSON block of the page: {e}"));
    crate::docs::json_fences(page).into_iter().map(|(fence, body)| (&page[..fence], parse(body))).collect()
}

/// The `toolsearch` entry of a client's config block, if it is one.
fn client_entry(block: &Value) -> Option<&Value> {
    block.get("mcpServers").or_else(|| block.get("servers"))?.get("toolsearch")
}

/// The last inline code span of `text` that starts with `prefix`.
fn last_code_span<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.split('`').skip(1).step_by(2).filter(|span| span.starts_with(prefix)).last()
}

/// Runs `entry` with the SDK's client, `toolsearch` first on `PATH`; panics with what it said
/// when it failed.
fn run_entry(what: &str, entry: &Value) -> String {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_toolsearch")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(python())
        .arg(repo().join("tests/mcp/client_entry.py"))
        .arg(entry.to_string())
        .env("PATH", path)
        .output()
        .expect("python runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "docs/gateway.md's {what} entry {entry} did not work: {said}");
    said
}

/// The page's path to the gateway's config, pointed at `config`.
fn localised(args: &[Value], config: &Path) -> Vec<Value> {
    args.iter().map(|a| if a == PAGE_CONFIG { json!(config) } else { a.clone() }).collect()
}

/// A gateway config fronting the memory reference server, with the tokens the page's config
/// declares.
fn config_in(dir: &Path, page_tokens: &Value) -> std::path::PathBuf {
    let memory = json!({"command": "node", "args": [reference_server("memory")],
                        "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}});
    write_config(dir, &json!({"mcpServers": {"memory": memory}, "toolsearch": {"tokens": page_tokens}}))
}

#[test]
fn the_client_entries_of_the_gateway_page_start_and_reach_the_gateway_as_printed() {
    let page = page();
    let blocks = json_blocks(&page);
    let tokens = blocks
        .iter()
        .find_map(|(_, b)| b.pointer("/toolsearch/tokens"))
        .expect("the page's config declares tokens")
        .clone();
    let dir = scratch().join("client-entries");
    let config = config_in(&dir, &tokens);

    // Claude Desktop and Cursor: the stdio entry whose command is `toolsearch`.
    let stdio: Vec<&Value> =
        blocks.iter().filter_map(|(_, b)| client_entry(b)).filter(|e| e["command"] == "toolsearch").collect();
    assert_eq!(stdio.len(), 1, "the page gives one stdio entry running `toolsearch`");
    let mut entry = stdio[0].clone();
    entry["args"] = json!(localised(entry["args"].as_array().unwrap(), &config));
    assert!(entry["args"].to_string().contains(config.to_str().unwrap()), "the entry names {PAGE_CONFIG}");
    let said = run_entry("stdio", &entry);
    assert!(said.contains("a search and a call went through"), "{said}");

    // Claude Code: `claude mcp add toolsearch -- COMMAND ARGS...` runs COMMAND ARGS over stdio.
    let line = last_code_span(&page, "claude mcp add toolsearch -- ").expect("the page gives a `claude mcp add` line");
    let words: Vec<Value> = line.split(" -- ").nth(1).unwrap().split_whitespace().map(|w| json!(w)).collect();
    let claude = json!({"command": words[0], "args": localised(&words[1..], &config)});
    run_entry("`claude mcp add`", &claude);

    // VS Code: the HTTP entry, with the gateway served by the command the page gives before it.
    let (before, vscode) = blocks
        .iter()
        .find_map(|(before, b)| client_entry(b).filter(|e| e["type"] == "http").map(|e| (*before, e.clone())))
        .expect("the page gives an HTTP entry");
    let serve = last_code_span(before, "toolsearch gateway ").expect("the page says how the HTTP gateway runs");
    let page_addr = serve.split_once("--http ").expect("the command serves HTTP").1.split_whitespace().next().unwrap();
    let page_url = vscode["url"].as_str().unwrap();
    assert_eq!(page_url, format!("http://{page_addr}/mcp"), "the entry's URL is where the page's command serves");
    let token = vscode["headers"]["Authorization"].as_str().unwrap().trim_start_matches("Bearer ");
    assert!(tokens.get(token).is_some(), "the entry's token {token:?} is not one the page's config declares: {tokens}");

    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let args: Vec<String> = serve.split_whitespace().skip(1).map(|w| w.replace(page_addr, &addr)).collect();
    let log = std::fs::File::create(dir.join("gateway.log")).unwrap();
    let gateway = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(&args)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let _gateway = Killed(gateway);
    common::gateway::wait_for_port(port);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    assert_eq!(http_post(&addr, init, &[]).0, 401, "the HTTP gateway refuses a client without the token");
    let mut local = vscode.clone();
    local["url"] = json!(page_url.replace(page_addr, &addr));
    run_entry("VS Code", &local);
}
