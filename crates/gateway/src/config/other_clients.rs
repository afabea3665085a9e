//! What other clients (Cline, Roo Code, Windsurf, Gemini CLI) write in a server entry beside the
//! fields the gateway reads, so that their files work as they are. Their names for the gateway's
//! own fields are read as those: Windsurf's `serverUrl` and Gemini CLI's `httpUrl` as `url`,
//! Cline's `transportType` as `type`, Roo Code's `disabledTools` and Gemini CLI's `excludeTools` as
//! `tools.deny` (a tool the user turned off stays off), Gemini CLI's `includeTools` as
//! `tools.allow`, its `oauth` (`clientId`, `clientSecret`, `scopes`) as the gateway's, and Cline's
//! and Roo Code's `timeout` (seconds; Gemini CLI's milliseconds are made seconds first,
//! `super::gemini::timeouts_in_ms`) as the entry's `call_timeout_secs`. Their own settings, which
//! mean something to that client alone (which calls it asks the user about), are left alone and
//! named in a note. Any other unknown field is still refused, so a misspelt field of the gateway's
//! is never ignored.

use serde_json::{Map, Value};

/// Fields that are a client's own settings: (field, what the gateway does instead).
const THEIRS: &[(&str, &str)] = &[
    ("autoApprove", "approval is your client's"),
    ("alwaysAllow", "approval is your client's"),
    ("watchPaths", "restart the gateway to restart a server"),
    ("description", "a server describes itself to the gateway"),
];

/// What Gemini CLI's boolean `trust` (ask before each call, or not) is to the gateway.
const TRUST: &str = "approval is your client's; the gateway's `trust` is \"pin\" or \"auto\"";

/// Lists of tool names that other clients keep beside an entry: (their field, the gateway's
/// `tools` list they join).
const TOOL_LISTS: &[(&str, &str)] = &[("disabledTools", "deny"), ("excludeTools", "deny"), ("includeTools", "allow")];

/// Fields that other clients name differently: (their name, the gateway's).
const RENAMED: &[(&str, &str)] = &[("serverUrl", "url"), ("httpUrl", "url"), ("transportType", "type")];

/// Reads other clients' fields of the entry at `at` (`mcpServers.NAME`) into the gateway's,
/// and removes their own settings: the entry to read, and a note naming what was left alone.
pub(super) fn read(at: &str, mut entry: Value) -> Result<(Value, Option<String>), String> {
    let Value::Object(fields) = &mut entry else { return Ok((entry, None)) };
    for &(theirs, ours) in RENAMED {
        rename(at, fields, theirs, ours)?;
    }
    for &(theirs, list) in TOOL_LISTS {
        if let Some(names) = fields.remove(theirs) {
            add_names(&format!("{at}.{theirs}"), fields, list, names)?;
        }
    }
    auth_provider(at, fields)?;
    if let Some(t) = fields.get("timeout") {
        if !t.as_u64().is_some_and(|t| (1..=toolsearch_exec::MAX_TIMEOUT_SECS).contains(&t)) {
            return Err(format!(
                "{at}.timeout: {t} is not a call timeout: use whole seconds, 1 to {}",
                toolsearch_exec::MAX_TIMEOUT_SECS
            ));
        }
        rename(at, fields, "timeout", "call_timeout_secs")?;
    }
    let mut left: Vec<&(&str, &str)> = THEIRS.iter().filter(|(field, _)| fields.remove(*field).is_some()).collect();
    if matches!(fields.get("trust"), Some(Value::Bool(_))) {
        fields.remove("trust");
        left.push(&("trust", TRUST));
    }
    let oauth = super::gemini::oauth(at, fields)?;
    let mut names: Vec<String> = left.iter().map(|(field, _)| format!("`{field}`")).collect();
    let mut instead: Vec<&str> = left.iter().map(|(_, instead)| *instead).collect();
    if !oauth.is_empty() {
        names.extend(oauth.iter().map(|field| format!("`oauth.{field}`")));
        instead.push(super::gemini::OAUTH_FOUND);
    }
    if names.is_empty() {
        return Ok((entry, None));
    }
    instead.dedup();
    let note = format!("{at}: {}: another client's settings, left alone ({})", names.join(", "), instead.join("; "));
    Ok((entry, Some(note)))
}

