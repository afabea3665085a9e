//! `toolsearch gateway --http` under a raw HTTP client that does what well-behaved clients do
//! not: another token on someone's session, malformed JSON-RPC and batches, odd `Authorization`
//! spellings, too many sessions, headers sent slowly; plus what an operator relies on (a
//! private state directory, secrets from the environment, responses not held back by Nagle).

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{python, write_config};
use serde_json::{json, Value};

struct Gateway {
    child: Child,
    addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a gateway over HTTP in front of the hand-written test server, with `settings`.
fn gateway(name: &str, settings: Value, env: &[(&str, &str)]) -> (Gateway, std::path::PathBuf) {
    let dir = common::scratch().join(name);
    let rude = json!({"command": python(), "args": [common::repo().join("tests/mcp/rude_server.py"), "schemas"]});
    let config = write_config(&dir, &json!({"mcpServers": {"rude": rude}, "toolsearch": settings}));
    let state = dir.join("state");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--config", config.to_str().unwrap(), "--http", "127.0.0.1:0"])
        .args(["--state", state.to_str().unwrap()])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the gateway printed its address").unwrap();
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.trim_end_matches("/mcp").to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (Gateway { child, addr }, state)
}

/// One HTTP response: status, headers (names lower-case), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message in the body (plain JSON, or the data of an SSE event).
    fn json(&self) -> Value {
        let text = self.body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|l| !l.is_empty());
        serde_json::from_str(text.unwrap_or(&self.body)).unwrap_or(Value::Null)
    }
}

/// Sends one request on `stream` and reads its whole response (Content-Length or chunked).
fn exchange(stream: &mut TcpStream, addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).unwrap();
    read_answer(stream)
}

fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v): &(String, String)| v.clone());
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(n) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body).unwrap();
    }
    Answer { status, headers, body: String::from_utf8_lossy(&body).into_owned() }
}

fn call(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    exchange(&mut s, addr, method, headers, body)
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// Opens a session with `auth` (an `Authorization` value); its id.
fn open_session(addr: &str, auth: &str) -> String {
    let a = call(addr, "POST", &[("Authorization", auth)], INIT);
    assert_eq!(a.status, 200, "{}", a.body);
    let id = a.header("mcp-session-id").expect("a session id").to_owned();
    let n = call(addr, "POST", &[("Authorization", auth), ("Mcp-Session-Id", &id)], INITIALIZED);
    assert!(n.status == 202 || n.status == 200, "{}", n.status);
    id
}

#[test]
fn a_session_answers_only_the_token_that_opened_it() {
    let (g, _) = gateway("gw-http-owner", json!({"tokens": {"token-a": [], "token-b": []}}), &[]);
    let addr = g.addr.as_str();
    // The scheme is case-insensitive (RFC 7235).
    let session = open_session(addr, "bearer token-a");
    let (a, b) = (
        [("Authorization", "Bearer token-a"), ("Mcp-Session-Id", session.as_str())],
        [("Authorization", "BEARER token-b"), ("Mcp-Session-Id", session.as_str())],
    );
    // Another valid token on that session: 404 for every kind of request, as if it did not exist.
    assert_eq!(call(addr, "POST", &b, LIST).status, 404);
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#;
    assert_eq!(call(addr, "POST", &b, cancel).status, 404);
    assert_eq!(call(addr, "DELETE", &b, "").status, 404);
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nAuthorization: Bearer token-b\r\nMcp-Session-Id: {session}\r\n\r\n"
    );
    stream.write_all(get.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head[9..12], b"404");
    // ...and as a session that never was: nothing in the answer tells the two apart.
    let made_up = [("Authorization", "Bearer token-b"), ("Mcp-Session-Id", "0190c5c5-0000-7000-8000-000000000000")];
    let shape = |x: Answer| {
        let headers: Vec<(String, String)> = x.headers.into_iter().filter(|(k, _)| k != "date").collect();
        (x.status, x.body, headers)
    };
    assert_eq!(shape(call(addr, "POST", &b, LIST)), shape(call(addr, "POST", &made_up, LIST)));
    // The owner's session is untouched, and its owner may end it.
    let listed = call(addr, "POST", &a, LIST);
    assert_eq!(listed.status, 200);
    assert!(listed.json()["result"]["tools"].is_array(), "{}", listed.body);
    // Closing a session answers as the official clients expect (200 or 204, never 202).
    assert_eq!(call(addr, "DELETE", &a, "").status, 200);
    assert_eq!(call(addr, "POST", &a, LIST).status, 404);
    // An unknown token is refused outright.
    assert_eq!(call(addr, "POST", &[("Authorization", "Bearer token-c")], INIT).status, 401);
}

