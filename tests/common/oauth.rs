//! A real identity provider for the OAuth tests: panva's `oidc-provider` from npm
//! (`tests/oauth/provider.mjs`, installed under target/oidc by `scripts/test-deps`), its
//! tokens got through its own token endpoint, and forged tokens (`tests/oauth/forge.mjs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::gateway::free_port;
use super::repo;

/// Where `scripts/test-deps` puts oidc-provider and jose.
fn modules() -> PathBuf {
    let m = repo().join("target/oidc/node_modules");
    assert!(m.join("oidc-provider").exists(), "{} is missing: run scripts/test-deps", m.display());
    m
}

/// A running oidc-provider on loopback; killed when dropped.
pub struct Idp {
    child: Child,
    /// Its issuer identifier, `http://127.0.0.1:PORT`.
    pub issuer: String,
    /// The file its private signing key (a JWK) is in.
    pub key_file: PathBuf,
    /// The resource (audience) its tokens are for by default.
    pub resource: String,
}

impl Idp {
    /// Starts a provider whose tokens are for `resource` and live `ttl` seconds.
    pub fn start(resource: &str, ttl: u64) -> Idp {
        Idp::start_env(resource, ttl, &[])
    }

    /// [`Idp::start`] with `env` (`IDP_REGISTRATION=closed`: registration needs an initial
    /// access token nobody has).
    pub fn start_env(resource: &str, ttl: u64, env: &[(&str, &str)]) -> Idp {
        let port = free_port();
        let key_file = super::scratch().join(format!("idp-{port}.jwk"));
        let mut node = Command::new("node");
        node.arg(repo().join("tests/oauth/provider.mjs"))
            .args([&port.to_string(), resource, key_file.to_str().unwrap(), &ttl.to_string()])
            .env("OIDC_MODULES", modules())
            .envs(env.iter().copied());
        let (child, ready) = spawn_ready(node, &format!("idp-{port}.log"), "provider");
        let issuer = ready["issuer"].as_str().unwrap().to_owned();
        Idp { child, issuer, key_file, resource: resource.to_owned() }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        self.issuer.trim_start_matches("http://")
    }

    /// The token endpoint's answer to a client-credentials grant of `client` (its secret is
    /// `CLIENT-secret`) for `scope` ("" for none) and `resource`.
    pub fn grant(&self, client: &str, scope: &str, resource: &str) -> (u16, Value) {
        let mut form = format!("grant_type=client_credentials&resource={}", encode(resource));
        if !scope.is_empty() {
            form.push_str(&format!("&scope={}", encode(scope)));
        }
        let basic = base64(&format!("{client}:{client}-secret"));
        let (status, body) = request(
            self.addr(),
            "POST",
            "/token",
            &[("Authorization", &format!("Basic {basic}")), ("Content-Type", "application/x-www-form-urlencoded")],
            &form,
        );
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// An access token for `client` with `scope`, for the provider's resource.
    pub fn token(&self, client: &str, scope: &str) -> String {
        let (status, answer) = self.grant(client, scope, &self.resource);
        assert_eq!(status, 200, "{answer}");
        answer["access_token"].as_str().unwrap().to_owned()
    }

    /// Forged tokens (`tests/oauth/forge.mjs`), by name, claiming this issuer and `audience`.
    pub fn forged(&self, audience: &str) -> Value {
        let out = Command::new("node")
            .arg(repo().join("tests/oauth/forge.mjs"))
            .args([self.key_file.to_str().unwrap(), &self.issuer, audience])
            .env("OIDC_MODULES", modules())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Spawns `node` (a script that prints one JSON line when it is ready), its stderr into the
/// scratch file `log`: the process and that line. Its stdout is kept read afterwards: a process
/// that writes to a closed pipe dies of EPIPE. `what` names it if it does not start.
pub(super) fn spawn_ready(mut node: Command, log: &str, what: &str) -> (Child, Value) {
    let mut child = node
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(super::scratch().join(log)).unwrap())
        .spawn()
        .expect("node runs");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let ready = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what} did not start: {e}: {line:?}"));
    (child, ready)
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const INIT: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

/// POSTs an MCP `initialize` to `addr`'s `/mcp` with bearer `token`: status, headers, body.
pub fn initialize(addr: &str, token: Option<&str>) -> (u16, Vec<(String, String)>, String) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    request_full(addr, "POST", "/mcp", &headers, INIT)
}

/// The value of header `name` (lower-case) in `headers`, or "".
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
}

/// Asserts that `addr` refuses `token` (test case `name`) with 401 `invalid_token`, saying
/// `why` in both body and challenge, and never echoes the token.
pub fn assert_invalid_token(addr: &str, name: &str, token: &str, why: &str) {
    let (status, headers, body) = initialize(addr, Some(token));
    let challenge = header(&headers, "www-authenticate");
    assert_eq!(status, 401, "{name}: {body}");
    assert!(body.contains(why) && challenge.contains(why), "{name}: {body} / {challenge}");
    assert!(challenge.starts_with("Bearer error=\"invalid_token\""), "{name}: {challenge}");
    assert!(!body.contains(token) && !challenge.contains(token), "{name}: the token is echoed");
}

