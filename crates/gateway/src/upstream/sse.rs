//! MCP 2024-11-05's HTTP+SSE transport, for servers that serve nothing newer (and clients'
//! configs that say `"type": "sse"`, or Gemini CLI's `url`): a GET of the server's URL opens
//! an event stream whose first `endpoint` event names where to post; each message is then
//! posted there, and every answer comes back as a `message` event on the stream.
//!
//! The endpoint must be on the stream's own origin (scheme, host, port): a server that named
//! another could have the gateway post its callers' arguments and its credentials there. An
//! event is held only up to the stdio line bound (`GatewayLimits::max_line`): a longer one
//! ends the session rather than growing memory. Credentials (headers from commands, an OAuth
//! grant) go on every request, fetched again once after a 401, as on Streamable HTTP.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Sink, Stream, StreamExt};
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};

use crate::credentials::Credentials;

/// How long the server has to name its endpoint once the stream is open.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);

/// How long a post may take (servers take a message and answer 202 at once; the answer
/// comes on the stream): one that hangs would hold every later message behind it.
const POST_WAIT: Duration = Duration::from_secs(30);

/// What the gateway posts through.
pub(super) type Posts = Pin<Box<dyn Sink<ClientJsonRpcMessage, Error = std::io::Error> + Send>>;
/// What the server sends back.
pub(super) type Messages = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

/// Opens the event stream at `url` and waits for its endpoint; the two halves of the session.
/// Errors say what went wrong in words a status line can show (never a credential); what
/// goes wrong once the session runs (a message that is not JSON-RPC, skipped; the stream
/// breaking, which ends the session) is said to `report`, for the operator's log.
pub(super) async fn open(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
    credentials: Option<Arc<Credentials>>,
    max_event: usize,
    report: impl Fn(String) + Send + Sync + 'static,
) -> Result<(Posts, Messages), String> {
    let base = reqwest::Url::parse(url).map_err(|e| format!("its URL is not valid: {e}"))?;
    let requests = Requests { client, headers, credentials };
    let response = requests.send(|c| c.get(base.clone()).header(ACCEPT, "text/event-stream")).await?;
    if !response.status().is_success() {
        return Err(format!("its event stream was answered {}", response.status()));
    }
    let mut events = Events::new(response, max_event);
    let named = tokio::time::timeout(ENDPOINT_WAIT, async {
        loop {
            match events.next().await? {
                Some(e) if e.name == "endpoint" => return Ok(e.data),
                Some(_) => continue,
                None => return Err("its event stream ended before it named where to post".to_owned()),
            }
        }
    })
    .await
    .map_err(|_| format!("its event stream named no endpoint within {} s", ENDPOINT_WAIT.as_secs()))??;
    let post = base.join(named.trim()).map_err(|e| format!("its endpoint event is not a URL: {e}"))?;
    if post.origin() != base.origin() {
        return Err(format!(
            "its endpoint event names another origin ({}): refused, so that no message or credential goes there",
            post.origin().ascii_serialization()
        ));
    }
    let posts = futures::sink::unfold((requests, post), |(requests, post), message: ClientJsonRpcMessage| async move {
        let body = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
        let response = requests
            .send(|c| {
                c.post(post.clone()).timeout(POST_WAIT).header(CONTENT_TYPE, "application/json").body(body.clone())
            })
            .await
            .map_err(std::io::Error::other)?;
        if !response.status().is_success() {
            return Err(std::io::Error::other(format!("a message posted to it was answered {}", response.status())));
        }
        Ok((requests, post))
    });
    let report = Arc::new(report);
    let messages = futures::stream::unfold(events, move |mut events| {
        let report = report.clone();
        async move {
            loop {
                match events.next().await {
                    // A message that is not JSON-RPC is skipped, as on stdio, and said; a failed
                    // or oversized stream ends the session, which the supervisor reopens.
                    Ok(Some(e)) if e.name == "message" => match serde_json::from_str::<ServerJsonRpcMessage>(&e.data) {
                        Ok(message) => return Some((message, events)),
                        Err(why) => report(format!("it sent a message that is not JSON-RPC, skipped: {why}")),
                    },
                    Ok(Some(_)) => {}
                    Ok(None) => return None,
                    Err(why) => {
                        report(format!("its event stream broke: {why}"));
                        return None;
                    }
                }
            }
        }
    });
    Ok((Box::pin(posts), Box::pin(messages)))
}

/// Sends requests with the configured headers and the credentials over them.
struct Requests {
    client: reqwest::Client,
    headers: HeaderMap,
    credentials: Option<Arc<Credentials>>,
}