#[test]
fn a_request_refused_before_its_body_is_read_closes_its_connection_and_says_so() {
    let (g, _) = gateway("gw-http-unread", json!({"tokens": {"token-for-the-unread-test": []}}), &[]);
    let addr = g.addr.as_str();
    // The headers, and the body not yet sent: the refusal comes first. The gateway cannot
    // read a next request on this connection, so it must tell the client (an OAuth client
    // retries at once with a fresh token, on the same connection if it may).
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer a-wrong-token-000000\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        INIT.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let a = read_answer(&mut stream);
    assert_eq!(a.status, 401);
    assert_eq!(a.header("connection"), Some("close"), "the client is not told to stop here");
    assert_eq!(stream.read(&mut [0u8; 64]).ok(), Some(0), "and the gateway closes it");
    // The same for the operations endpoints: a foreign Host is refused before a body is read.
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: rebound.example\r\nContent-Length: 5\r\n\r\n").unwrap();
    let a = read_answer(&mut stream);
    assert_eq!((a.status, a.header("connection")), (403, Some("close")));
    // A request whose body is read keeps its connection open, refused (a parse error) or not.
    let auth = "Bearer token-for-the-unread-test";
    let session = open_session(addr, auth);
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let a = exchange(&mut stream, addr, "POST", &[("Authorization", auth), ("Mcp-Session-Id", &session)], "{not json");
    assert_eq!((a.status, a.header("connection")), (400, None));
    for _ in 0..2 {
        let a = exchange(&mut stream, addr, "POST", &[("Authorization", auth), ("Mcp-Session-Id", &session)], LIST);
        assert_eq!((a.status, a.header("connection")), (200, None));
    }
}

#[test]
fn a_body_over_the_limit_is_413_and_one_declared_over_it_is_refused_before_it_is_sent() {
    let limits = json!({"limits": {"http": {"max_body_bytes": 2048, "read_timeout_secs": 30}}});
    let (g, _) = gateway("gw-http-body-limit", limits, &[]);
    let addr = g.addr.as_str();
    let session = open_session(addr, "");
    // Exactly the limit is accepted (a ping padded to 2,048 bytes).
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":""}}"#;
    let padded = ping.replace("\"pad\":\"\"", &format!("\"pad\":\"{}\"", "x".repeat(2048 - ping.len())));
    assert_eq!(padded.len(), 2048);
    let a = call(addr, "POST", &[("Mcp-Session-Id", &session)], &padded);
    assert_eq!((a.status, a.json()["id"].clone()), (200, json!(3)), "{}", a.body);
    // One byte more is refused from its declared length before its body is read, so the
    // connection is closed.
    let a = call(addr, "POST", &[("Mcp-Session-Id", &session)], &format!("{padded} "));
    assert_eq!((a.status, a.header("connection")), (413, Some("close")), "{}", a.body);
    assert!(a.body.contains("over the limit of 2048 bytes"), "{}", a.body);
    // Headers declaring the body's framing, then `body`; the answer.
    let send = |framing: &str, body: &str| {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n{framing}\r\n\r\n{body}"
        );
        stream.write_all(head.as_bytes()).unwrap();
        read_answer(&mut stream)
    };
    // A body declared at a megabyte is refused from its headers: no byte of it is sent, and
    // the answer comes at once, not after the 30 s read timeout.
    let started = Instant::now();
    let a = send("Content-Length: 1048576", "");
    assert_eq!((a.status, a.header("connection")), (413, Some("close")), "{}", a.body);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // A chunked body (no length declared) over the limit: read up to the limit, then refused.
    let a = send("Transfer-Encoding: chunked", &format!("c00\r\n{}\r\n", "y".repeat(3072)));
    assert_eq!((a.status, a.header("connection")), (413, Some("close")), "{}", a.body);
}

