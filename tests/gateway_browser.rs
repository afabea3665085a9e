//! A web page in a real browser (headless Chromium) calling `toolsearch gateway --http` from
//! another origin, as a browser-based MCP client does: from an origin in `allowed_origins` it
//! opens a session with a bearer token and lists the tools (the preflight answered without a
//! token, `Mcp-Session-Id` readable); from any other origin, a loopback one included, the
//! browser gets nothing.

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::gateway::HttpGateway;
use common::{python, write_config};
use serde_json::{json, Value};

/// The page: initialize, the initialized notification, tools/list, each a `fetch` with the
/// token; what it saw, as JSON, in `#out` (or why it could not).
const PAGE: &str = r#"<!doctype html><html><body><pre id="out">pending</pre><script>
const out = document.getElementById("out");
async function rpc(session, message) {
  const headers = {"Authorization": "Bearer TOKEN", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"};
  if (session) headers["Mcp-Session-Id"] = session;
  const r = await fetch("GATEWAY", {method: "POST", headers, body: JSON.stringify(message)});
  return {status: r.status, session: r.headers.get("Mcp-Session-Id"), text: await r.text()};
}
(async () => {
  try {
    const init = await rpc(null, {jsonrpc: "2.0", id: 1, method: "initialize", params: {
      protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {name: "page", version: "1"}}});
    await rpc(init.session, {jsonrpc: "2.0", method: "notifications/initialized"});
    const list = await rpc(init.session, {jsonrpc: "2.0", id: 2, method: "tools/list"});
    out.textContent = JSON.stringify({init: init.status, session: init.session, list: list.status,
                                      tools: list.text});
  } catch (e) {
    out.textContent = JSON.stringify({blocked: String(e)});
  }
})();
</script></body></html>"#;

/// Serves `page` (as it is when asked) to every request on a loopback port, in a thread; the port.
fn serve_page(page: Arc<Mutex<String>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let page = page.lock().unwrap().clone();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                page.len()
            );
            let _ = (&stream).write_all(head.as_bytes()).and_then(|_| (&stream).write_all(page.as_bytes()));
        }
    });
    port
}

/// Headless Chromium at `url` (its names `app.example` and `evil.example` are 127.0.0.1), once
/// the page's script has run; what the page wrote.
fn browse(url: &str) -> Value {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg("--host-resolver-rules=MAP app.example 127.0.0.1, MAP evil.example 127.0.0.1")
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=30000", "--dump-dom", url])
        .output()
        .expect("chromium runs (scripts/test-deps installs it)");
    let dom = String::from_utf8_lossy(&out.stdout);
    let text = dom.split("<pre id=\"out\">").nth(1).and_then(|r| r.split("</pre>").next()).unwrap_or_default();
    let text = text.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("the page wrote {text:?}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_page_at_an_allowed_origin_calls_the_gateway_and_one_elsewhere_gets_nothing() {
    let dir = common::scratch().join("gw-browser");
    // The page's server first: the allowed origin names its port.
    let page = Arc::new(Mutex::new(String::new()));
    let page_port = serve_page(page.clone());
    let origin = format!("http://app.example:{page_port}");
    let rude = json!({"command": python(), "args": [common::repo().join("tests/mcp/rude_server.py"), "schemas"]});
    let settings = json!({"tokens": {"token-for-the-page": []}, "allowed_origins": [origin]});
    let config = write_config(&dir, &json!({"mcpServers": {"rude": rude}, "toolsearch": settings}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    *page.lock().unwrap() = PAGE.replace("GATEWAY", &gateway.url()).replace("TOKEN", "token-for-the-page");

    let seen = browse(&format!("http://app.example:{page_port}/"));
    assert_eq!((seen["init"].as_u64(), seen["list"].as_u64()), (Some(200), Some(200)), "{seen}");
    assert!(seen["session"].as_str().is_some_and(|s| !s.is_empty()), "the session id is readable: {seen}");
    assert!(seen["tools"].as_str().unwrap().contains("\"tools\""), "{seen}");

    // The same page from an origin not allowed: the browser is refused. So it is from a
    // loopback origin not listed: no local page calls a gateway that did not ask for it.
    for elsewhere in ["evil.example", "localhost"] {
        let seen = browse(&format!("http://{elsewhere}:{page_port}/"));
        assert!(seen["blocked"].as_str().is_some_and(|e| e.contains("Failed to fetch")), "{elsewhere}: {seen}");
    }
}
