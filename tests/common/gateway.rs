//! A `toolsearch gateway` process serving Streamable HTTP, and the parts nobody here wrote
//! that drive it: the official Python MCP SDK client (`tests/mcp/client.py`) and the MCP
//! reference servers from npm (`scripts/test-deps` installs both under target/).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use super::ports::{free_port, wait_for_port};
use super::{python, repo};

/// An npm reference server's entry point (`everything`, `memory`).
pub fn reference_server(name: &str) -> PathBuf {
    let p = repo().join(format!("target/npm/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"));
    assert!(p.exists(), "{} is missing: run scripts/test-deps (scripts/test does)", p.display());
    p
}

/// A process killed (SIGKILL) when dropped: an upstream that goes away at once.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The npm reference `everything` server in `mode` (`sse`, `streamableHttp`) on loopback
/// `port`, once it listens.
pub fn everything_over(mode: &str, port: u16) -> Killed {
    let everything = Command::new("node")
        .args([reference_server("everything").to_str().unwrap(), mode])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let everything = Killed(everything);
    wait_for_port(port);
    everything
}

/// `tests/mcp/notes_server.py` serving Streamable HTTP on loopback `port` (`/mcp`), once it
/// listens.
pub fn notes_over_http(port: u16) -> Killed {
    let notes = Command::new(python())
        .arg(repo().join("tests/mcp/notes_server.py"))
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let notes = Killed(notes);
    wait_for_port(port);
    notes
}

/// A running HTTP gateway; ended with SIGTERM when dropped.
pub struct HttpGateway {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Every status line it wrote on stderr so far.
    pub status: Arc<Mutex<Vec<String>>>,
}

impl HttpGateway {
    /// Starts `toolsearch gateway --config CONFIG --http 127.0.0.1:0 --state STATE` with
    /// `extra` arguments, and waits for its address.
    pub fn start(config: &Path, state: &Path, extra: &[&str]) -> HttpGateway {
        HttpGateway::start_env(config, state, extra, &[])
    }

    /// [`HttpGateway::start`] with `env` added to the gateway's environment.
    pub fn start_env(config: &Path, state: &Path, extra: &[&str], env: &[(&str, &str)]) -> HttpGateway {
        HttpGateway::start_on("127.0.0.1:0", config, state, extra, env)
    }

