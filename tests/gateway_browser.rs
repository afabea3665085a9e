//! A web page in a real browser (headless Chromium) calling `toolsearch gateway --http` from
//! another origin, as a browser-based MCP client does: from an origin in `allowed_origins` it
//! opens a session with a bearer token and lists the tools (the preflight answered without a
//! token, `Mcp-Session-Id` readable); from any other origin, a loopback one included, the
//! browser gets nothing. And a page that signs its user in with OAuth: it finds the provider
//! through the gateway's challenge and metadata, sends its user to sign in at the provider's
//! own pages, redeems its code with PKCE at the provider's token endpoint and calls the gateway
//! with the token, every step in the one browser.

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::gateway::{free_port, HttpGateway};
use common::oauth::Idp;
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

/// Headless Chromium at `url` (its names `app.example` and `evil.example` are 127.0.0.1), in a
/// profile of its own, once the page's script has run; what the page wrote.
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

/// A single-page app signing its user in with OAuth 2.1. Without `?code=`: asks the gateway
/// without a token, follows the challenge's `resource_metadata` to the provider's metadata,
/// keeps a PKCE verifier and a state in local storage and writes the authorization address it
/// would send its user to. With `?code=`: checks the state, redeems the code at the token
/// endpoint (public client `spa`, the verifier, the resource) and calls the gateway's `list`
/// with the token.
const OAUTH_PAGE: &str = r#"<!doctype html><html><body><pre id="out">pending</pre><script>
const out = document.getElementById("out");
const done = (seen) => { out.textContent = JSON.stringify(seen); };
const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const INIT = {jsonrpc: "2.0", id: 1, method: "initialize", params: {
  protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {name: "spa", version: "1"}}};
async function rpc(token, session, message) {
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"};
  if (token) headers["Authorization"] = "Bearer " + token;
  if (session) headers["Mcp-Session-Id"] = session;
  const r = await fetch("GATEWAY", {method: "POST", headers, body: JSON.stringify(message)});
  return {status: r.status, session: r.headers.get("Mcp-Session-Id"),
          challenge: r.headers.get("WWW-Authenticate"), text: await r.text()};
}
(async () => {
  try {
    const here = new URL(location.href);
    if (!here.searchParams.has("code")) {
      const first = await rpc(null, null, INIT);
      const metadata = /resource_metadata="([^"]+)"/.exec(first.challenge || "")[1];
      const prm = await (await fetch(metadata)).json();
      const issuer = prm.authorization_servers[0];
      const as = await (await fetch(issuer + "/.well-known/oauth-authorization-server")).json();
      const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
      const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
      const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
      localStorage.setItem("login", JSON.stringify({verifier, state, token: as.token_endpoint, resource: prm.resource}));
      const q = new URLSearchParams({response_type: "code", client_id: "spa", redirect_uri: "REDIRECT",
        scope: prm.scopes_supported.join(" "), resource: prm.resource, state,
        code_challenge: b64url(new Uint8Array(digest)), code_challenge_method: "S256"});
      const authorize = as.authorization_endpoint + "?" + q;
      const link = Object.assign(document.createElement("a"), {id: "signin", href: authorize, textContent: "Sign in"});
      document.body.appendChild(link);
      done({status: first.status, metadata, issuer, authorize});
    } else {
      const saved = JSON.parse(localStorage.getItem("login"));
      if (here.searchParams.get("state") !== saved.state) return done({error: "state differs"});
      const r = await fetch(saved.token, {method: "POST", body: new URLSearchParams({
        grant_type: "authorization_code", code: here.searchParams.get("code"), redirect_uri: "REDIRECT",
        client_id: "spa", code_verifier: saved.verifier, resource: saved.resource})});
      const grant = await r.json();
      if (!grant.access_token) return done({token_status: r.status, grant});
      const init = await rpc(grant.access_token, null, INIT);
      await rpc(grant.access_token, init.session, {jsonrpc: "2.0", method: "notifications/initialized"});
      const list = await rpc(grant.access_token, init.session, {jsonrpc: "2.0", id: 2, method: "tools/call",
        params: {name: "list", arguments: {}}});
      done({token_status: r.status, scope: grant.scope, init: init.status, list: list.status, tools: list.text});
    }
  } catch (e) {
    done({blocked: String(e)});
  }
})();
</script></body></html>"#;