/// One HTTP/1.1 request on a fresh connection: the status, the headers (lower-cased names)
/// and the body.
pub fn request_full(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// [`request_full`] without the headers.
pub fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, _, body) = request_full(addr, method, path, headers, body);
    (status, body)
}

/// Percent-encodes `s` for a form or a query (RFC 3986 unreserved characters kept).
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Standard base64, padded (HTTP Basic credentials).
fn base64(s: &str) -> String {
    encode64(s.as_bytes(), b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true)
}

/// Base64url without padding (a JWT's parts).
pub fn base64url(bytes: &[u8]) -> String {
    encode64(bytes, b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false)
}

fn encode64(bytes: &[u8], alphabet: &[u8], pad: bool) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// The protected server on a free port, its tokens from `idp`: the process and its URL.
pub fn protected(idp: &Idp, port: u16) -> (super::gateway::Killed, String) {
    protected_over(idp, port, "mcp")
}

/// [`protected`] over `transport`: `mcp` (Streamable HTTP at /mcp) or `sse` (MCP
/// 2024-11-05's HTTP+SSE at /sse).
pub fn protected_over(idp: &Idp, port: u16, transport: &str) -> (super::gateway::Killed, String) {
    let child = Command::new(super::python())
        .arg(super::repo().join("tests/oauth/protected_server.py"))
        .args([&port.to_string(), &idp.issuer, transport])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    super::gateway::wait_for_port(port);
    (super::gateway::Killed(child), format!("http://127.0.0.1:{port}/{transport}"))
}

/// Runs `toolsearch gateway login SERVER --no-browser` and opens the address it prints in the
/// person's browser, headless Chromium (`tests/oauth/chromium.py`), signing in as `login` at the
/// provider's own pages: the login's exit status and output, and the browser's last page
/// (`status`, `url`, `text`).
/// `tamper`: `Some("state")` or `Some("iss")` plays an attacker's forged redirect instead, one
/// that alters that parameter of the final redirect (`tests/oauth/forged_redirect.py`, an HTTP
/// agent that can rewrite a redirect as it follows it).
pub fn log_in(config: &Path, state: &Path, server: &str, login: &str, tamper: Option<&str>) -> (bool, String, Value) {
    log_in_with(config, state, server, login, tamper, "--no-browser")
}

/// [`log_in`] with `how` (`--no-browser` or `--device`).
pub fn log_in_with(
    config: &Path,
    state: &Path,
    server: &str,
    login: &str,
    tamper: Option<&str>,
    how: &str,
) -> (bool, String, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "login", server, how, "--config", config.to_str().unwrap()])
        .args(["--state", state.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let address = loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break None;
        }
        printed.push_str(&line);
        if line.starts_with("http") {
            break Some(line.trim().to_owned());
        }
    };
    let page = match &address {
        Some(address) => {
            let mut browser = Command::new(super::python());
            match tamper {
                None => browser.arg(super::repo().join("tests/oauth/chromium.py")).arg("address"),
                Some(what) => {
                    browser.arg(super::repo().join("tests/oauth/forged_redirect.py")).arg(format!("--tamper-{what}"))
                }
            };
            browser.args([address.as_str(), login]);
            let b = browser.output().unwrap();
            assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
            serde_json::from_slice(&b.stdout).unwrap()
        }
        None => Value::Null,
    };
    if page.get("error").is_some() {
        // The browser got stuck: the login would poll until its grant expires (minutes).
        let _ = child.kill();
    }
    // What it says after the address (its stdout was taken above), then its stderr.
    out.read_to_string(&mut printed).unwrap();
    let done = child.wait_with_output().unwrap();
    printed.push_str(&String::from_utf8_lossy(&done.stderr));
    (done.status.success(), printed, page)
}

/// An access token no server takes, put in a kept grant by [`spoil_access_token`].
const SPOILT: &str = "not-a-token-the-server-takes";

/// Replaces the access token of `server`'s grant kept under `state` with one no server takes,
/// so that the next call must refresh it.
pub fn spoil_access_token(state: &Path, server: &str) {
    let file = state.join(format!("oauth/{server}.grant.json"));
    let mut grant: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    grant["access_token"] = Value::from(SPOILT);
    std::fs::write(&file, grant.to_string()).unwrap();
}

/// Asserts that `server`'s grant kept under `state` was refreshed since [`spoil_access_token`].
pub fn assert_refreshed(state: &Path, server: &str) {
    let file = state.join(format!("oauth/{server}.grant.json"));
    let now: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_ne!(now["access_token"], Value::from(SPOILT), "not refreshed: {now}");
}
