//! Which editor's file a config is, and what the gateway reads of it. The servers come from
//! `mcpServers` (Claude Desktop, Cursor, Claude Code, and the gateway's own files), `servers`
//! (VS Code's `.vscode/mcp.json`) or `mcp.servers` (VS Code's user `settings.json`); VS Code's
//! `inputs` answer its `${input:ID}` forms ([`super::env::Vars`]); `toolsearch` holds the
//! gateway's settings; Gemini CLI's `mcp.allowed` and `mcp.excluded` leave servers out
//! ([`super::gemini`]). Every other key (`globalShortcut`, Claude Code's `projects`, ...) is
//! left alone, with a note, so an existing file works as it is.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::env::Vars;

/// The parts of a config file the gateway reads.
#[derive(Debug)]
pub(super) struct Sections {
    /// Where the servers were found (`mcpServers`, `servers` or `mcp.servers`), to name fields.
    pub at: &'static str,
    /// The server entries, as written.
    pub servers: Map<String, Value>,
    /// The `toolsearch` section, if any.
    pub toolsearch: Option<Value>,
    /// What `${...}` may name.
    pub vars: Vars,
    /// What was left alone, for the operator.
    pub notes: Vec<String>,
}

/// The sections of the config file at `path` whose text is `text`.
pub(super) fn sections(path: &Path, text: &str) -> Result<Sections, String> {
    if text.trim().is_empty() {
        return Err("is empty: a config is a JSON object with `mcpServers` (or VS Code's `servers`)".into());
    }
    // VS Code's files are JSON with comments; a comment or trailing comma elsewhere is harmless.
    let top: Value =
        serde_json::from_str(&super::jsonc::strip(text)).map_err(|e| toolsearch_catalog::too_deep(e.to_string()))?;
    let Value::Object(mut top) = top else {
        return Err("a config is a JSON object with `mcpServers` (or VS Code's `servers`)".into());
    };
    let mut found: Vec<(&'static str, Value)> = Vec::new();
    for key in ["mcpServers", "servers"] {
        if let Some(v) = top.remove(key) {
            found.push((key, v));
        }
    }
    let mut inputs = top.remove("inputs");
    if let Some(Value::Object(mcp)) = top.get_mut("mcp") {
        if let Some(v) = mcp.remove("servers") {
            found.push(("mcp.servers", v));
            inputs = inputs.or_else(|| mcp.remove("inputs"));
            top.remove("mcp");
        }
    }
    let (at, servers) = match found.len() {
        0 => return Err("no `mcpServers` (or VS Code's `servers`): no server to put the gateway in front of".into()),
        1 => found.remove(0),
        _ => {
            let keys: Vec<&str> = found.iter().map(|(k, _)| *k).collect();
            return Err(format!("both {}: keep one map of servers", keys.join(" and ")));
        }
    };
    let Value::Object(mut servers) = servers else {
        return Err(format!("{at}: expected a map of server names to entries"));
    };
    let toolsearch = top.remove("toolsearch");
    let mut notes: Vec<String> = super::gemini::server_lists(&mut top, &mut servers)?.into_iter().collect();
    if !top.is_empty() {
        let keys: Vec<&str> = top.keys().map(String::as_str).collect();
        notes.push(format!("left alone: {} (not the gateway's: it reads {at} and toolsearch)", keys.join(", ")));
    }
    let gemini = super::gemini::is_settings(path);
    if gemini {
        super::gemini::sse_urls(&mut servers);
        super::gemini::timeouts_in_ms(at, &mut servers)?;
    }
    let vars = Vars { inputs: read_inputs(inputs)?, workspace: workspace(path), bare: gemini };
    Ok(Sections { at, servers, toolsearch, vars, notes })
}

/// VS Code's `inputs`: `[{"id", "type", "description", "default"?, "password"?}]`, as ids
/// with their defaults.
fn read_inputs(inputs: Option<Value>) -> Result<BTreeMap<String, Option<String>>, String> {
    let Some(inputs) = inputs else { return Ok(BTreeMap::new()) };
    let Value::Array(list) = inputs else { return Err("inputs: expected a list".into()) };
    let mut out = BTreeMap::new();
    for (i, input) in list.iter().enumerate() {
        let id = input.get("id").and_then(Value::as_str).ok_or_else(|| format!("inputs[{i}]: no `id`"))?;
        let default = input.get("default").and_then(Value::as_str).map(str::to_owned);
        out.insert(id.to_owned(), default);
    }
    Ok(out)
}

/// `${workspaceFolder}` for a config at `path`: the folder holding `.vscode/` when the config
/// is inside one, else the config's own folder.
fn workspace(path: &Path) -> Option<std::path::PathBuf> {
    let dir = std::path::absolute(path).ok()?.parent()?.to_path_buf();
    match dir.file_name().is_some_and(|n| n == ".vscode") {
        true => dir.parent().map(Path::to_path_buf),
        false => Some(dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_editors_map_of_servers_is_found_and_other_keys_are_left_alone_with_a_note() {
        let p = Path::new("/home/u/.claude.json");
        let s =
            sections(p, r#"{"mcpServers": {"a": {"command": "x"}}, "globalShortcut": "", "projects": {}}"#).unwrap();
        assert_eq!((s.at, s.servers.len()), ("mcpServers", 1));
        assert_eq!(s.notes.len(), 1);
        assert!(s.notes[0].contains("globalShortcut, projects"), "{:?}", s.notes);
        let vs = Path::new("/repo/.vscode/mcp.json");
        let s = sections(
            vs,
            r#"{"inputs": [{"id": "k", "type": "promptString"}], "servers": {"a": {"type": "stdio", "command": "x"}}}"#,
        )
        .unwrap();
        assert_eq!((s.at, s.notes.len()), ("servers", 0));
        assert_eq!(s.vars.workspace.as_deref(), Some(Path::new("/repo")));
        assert_eq!(s.vars.inputs.get("k"), Some(&None));
        let s = sections(p, r#"{"mcp": {"servers": {"a": {"command": "x"}}}, "editor.fontSize": 12}"#).unwrap();
        assert_eq!(s.at, "mcp.servers");
    }

    #[test]
    fn no_servers_two_maps_or_a_bad_shape_are_named() {
        let p = Path::new("c.json");
        assert!(sections(p, r#"{"toolsearch": {}}"#).unwrap_err().contains("no `mcpServers`"));
        assert!(sections(p, r#"{"mcpServers": {}, "servers": {}}"#)
            .unwrap_err()
            .contains("both mcpServers and servers"));
        assert!(sections(p, r#"{"servers": []}"#).unwrap_err().starts_with("servers: expected a map"));
        assert!(sections(p, "[1]").is_err());
        assert!(sections(p, r#"{"servers": {}, "inputs": [{"type": "x"}]}"#).unwrap_err().contains("inputs[0]"));
        assert!(sections(p, "{\n  \"mcpServers\": {,}\n}").unwrap_err().contains("line 2"));
    }
}
