//! What `toolsearch serve --config FILE` reads, the error of a configuration that cannot be
//! used, and what a bearer token grants (the HTTP endpoint's tokens).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolsearch_disclosure::ToolSetConfig;

/// Server configuration: the tool set, the caller's scopes, the availability checks and the
/// executor, as commands.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeConfig {
    /// The tool set (discovery, pinned tools, facades).
    pub toolset: ToolSetConfig,
    /// The scopes the client holds. Absent, `access` decides.
    pub scopes: Option<Vec<String>>,
    /// What a client holds when `scopes` is absent: `open` (the default; it is trusted and
    /// sees every tool, which the server says on start) or `closed` (no scopes: it sees only
    /// the tools that require none).
    pub access: Access,
    /// Availability checks by name: a command (program and arguments) that exits 0 when the
    /// group is available.
    pub checks: BTreeMap<String, Vec<String>>,
    /// The command that runs catalogue tools: it reads `{"tool_id", "arguments"}` on stdin and
    /// prints the result; a non-zero exit is the tool's error. Absent: calls are refused.
    pub executor: Option<Vec<String>>,
    /// How long one executor or check run may take, in seconds (default 60, at most 86400).
    pub timeout_secs: Option<u64>,
}

/// The default access of a client whose scopes are not configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Trusted: every tool.
    #[default]
    Open,
    /// No scopes: only tools that require none.
    Closed,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Unreadable or invalid configuration file.
    #[error("{path}: {message}", path = .0.display(), message = .1)]
    Config(PathBuf, String),
    /// The tool set could not be built.
    #[error(transparent)]
    Disclosure(#[from] toolsearch_disclosure::DisclosureError),
    /// Reading or writing the transport failed.
    #[error("transport: {0}")]
    Io(#[from] std::io::Error),
    /// The HTTP endpoint could not be served.
    #[error("http: {0}")]
    Http(String),
    /// The embedding model could not be loaded.
    #[error("{0}")]
    Model(String),
}

impl ServeConfig {
    /// Reads a configuration file; errors name the file and what is wrong.
    pub fn load(path: &Path) -> Result<ServeConfig, ServeError> {
        let text = read_config(path).map_err(|e| ServeError::Config(path.to_path_buf(), e))?;
        // The field at fault leads the message (`toolset.discovery.detail: unknown variant ..`).
        let config: ServeConfig = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
            .map_err(|e| {
                let at = field_path(e.path());
                let inner = e.into_inner();
                ServeError::Config(
                    path.to_path_buf(),
                    plain_error(if at == "." { inner.to_string() } else { format!("{at}: {inner}") }),
                )
            })?;
        for (name, argv) in &config.checks {
            if argv.is_empty() {
                return Err(ServeError::Config(path.to_path_buf(), format!("checks.{name}: empty command")));
            }
        }
        if let Some(t) = config.timeout_secs.filter(|t| !(1..=toolsearch_exec::MAX_TIMEOUT_SECS).contains(t)) {
            return Err(ServeError::Config(
                path.to_path_buf(),
                format!("timeout_secs: {t} is out of range: use 1 to {}", toolsearch_exec::MAX_TIMEOUT_SECS),
            ));
        }
        if config.executor.as_ref().is_some_and(Vec::is_empty) {
            return Err(ServeError::Config(path.to_path_buf(), "executor: empty command".into()));
        }
        Ok(config)
    }
}

/// What a bearer token grants, as written: its scopes, or its scopes and a name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "must be a list of scopes, or an object with `name` and `scopes`")]
enum GrantForm {
    Scopes(Vec<String>),
    Named {
        name: String,
        #[serde(default)]
        scopes: Vec<String>,
    },
}

/// What a bearer token grants: the scopes its sessions hold, and the name logs and the audit
/// trail know it by (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "GrantForm")]
pub struct Grant {
    /// Shown in logs and the audit trail; empty until the config names it.
    pub name: String,
    /// The scopes held.
    pub scopes: Vec<String>,
}

impl TryFrom<GrantForm> for Grant {
    type Error = String;
    fn try_from(form: GrantForm) -> Result<Grant, String> {
        Ok(match form {
            GrantForm::Scopes(scopes) => Grant { name: String::new(), scopes },
            GrantForm::Named { name, scopes } => Grant { name, scopes },
        })
    }
}

/// The path of a config field as an error shows it (`limits.list.max_pages`, as
/// `serde_path_to_error` writes it), except that a key of a `tokens` map, a bearer token
/// itself, is not shown (`tokens.<a token of 24 bytes, not shown>.scopes`): an error must not
/// carry a secret. A key that only names a variable (`${IDE_TOKEN}`) is shown.
pub fn field_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    let mut under_tokens = false;
    for segment in path.iter() {
        if !out.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            out.push('.');
        }
        match segment {
            Segment::Map { key } if under_tokens && !is_reference(key) => {
                out.push_str(&format!("<a token of {} bytes, not shown>", key.len()))
            }
            other => out.push_str(&other.to_string()),
        }
        under_tokens = matches!(segment, Segment::Map { key } if key == "tokens");
    }
    if out.is_empty() {
        out.push('.');
    }
    out
}