#[test]
fn a_page_signs_its_user_in_with_oauth_through_the_gateways_metadata_and_calls_it_with_the_token() {
    let dir = common::scratch().join("gw-browser-oauth");
    let page = Arc::new(Mutex::new(String::new()));
    let page_port = serve_page(page.clone());
    let origin = format!("http://127.0.0.1:{page_port}");
    let redirect = format!("{origin}/callback");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let idp = Idp::start_env(&resource, 300, &[("IDP_SPA_REDIRECT", &redirect)]);
    let rude = json!({"command": python(), "args": [common::repo().join("tests/mcp/rude_server.py"), "schemas"]});
    let oauth = json!({"resource": resource, "issuers": [{"issuer": idp.issuer}], "scopes_supported": ["memory"]});
    let settings = json!({"auth": {"oauth": oauth}, "requires": {"rude": ["memory"]}, "allowed_origins": [origin]});
    let config = write_config(&dir, &json!({"mcpServers": {"rude": rude}, "toolsearch": settings}));
    let gateway = HttpGateway::start_on(&format!("127.0.0.1:{port}"), &config, &dir.join("state"), &[], &[]);
    *page.lock().unwrap() = OAUTH_PAGE.replace("GATEWAY", &gateway.url()).replace("REDIRECT", &redirect);

    // All in one browser, as its user would: the page asks the gateway, is refused with a 401
    // whose challenge (its header exposed to the page) leads through the gateway's metadata to
    // the provider's, all read across origins; its user clicks "Sign in", signs in and consents
    // at the provider's own pages (top-level navigations: no CORS there) and is sent back to
    // the page, which redeems the code with the verifier only it kept and calls the gateway.
    let run = Command::new(python())
        .arg(common::repo().join("tests/oauth/chromium.py"))
        .args(["page", &format!("{origin}/"), "ada"])
        .output()
        .unwrap();
    let both: Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|_| panic!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr)));
    let (start, seen) = (&both["start"], &both["end"]);
    assert_eq!(start["status"], 401, "{both}");
    assert_eq!(start["issuer"], idp.issuer.as_str(), "{both}");
    let authorize = start["authorize"].as_str().unwrap_or_else(|| panic!("{both}"));
    assert!(authorize.starts_with(&format!("{}/auth?", idp.issuer)), "{authorize}");
    // The token's scope lets the page see the server.
    assert_eq!((seen["token_status"].as_u64(), seen["init"].as_u64()), (Some(200), Some(200)), "{both}");
    assert_eq!(seen["list"], 200, "{both}");
    assert!(seen["scope"].as_str().is_some_and(|s| s.split(' ').any(|s| s == "memory")), "{both}");
    let listed = common::gateway::message(seen["tools"].as_str().unwrap());
    let text = listed["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("rude"), "{listed}");
    drop(gateway);
}

/// A CORS preflight for `POST /mcp` from `origin` with `Host: host` to `addr`, as a browser sends
/// it (no token): the status and the whole head, names lower-cased.
fn preflight(addr: &str, origin: &str, host: &str) -> (u16, String) {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let ask = format!(
        "OPTIONS /mcp HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\n\
         Access-Control-Request-Headers: authorization, content-type\r\nConnection: close\r\n\r\n"
    );
    s.write_all(ask.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let head = raw.split("\r\n\r\n").next().unwrap_or_default().to_ascii_lowercase();
    (head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0), head)
}

#[test]
fn a_preflight_is_answered_only_for_a_listed_origin_at_a_host_the_gateway_answers_to() {
    let dir = common::scratch().join("gw-browser-preflight");
    let rude = json!({"command": python(), "args": [common::repo().join("tests/mcp/rude_server.py"), "schemas"]});
    let settings = json!({"tokens": {"a-token": []}, "allowed_origins": ["https://app.example"]});
    let config = write_config(&dir, &json!({"mcpServers": {"rude": rude}, "toolsearch": settings}));
    let gateway = HttpGateway::start(&config, &dir.join("state"), &[]);
    let addr = gateway.addr.clone();

    // Listed, at the gateway's own address: answered without a token, naming the origin.
    let (status, head) = preflight(&addr, "https://app.example", &addr);
    assert_eq!(status, 204, "{head}");
    assert!(head.contains("access-control-allow-origin: https://app.example\r\n"), "{head}");
    assert!(head.contains("access-control-allow-headers: authorization, content-type"), "{head}");
    assert!(head.contains("mcp-session-id") && head.contains("access-control-max-age: 600"), "{head}");
    // Listed, but through a name rebound to the gateway's address: refused, as every request is.
    let port = addr.rsplit(':').next().unwrap();
    let (status, head) = preflight(&addr, "https://app.example", &format!("rebound.example:{port}"));
    assert!(status == 403 && !head.contains("access-control-allow-origin"), "{head}");
    // Not listed (a loopback page included): no CORS header, so the browser sends nothing.
    for origin in ["https://evil.example", "http://localhost:3000"] {
        let (status, head) = preflight(&addr, origin, &addr);
        assert!(status != 204 && !head.contains("access-control-allow"), "{origin}: {head}");
    }
}
