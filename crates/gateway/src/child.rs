//! An upstream MCP server as a child process over stdio, with every line it writes bounded.
//!
//! The SDK's stdio transport drops a line over its limit without a word, so a call whose answer
//! is too large waits out the call timeout and ends in a misleading `TIMEOUT`. Here the child's
//! stdout goes through a relay that reads one line at a time within a bound, never holding more;
//! a longer line is read through (not kept) while its top-level `id` is picked out, and in its
//! place the relay answers that request with a JSON-RPC error naming the limit, at once.

use std::future::Future;
use std::process::Stdio;
use std::time::Duration;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStderr, ChildStdin};

/// The JSON-RPC error code of an answer the relay replaced because it was over the limit (in
/// the range JSON-RPC leaves to implementations).
pub(crate) const TOO_LARGE_CODE: i32 = -32099;

/// How long a closing child has to exit after its stdin is closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The variables of the gateway's environment every stdio child gets, as the official SDKs
/// pass them (the Python SDK's `get_default_environment`, with locale, temp and time zone):
/// what a program needs to find its interpreter, home and locale, and nothing that holds a
/// credential. Everything else, the gateway's own `${VAR}` token secrets among it, stays out
/// unless the server's config asks for it (`inherit_env`).
#[cfg(unix)]
pub(crate) const INHERITED: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"];
/// The same on Windows (what programs there need to start at all).
#[cfg(not(unix))]
pub(crate) const INHERITED: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
    "COMSPEC",
    "WINDIR",
];

/// Sets `cmd`'s environment: the minimal inherited one, what `inherit` adds of the gateway's,
/// then the server's own `env` on top. The gateway's other variables are not passed.
pub(crate) fn set_env(
    cmd: &mut tokio::process::Command,
    inherit: &crate::config::InheritEnv,
    env: &std::collections::BTreeMap<String, String>,
) {
    use crate::config::InheritEnv;
    if *inherit != InheritEnv::All {
        cmd.env_clear();
        let extra: &[String] = match inherit {
            InheritEnv::Names(names) => names,
            _ => &[],
        };
        let names = INHERITED.iter().copied().chain(extra.iter().map(String::as_str));
        for name in names {
            // A shell function exported as a variable ("() { ...") is no value a child needs.
            if let Some(value) = std::env::var_os(name).filter(|v| !v.to_string_lossy().starts_with("()")) {
                cmd.env(name, value);
            }
        }
    }
    cmd.envs(env);
    // Last, so no entry's `env` can unset it (`crate::lineage`).
    cmd.env(crate::lineage::DEPTH_VAR, crate::lineage::child_depth());
}

/// A child process's stdio as an MCP client transport; the child is killed when it is dropped.
pub(crate) struct ChildTransport {
    inner: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
    child: Child,
}

impl ChildTransport {
    /// Spawns `cmd` with piped stdio; lines of its stdout over `max_line` bytes are answered
    /// with an error instead. Its stderr is returned for the caller to read.
    pub(crate) fn spawn(
        mut cmd: tokio::process::Command,
        max_line: usize,
    ) -> std::io::Result<(ChildTransport, Option<ChildStderr>)> {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        // Its own process group, so that stopping it ends what it started too (`npx` starts
        // node, a shell script its program).
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => return Err(std::io::Error::other("the child's stdio could not be piped")),
        };
        let stderr = child.stderr.take();
        // The relay writes whole lines; the transport reads them with no limit of its own.
        let (relay_in, relay_out) = tokio::io::duplex(64 * 1024);
        tokio::spawn(relay(stdout, relay_in, max_line));
        let inner = AsyncRwTransport::new_client(relay_out, stdin).with_max_line_length(usize::MAX);
        Ok((ChildTransport { inner, child }, stderr))
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    /// Closes its stdin (the MCP stdio shutdown), waits a moment for it to exit, then kills
    /// it; what it started in its process group is ended as well.
    async fn close(&mut self) -> Result<(), Self::Error> {
        let _ = self.inner.close().await;
        let group = self.child.id();
        if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_err() {
            signal_group(group, Signal::Term);
            if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_err() {
                self.child.kill().await?;
            }
        }
        signal_group(group, Signal::Kill);
        Ok(())
    }
}

impl Drop for ChildTransport {
    /// A transport dropped without being closed ends its child's whole process group.
    fn drop(&mut self) {
        signal_group(self.child.id(), Signal::Kill);
    }
}

/// A signal sent to a child's process group.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    /// Asks it to end.
    Term,
    /// Ends it.
    Kill,
}