    /// [`HttpGateway::start_env`] listening on `addr` (a config that names its own URL, as an
    /// OAuth resource does, needs the port before the gateway starts).
    pub fn start_on(addr: &str, config: &Path, state: &Path, extra: &[&str], env: &[(&str, &str)]) -> HttpGateway {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["gateway", "--config", config.to_str().unwrap(), "--http", addr])
            .args(["--state", state.to_str().unwrap()])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let status = Arc::new(Mutex::new(Vec::new()));
        let addr = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("the gateway ended before serving: {:?}", status.lock().unwrap());
            };
            status.lock().unwrap().push(line.clone());
            if let Some(rest) = line.split("http://").nth(1).filter(|_| line.contains("serving MCP")) {
                break rest.trim_end_matches("/mcp").trim_end_matches("/mcp\"}").to_owned();
            }
        };
        let seen = status.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                seen.lock().unwrap().push(line);
            }
        });
        HttpGateway { child, addr, status }
    }

    /// `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until a status line contains `text`; the line.
    pub fn wait_for_status(&self, text: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.status.lock().unwrap().iter().find(|l| l.contains(text)) {
                return l.clone();
            }
            assert!(Instant::now() < deadline, "no status line with {text:?}: {:?}", self.status.lock().unwrap());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits, at most `within`, until `n` status lines contain `text` (the `n`th config reload).
    pub fn wait_for_statuses(&self, text: &str, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.status.lock().unwrap().iter().filter(|l| l.contains(text)).count() < n {
            assert!(
                Instant::now() < deadline,
                "fewer than {n} status lines with {text:?}: {:?}",
                self.status.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `steps` (see `tests/mcp/client.py calls`) in one session of the official Python client
/// with bearer `token` ("-" for none); each step's `{text, is_error}`.
pub fn client_steps(url: &str, token: &str, steps: &Value) -> Vec<Value> {
    client_results(&["calls", url, token, &steps.to_string()])
}

/// Runs `gateway --build` on `config` into `state` (builds the index and exits); panics,
/// showing its stderr, when it fails.
pub fn gateway_build(config: &Path, state: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(["gateway", "--build", "--config", config.to_str().unwrap(), "--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "build failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `steps` through the official Python SDK's high-level `Client` in `mode` (`legacy`,
/// `auto`, `2026-07-28`) against `target` (a URL, or `stdio:CONFIG:STATE` to spawn the
/// gateway) with bearer `token` ("-" for none); see `tests/mcp/client.py client`.
pub fn client_mode_steps(mode: &str, target: &str, token: &str, steps: &Value) -> Vec<Value> {
    client_results(&["client", mode, target, token, &steps.to_string()])
}

/// Runs `tests/mcp/client.py ARGS`; the `results` it printed.
fn client_results(args: &[&str]) -> Vec<Value> {
    let out = Command::new(python())
        .arg(repo().join("tests/mcp/client.py"))
        .args(args)
        .env("TOOLSEARCH_BIN", env!("CARGO_BIN_EXE_toolsearch"))
        .output()
        .expect("python runs");
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("client prints JSON");
    v["results"].as_array().cloned().unwrap_or_default()
}

/// The JSON a successful `client_steps` step answered (its `text`, parsed); panics, showing
/// the step, when it was an error.
pub fn step_json(step: &Value) -> Value {
    assert!(!step["is_error"].as_bool().unwrap(), "{step}");
    serde_json::from_str(step["text"].as_str().unwrap()).unwrap()
}

/// A plain HTTP POST of `body` to `/mcp` on `addr` with `headers`: the status and the body.
pub fn http_post(addr: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::Read;
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    all.push(("Connection", "close"));
    let (first, mut s) = http_open(addr, "POST", body, &all, Duration::from_secs(5));
    let mut raw = first.into_bytes();
    // An initialize answered as a stream stays open: what came within the timeout is enough.
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned())
}

/// Sends one HTTP/1.1 request to `/mcp` on a fresh connection: what of the answer came in one
/// read (within `wait`), and the connection, for a caller that keeps a stream open unread.
pub fn http_open(
    addr: &str,
    method: &str,
    body: &str,
    headers: &[(&str, &str)],
    wait: Duration,
) -> (String, std::net::TcpStream) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(request_text(method, "/mcp", addr, body, headers).as_bytes()).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let mut got = vec![0u8; 4096];
    let n = s.read(&mut got).unwrap_or(0);
    (String::from_utf8_lossy(&got[..n]).into_owned(), s)
}

/// A plain HTTP GET of `path` on `addr` with `headers`: the status and the body.
pub fn http_get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let host = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("host")).map_or(addr, |(_, v)| *v);
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    // Small bodies only: undo chunked encoding if the server used it.
    let body = if text.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        body.to_owned()
    };
    (status, body)
}

/// The samples of an OpenMetrics endpoint, as the Prometheus client's parser reads them
/// (`tests/mcp/scrape.py`): `[name, labels, value]` each, and the content type.
pub fn scrape(url: &str, token: Option<&str>) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("tests/mcp/scrape.py")).arg(url);
    if let Some(t) = token {
        cmd.arg(t);
    }
    let out = cmd.output().expect("python runs");
    assert!(out.status.success(), "scrape failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("scrape prints JSON")
}

/// The value of the sample `name` whose labels include every pair of `labels`, if any.
pub fn sample(scraped: &Value, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scraped["samples"].as_array()?.iter().find_map(|s| {
        let fits = s[0] == name && labels.iter().all(|(k, v)| s[1][*k] == *v);
        fits.then(|| s[2].as_f64()).flatten()
    })
}

/// How many processes have `marker` in their command line.
pub fn running(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .count()
}

/// Waits up to `within` until `running(marker) == n`.
pub fn settles(marker: &str, n: usize, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if running(marker) == n {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    running(marker) == n
}

/// The JSON-RPC message in a raw HTTP answer body (chunked, or an SSE `data:` line).
pub fn message(body: &str) -> Value {
    let (start, end) = (body.find('{').unwrap_or(0), body.rfind('}').map_or(0, |e| e + 1));
    serde_json::from_str(&body[start..end]).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A raw session-free (2026-07-28) `call_tool` of `everything.trigger-elicitation-request`
/// at `addr` with bearer `token`, `extra` params merged in (`requestState`,
/// `inputResponses` for a retry): the JSON-RPC answer.
pub fn ask_session_free(addr: &str, token: &str, extra: Value) -> Value {
    let meta = serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let mut params = serde_json::json!({"name": "call_tool",
                            "arguments": {"tool_id": "everything.trigger-elicitation-request", "arguments": {}},
                            "_meta": meta});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "call_tool"),
    ];
    message(&http_post(addr, &body.to_string(), &headers).1)
}

/// One HTTP/1.1 request to `path` on `addr` from the local address `source` (any of 127/8 on
/// Linux, so one machine can be many clients): the status and the whole answer, headers too.
pub fn http_from(
    source: std::net::Ipv4Addr,
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    use std::io::{Read, Write};
    use std::os::fd::FromRawFd;
    let to: std::net::SocketAddrV4 = addr.parse().unwrap();
    let sockaddr = |a: std::net::SocketAddrV4| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, bound and connected with valid `sockaddr_in`s, owned by the stream.
    let mut s = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket");
        let local = sockaddr(std::net::SocketAddrV4::new(source, 0));
        assert_eq!(libc::bind(fd, std::ptr::addr_of!(local).cast(), len), 0, "bind {source}");
        let remote = sockaddr(to);
        assert_eq!(libc::connect(fd, std::ptr::addr_of!(remote).cast(), len), 0, "connect {addr}");
        std::net::TcpStream::from_raw_fd(fd)
    };
    let mut all = headers.to_vec();
    all.push(("Connection", "close"));
    s.write_all(request_text(method, path, addr, body, &all).as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut raw = Vec::new();
    // An initialize answered as a stream stays open: what came within the timeout is enough.
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    (text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0), text)
}