/// The fields of `entry` (an entry as written, before [`read`]) that another client names
/// differently: (the gateway's path, the entry's), for errors to name what the user wrote
/// ([`in_their_words`]). An `oauth` section in Gemini CLI's names has all its fields named so,
/// given or not.
pub(super) fn their_names(entry: &Value) -> Vec<(String, String)> {
    let timeout = [("timeout", "call_timeout_secs")];
    let mut names: Vec<(String, String)> = (RENAMED.iter().chain(&timeout))
        .filter(|(theirs, _)| entry.get(theirs).is_some())
        .map(|(theirs, ours)| (ours.to_string(), theirs.to_string()))
        .collect();
    if entry.get("oauth").is_some_and(super::gemini::is_its_oauth) {
        let oauth = super::gemini::OAUTH_RENAMED.iter();
        names.extend(oauth.map(|(theirs, ours)| (format!("oauth.{ours}"), format!("oauth.{theirs}"))));
    }
    names
}

/// `error`, about the entry at `at` (`mcpServers.NAME`), with its fields named as the entry
/// names them (`names`, from [`their_names`]): the path it leads with, and an `oauth.` field it
/// mentions.
pub(super) fn in_their_words(at: &str, mut error: String, names: &[(String, String)]) -> String {
    for (ours, theirs) in names {
        let lead = format!("{at}.{ours}");
        if ours.starts_with("oauth.") {
            error = error.replace(&lead, &format!("{at}.{theirs}"));
            error = error.replace(&format!(" {ours} "), &format!(" {theirs} "));
        } else if error.strip_prefix(&lead).is_some_and(|rest| rest.starts_with([':', '.', '['])) {
            error.replace_range(..lead.len(), &format!("{at}.{theirs}"));
        }
    }
    error
}

/// Moves the field `theirs` of the object at `at` to `ours`; both at once are refused.
pub(super) fn rename(at: &str, fields: &mut Map<String, Value>, theirs: &str, ours: &str) -> Result<(), String> {
    if let Some(value) = fields.remove(theirs) {
        if fields.contains_key(ours) {
            return Err(format!("{at}: give `{ours}` or `{theirs}`, not both"));
        }
        fields.insert(ours.to_owned(), value);
    }
    Ok(())
}

/// Gemini CLI's `authProviderType`s that send Google's own credentials.
const GOOGLE: &[&str] = &["google_credentials", "service_account_impersonation"];

/// Gemini CLI's `authProviderType`: `dynamic_discovery` is what the gateway does; Google's
/// own credentials it does not read, and says how to send them instead.
fn auth_provider(at: &str, fields: &mut Map<String, Value>) -> Result<(), String> {
    match fields.remove("authProviderType") {
        None => Ok(()),
        Some(Value::String(kind)) if kind == "dynamic_discovery" => Ok(()),
        Some(Value::String(kind)) if !GOOGLE.contains(&kind.as_str()) => Err(format!(
            "{at}.authProviderType: {kind:?}: not a kind Gemini CLI knows (`dynamic_discovery`, `{}`)",
            GOOGLE.join("`, `")
        )),
        Some(Value::String(kind)) => Err(format!(
            "{at}.authProviderType: {kind:?}: the gateway does not read Google credentials; send a token as a header \
             command instead: \"headers\": {{\"Authorization\": {{\"command\": [\"gcloud\", \"auth\", \
             \"print-access-token\"], \"prefix\": \"Bearer \"}}}}"
        )),
        Some(_) => Err(format!("{at}.authProviderType: must be a string")),
    }
}

