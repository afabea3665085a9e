//! What Gemini CLI's `settings.json` holds beyond the entries other clients write
//! ([`super::other_clients`]): its `oauth` section in its own names, the top-level
//! `mcp.allowed` and `mcp.excluded` lists of servers to start, `url` meaning an SSE endpoint
//! ([`sse_urls`]), and `timeout` in milliseconds ([`timeouts_in_ms`]). Its `$NAME` form of a
//! variable is read by [`super::env::Vars`] in a file Gemini CLI reads ([`is_settings`]).

use std::path::Path;

use serde_json::{Map, Value};

/// What the gateway does instead of the `oauth` fields of Gemini CLI's it leaves alone.
pub(super) const OAUTH_FOUND: &str = "the gateway is redirected to itself and asks for tokens for the server's own URL";

/// The fields of Gemini CLI's `oauth` section, by which it is told from the gateway's.
const OAUTH_FIELDS: &[&str] = &[
    "enabled",
    "clientId",
    "clientSecret",
    "authorizationUrl",
    "tokenUrl",
    "redirectUri",
    "tokenParamName",
    "audiences",
];

/// The fields of its `oauth` section read as the gateway's: (its name, the gateway's).
pub(super) const OAUTH_RENAMED: &[(&str, &str)] = &[
    ("clientId", "client_id"),
    ("clientSecret", "client_secret"),
    ("authorizationUrl", "authorization_endpoint"),
    ("tokenUrl", "token_endpoint"),
];

/// Whether the `oauth` section `oauth` is written in Gemini CLI's names.
pub(super) fn is_its_oauth(oauth: &Value) -> bool {
    oauth.as_object().is_some_and(|o| o.keys().any(|k| OAUTH_FIELDS.contains(&k.as_str())))
}

/// The fields of its `oauth` section that the gateway finds for itself, left alone.
const OAUTH_LEFT: &[&str] = &["redirectUri", "tokenParamName", "audiences"];

/// Whether `path` is a file Gemini CLI reads: `settings.json` in a `.gemini` folder (a user's or
/// a project's) or in `gemini-cli` (the system's, `/etc/gemini-cli/settings.json`).
pub(super) fn is_settings(path: &Path) -> bool {
    let folder = path.parent().and_then(Path::file_name);
    path.file_name().is_some_and(|n| n == "settings.json")
        && folder.is_some_and(|f| f == ".gemini" || f == "gemini-cli")
}

/// Reads Gemini CLI's `oauth` section of the entry at `at` as the gateway's: `clientId`,
/// `clientSecret`, `authorizationUrl` and `tokenUrl` as `client_id`, `client_secret`,
/// `authorization_endpoint` and `token_endpoint`, `scopes` as they are, and `enabled: false` as
/// no section. Returns the fields it left alone; a section of the gateway's own is
/// untouched.
pub(super) fn oauth(at: &str, fields: &mut Map<String, Value>) -> Result<Vec<&'static str>, String> {
    let Some(section) = fields.get_mut("oauth").filter(|o| is_its_oauth(o)) else { return Ok(Vec::new()) };
    let Value::Object(oauth) = section else { return Ok(Vec::new()) };
    match oauth.remove("enabled") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            fields.remove("oauth");
            return Ok(Vec::new());
        }
        Some(_) => return Err(format!("{at}.oauth.enabled: must be true or false")),
    }
    for &(theirs, ours) in OAUTH_RENAMED {
        super::other_clients::rename(&format!("{at}.oauth"), oauth, theirs, ours)?;
    }
    Ok(OAUTH_LEFT.iter().copied().filter(|field| oauth.remove(*field).is_some()).collect())
}

/// Marks the entries of a Gemini CLI file whose `url` is, in its reading, an SSE endpoint
/// (its Streamable HTTP one is `httpUrl`) with `"type": "sse"`, unless they say a type.
pub(super) fn sse_urls(servers: &mut Map<String, Value>) {
    for entry in servers.values_mut() {
        if let Value::Object(fields) = entry {
            if fields.contains_key("url") && !fields.contains_key("type") {
                fields.insert("type".to_owned(), Value::from("sse"));
            }
        }
    }
}

/// Makes the `timeout` of each entry of a Gemini CLI file, in milliseconds there, whole
/// seconds (rounded up), as Cline and Roo Code write it: [`super::other_clients`] reads that as
/// the entry's `call_timeout_secs`. The map is at `at` (`mcpServers`) in errors.
pub(super) fn timeouts_in_ms(at: &str, servers: &mut Map<String, Value>) -> Result<(), String> {
    for (name, entry) in servers.iter_mut() {
        let Some(ms) = entry.get_mut("timeout") else { continue };
        let max = toolsearch_exec::MAX_TIMEOUT_SECS * 1000;
        let Some(whole) = ms.as_u64().filter(|ms| (1..=max).contains(ms)) else {
            return Err(format!("{at}.{name}.timeout: {ms} is not a call timeout: use milliseconds, 1 to {max}"));
        };
        *ms = Value::from(whole.div_ceil(1000));
    }
    Ok(())
}

