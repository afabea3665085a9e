//! Credentials for Streamable HTTP upstreams that a command provides: a header's value is the
//! output of a command (`{"command": ["gh", "auth", "token"], "prefix": "Bearer "}`), run when
//! the first request needs it and again whenever the upstream answers 401, after which the
//! request is sent once more with the new value. Tokens that expire are thus refreshed without
//! a restart and without a client noticing.
//!
//! An OAuth-protected server's bearer token comes the same way from its grant
//! (`crate::login::UpstreamGrant`): fetched when first needed, again when it nears expiry or
//! its grant file changes, and once more after a 401.
//!
//! The values live in memory only: never in the state directory, never in a status line (a
//! failing command is reported by its exit status only, never its output or stderr).
//! Concurrent requests that meet the same 401 run the command once.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde::Deserialize;
use sse_stream::{Error as SseError, Sse};

/// A header value got by running a command.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderCommand {
    /// Program and arguments; its standard output, trimmed, is the value.
    pub command: Vec<String>,
    /// Put before the output (e.g. `"Bearer "`).
    #[serde(default)]
    pub prefix: String,
}

/// Longest a header command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The headers of one upstream that come from commands, as last fetched.
#[derive(Debug)]
pub(crate) struct Credentials {
    commands: BTreeMap<String, HeaderCommand>,
    oauth: Option<crate::login::UpstreamGrant>,
    current: Mutex<Option<Arc<Fetched>>>,
    /// Bumped by each fetch; a refresh asked for with an older one is already done.
    generation: AtomicU64,
    refreshing: tokio::sync::Mutex<()>,
    /// How many times the commands ran (the operator's status shows it).
    pub(crate) fetches: AtomicU64,
}

/// Header values as fetched: the bearer token (the `Authorization` header, without `Bearer `)
/// and the others.
#[derive(Debug, Default)]
struct Fetched {
    generation: u64,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
}

type Error = StreamableHttpError<reqwest::Error>;

fn failure(message: String) -> Error {
    StreamableHttpError::Io(std::io::Error::other(message))
}

impl Credentials {
    /// Credentials from `commands` (header name to command) and an OAuth grant.
    pub(crate) fn new(
        commands: BTreeMap<String, HeaderCommand>,
        oauth: Option<crate::login::UpstreamGrant>,
    ) -> Arc<Credentials> {
        Arc::new(Credentials {
            commands,
            oauth,
            current: Mutex::new(None),
            generation: AtomicU64::new(0),
            refreshing: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        })
    }

    /// The current values, fetched first if there are none yet.
    async fn get(&self) -> Result<Arc<Fetched>, Error> {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match current {
            // An OAuth token near expiry, or a grant changed on disk: fetched again first.
            Some(f) if self.oauth.as_ref().is_some_and(|o| o.stale()) => self.refresh(f.generation, false).await,
            Some(f) => Ok(f),
            None => self.refresh(0, false).await,
        }
    }

    /// Runs the commands again, unless a refresh newer than `seen` already happened; `refused`:
    /// the server answered 401 to what is in hand.
    async fn refresh(&self, seen: u64, refused: bool) -> Result<Arc<Fetched>, Error> {
        let _one = self.refreshing.lock().await;
        if let Some(f) = self.current.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            if f.generation > seen {
                return Ok(f);
            }
        }
        let mut fetched =
            Fetched { generation: self.generation.fetch_add(1, Ordering::SeqCst) + 1, ..Fetched::default() };
        self.fetches.fetch_add(1, Ordering::Relaxed);
        for (name, spec) in &self.commands {
            let value = format!("{}{}", spec.prefix, run(name, spec).await?);
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| failure(format!("header {name:?} from a command: {e}")))?;
            if header == http::header::AUTHORIZATION {
                fetched.auth = Some(value.trim_start_matches("Bearer ").trim_start_matches("bearer ").to_owned());
            } else {
                let value = HeaderValue::from_str(&value).map_err(|_| {
                    failure(format!("the command for header {name:?} printed a value a header cannot hold"))
                })?;
                fetched.headers.insert(header, value);
            }
        }
        if let Some(oauth) = &self.oauth {
            fetched.auth = Some(oauth.access_token(refused).await.map_err(failure)?);
        }
        let fetched = Arc::new(fetched);
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(fetched.clone());
        Ok(fetched)
    }

    /// The values for a transport other than rmcp's Streamable HTTP client (HTTP+SSE): their
    /// generation, the bearer token, and the other headers; `refused`: the generation the
    /// server just answered 401 to, which is fetched again (once for concurrent refusals).
    pub(crate) async fn values(
        &self,
        refused: Option<u64>,
    ) -> Result<(u64, Option<String>, HashMap<HeaderName, HeaderValue>), String> {
        let fetched = match refused {
            Some(seen) => self.refresh(seen, true).await,
            None => self.get().await,
        }
        .map_err(|e| e.to_string())?;
        Ok((fetched.generation, fetched.auth.clone(), fetched.headers.clone()))
    }
}

