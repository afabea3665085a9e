//! What `toolsearch gateway --config FILE` reads: the `mcpServers` map (stdio commands and
//! Streamable HTTP URLs, each with its trust, filter and environment) and the `toolsearch`
//! section (tool set, scopes, tokens, timeouts, limits, audit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolsearch_disclosure::ToolSetConfig;
use toolsearch_mcp::{field_path, plain_error, Access, Grant, ServeError};

pub use crate::filter::ToolFilter;

mod env;
mod examples;
mod gemini;
mod itself;
mod jsonc;
mod limits;
mod other_clients;
mod rate;
mod servers;
mod settings;
mod sources;
mod toolset;

pub(crate) use env::expand_env;
pub use limits::GatewayLimits;
pub use settings::{LearnSettings, StateSettings};

/// One upstream MCP server, as Claude Desktop, Cursor and VS Code write it: a command to run
/// (stdio) or a URL (Streamable HTTP).
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    /// A child process speaking MCP on stdio.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Extra environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
        /// What of the gateway's own environment it starts with besides the minimal one
        /// (`crate::child::set_env`): nothing by default.
        inherit_env: InheritEnv,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Its URL.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
        /// Headers whose values come from a command, run again when the server answers 401.
        header_commands: BTreeMap<String, crate::credentials::HeaderCommand>,
        /// How the gateway logs in to it with OAuth 2.1, if it must (`crate::login`).
        oauth: Option<Box<crate::login::UpstreamOAuth>>,
        /// Reached over MCP 2024-11-05's HTTP+SSE transport (`"type": "sse"`): an event
        /// stream from `url`, messages posted where its `endpoint` event says.
        sse: bool,
    },
}

/// What a stdio upstream inherits of the gateway's environment beyond the minimal one every
/// child gets (`PATH`, `HOME`, locale, `TMPDIR`, ...): its own `env` always comes on top.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum InheritEnv {
    /// Nothing more (the default): the gateway's secrets, tokens among them, stay its own.
    #[default]
    Minimal,
    /// Everything (`inherit_env: true`), as a shell would pass it.
    All,
    /// These variables too, where set (`inherit_env: ["AWS_PROFILE", ...]`).
    Names(Vec<String>),
}

/// How the gateway treats one server's tools beyond reaching it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerPolicy {
    /// Changed tool definitions are taken without approval (`trust: "auto"`).
    pub trust_changes: bool,
    /// Tools whose definitions look injected are held until approved.
    pub hold_flagged: bool,
    /// Which tools pass through.
    pub tools: ToolFilter,
    /// Started on demand and stopped when idle (`lazy`, `crate::upstream::lazy`).
    pub lazy: bool,
    /// Its own longest forwarded call, in seconds (`call_timeout_secs` in its entry; absent:
    /// `toolsearch.call_timeout_secs`).
    pub call_timeout_secs: Option<u64>,
}