impl Requests {
    /// Sends what `make` builds; after a 401 with credentials, fetches them again and sends
    /// once more.
    async fn send(
        &self,
        make: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, String> {
        let mut refused = None;
        loop {
            let mut headers = self.headers.clone();
            let generation = match &self.credentials {
                Some(credentials) => {
                    let (generation, auth, more) = credentials.values(refused).await?;
                    for (name, value) in more {
                        headers.insert(name, value);
                    }
                    if let Some(token) = auth {
                        let value = HeaderValue::from_str(&format!("Bearer {token}"))
                            .map_err(|_| "its bearer token cannot be sent in a header".to_owned())?;
                        headers.insert(AUTHORIZATION, value);
                    }
                    Some(generation)
                }
                None => None,
            };
            let response = make(&self.client).headers(headers).send().await.map_err(|e| e.without_url().to_string())?;
            if response.status() == StatusCode::UNAUTHORIZED {
                if let (Some(generation), None) = (generation, refused) {
                    refused = Some(generation);
                    continue;
                }
                return Err(match self.credentials.is_some() || self.headers.contains_key(AUTHORIZATION) {
                    true => "it answered 401 Unauthorized to the credentials configured for it",
                    false => "it answered 401 Unauthorized: give it credentials (`headers`, or `oauth` to log in)",
                }
                .to_owned());
            }
            return Ok(response);
        }
    }
}

/// One server-sent event: its name (`message` when none is given) and its data lines joined.
#[derive(Debug, PartialEq)]
struct Event {
    name: String,
    data: String,
}

/// `e` with the errors that caused it (`error decoding response body: unexpected EOF ...`).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// The events of a response body, read as the EventSource rules say (lines end in `\n` or
/// `\r\n`; `:` starts a comment; an event without data is not dispatched).
struct Events {
    body: Pin<Box<dyn Stream<Item = Result<Vec<u8>, String>> + Send>>,
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no line end.
    scanned: usize,
    name: String,
    data: String,
    max: usize,
}

impl Events {
    fn new(response: reqwest::Response, max: usize) -> Events {
        let body = response.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec()).map_err(|e| with_causes(&e)));
        Events::from_chunks(Box::pin(body), max)
    }

    fn from_chunks(body: Pin<Box<dyn Stream<Item = Result<Vec<u8>, String>> + Send>>, max: usize) -> Events {
        Events { body, buffer: Vec::new(), scanned: 0, name: String::new(), data: String::new(), max }
    }

    /// The next event; `None` once the stream ends; an error if it fails or an event would
    /// be over `max` bytes.
    async fn next(&mut self) -> Result<Option<Event>, String> {
        loop {
            while let Some(at) = self.buffer[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + at;
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                self.scanned = 0;
                let line = String::from_utf8_lossy(&line[..end]);
                let line = line.strip_suffix('\r').unwrap_or(&line);
                if line.is_empty() {
                    let name = std::mem::take(&mut self.name);
                    let Some(data) = std::mem::take(&mut self.data).strip_suffix('\n').map(str::to_owned) else {
                        continue;
                    };
                    let name = if name.is_empty() { "message".to_owned() } else { name };
                    return Ok(Some(Event { name, data }));
                }
                let (field, value) = match line.split_once(':') {
                    Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                    None => (line, ""),
                };
                match field {
                    "event" => self.name = value.to_owned(),
                    "data" => {
                        self.data.push_str(value);
                        self.data.push('\n');
                    }
                    _ => {}
                }
                if self.data.len() > self.max {
                    return Err(format!("it sent an event over {} bytes", self.max));
                }
            }
            self.scanned = self.buffer.len();
            if self.buffer.len() > self.max {
                return Err(format!("it sent an event over {} bytes", self.max));
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(e)) => return Err(e),
                None => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&str], max: usize) -> Events {
        let chunks: Vec<Result<Vec<u8>, String>> = chunks.iter().map(|c| Ok(c.as_bytes().to_vec())).collect();
        Events::from_chunks(Box::pin(futures::stream::iter(chunks)), max)
    }

    fn event(name: &str, data: &str) -> Option<Event> {
        Some(Event { name: name.to_owned(), data: data.to_owned() })
    }

    #[tokio::test]
    async fn events_are_read_across_chunks_with_either_line_end_and_comments_skipped() {
        let mut e =
            events(&[": hello\n\nevent: endp", "oint\r\ndata: /m?s=1\r\n\r\n", "data: {\"a\":\ndata:1}\n\n"], 100);
        assert_eq!(e.next().await.unwrap(), event("endpoint", "/m?s=1"));
        assert_eq!(e.next().await.unwrap(), event("message", "{\"a\":\n1}"));
        assert_eq!(e.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_event_over_the_bound_is_an_error_whether_on_one_line_or_many() {
        let long = format!("data: {}", "x".repeat(200));
        let err = events(&[&long], 100).next().await.unwrap_err();
        assert_eq!(err, "it sent an event over 100 bytes");
        let many = "data: xxxxxxxxxx\n".repeat(20);
        assert_eq!(events(&[&many], 100).next().await.unwrap_err(), "it sent an event over 100 bytes");
        // Under the bound, the same lines are one event.
        let few = format!("{}\n", "data: xxxxxxxxxx\n".repeat(3));
        assert_eq!(events(&[&few], 100).next().await.unwrap(), event("message", "xxxxxxxxxx\nxxxxxxxxxx\nxxxxxxxxxx"));
    }
}