#[test]
fn an_idle_session_closes_after_session_idle_secs_and_frees_its_place() {
    let limits = json!({"limits": {"http": {"max_sessions": 2, "session_idle_secs": 2}}});
    let (g, _) = gateway("gw-http-idle", limits, &[]);
    let addr = g.addr.as_str();
    let busy = open_session(addr, "");
    let idle = open_session(addr, "");
    assert_eq!(call(addr, "POST", &[], INIT).status, 503, "two sessions fill the gateway");
    // One session asks something every half second for four seconds, the other says nothing.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        assert_eq!(call(addr, "POST", &[("Mcp-Session-Id", &busy)], LIST).status, 200);
        std::thread::sleep(Duration::from_millis(500));
    }
    // Idle means without a request, not old: the busy one is open, the idle one closed...
    assert_eq!(call(addr, "POST", &[("Mcp-Session-Id", &busy)], LIST).status, 200);
    assert_eq!(call(addr, "POST", &[("Mcp-Session-Id", &idle)], LIST).status, 404);
    // ...and its place is free for a new client.
    assert_eq!(call(addr, "POST", &[], INIT).status, 200);
}

#[test]
fn malformed_json_rpc_is_a_400_with_its_error_and_an_unknown_method_is_named() {
    let (g, _) = gateway("gw-http-malformed", json!({}), &[]);
    let addr = g.addr.as_str();
    let a = call(addr, "POST", &[], "{not json");
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error"]["code"], -32700, "{}", a.body);
    let a = call(addr, "POST", &[], &format!("[{INIT},{LIST}]"));
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error"]["code"], -32600, "{}", a.body);
    let a = call(addr, "POST", &[], r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#);
    assert_eq!((a.status, a.json()["error"]["code"].clone()), (400, json!(-32600)), "{}", a.body);
    let session = open_session(addr, "");
    let a = call(addr, "POST", &[("Mcp-Session-Id", &session)], r#"{"jsonrpc":"2.0","id":9,"method":"frobnicate"}"#);
    assert_eq!(a.json()["error"]["code"], -32601, "{}", a.body);
    assert_eq!(a.json()["error"]["message"], "method not found: frobnicate");
    assert_eq!(a.json()["id"], 9);
}

#[test]
fn sessions_are_bounded_and_slow_headers_are_cut_off() {
    let limits = json!({"limits": {"http": {"max_sessions": 3, "read_timeout_secs": 2}}});
    let (g, _) = gateway("gw-http-bounds", limits, &[]);
    let addr = g.addr.as_str();
    let sessions: Vec<String> = (0..3).map(|_| open_session(addr, "")).collect();
    let full = call(addr, "POST", &[], INIT);
    assert_eq!(full.status, 503);
    assert!(full.header("retry-after").is_some());
    assert!(call(addr, "DELETE", &[("Mcp-Session-Id", &sessions[0])], "").status < 300);
    assert_eq!(call(addr, "POST", &[], INIT).status, 200);
    // Half a request line, then silence: the connection is closed after the read timeout.
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n").unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let n = slow.read(&mut buf).unwrap_or(0);
    let closed = n == 0 || String::from_utf8_lossy(&buf[..n]).contains("408");
    assert!(closed && started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
}

#[test]
fn keep_alive_responses_are_not_held_back_and_state_and_secrets_stay_private() {
    let settings = json!({"tokens": {"${GW_TEST_TOKEN}": []}});
    let (g, state) = gateway("gw-http-ops", settings, &[("GW_TEST_TOKEN", "from-the-environment")]);
    let addr = g.addr.as_str();
    // The token comes from the environment; its `${...}` spelling is not a token.
    assert_eq!(call(addr, "POST", &[("Authorization", "Bearer ${GW_TEST_TOKEN}")], INIT).status, 401);
    let session = open_session(addr, "Bearer from-the-environment");
    // One keep-alive connection, many requests: each answered without the ~40 ms of Nagle's
    // algorithm meeting delayed ACKs (the median is compared with that, loosely).
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let headers = [("Authorization", "Bearer from-the-environment"), ("Mcp-Session-Id", session.as_str())];
    let mut times = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let a = exchange(&mut stream, addr, "POST", &headers, LIST);
        times.push(t.elapsed());
        assert_eq!(a.status, 200);
    }
    times.sort();
    eprintln!("keep-alive tools/list: median {:?}, max {:?}", times[10], times[20]);
    assert!(times[10] < Duration::from_millis(30), "median {:?}", times[10]);
    // Every file of the state is the user's alone.
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![state];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} is {:o}", p.display(), mode);
        seen += 1;
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    assert!(seen > 3);
}