/// Runs one header command; its trimmed output. Errors name the header and the exit status,
/// never the command's output or stderr.
async fn run(header: &str, spec: &HeaderCommand) -> Result<String, Error> {
    run_command(&format!("header {header:?}"), spec).await.map_err(failure)
}

/// Runs the command `spec` that prints `header` (a header's value, a client secret, named as
/// the errors should name it); its trimmed output. Errors name it and the exit status, never
/// the output or stderr.
pub(crate) async fn run_command(header: &str, spec: &HeaderCommand) -> Result<String, String> {
    let Some((program, args)) = spec.command.split_first() else {
        return Err(format!("the command for {header} is empty"));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(COMMAND_TIMEOUT, cmd.output())
        .await
        .map_err(|_| format!("the command for {header} did not finish within 30 s"))?
        .map_err(|e| format!("the command for {header} could not be run: {e}"))?;
    if !out.status.success() {
        // Its exit status only: this error can reach a client (a failed call), and a
        // command's stderr may hold what it was fetching.
        return Err(format!("the command for {header} failed ({})", out.status));
    }
    let value = String::from_utf8(out.stdout)
        .map_err(|_| format!("the command for {header} printed something that is not UTF-8"))?;
    let value = value.trim();
    if value.is_empty() {
        return Err(format!("the command for {header} printed nothing"));
    }
    Ok(value.to_owned())
}

/// Whether an upstream's answer was 401.
fn unauthorized(e: &Error) -> bool {
    match e {
        StreamableHttpError::AuthRequired(_) => true,
        StreamableHttpError::HttpStatus(s) => s.status == 401,
        other => {
            let text = other.to_string();
            text.contains("401") && text.to_ascii_lowercase().contains("unauthorized")
        }
    }
}

/// The reqwest client with the command-provided headers put on every request, fetched again
/// and the request sent once more when the upstream answers 401.
#[derive(Debug, Clone)]
pub(crate) struct CredentialedClient {
    pub(crate) inner: reqwest::Client,
    pub(crate) credentials: Arc<Credentials>,
}

impl CredentialedClient {
    /// `custom` with the fetched headers over it, and the fetched bearer token (or `auth`).
    fn apply(
        f: &Fetched,
        auth: &Option<String>,
        custom: &HashMap<HeaderName, HeaderValue>,
    ) -> (Option<String>, HashMap<HeaderName, HeaderValue>) {
        let mut headers = custom.clone();
        headers.extend(f.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        (f.auth.clone().or_else(|| auth.clone()), headers)
    }
}

/// Sends with the current credentials, and once more with fresh ones after a 401.
macro_rules! with_credentials {
    ($self:ident, $auth:ident, $custom:ident, |$a:ident, $h:ident| $send:expr) => {{
        let fetched = $self.credentials.get().await?;
        let ($a, $h) = CredentialedClient::apply(&fetched, &$auth, &$custom);
        match $send.await {
            Err(e) if unauthorized(&e) => {
                let fetched = $self.credentials.refresh(fetched.generation, true).await?;
                let ($a, $h) = CredentialedClient::apply(&fetched, &$auth, &$custom);
                $send.await
            }
            other => other,
        }
    }};
}

impl StreamableHttpClient for CredentialedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        with_credentials!(self, auth_header, custom_headers, |a, h| self.inner.post_message_with_response_limits(
            uri.clone(),
            message.clone(),
            session_id.clone(),
            a.clone(),
            h.clone(),
            limits
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        with_credentials!(self, auth_header, custom_headers, |a, h| self.inner.delete_session(
            uri.clone(),
            session_id.clone(),
            a.clone(),
            h.clone()
        ))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        with_credentials!(self, auth_header, custom_headers, |a, h| self.inner.get_stream(
            uri.clone(),
            session_id.clone(),
            last_event_id.clone(),
            a.clone(),
            h.clone()
        ))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        with_credentials!(self, auth_header, custom_headers, |a, h| self.inner.get_stream_with_max_sse_event_size(
            uri.clone(),
            session_id.clone(),
            last_event_id.clone(),
            a.clone(),
            h.clone(),
            max_sse_event_size
        ))
    }
}