/// Sends `signal` to the process group led by `leader` (the child's pid, which is its group's
/// id: it was started in a group of its own). Nothing when the child is already reaped; on
/// platforms without process groups, nothing (the child itself is killed when dropped).
pub(crate) fn signal_group(leader: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(pid) = leader.and_then(|p| libc::pid_t::try_from(p).ok()).filter(|&p| p > 1) {
        let sig = match signal {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is shared.
        unsafe {
            libc::kill(-pid, sig);
        }
    }
    #[cfg(not(unix))]
    let _ = (leader, signal);
}

/// Copies `from` to `to` a line at a time; a line over `max` bytes is replaced by an error
/// answer to the request it answered (or dropped, if it answered none). Ends with either side.
pub(crate) async fn relay(from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, max: usize) {
    let mut from = BufReader::with_capacity(64 * 1024, from);
    let mut line: Vec<u8> = Vec::new();
    let mut over: Option<(IdScanner, usize)> = None;
    loop {
        let chunk = match from.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(c) => c,
        };
        let (part, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..=i], true),
            None => (chunk, false),
        };
        let used = part.len();
        match &mut over {
            Some((scan, bytes)) => {
                scan.feed(part);
                *bytes += used;
            }
            None if line.len() + used > max => {
                let mut scan = IdScanner::default();
                scan.feed(&line);
                scan.feed(part);
                over = Some((scan, line.len() + used));
                line = Vec::new();
            }
            None => line.extend_from_slice(part),
        }
        from.consume(used);
        if !ends {
            continue;
        }
        let out = match over.take() {
            Some((scan, bytes)) => match scan.id {
                Some(id) => too_large_answer(&id, bytes, max),
                None => Vec::new(),
            },
            None => std::mem::take(&mut line),
        };
        if !out.is_empty() && (to.write_all(&out).await.is_err() || to.flush().await.is_err()) {
            return;
        }
    }
}

/// The error answer that stands in for a line of `bytes` bytes, over `max`.
fn too_large_answer(id: &str, bytes: usize, max: usize) -> Vec<u8> {
    let message =
        format!("the upstream's answer is {bytes} bytes, over the gateway's limit of {max} bytes for one message");
    let error = serde_json::json!({"code": TOO_LARGE_CODE, "message": message, "data": {"bytes": bytes, "limit": max}});
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes()
}

/// Picks the top-level `"id"` out of a JSON object streamed through it in pieces, holding only
/// a few bytes: the key being read and the id's value.
#[derive(Default)]
struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The last top-level string read (a key candidate), up to a few bytes.
    key: Vec<u8>,
    key_too_long: bool,
    /// Reading the value of the top-level `id`.
    in_id: bool,
    value: Vec<u8>,
    /// The id's value, as JSON text, once read.
    id: Option<String>,
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.step(b);
        }
    }

    fn step(&mut self, b: u8) {
        if self.in_id {
            let ends = !self.in_string && self.depth == 1 && matches!(b, b',' | b'}');
            if ends {
                self.in_id = false;
                let text = String::from_utf8_lossy(&self.value).trim().to_owned();
                let scalar =
                    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.is_string() || v.is_number());
                if scalar && self.id.is_none() {
                    self.id = Some(text);
                }
            } else if self.value.len() < 256 {
                self.value.push(b);
            }
        }
        if self.in_string {
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                (false, _) if self.depth == 1 && !self.in_id => {
                    if self.key.len() < 8 {
                        self.key.push(b);
                    } else {
                        self.key_too_long = true;
                    }
                }
                _ => {}
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && !self.in_id {
                    self.key.clear();
                    self.key_too_long = false;
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 && !self.in_id && self.key == b"id" && !self.key_too_long => {
                self.in_id = true;
                self.value.clear();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn relayed(input: &[u8], max: usize) -> String {
        let (mut w, r) = tokio::io::duplex(1 << 20);
        let mut out = Vec::new();
        let (_, copied) = tokio::join!(
            async {
                w.write_all(input).await.unwrap();
                drop(w);
            },
            async {
                let (sink_w, mut sink_r) = tokio::io::duplex(1 << 20);
                relay(r, sink_w, max).await;
                tokio::io::AsyncReadExt::read_to_end(&mut sink_r, &mut out).await.unwrap();
            }
        );
        let () = copied;
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn short_lines_pass_and_a_long_answer_becomes_an_error_for_its_request() {
        let big = "x".repeat(5000);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n\
             {{\"result\":{{\"content\":[{{\"id\":99,\"text\":\"{big}\"}}]}},\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"id\":5,\"data\":\"{big}\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{}}}}\n"
        );
        let out = relayed(input.as_bytes(), 1000).await;
        let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0]["id"], 1);
        // The nested "id": 99 is not the answer's id; the top-level one, after the result, is.
        assert_eq!(lines[1]["id"], "a\"b");
        assert_eq!(lines[1]["error"]["code"], TOO_LARGE_CODE);
        assert_eq!(lines[1]["error"]["data"]["limit"], 1000);
        assert!(lines[1]["error"]["data"]["bytes"].as_u64().unwrap() > 5000);
        // A notification over the limit answers nothing: it is dropped.
        assert_eq!(lines[2]["id"], 3);
    }

    #[tokio::test]
    async fn a_long_line_split_across_reads_is_still_bounded() {
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'y', 300_000));
        input.extend_from_slice(b"\"}\n");
        let out = relayed(&input, 1000).await;
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!((v["id"].as_u64(), v["error"]["code"].as_i64()), (Some(7), Some(TOO_LARGE_CODE as i64)));
    }
}