/// Whether `key` is `${NAME}` and nothing else.
fn is_reference(key: &str) -> bool {
    key.strip_prefix("${")
        .and_then(|k| k.strip_suffix('}'))
        .is_some_and(|n| !n.is_empty() && !n.contains(['$', '{', '}']))
}

/// A configuration error as a person reads it: serde names the Rust type a value was meant to
/// be (`expected struct GatewayLimits`, `any variant of untagged enum GrantForm`); this says
/// what to write there instead (`expected an object`, `any of the forms this field takes`).
/// A value of the wrong type or out of range is said by its kind only (`invalid type: string,
/// expected a map`, not the string): it may be a secret in a secret's place (a header, an
/// environment value, a database URL), and the field's path already says where it is.
/// JSON nested past what serde reads is said so, not as serde's "recursion limit exceeded".
pub fn plain_error(message: impl std::fmt::Display) -> String {
    const NAMED: [(&str, &str); 4] = [
        ("any variant of untagged enum ", "any of the forms this field takes"),
        ("untagged enum ", "one of the forms this field takes"),
        ("struct ", "an object"),
        ("enum ", "one of its values"),
    ];
    let message = message.to_string();
    let mut out = String::with_capacity(message.len());
    let mut rest = message.as_str();
    'scan: while !rest.is_empty() {
        for (kind, plain) in NAMED {
            let name_len = rest.strip_prefix(kind).map_or(0, |after| {
                let first_upper = after.starts_with(|c: char| c.is_ascii_uppercase());
                after.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(after.len())
                    * first_upper as usize
            });
            if name_len > 0 && (out.is_empty() || out.ends_with(' ')) {
                out.push_str(plain);
                rest = &rest[kind.len() + name_len..];
                continue 'scan;
            }
        }
        let next = rest.chars().next().map_or(1, char::len_utf8);
        out.push_str(&rest[..next]);
        rest = &rest[next..];
    }
    toolsearch_catalog::too_deep(without_value(&out))
}

/// The text of the config file at `path`; an error says why it cannot be read, or where it is
/// not UTF-8 text, to follow the file's name.
pub fn read_config(path: &Path) -> Result<String, String> {
    toolsearch_catalog::text_of(std::fs::read(path).map_err(|e| e.to_string())?)
}

/// serde's `invalid type: string "VALUE", expected ...` (or `invalid value: integer `5`, ...`)
/// with only the kind of value said.
fn without_value(message: &str) -> String {
    for lead in ["invalid type: ", "invalid value: "] {
        if let Some((unexpected, rest)) = message.strip_prefix(lead).and_then(|m| m.rsplit_once(", expected")) {
            let kind = unexpected.split(['"', '`']).next().unwrap_or_default().trim();
            return format!("{lead}{kind}, expected{rest}");
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::{field_path, plain_error};

    #[test]
    fn rust_type_names_become_what_to_write() {
        let said = "invalid type: integer `5`, expected struct GatewayLimits at line 1";
        assert_eq!(plain_error(said), "invalid type: integer, expected an object at line 1");
        let said = "data did not match any variant of untagged enum GrantForm";
        assert_eq!(plain_error(said), "data did not match any of the forms this field takes");
        assert_eq!(plain_error("expected enum Mode"), "expected one of its values");
        // Words that merely look alike are left alone.
        for kept in ["a struct field", "obstruct Foo", "enum value", "unknown variant `x`, expected one of `a`"] {
            assert_eq!(plain_error(kept), kept);
        }
        let said = "recursion limit exceeded at line 1 column 666";
        let plain = "nested more than 128 levels deep, the most read (flatten what nests here) at line 1 column 666";
        assert_eq!(plain_error(said), plain);
    }

    /// A map of maps of scope lists, as the test configs are read.
    type Shape = std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<String>>>;

    /// The path of the first error deserializing `v` as a [`Shape`]: as an error shows it,
    /// and as `serde_path_to_error` writes it.
    fn paths_of(v: serde_json::Value) -> (String, String) {
        let e = serde_path_to_error::deserialize::<_, Shape>(v).unwrap_err();
        (field_path(e.path()), e.path().to_string())
    }

    #[test]
    fn a_value_of_the_wrong_type_is_said_by_its_kind() {
        let said = r#"invalid type: string "Bearer s3cret, expected \"x\"", expected a map"#;
        assert_eq!(plain_error(said), "invalid type: string, expected a map");
        let said = "invalid value: integer `1234`, expected a string at line 2 column 7";
        assert_eq!(plain_error(said), "invalid value: integer, expected a string at line 2 column 7");
        assert_eq!(plain_error("invalid type: map, expected a string"), "invalid type: map, expected a string");
    }

    #[test]
    fn a_token_in_a_field_path_is_not_shown() {
        let (shown, _) = paths_of(serde_json::json!({"tokens": {"my-secret-token": [5]}}));
        assert_eq!(shown, "tokens.<a token of 15 bytes, not shown>[0]");
        assert_eq!(paths_of(serde_json::json!({"tokens": {"${IDE_TOKEN}": 5}})).0, "tokens.${IDE_TOKEN}");
        for elsewhere in [serde_json::json!({"other": {"my-secret-token": [1]}}), serde_json::json!(5)] {
            let (shown, written) = paths_of(elsewhere);
            assert_eq!(shown, written);
        }
    }
}
