//! One server entry as Claude Desktop, Cursor, Claude Code and VS Code write it, read into a
//! [`ServerSpec`] and its [`ServerPolicy`]: a command (stdio) or a URL (Streamable HTTP), with
//! `${...}` expanded in the command, arguments, folder, environment, URL and headers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use toolsearch_mcp::plain_error;

use super::env::Vars;
use super::{InheritEnv, ServerPolicy, ServerSpec, ToolFilter};

/// A server entry as written, before checking which kind it is.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// VS Code's file of `NAME=value` lines for the child's environment (`env` wins).
    #[serde(rename = "envFile")]
    env_file: Option<String>,
    /// `true`, or the names of the gateway's variables a stdio child also gets.
    inherit_env: Option<InheritForm>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, HeaderForm>,
    /// `stdio`, `http` or `streamable-http` (optional; decided by `command` / `url`).
    #[serde(rename = "type")]
    kind: Option<String>,
    /// VS Code's development mode (watching and debugging a server): VS Code's own, left alone.
    dev: Option<Value>,
    /// Skipped when true.
    #[serde(default)]
    disabled: bool,
    /// `pin` (the default: a tool whose definition changes is held until approved) or `auto`.
    trust: Option<String>,
    /// Hold tools whose definitions look injected, as changed ones are (default false).
    #[serde(default)]
    hold_flagged: bool,
    /// Which of the server's tools pass through, by glob on the upstream's tool name.
    #[serde(default)]
    tools: ToolFilter,
    /// `true` (every tool of the server) or globs on its tool names: tools never deferred,
    /// listed up front in every session (`ToolSetConfig::always_load`).
    always_load: Option<AlwaysLoadForm>,
    /// Started only when a call, read or prompt needs it (default: `toolsearch.lazy`).
    lazy: Option<bool>,
    /// OAuth 2.1 login to an HTTP server (`crate::login`).
    oauth: Option<crate::login::UpstreamOAuth>,
    /// Its longest forwarded call, in seconds (default: `toolsearch.call_timeout_secs`).
    call_timeout_secs: Option<u64>,
}

/// `always_load` as written: the whole server, or globs on its tool names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "must be true, false, or a list of tool names (globs)")]
enum AlwaysLoadForm {
    All(bool),
    Names(Vec<String>),
}

/// `inherit_env` as written: all of the gateway's environment, or the names of some of it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "must be true, false, or a list of variable names")]
enum InheritForm {
    All(bool),
    Names(Vec<String>),
}

/// A header as written: a value, or a command that prints it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "must be a string, or an object with `command` (and `prefix`)")]
enum HeaderForm {
    Value(String),
    Command(crate::credentials::HeaderCommand),
}

/// One entry, read.
#[derive(Debug)]
pub(super) enum Entry {
    /// A server to put the gateway in front of, with its `always_load` ids.
    Server(ServerSpec, ServerPolicy, Vec<String>),
    /// Not started, with why (disabled says nothing; this gateway itself says why).
    Skipped(Option<String>),
}

