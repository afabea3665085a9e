//! MCP over stdio: newline-delimited JSON-RPC, one client, through the official SDK.
//!
//! A filter stands in front of the SDK so that what reaches it is well-formed, and so that
//! what JSON-RPC 2.0 and MCP require of the envelope holds whatever the SDK does with bad
//! input: a line over [`MAX_MESSAGE_BYTES`], or not UTF-8, or not JSON, gets an error and the
//! session goes on; `jsonrpc` must be `"2.0"`; an id is a string or a 64-bit integer (others
//! are answered with a null id, never echoed); `method` must be a string; before `initialize`
//! only `ping`, `server/discover` and requests that carry their revision in `_meta` (the
//! session-free 2026-07-28) are answered. Memory per message stays bounded.

use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::config::ServeError;
use crate::hub::Hub;
use crate::session::Session;

/// Longest message the server reads; a longer line is refused without being kept in memory.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The `_meta` key of a request's protocol revision (2026-07-28 and later).
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Requests passed to the SDK and not answered yet: at the end of input the session waits for
/// them (up to [`DRAIN_LIMIT`]), so a client that writes its requests and closes its end still
/// gets every answer.
#[derive(Default)]
struct Outstanding {
    count: AtomicI64,
    done: tokio::sync::Notify,
}

/// Longest wait for unanswered requests at the end of input.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

/// The process's stdin and stdout as async streams. When they are pipes (as an MCP client
/// that starts a server makes them), they are read and written in the reactor like sockets;
/// otherwise (a terminal, a file) through tokio's stdio, which runs each read and write on the
/// blocking pool: two thread hand-offs per message that a pipe does not need. A pipe is set
/// non-blocking (nothing else in the process reads stdin or writes stdout while it serves).
/// Call within a runtime. (Not Unix: always tokio's stdio.)
#[cfg(unix)]
pub fn stdio_streams() -> (Box<dyn AsyncBufRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let fifo = |fd: std::os::fd::BorrowedFd<'_>| -> Option<std::fs::File> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        use std::os::unix::fs::FileTypeExt;
        file.metadata().ok()?.file_type().is_fifo().then_some(file)
    };
    let input: Box<dyn AsyncBufRead + Unpin + Send> =
        match fifo(std::io::stdin().as_fd()).and_then(|f| pipe::Receiver::from_file(f).ok()) {
            Some(r) => Box::new(tokio::io::BufReader::new(r)),
            None => Box::new(tokio::io::BufReader::new(tokio::io::stdin())),
        };
    let output: Box<dyn AsyncWrite + Unpin + Send> =
        match fifo(std::io::stdout().as_fd()).and_then(|f| pipe::Sender::from_file(f).ok()) {
            Some(w) => Box::new(w),
            None => Box::new(tokio::io::stdout()),
        };
    (input, output)
}

/// The process's stdin and stdout as async streams, through tokio's stdio.
#[cfg(not(unix))]
pub fn stdio_streams() -> (Box<dyn AsyncBufRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>) {
    (Box::new(tokio::io::BufReader::new(tokio::io::stdin())), Box::new(tokio::io::stdout()))
}

