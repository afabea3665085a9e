//! Reaching an upstream: a stdio child started with its own environment and process group,
//! or a Streamable HTTP (or HTTP+SSE) endpoint with its headers (and credentials from
//! commands), each behind the transport that routes progress by ownership.

use std::sync::atomic::Ordering;

use rmcp::model::{ErrorCode, ProtocolVersion};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::IntoTransport;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use super::client::UpClient;
use super::{Failure, Upstream, STDERR_LINES};
use crate::child::ChildTransport;
use crate::config::ServerSpec;
use crate::credentials::CredentialedClient;
use crate::progress::Routed;

/// How long an idle connection to an HTTP upstream is kept for reuse.
const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(4);

impl Upstream {
    /// Opens a session over `transport`: with `initialize` (2024-11-05 .. 2025-11-25), or,
    /// once the server refused that naming only session-free revisions, with
    /// `server/discover` and per-request metadata (2026-07-28). The refusal is remembered, so
    /// the supervisor's next attempt (a new process for stdio) speaks the server's revision.
    async fn open<T, E, A>(
        &self,
        handler: UpClient,
        transport: T,
    ) -> Result<RunningService<RoleClient, UpClient>, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let result = match self.modern.load(Ordering::SeqCst) {
            true => {
                let lifecycle =
                    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
                handler.serve_with_lifecycle(transport, lifecycle).await
            }
            false => handler.serve(transport).await,
        };
        if let Err(e) = &result {
            if only_session_free(e) {
                self.modern.store(true, Ordering::SeqCst);
            }
        }
        result
    }

    /// Starts (stdio) or reaches (HTTP) the server and initializes a session.
    pub(super) async fn connect(&self, handler: UpClient) -> Result<RunningService<RoleClient, UpClient>, Failure> {
        match &self.spec {
            ServerSpec::Stdio { command, args, env, cwd, inherit_env } => {
                let (command, args, env, cwd, inherit_env) =
                    (command.clone(), args.clone(), env.clone(), cwd.clone(), inherit_env.clone());
                let max_line = self.limits.max_line();
                let spawn = move || {
                    let start = |program: Option<&std::path::Path>| {
                        let mut cmd = tokio::process::Command::new(program.unwrap_or(command.as_ref()));
                        #[cfg(unix)]
                        cmd.arg0(&command);
                        cmd.args(&args);
                        crate::child::set_env(&mut cmd, &inherit_env, &env);
                        if let Some(dir) = &cwd {
                            cmd.current_dir(dir);
                        }
                        ChildTransport::spawn(cmd, max_line)
                    };
                    // Found here so that it starts without a copy of the gateway
                    // (`crate::child_program`); a script with no `#!` line, which only a lookup
                    // in the child runs (with `sh`), is started that way.
                    let program =
                        crate::child_program::found(&command, crate::child_program::child_path(&env).as_deref());
                    match start(program.as_deref()) {
                        #[cfg(unix)]
                        Err(e) if program.is_some() && e.raw_os_error() == Some(libc::ENOEXEC) => start(None),
                        started => started,
                    }
                };
                // Off the thread that serves every session: starting a program waits until it
                // has been loaded (a `vfork`).
                let started = tokio::task::spawn_blocking(spawn)
                    .await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
                let (transport, stderr) = started.map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Failure::new("its command was not found", e.to_string()),
                    std::io::ErrorKind::PermissionDenied => {
                        Failure::new("its command may not be run (permission denied)", e.to_string())
                    }
                    _ => Failure::new("its command could not be started", e.to_string()),
                })?;
                if let Some(stderr) = stderr {
                    let tail = self.stderr.clone();
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                            if t.len() == STDERR_LINES {
                                t.pop_front();
                            }
                            t.push_back(line.chars().take(300).collect());
                        }
                    });
                }
                self.open(handler, Routed::new(transport, self.router.clone()))
                    .await
                    .map_err(|e| Failure::new("it exited or failed before answering initialize", e.to_string()))
            }
            ServerSpec::Http { .. } => self.reach(handler, self.credentials.clone(), self.router.clone()).await,
        }
    }

    /// Reaches the HTTP server and initializes a session, with `credentials` (headers from
    /// commands, an OAuth grant) on every request, its progress routed by `router`.
    pub(super) async fn reach(
        &self,
        handler: UpClient,
        credentials: Option<std::sync::Arc<crate::credentials::Credentials>>,
        router: std::sync::Arc<crate::progress::Router>,
    ) -> Result<RunningService<RoleClient, UpClient>, Failure> {
        let ServerSpec::Http { url, headers, sse, .. } = &self.spec else {
            return Err(Failure::new("it is not an HTTP server", ""));
        };
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
        let mut all = http::HeaderMap::new();
        for (k, v) in headers {
            let bad = |e: String| Failure::new(format!("its configured header {k:?} is not valid"), e);
            let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let value = http::HeaderValue::from_str(v).map_err(|e| bad(e.to_string()))?;
            all.insert(name.clone(), value.clone());
            if name == http::header::AUTHORIZATION {
                config.auth_header = Some(v.trim_start_matches("Bearer ").to_owned());
            } else {
                config.custom_headers.insert(name, value);
            }
        }
        let unreachable = |e: std::io::Error| {
            Failure::or_login("it could not be reached or did not initialize", e.to_string(), &self.name)
        };
        // HTTPS through the process's one TLS provider (`toolsearch_mcp::tls`).
        // Idle connections are dropped before the 5 s after which common servers (uvicorn,
        // Node) close theirs, so that a request rarely goes out on one being closed.
        let inner = toolsearch_mcp::tls::client_builder()
            .pool_idle_timeout(POOL_IDLE)
            .build()
            .map_err(|e| Failure::new("no HTTP client could be made for it", e.to_string()))?;
        if *sse {
            let (events, name) = (self.events.lock().unwrap_or_else(|p| p.into_inner()).clone(), self.name.clone());
            let report = move |detail: String| {
                if let Some(events) = &events {
                    let _ = events.send(super::UpEvent::RequestFailed(name.clone(), detail));
                }
            };
            let (posts, messages) = super::sse::open(inner, url, all, credentials, self.limits.max_line(), report)
                .await
                .map_err(|e| unreachable(std::io::Error::other(e)))?;
            let transport = rmcp::transport::sink_stream::SinkStreamTransport::new(posts, messages);
            return self
                .open(handler, Routed::new(transport, router))
                .await
                .map_err(|e| unreachable(std::io::Error::other(e.to_string())));
        }
        match credentials {
            Some(credentials) => {
                let client = CredentialedClient { inner, credentials };
                let transport = StreamableHttpClientTransport::with_client(client, config);
                self.open(handler, Routed::new(transport, router))
                    .await
                    .map_err(|e| unreachable(std::io::Error::other(e.to_string())))
            }
            None => {
                let transport = StreamableHttpClientTransport::with_client(inner, config);
                self.open(handler, Routed::new(transport, router))
                    .await
                    .map_err(|e| unreachable(std::io::Error::other(e.to_string())))
            }
        }
    }
}

/// Whether `e` is a server's refusal of `initialize` that names only revisions without it.
fn only_session_free(e: &ClientInitializeError) -> bool {
    let session_free =
        |versions: &[ProtocolVersion]| !versions.is_empty() && versions.iter().all(|v| !v.has_initialize());
    match e {
        ClientInitializeError::JsonRpcError(d) if d.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported: Vec<ProtocolVersion> = d
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default();
            session_free(&supported)
        }
        ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. } => session_free(server_supported),
        _ => false,
    }
}