/// Applies Gemini CLI's `mcp.allowed` (only these servers) and `mcp.excluded` (not these) of
/// the file's top level `top` to `servers`, and removes them from `top`: a note naming the
/// servers left out, if any.
pub(super) fn server_lists(
    top: &mut Map<String, Value>,
    servers: &mut Map<String, Value>,
) -> Result<Option<String>, String> {
    let Some(Value::Object(mcp)) = top.get_mut("mcp") else { return Ok(None) };
    let (allowed, excluded) = (mcp.remove("allowed"), mcp.remove("excluded"));
    if mcp.is_empty() {
        top.remove("mcp");
    }
    let names = |at: &str, list: Value| match list {
        Value::Array(names) if names.iter().all(Value::is_string) => {
            Ok(names.into_iter().filter_map(|n| n.as_str().map(str::to_owned)).collect::<Vec<String>>())
        }
        _ => Err(format!("{at}: must be a list of server names")),
    };
    let allowed = allowed.map(|list| names("mcp.allowed", list)).transpose()?;
    let excluded = excluded.map(|list| names("mcp.excluded", list)).transpose()?.unwrap_or_default();
    let mut out = Vec::new();
    servers.retain(|name, _| {
        let keep = allowed.as_ref().is_none_or(|a| a.contains(name)) && !excluded.contains(name);
        if !keep {
            out.push(name.clone());
        }
        keep
    });
    Ok((!out.is_empty())
        .then(|| format!("not started: {} (left out by `mcp.allowed` or `mcp.excluded`)", out.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gemini_clis_oauth_and_server_lists_are_read_as_the_gateways() {
        let mut entry = json!({"oauth": {"enabled": true, "clientId": "c", "scopes": ["s"], "tokenUrl": "https://t",
                                         "audiences": ["a"]}});
        let left = oauth("m.x", entry.as_object_mut().unwrap()).unwrap();
        let read = json!({"oauth": {"client_id": "c", "scopes": ["s"], "token_endpoint": "https://t"}});
        assert_eq!((entry, left), (read, vec!["audiences"]));
        let mut off = json!({"url": "u", "oauth": {"enabled": false, "clientId": "c"}});
        assert!(oauth("m.x", off.as_object_mut().unwrap()).unwrap().is_empty());
        assert_eq!(off, json!({"url": "u"}));
        // The gateway's own section is not touched; a mix of names for one field is refused.
        let mut ours = json!({"oauth": {"client_id": "c", "grant": "client_credentials"}});
        let before = ours.clone();
        assert!(oauth("m.x", ours.as_object_mut().unwrap()).unwrap().is_empty());
        assert_eq!(ours, before);
        let mut both = json!({"oauth": {"client_id": "c", "clientId": "d"}});
        assert_eq!(
            oauth("m.x", both.as_object_mut().unwrap()).unwrap_err(),
            "m.x.oauth: give `client_id` or `clientId`, not both"
        );

        let mut top = json!({"mcp": {"excluded": ["b"], "serverCommand": "x"}}).as_object().unwrap().clone();
        let mut servers = json!({"a": {}, "b": {}, "c": {}}).as_object().unwrap().clone();
        let note = server_lists(&mut top, &mut servers).unwrap();
        assert_eq!(servers.keys().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(note.as_deref(), Some("not started: b (left out by `mcp.allowed` or `mcp.excluded`)"));
        assert_eq!(Value::Object(top), json!({"mcp": {"serverCommand": "x"}}));
        let mut top = json!({"mcp": {"allowed": ["a", "c"], "excluded": ["c"]}}).as_object().unwrap().clone();
        server_lists(&mut top, &mut servers).unwrap();
        assert_eq!((servers.keys().map(String::as_str).collect::<Vec<_>>(), top.len()), (vec!["a"], 0));
        let mut top = json!({"mcp": {"allowed": "a"}}).as_object().unwrap().clone();
        assert_eq!(server_lists(&mut top, &mut servers).unwrap_err(), "mcp.allowed: must be a list of server names");

        // Its `url` is an SSE endpoint unless a type is said; `httpUrl` is left for the rename.
        let mut servers = json!({"s": {"url": "u"}, "h": {"httpUrl": "u"}, "t": {"url": "u", "type": "http"}});
        sse_urls(servers.as_object_mut().unwrap());
        let want = json!({"s": {"url": "u", "type": "sse"}, "h": {"httpUrl": "u"}, "t": {"url": "u", "type": "http"}});
        assert_eq!(servers, want);

        // Its `timeout` is in milliseconds: made whole seconds, rounded up.
        let mut servers = json!({"a": {"timeout": 600_000}, "b": {"timeout": 1}, "c": {"url": "u"}});
        timeouts_in_ms("mcpServers", servers.as_object_mut().unwrap()).unwrap();
        assert_eq!(servers, json!({"a": {"timeout": 600}, "b": {"timeout": 1}, "c": {"url": "u"}}));
        let mut bad = json!({"a": {"timeout": -5}});
        let e = timeouts_in_ms("mcpServers", bad.as_object_mut().unwrap()).unwrap_err();
        assert_eq!(e, "mcpServers.a.timeout: -5 is not a call timeout: use milliseconds, 1 to 86400000");

        assert!(is_settings(Path::new("/home/u/.gemini/settings.json")));
        assert!(is_settings(Path::new("/etc/gemini-cli/settings.json")));
        assert!(!is_settings(Path::new("/repo/.vscode/settings.json")));
    }
}