/// Serves one client on `input` / `output` until `input` ends and every request read is
/// answered.
pub async fn serve_io(
    hub: Arc<Hub>,
    input: impl AsyncBufRead + Unpin + Send + 'static,
    mut output: impl AsyncWrite + Unpin + Send + 'static,
) -> Result<(), ServeError> {
    let (lines_tx, mut lines_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(line) = lines_rx.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let (to_sdk, from_filter) = tokio::io::duplex(1 << 20);
    let outstanding = Arc::new(Outstanding::default());
    let filter = tokio::spawn(filter(input, to_sdk, lines_tx.clone(), outstanding.clone()));
    let transport = (from_filter, LineSink { buf: Vec::new(), tx: lines_tx, outstanding });
    let result = match Session::new(hub).serve(transport).await {
        Ok(service) => service.waiting().await.map(|_| ()).map_err(|e| ServeError::Io(std::io::Error::other(e))),
        // The client went away before initializing, or never initialized: not an error.
        Err(_) => Ok(()),
    };
    filter.abort();
    let _ = writer.await;
    result
}

/// Reads client lines, answers the malformed ones itself and passes the rest to the SDK.
async fn filter(
    mut input: impl AsyncBufRead + Unpin,
    mut to_sdk: tokio::io::DuplexStream,
    replies: mpsc::UnboundedSender<Vec<u8>>,
    outstanding: Arc<Outstanding>,
) {
    let mut line = Vec::new();
    let mut initialized = false;
    let reply = |v: Value| {
        let _ = replies.send(format!("{v}\n").into_bytes());
    };
    loop {
        let too_long = match read_message(&mut input, &mut line).await {
            Ok(Some(t)) => t,
            _ => break,
        };
        if too_long {
            reply(error(Value::Null, INVALID_REQUEST, &format!("message over {MAX_MESSAGE_BYTES} bytes")));
            continue;
        }
        let text = match std::str::from_utf8(&line) {
            Ok(t) if t.trim().is_empty() => continue,
            Ok(t) => t,
            Err(e) => {
                reply(error(Value::Null, PARSE_ERROR, &format!("parse error: not UTF-8: {e}")));
                continue;
            }
        };
        match check_envelope(text, initialized) {
            Verdict::Forward { initialize, request } => {
                initialized |= initialize;
                if request {
                    outstanding.count.fetch_add(1, Ordering::SeqCst);
                }
                let mut bytes = text.trim().as_bytes().to_vec();
                bytes.push(b'\n');
                if to_sdk.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            Verdict::Answer(v) => reply(v),
            Verdict::Drop => {}
        }
    }
    let drained = async {
        while outstanding.count.load(Ordering::SeqCst) > 0 {
            let wait = outstanding.done.notified();
            if outstanding.count.load(Ordering::SeqCst) <= 0 {
                break;
            }
            wait.await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_LIMIT, drained).await;
    let _ = to_sdk.shutdown().await;
}

/// What the filter does with one message.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Pass it to the SDK (`initialize`: it is the `initialize` request; `request`: it expects
    /// an answer).
    Forward { initialize: bool, request: bool },
    /// Answer it here.
    Answer(Value),
    /// Ignore it (a notification before `initialize`).
    Drop,
}

fn check_envelope(text: &str, initialized: bool) -> Verdict {
    let message: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Verdict::Answer(error(Value::Null, PARSE_ERROR, &format!("parse error: {e}"))),
    };
    let Some(obj) = message.as_object() else {
        return Verdict::Answer(error(
            Value::Null,
            INVALID_REQUEST,
            "a message must be one JSON-RPC object (no batches)",
        ));
    };
    let id = match obj.get("id") {
        None => None,
        Some(v @ Value::String(_)) => Some(v.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n.clone())),
        Some(_) => {
            return Verdict::Answer(error(
                Value::Null,
                INVALID_REQUEST,
                "`id` must be a string or an integer of at most 64 bits",
            ))
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Verdict::Answer(error(reply_id, INVALID_REQUEST, "`jsonrpc` must be \"2.0\""));
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.as_str(),
        Some(_) => return Verdict::Answer(error(reply_id, INVALID_REQUEST, "`method` must be a string")),
        None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            return if initialized { Verdict::Forward { initialize: false, request: false } } else { Verdict::Drop };
        }
        None => return Verdict::Answer(error(reply_id, INVALID_REQUEST, "a request needs a `method`")),
    };
    if initialized {
        if method == "tools/call" {
            let params = obj.get("params");
            let name_ok = params.and_then(|p| p.get("name")).is_some_and(Value::is_string);
            let args_ok = params.and_then(|p| p.get("arguments")).is_none_or(|a| a.is_object() || a.is_null());
            if let (Some(id), false) = (id.clone(), name_ok && args_ok) {
                return Verdict::Answer(error(
                    id,
                    INVALID_PARAMS,
                    "tools/call needs a string `name` and, if given, an object `arguments`",
                ));
            }
        }
        return Verdict::Forward { initialize: false, request: id.is_some() };
    }
    // The session-free revision (2026-07-28) has no `initialize`: `server/discover`, and any
    // request that names its revision in `_meta`, go to the SDK, which checks the rest.
    let inline = obj.get("params").and_then(|p| p.get("_meta")).and_then(|m| m.get(PROTOCOL_VERSION_META)).is_some();
    match (method, id) {
        ("initialize", Some(_)) => Verdict::Forward { initialize: true, request: true },
        ("server/discover", Some(_)) => Verdict::Forward { initialize: false, request: true },
        (_, Some(_)) if inline => Verdict::Forward { initialize: true, request: true },
        ("ping", Some(id)) => Verdict::Answer(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
        (_, None) => Verdict::Drop,
        (_, Some(id)) => {
            Verdict::Answer(error(id, INVALID_REQUEST, "the session is not initialized: send `initialize` first"))
        }
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Reads one line into `buf` (without keeping more than [`MAX_MESSAGE_BYTES`]): `None` at the
/// end of input, else whether the line was too long (then `buf` is empty).
async fn read_message(input: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut read = 0;
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok((read > 0).then_some(too_long));
        }
        let (chunk, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        if !too_long && buf.len() + chunk.len() > MAX_MESSAGE_BYTES {
            too_long = true;
            buf.clear();
            buf.shrink_to_fit();
        }
        if !too_long {
            buf.extend_from_slice(chunk);
        }
        let used = chunk.len() + usize::from(ends);
        input.consume(used);
        read += used;
        if ends {
            return Ok(Some(too_long));
        }
    }
}

/// The SDK's output side: whole lines go to the one writer of stdout, so the filter's own
/// answers never interleave with the SDK's inside a line.
struct LineSink {
    buf: Vec<u8>,
    tx: mpsc::UnboundedSender<Vec<u8>>,
    outstanding: Arc<Outstanding>,
}

impl AsyncWrite for LineSink {
    fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        self.buf.extend_from_slice(data);
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            if is_response(&line) && self.outstanding.count.fetch_sub(1, Ordering::SeqCst) <= 1 {
                self.outstanding.done.notify_waiters();
            }
            if self.tx.send(line).is_err() {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
        }
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Whether an outgoing line answers a request (has an id and a result or an error). Scanned
/// without building the message: results can be large.
fn is_response(line: &[u8]) -> bool {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    struct Shape {
        id: Option<IgnoredAny>,
        result: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
    }
    serde_json::from_slice::<Shape>(line).is_ok_and(|s| s.id.is_some() && (s.result.is_some() || s.error.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_whole_and_over_long_ones_dropped() {
        let long = "x".repeat(MAX_MESSAGE_BYTES + 10);
        let text = format!("one\n\n{long}\ntwo\r\nlast");
        let mut input = tokio::io::BufReader::with_capacity(1024, text.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(read_message(&mut input, &mut buf).await.unwrap(), Some(false));
        assert_eq!(buf, b"one");
        assert_eq!(read_message(&mut input, &mut buf).await.unwrap(), Some(false));
        assert!(buf.is_empty());
        assert_eq!(read_message(&mut input, &mut buf).await.unwrap(), Some(true));
        assert!(buf.is_empty() && buf.capacity() <= MAX_MESSAGE_BYTES);
        assert_eq!(read_message(&mut input, &mut buf).await.unwrap(), Some(false));
        assert_eq!(buf, b"two\r");
        assert_eq!(read_message(&mut input, &mut buf).await.unwrap(), Some(false));
        assert_eq!(buf, b"last");
        assert_eq!(read_message(&mut input, &mut buf).await.unwrap(), None);
    }

    #[test]
    fn envelopes_are_checked_before_the_sdk_sees_them() {
        let answer = |text: &str, init: bool| match check_envelope(text, init) {
            Verdict::Answer(v) => v,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, false)["error"]["code"], -32600);
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, false)["id"], 7);
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":3,"method":5}"#, true)["id"], 3);
        assert!(answer(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, true)["id"].is_null());
        assert!(answer(r#"{"jsonrpc":"2.0","id":1e3,"method":"ping"}"#, true)["id"].is_null());
        assert_eq!(answer(r#"{"id":4,"method":"ping"}"#, true)["error"]["code"], -32600);
        assert_eq!(answer("[1]", true)["error"]["code"], -32600);
        assert_eq!(
            check_envelope(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#, false),
            Verdict::Forward { initialize: true, request: true }
        );
        assert_eq!(check_envelope(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#, false), Verdict::Drop);
    }
}