/// An HTTP/1.1 request with a JSON body, as the MCP endpoint takes one.
fn request_text(method: &str, path: &str, addr: &str, body: &str, headers: &[(&str, &str)]) -> String {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// The `_meta` of a raw session-free (2026-07-28) request.
fn session_free_meta() -> serde_json::Value {
    serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                       "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A raw session-free `call_tool` of `everything.echo` ("hi") at `addr` with bearer `token`:
/// the HTTP status and the body.
pub fn echo_session_free(addr: &str, token: &str) -> (u16, String) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                  "params": {"name": "call_tool",
                                             "arguments": {"tool_id": "everything.echo", "arguments": {"message": "hi"}},
                                             "_meta": session_free_meta()}});
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "call_tool"),
        ("Authorization", bearer.as_str()),
    ];
    http_post(addr, &body.to_string(), &headers)
}

/// Opens a raw session-free `subscriptions/listen` stream (tools/list_changed) at `addr` with
/// bearer `token` and `extra` headers, and keeps it open: the HTTP status, and the connection
/// (the stream lasts as long as it does).
pub fn listen_session_free(addr: &str, token: &str, extra: &[(&str, &str)]) -> (u16, std::net::TcpStream) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                                  "params": {"notifications": {"toolsListChanged": true}, "_meta": session_free_meta()}})
    .to_string();
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    headers.extend_from_slice(extra);
    let (head, s) = http_open(addr, "POST", &body, &headers, Duration::from_secs(5));
    (head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0), s)
}
