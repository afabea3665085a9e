//! Reaching an upstream: a stdio child started with its own environment and process group,
//! or a Streamable HTTP endpoint with its headers (and credentials from commands), each
//! behind the transport that routes progress by ownership.

use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use super::{Failure, UpClient, Upstream, STDERR_LINES};
use crate::child::ChildTransport;
use crate::config::ServerSpec;
use crate::credentials::CredentialedClient;
use crate::progress::Routed;

impl Upstream {
    /// Starts (stdio) or reaches (HTTP) the server and initializes a session.
    pub(super) async fn connect(&self, handler: UpClient) -> Result<RunningService<RoleClient, UpClient>, Failure> {
        match &self.spec {
            ServerSpec::Stdio { command, args, env, cwd, inherit_env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                crate::child::set_env(&mut cmd, inherit_env, env);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                let (transport, stderr) =
                    ChildTransport::spawn(cmd, self.limits.max_line()).map_err(|e| match e.kind() {
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
                handler
                    .serve(Routed::new(transport, self.router.clone()))
                    .await
                    .map_err(|e| Failure::new("it exited or failed before answering initialize", e.to_string()))
            }
            ServerSpec::Http { url, headers, .. } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
                for (k, v) in headers {
                    let bad = |e: String| Failure::new(format!("its configured header {k:?} is not valid"), e);
                    let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(e.to_string()))?;
                    let value = http::HeaderValue::from_str(v).map_err(|e| bad(e.to_string()))?;
                    if name == http::header::AUTHORIZATION {
                        config.auth_header = Some(v.trim_start_matches("Bearer ").to_owned());
                    } else {
                        config.custom_headers.insert(name, value);
                    }
                }
                let unreachable =
                    |e: std::io::Error| Failure::new("it could not be reached or did not initialize", e.to_string());
                match &self.credentials {
                    Some(credentials) => {
                        let client =
                            CredentialedClient { inner: reqwest::Client::new(), credentials: credentials.clone() };
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        handler
                            .serve(Routed::new(transport, self.router.clone()))
                            .await
                            .map_err(|e| unreachable(std::io::Error::other(e.to_string())))
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::from_config(config);
                        handler
                            .serve(Routed::new(transport, self.router.clone()))
                            .await
                            .map_err(|e| unreachable(std::io::Error::other(e.to_string())))
                    }
                }
            }
        }
    }
}
