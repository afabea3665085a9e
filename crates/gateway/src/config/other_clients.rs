//! What other clients (Cline, Roo Code, Windsurf) write in a server entry beside the fields
//! the gateway reads, so that their files work as they are. Their names for the gateway's own
//! fields are read as those: Windsurf's `serverUrl` as `url`, Cline's `transportType` as
//! `type`, and Roo Code's `disabledTools` as `tools.deny` (a tool the user turned off stays
//! off). Their own settings, which mean something to that client alone (which calls it asks
//! the user about, how long it waits), are left alone and named in a note. Any other unknown
//! field is still refused, so a misspelt field of the gateway's is never ignored.

use serde_json::{Map, Value};

/// Fields that are a client's own settings: (field, what the gateway does instead).
const THEIRS: &[(&str, &str)] = &[
    ("autoApprove", "approval is your client's"),
    ("alwaysAllow", "approval is your client's"),
    ("timeout", "the gateway's call timeout is `toolsearch.call_timeout_secs`"),
    ("watchPaths", "restart the gateway to restart a server"),
];

/// Fields that other clients name differently: (their name, the gateway's).
const RENAMED: &[(&str, &str)] = &[("serverUrl", "url"), ("transportType", "type")];

/// Reads other clients' fields of the entry at `at` (`mcpServers.NAME`) into the gateway's,
/// and removes their own settings: the entry to read, and a note naming what was left alone.
pub(super) fn read(at: &str, mut entry: Value) -> Result<(Value, Option<String>), String> {
    let Value::Object(fields) = &mut entry else { return Ok((entry, None)) };
    for &(theirs, ours) in RENAMED {
        if let Some(value) = fields.remove(theirs) {
            if fields.contains_key(ours) {
                return Err(format!("{at}: give `{ours}` or `{theirs}`, not both"));
            }
            fields.insert(ours.to_owned(), value);
        }
    }
    if let Some(disabled) = fields.remove("disabledTools") {
        deny(at, fields, disabled)?;
    }
    let left: Vec<&(&str, &str)> = THEIRS.iter().filter(|(field, _)| fields.remove(*field).is_some()).collect();
    if left.is_empty() {
        return Ok((entry, None));
    }
    let names: Vec<String> = left.iter().map(|(field, _)| format!("`{field}`")).collect();
    let mut instead: Vec<&str> = left.iter().map(|(_, instead)| *instead).collect();
    instead.dedup();
    let note = format!("{at}: {}: another client's settings, left alone ({})", names.join(", "), instead.join("; "));
    Ok((entry, Some(note)))
}

/// Adds the tool names of `disabled` (Roo Code's `disabledTools`) to the entry's `tools.deny`.
fn deny(at: &str, fields: &mut Map<String, Value>, disabled: Value) -> Result<(), String> {
    let names = match disabled {
        Value::Array(names) if names.iter().all(Value::is_string) => names,
        _ => return Err(format!("{at}.disabledTools: must be a list of tool names")),
    };
    let tools = fields.entry("tools").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(tools) = tools else { return Err(format!("{at}.tools: must be an object")) };
    match tools.entry("deny").or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(deny) => deny.extend(names),
        _ => return Err(format!("{at}.tools.deny: must be a list of globs")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::read;
    use serde_json::json;

    #[test]
    fn other_clients_names_are_read_as_ours_and_their_settings_noted() {
        let entry = json!({"serverUrl": "http://h/mcp", "autoApprove": ["a"], "timeout": 60, "disabledTools": ["rm"]});
        let (got, note) = read("mcpServers.w", entry).unwrap();
        assert_eq!(got, json!({"url": "http://h/mcp", "tools": {"deny": ["rm"]}}));
        assert_eq!(
            note.as_deref(),
            Some(
                "mcpServers.w: `autoApprove`, `timeout`: another client's settings, left alone (approval is your \
                 client's; the gateway's call timeout is `toolsearch.call_timeout_secs`)"
            )
        );
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
}