/// Adds the tool names of `names` (the field at `at`) to the entry's `tools.LIST`.
fn add_names(at: &str, fields: &mut Map<String, Value>, list: &str, names: Value) -> Result<(), String> {
    let names = match names {
        Value::Array(names) if names.iter().all(Value::is_string) => names,
        _ => return Err(format!("{at}: must be a list of tool names")),
    };
    let tools = fields.entry("tools").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(tools) = tools else { return Err(format!("{at}: the entry's `tools` must be an object")) };
    match tools.entry(list).or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(globs) => globs.extend(names),
        _ => return Err(format!("{at}: the entry's `tools.{list}` must be a list of globs")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{in_their_words, read, their_names};
    use serde_json::json;

    #[test]
    fn errors_name_the_fields_as_the_entry_wrote_them() {
        let gemini = json!({"httpUrl": "ftp://h", "oauth": {"tokenUrl": "https://as/token"}});
        let names = their_names(&gemini);
        let said = |e: &str| in_their_words("m.g", e.to_owned(), &names);
        assert_eq!(
            said("m.g.url: \"ftp://h\" is not an http(s) URL"),
            "m.g.httpUrl: \"ftp://h\" is not an http(s) URL"
        );
        assert_eq!(
            said("m.g.oauth.token_endpoint: give oauth.client_id with it (a client registered there)"),
            "m.g.oauth.tokenUrl: give oauth.clientId with it (a client registered there)"
        );
        // Another field that begins the same, or another entry's, is left as it is.
        for same in ["m.g.urls: x", "m.gg.url: x", "m.h.oauth.token_endpoint: x"] {
            assert_eq!(said(same), same);
        }
        // An entry in the gateway's own names is named in them.
        assert!(their_names(&json!({"url": "u", "oauth": {"client_id": "c"}})).is_empty());
        let cline = their_names(&json!({"command": "x", "timeout": 9, "transportType": "stdio"}));
        assert_eq!(
            in_their_words("m.c", "m.c.type: \"x\" does not fit".into(), &cline),
            "m.c.transportType: \"x\" does not fit"
        );
    }

    #[test]
    fn other_clients_names_are_read_as_ours_and_their_settings_noted() {
        let entry = json!({"serverUrl": "http://h/mcp", "autoApprove": ["a"], "timeout": 90, "disabledTools": ["rm"]});
        let (got, note) = read("mcpServers.w", entry).unwrap();
        assert_eq!(got, json!({"url": "http://h/mcp", "tools": {"deny": ["rm"]}, "call_timeout_secs": 90}));
        assert_eq!(
            note.as_deref(),
            Some("mcpServers.w: `autoApprove`: another client's settings, left alone (approval is your client's)")
        );
        // A timeout that is not whole seconds in range is named as written.
        for bad in [json!(0), json!(1.5), json!("60"), json!(86_401)] {
            let e = read("m.w", json!({"url": "u", "timeout": bad})).unwrap_err();
            assert!(e.starts_with(&format!("m.w.timeout: {bad} is not a call timeout: use whole seconds")), "{e}");
        }
        let both = read("m.w", json!({"url": "u", "timeout": 5, "call_timeout_secs": 6})).unwrap_err();
        assert_eq!(both, "m.w: give `call_timeout_secs` or `timeout`, not both");
        // `disabledTools` adds to a deny list of the gateway's own.
        let entry =
            json!({"command": "x", "tools": {"deny": ["a*"]}, "disabledTools": ["b"], "transportType": "stdio"});
        let (got, note) = read("m.x", entry).unwrap();
        assert_eq!(got, json!({"command": "x", "type": "stdio", "tools": {"deny": ["a*", "b"]}}));
        assert_eq!(note, None);
        // Two names for one field, or a list that is not one, are refused.
        let both = read("m.x", json!({"url": "u", "serverUrl": "v"})).unwrap_err();
        assert_eq!(both, "m.x: give `url` or `serverUrl`, not both");
        let bad = read("m.x", json!({"disabledTools": "rm"})).unwrap_err();
        assert_eq!(bad, "m.x.disabledTools: must be a list of tool names");
    }

    #[test]
    fn gemini_clis_entry_is_read_as_ours_and_its_google_credentials_refused() {
        let entry = json!({
            "httpUrl": "https://h/mcp", "trust": true, "includeTools": ["a", "b"], "excludeTools": ["b"],
            "authProviderType": "dynamic_discovery", "oauth": {"clientId": "c", "redirectUri": "http://localhost:7777"}
        });
        let (got, note) = read("mcpServers.g", entry).unwrap();
        let tools = json!({"allow": ["a", "b"], "deny": ["b"]});
        assert_eq!(got, json!({"url": "https://h/mcp", "tools": tools, "oauth": {"client_id": "c"}}));
        let note = note.unwrap();
        assert!(note.starts_with("mcpServers.g: `trust`, `oauth.redirectUri`: another client's settings"), "{note}");
        // The gateway's own `trust` is read by the gateway.
        let (got, note) = read("m.g", json!({"command": "x", "trust": "auto"})).unwrap();
        assert_eq!((got, note), (json!({"command": "x", "trust": "auto"}), None));
        let google = read("m.g", json!({"url": "u", "authProviderType": "service_account_impersonation"})).unwrap_err();
        assert!(google.starts_with("m.g.authProviderType: \"service_account_impersonation\": the gateway"), "{google}");
        let other = read("m.g", json!({"url": "u", "authProviderType": "sso"})).unwrap_err();
        assert!(other.starts_with("m.g.authProviderType: \"sso\": not a kind Gemini CLI knows"), "{other}");
    }
}