/// Reads the entry `name` of the map at `at` (`mcpServers.NAME` in errors); `lazy` is the
/// gateway's default, and `config` the file being read (an entry that starts a gateway on it
/// is this gateway itself).
pub(super) fn read(
    at: &str,
    name: &str,
    value: Value,
    vars: &Vars,
    lazy: bool,
    config: &std::path::Path,
) -> Result<Entry, String> {
    let field = |what: &str| format!("{at}.{name}.{what}");
    let s: RawServer = serde_path_to_error::deserialize(value).map_err(|e| match e.path().to_string().as_str() {
        "." => format!("{at}.{name}: {}", plain_error(e.inner())),
        path => format!("{}: {}", field(path), plain_error(e.inner())),
    })?;
    if s.disabled {
        return Ok(Entry::Skipped(None));
    }
    if name.is_empty() || name.contains(['.', '/']) || name.chars().any(char::is_control) {
        return Err(format!("{at}.{name:?}: a server name must be non-empty, without `.`, `/` or control characters"));
    }
    let expand = |what: &str, text: &str| vars.expand(text).map_err(|e| format!("{}: {e}", field(what)));
    let expand_map = |what: &str, map: BTreeMap<String, String>| -> Result<BTreeMap<String, String>, String> {
        map.into_iter().map(|(k, v)| Ok((k.clone(), expand(&format!("{what}.{k}"), &v)?))).collect()
    };
    let spec = match (s.command, s.url) {
        (Some(command), None) if !command.trim().is_empty() => {
            let inherit_env = match s.inherit_env {
                None | Some(InheritForm::All(false)) => InheritEnv::Minimal,
                Some(InheritForm::All(true)) => InheritEnv::All,
                Some(InheritForm::Names(names)) => {
                    if let Some(n) = names.iter().find(|n| n.is_empty() || n.contains(['=', '\0'])) {
                        return Err(format!("{}: {n:?} is not a variable name", field("inherit_env")));
                    }
                    InheritEnv::Names(names)
                }
            };
            let mut env = match &s.env_file {
                Some(file) => env_file(&expand("envFile", file)?).map_err(|e| format!("{}: {e}", field("envFile")))?,
                None => BTreeMap::new(),
            };
            env.extend(expand_map("env", s.env)?);
            let command = expand("command", &command)?;
            let args: Vec<String> =
                s.args.iter().enumerate().map(|(i, a)| expand(&format!("args[{i}]"), a)).collect::<Result<_, _>>()?;
            let cwd = s.cwd.map(|c| expand("cwd", &c.to_string_lossy()).map(PathBuf::from)).transpose()?;
            if super::itself::starts_this_gateway(&command, &args, cwd.as_deref(), &env, config) {
                return Ok(Entry::Skipped(Some(format!(
                    "{at}.{name}: skipped: it starts this gateway itself on this config (`{command} {}`), which \
                     would start it again without end; the gateway serves its servers already",
                    args.join(" ")
                ))));
            }
            ServerSpec::Stdio { command, args, env, cwd, inherit_env }
        }
        (None, Some(_)) if s.inherit_env.is_some() => {
            return Err(format!(
                "{}: only a server started as a command (stdio) has an environment",
                field("inherit_env")
            ))
        }
        (None, Some(url)) => {
            let url = expand("url", &url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("{}: {url:?} is not an http(s) URL", field("url")));
            }
            let (mut values, mut header_commands) = (BTreeMap::new(), BTreeMap::new());
            for (k, v) in s.headers {
                match v {
                    HeaderForm::Value(v) => {
                        values.insert(k, v);
                    }
                    HeaderForm::Command(c) if c.command.is_empty() => {
                        return Err(format!("{}: empty command", field(&format!("headers.{k}.command"))))
                    }
                    HeaderForm::Command(c) => {
                        header_commands.insert(k, c);
                    }
                }
            }
            let mut oauth = s.oauth;
            if let Some(crate::login::SecretForm::Value(v)) = oauth.as_mut().and_then(|o| o.client_secret.as_mut()) {
                *v = expand("oauth.client_secret", v)?;
            }
            if let Some(o) = oauth.as_ref() {
                endpoints(o, &field)?;
            }
            ServerSpec::Http {
                url,
                headers: expand_map("headers", values)?,
                header_commands,
                oauth: oauth.map(Box::new),
                sse: s.kind.as_deref() == Some("sse"),
            }
        }
        _ => return Err(format!("{at}.{name}: give either `command` (stdio) or `url` (Streamable HTTP)")),
    };
    if let Some(kind) = s.kind.as_deref() {
        let fits = matches!(
            (kind, &spec),
            ("stdio", ServerSpec::Stdio { .. })
                | ("http" | "streamable-http" | "streamableHttp" | "sse", ServerSpec::Http { .. })
        );
        if !fits {
            return Err(format!("{}: {kind:?} does not fit the entry", field("type")));
        }
    }
    let trust_changes = match s.trust.as_deref() {
        None | Some("pin") => false,
        Some("auto") => true,
        Some(other) => return Err(format!("{}: {other:?}: use \"pin\" (the default) or \"auto\"", field("trust"))),
    };
    let mut always_load = Vec::new();
    match s.always_load {
        None | Some(AlwaysLoadForm::All(false)) => {}
        Some(AlwaysLoadForm::All(true)) => always_load.push(toolsearch_catalog::tool_id(name, "*")),
        Some(AlwaysLoadForm::Names(globs)) => {
            if let Some(g) = globs.iter().find(|g| g.trim().is_empty()) {
                return Err(format!("{}: {g:?} is not a tool name or glob", field("always_load")));
            }
            always_load.extend(globs.iter().map(|g| toolsearch_catalog::tool_id(name, g)));
        }
    }
    let _ = s.dev; // VS Code's own business.
    if let Some(t) = s.call_timeout_secs.filter(|t| !(1..=toolsearch_exec::MAX_TIMEOUT_SECS).contains(t)) {
        return Err(format!(
            "{}: {t} is out of range: use 1 to {}",
            field("call_timeout_secs"),
            toolsearch_exec::MAX_TIMEOUT_SECS
        ));
    }
    let policy = ServerPolicy {
        trust_changes,
        hold_flagged: s.hold_flagged,
        tools: s.tools,
        lazy: s.lazy.unwrap_or(lazy),
        call_timeout_secs: s.call_timeout_secs,
    };
    Ok(Entry::Server(spec, policy, always_load))
}

/// Checks an entry's `oauth` addresses (`field` names one in errors): each `https` (or
/// loopback); endpoints given by hand come as a pair with a client registered beforehand, for
/// without the authorization server's metadata the gateway cannot register itself.
fn endpoints(o: &crate::login::UpstreamOAuth, field: &dyn Fn(&str) -> String) -> Result<(), String> {
    for (name, url) in [
        ("oauth.authorization_server", &o.authorization_server),
        ("oauth.authorization_endpoint", &o.authorization_endpoint),
        ("oauth.token_endpoint", &o.token_endpoint),
        ("oauth.device_authorization_endpoint", &o.device_authorization_endpoint),
    ] {
        if let Some(url) = url {
            toolsearch_mcp::oauth::fetch::secure_url(url).map_err(|e| format!("{}: {e}", field(name)))?;
        }
    }
    for (name, url) in [
        ("oauth.authorization_endpoint", &o.authorization_endpoint),
        ("oauth.device_authorization_endpoint", &o.device_authorization_endpoint),
    ] {
        if url.is_some() && o.token_endpoint.is_none() {
            return Err(format!("{}: give oauth.token_endpoint with it", field(name)));
        }
    }
    if o.token_endpoint.is_some() && o.client_id.is_none() {
        return Err(format!(
            "{}: give oauth.client_id with it (a client registered there): without the authorization \
             server's metadata the gateway cannot register itself",
            field("oauth.token_endpoint")
        ));
    }
    Ok(())
}

/// The variables of a `NAME=value` file (VS Code's `envFile`): blank lines and `#` comments
/// skipped, `export ` and matching quotes around a value dropped.
fn env_file(path: &str) -> Result<BTreeMap<String, String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!("{path}:{}: expected NAME=value", i + 1));
        };
        let v = v.trim();
        let unquoted = ['"', '\''].iter().find_map(|&q| v.strip_prefix(q).and_then(|x| x.strip_suffix(q))).unwrap_or(v);
        out.insert(k.trim().to_owned(), unquoted.to_owned());
    }
    Ok(out)
}