/// The `toolsearch` section of a gateway config.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewaySettings {
    /// The tool set (discovery, pinned tools by id `SERVER.TOOL`); `call_tool` is on by
    /// default here, for clients that ignore `list_changed`. What the config gives changes
    /// only what it names (`toolset::over_defaults`).
    #[serde(deserialize_with = "toolset::over_defaults")]
    pub toolset: ToolSetConfig,
    /// Facade settings per server (as a manifest node's `facade`): the server's tools behind
    /// one tool that unfolds them.
    pub facades: BTreeMap<String, serde_json::Value>,
    /// Scopes a caller must hold to see and call each server's tools.
    pub requires: BTreeMap<String, Vec<String>>,
    /// Sample requests that should find an upstream tool, by its id `SERVER.TOOL`, indexed
    /// with it as a manifest tool's `examples` are: the deployment's own words for what its
    /// servers' descriptions do not say (docs/gateway.md, "Teaching the search").
    pub examples: BTreeMap<String, Vec<String>>,
    /// The scopes of the stdio client (absent: `access` decides).
    pub scopes: Option<Vec<String>>,
    /// What a caller without configured scopes holds: `open` (everything) or `closed`.
    pub access: Access,
    /// HTTP bearer tokens and what each grants: its scopes, as a list, or `{"name", "scopes"}`
    /// (the name is what the audit trail and logs show; by default `token-` and the first 8 hex
    /// digits of the token's SHA-256).
    pub tokens: BTreeMap<String, Grant>,
    /// Who else may call the HTTP endpoint: `oauth`, the identity providers whose access
    /// tokens are accepted beside `tokens` (docs/gateway-security.md, "Identity for clients").
    pub auth: AuthSettings,
    /// Origins allowed to call the HTTP endpoint from a browser (besides loopback ones).
    pub allowed_origins: Vec<String>,
    /// Proxies (addresses or CIDR blocks) in front of the HTTP endpoint whose
    /// `X-Forwarded-For` names the client, whose refused tokens are then counted against the
    /// client rather than the proxy (docs/gateway-security.md, "Guessing tokens").
    pub trusted_proxies: Vec<String>,
    /// Rate limits per caller, tool and server (docs/gateway-operations.md, "Rate limits").
    pub rate_limits: toolsearch_mcp::rate::RateLimits,
    /// OpenTelemetry traces over OTLP/HTTP (absent: off; docs/gateway-operations.md, "Traces").
    pub telemetry: Option<toolsearch_mcp::trace::TelemetrySettings>,
    /// Where what replicas share is kept: the state directory, or PostgreSQL (`crate::store`).
    pub state: StateSettings,
    /// The embedding model: `stock`, `tools`, or the directory of a sentence-transformers
    /// ONNX export, relative to the config file (absent: the default; `--model` overrides it).
    pub model: Option<String>,
    /// Longest forwarded call, in seconds (default 60).
    pub call_timeout_secs: u64,
    /// Longest wait for an upstream to start and initialize, in seconds (default 30).
    pub connect_timeout_secs: u64,
    /// How long a starting gateway waits for its servers before it serves its client, in
    /// seconds (default 5): a server still starting then is indexed when it is up. With no
    /// server up by then it waits on, up to `connect_timeout_secs`. Clients give a server 10
    /// (Codex) to 30 s (Claude Desktop) to answer `initialize`; one slow server must not cost
    /// the client every other one.
    pub startup_wait_secs: u64,
    /// Whether servers are lazy unless their entry says (default false): started only when a
    /// call, read or prompt needs one, their tools indexed meanwhile from the listing kept in
    /// the state directory.
    pub lazy: bool,
    /// How long a lazy server may sit unused before it is stopped, in seconds (default 300).
    pub idle_stop_secs: u64,
    /// Bounds on what upstreams and clients may make the gateway hold.
    pub limits: GatewayLimits,
    /// The audit trail written under the state directory.
    pub audit: toolsearch_mcp::trail::AuditSettings,
    /// Learning from the gateway's own traffic (absent: off): `crate::learner`.
    pub learn: Option<LearnSettings>,
    /// The tokens the config gives no name (named by [`GatewaySettings::name_tokens`]).
    #[serde(skip)]
    pub(crate) unnamed: Vec<String>,
}

/// `toolsearch.auth`: identity beyond the static tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// The gateway as an OAuth 2.1 protected resource.
    pub oauth: Option<toolsearch_mcp::oauth::OAuthSettings>,
    /// The gateway as an OAuth client of its upstreams: the HTTPS URL of its Client ID Metadata
    /// Document, used as its `client_id` where an authorization server supports such documents
    /// (`crate::login::document`); the HTTP listener serves the document at this URL's path
    /// (a reloaded one's from the next request: `crate::served_access`).
    pub client_metadata_url: Option<String>,
    /// The gateway's public address for the redirect of per-user logins (`"per_user": true`
    /// servers), e.g. `https://gateway.example/oauth/callback`; the HTTP listener answers at
    /// its path (a reloaded one's from the next request).
    pub callback_url: Option<String>,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            toolset: toolset::gateway_default(),
            facades: BTreeMap::new(),
            requires: BTreeMap::new(),
            examples: BTreeMap::new(),
            scopes: None,
            access: Access::Open,
            tokens: BTreeMap::new(),
            auth: AuthSettings::default(),
            rate_limits: Default::default(),
            telemetry: None,
            state: Default::default(),
            model: None,
            allowed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            call_timeout_secs: 60,
            connect_timeout_secs: 30,
            startup_wait_secs: 5,
            lazy: false,
            idle_stop_secs: 300,
            limits: GatewayLimits::default(),
            audit: Default::default(),
            learn: None,
            unnamed: Vec::new(),
        }
    }
}

/// `toolsearch gateway --config FILE`: the upstream servers and the gateway's settings.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The file it was read from.
    pub path: PathBuf,
    /// Upstream servers by name.
    pub servers: BTreeMap<String, ServerSpec>,
    /// What each server's tools are subject to (trust, filters), by server name.
    pub policies: BTreeMap<String, ServerPolicy>,
    /// Settings.
    pub settings: GatewaySettings,
    /// What the operator should know of how the file was read: keys left alone, entries
    /// skipped (one that starts this gateway itself).
    pub notes: Vec<String>,
    /// The file as it was just before it was read: the watch compares with it, so an edit
    /// made after (while the gateway starts) is reloaded.
    pub(crate) stamp: Option<crate::stamp::FileStamp>,
}

impl GatewayConfig {
    /// Reads a gateway config, or an editor's file of MCP servers as it is (`sources`);
    /// errors name the file and the server or field at fault.
    pub fn load(path: &Path) -> Result<GatewayConfig, ServeError> {
        let bad = |m: String| ServeError::Config(path.to_path_buf(), m);
        let stamp = crate::stamp::file_stamp(path);
        let text = toolsearch_mcp::read_config(path).map_err(bad)?;
        let sections = sources::sections(path, &text).map_err(bad)?;
        let mut notes = sections.notes;
        // The path of the field at fault leads the message (`toolsearch.idle_stop_secs: ..`).
        let mut section = sections.toolsearch;
        let mut rate_rules = toolsearch_mcp::rate::RateLimits::default();
        rate::take_rules(section.as_mut(), &mut rate_rules).map_err(bad)?;
        let mut settings: GatewaySettings = match section {
            None => GatewaySettings::default(),
            Some(v) => serde_path_to_error::deserialize(v).map_err(|e| match field_path(e.path()).as_str() {
                "." => bad(format!("toolsearch: {}", plain_error(e.inner()))),
                path => bad(format!("toolsearch.{path}: {}", plain_error(e.inner()))),
            })?,
        };
        let mut servers = BTreeMap::new();
        let mut policies = BTreeMap::new();
        for (name, entry) in sections.servers {
            let at = format!("{}.{name}", sections.at);
            let their_names = other_clients::their_names(&entry);
            let (entry, note) = other_clients::read(&at, entry).map_err(bad)?;
            notes.extend(note);
            let entry = servers::read(sections.at, &name, entry, &sections.vars, settings.lazy, path)
                .map_err(|e| bad(other_clients::in_their_words(&at, e, &their_names)))?;
            match entry {
                servers::Entry::Server(spec, policy, always_load) => {
                    settings.toolset.always_load.extend(always_load);
                    policies.insert(name.clone(), policy);
                    servers.insert(name, spec);
                }
                servers::Entry::Skipped(why) => notes.extend(why),
            }
        }
        if servers.is_empty() {
            return Err(bad(format!("{}: no server to put the gateway in front of", sections.at)));
        }
        for name in servers.keys().filter(|n| n.contains("__")) {
            notes.push(format!(
                "{}.{name}: a server name with `__` makes `SERVER__TOOL` names ambiguous (`{name}__TOOL` may also \
                 read as another server's tool); a call by such a name that reads two ways is refused, naming \
                 both ids, and call_tool with the id always works",
                sections.at
            ));
        }
        let mut tokens = BTreeMap::new();
        for (token, mut grant) in std::mem::take(&mut settings.tokens) {
            let token = expand_env(&token).map_err(|e| bad(format!("toolsearch.tokens: {e}")))?;
            if token.trim().is_empty() {
                return Err(bad("toolsearch.tokens: a token is empty (is its variable set?)".into()));
            }
            if grant.name.trim().is_empty() {
                grant.name = toolsearch_mcp::process_token_name(&token);
                settings.unnamed.push(token.clone());
            }
            tokens.insert(token, grant);
        }
        settings.tokens = tokens;
        settings.rate_limits.rules = rate_rules.rules;
        settings.rate_limits.when_store_down = rate_rules.when_store_down;
        settings.rate_limits.check().map_err(|e| {
            let at = if e.starts_with("rate[") { "limits." } else { "rate_limits." };
            bad(format!("toolsearch.{at}{e}"))
        })?;
        let state = &mut settings.state;
        for (what, value) in [("store", &mut state.store), ("key", &mut state.key), ("advertise", &mut state.advertise)]
        {
            if let Some(v) = value.as_mut() {
                *v = expand_env(v).map_err(|e| bad(format!("toolsearch.state.{what}: {e}")))?;
            }
        }
        settings.state.check().map_err(|e| bad(format!("toolsearch.state.{e}")))?;
        settings.limits.check().map_err(|e| bad(format!("toolsearch.limits.{e}")))?;
        toolsearch_mcp::strikes::parse_blocks(&settings.trusted_proxies).map_err(|e| bad(format!("toolsearch.{e}")))?;
        if let Some(model) = settings.model.as_mut() {
            let named = toolsearch_embed::NAMED_MODELS.iter().any(|(n, _)| n == model);
            let dir = path.parent().unwrap_or(Path::new("")).join(&*model);
            if !named && !dir.is_dir() {
                return Err(bad(format!(
                    "toolsearch.model: {model:?} is neither a named model (stock, tools) nor a directory"
                )));
            }
            if !named {
                *model = dir.display().to_string();
            }
        }
        if let Some(oauth) = &mut settings.auth.oauth {
            for (i, issuer) in oauth.issuers.iter_mut().enumerate() {
                if let Some(introspection) = &mut issuer.introspection {
                    let at = format!("toolsearch.auth.oauth.issuers[{i}].introspection.client_secret");
                    introspection.client_secret =
                        expand_env(&introspection.client_secret).map_err(|e| bad(format!("{at}: {e}")))?;
                }
            }
            oauth.check().map_err(|e| bad(format!("toolsearch.auth.oauth.{e}")))?;
        }
        if let Some(url) = settings.auth.callback_url.as_mut() {
            *url = expand_env(url).map_err(|e| bad(format!("toolsearch.auth.callback_url: {e}")))?;
            crate::login::document::check_callback(url)
                .map_err(|e| bad(format!("toolsearch.auth.callback_url: {e}")))?;
        }
        for (name, spec) in servers.iter_mut() {
            if let ServerSpec::Http { oauth: Some(oauth), .. } = spec {
                if oauth.per_user && settings.auth.callback_url.is_none() {
                    return Err(bad(format!(
                        "{}.{name}.oauth.per_user: each caller logs in through the gateway's redirect: set \
                         toolsearch.auth.callback_url (e.g. https://gateway.example/oauth/callback)",
                        sections.at
                    )));
                }
                if oauth.per_user && oauth.grant == crate::login::GrantKind::ClientCredentials {
                    return Err(bad(format!(
                        "{}.{name}.oauth.per_user: client_credentials has no user: use one or the other",
                        sections.at
                    )));
                }
                // Only a per-user login goes through the gateway's redirect: a change of it
                // restarts no other server.
                oauth.callback_url = settings.auth.callback_url.clone().filter(|_| oauth.per_user);
            }
        }
        let paths = [&settings.auth.callback_url, &settings.auth.client_metadata_url]
            .map(|u| u.as_deref().and_then(crate::login::document::path));
        if paths[0].is_some() && paths[0] == paths[1] {
            return Err(bad("toolsearch.auth.callback_url: the same path as client_metadata_url: use another".into()));
        }
        if let Some(url) = settings.auth.client_metadata_url.as_mut() {
            *url = expand_env(url).map_err(|e| bad(format!("toolsearch.auth.client_metadata_url: {e}")))?;
            crate::login::document::check_url(url)
                .map_err(|e| bad(format!("toolsearch.auth.client_metadata_url: {e}")))?;
            // Only a login with no client of its own runs as the document's (a change of it
            // restarts no other server).
            for spec in servers.values_mut() {
                if let ServerSpec::Http { oauth: Some(oauth), .. } = spec {
                    let own_client =
                        oauth.client_id.is_some() || oauth.grant == crate::login::GrantKind::ClientCredentials;
                    oauth.metadata_document = (!own_client).then(|| url.clone());
                }
            }
        }
        if let Some(telemetry) = &settings.telemetry {
            toolsearch_mcp::trace::check(telemetry).map_err(|e| bad(format!("toolsearch.telemetry.{e}")))?;
        }
        for key in settings.facades.keys().chain(settings.requires.keys()) {
            if !servers.contains_key(key) {
                return Err(bad(format!("toolsearch: {key:?} is not a server of {}", sections.at)));
            }
        }
        examples::check(&settings.examples, |server| servers.contains_key(server)).map_err(bad)?;
        for (what, t, least) in [
            ("call_timeout_secs", settings.call_timeout_secs, 1),
            ("connect_timeout_secs", settings.connect_timeout_secs, 1),
            ("startup_wait_secs", settings.startup_wait_secs, 0),
        ] {
            if !(least..=toolsearch_exec::MAX_TIMEOUT_SECS).contains(&t) {
                return Err(bad(format!(
                    "toolsearch.{what}: {t} is out of range: use {least} to {}",
                    toolsearch_exec::MAX_TIMEOUT_SECS
                )));
            }
        }
        Ok(GatewayConfig { path: path.to_path_buf(), servers, policies, settings, notes, stamp })
    }
}

impl GatewaySettings {
    /// Names each token the config leaves unnamed with the state directory's key
    /// ([`toolsearch_mcp::token_name`]), so its name is the same across restarts and replicas.
    pub fn name_tokens(&mut self, state: &Path) -> Result<(), ServeError> {
        if self.unnamed.is_empty() {
            return Ok(());
        }
        let key = toolsearch_mcp::state_token_key(state)?;
        for token in &self.unnamed {
            if let Some(grant) = self.tokens.get_mut(token) {
                grant.name = toolsearch_mcp::token_name(&key, token);
            }
        }
        Ok(())
    }
}
