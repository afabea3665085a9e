//! The upstreams' listings as the gateway's catalogue: each server a category (its name, its
//! instructions as summary) and an availability group, each tool `SERVER.TOOL` with its
//! server's annotations as tags and the config's `examples` for it, each prompt a searchable
//! entry; loaded leniently (one bad tool costs only itself), guarded by the pins, and built
//! into the index under the state directory.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use toolsearch_catalog::{annotation_tags, parse_lenient, tool_id, Catalog, CatalogWarning, Format, WarningKind};
use toolsearch_embed::Embedder;
use toolsearch_index::{build_index, BuildOptions};
use toolsearch_mcp::ops::Status;
use toolsearch_mcp::ServeError;

use crate::config::GatewayConfig;
use crate::listing::Listing;
use crate::pins::{self, HeldNow};

/// The catalogue of the upstreams' tool listings, as a native manifest. Each server is a
/// category and a group; each tool is taken from the JSON its server sent, field by field, so
/// a tool with no `inputSchema` (any arguments), no description (its name and parameters are
/// indexed) or an odd name is still a tool. What is not a tool at all (no name) is reported
/// by [`load_lenient`], which leaves it out.
pub fn manifest_of(listings: &BTreeMap<String, Listing>, config: &GatewayConfig) -> Value {
    let s = &config.settings;
    let mut nodes = Vec::new();
    let mut groups = Vec::new();
    let mut tools = Vec::new();
    for (server, listing) in listings {
        let summary = first_line(&listing.summary, server);
        let mut node = json!({"path": [server], "summary": summary});
        if listing.summary.trim().len() > summary.len() {
            node["description"] = json!(truncate(&listing.summary, 64 * 1024));
        }
        if let Some(f) = s.facades.get(server) {
            node["facade"] = f.clone();
        }
        nodes.push(node);
        groups.push(
            json!({"id": server, "visibility": "conditional", "check": format!("upstream:{server}"), "ttl_secs": 0}),
        );
        let mut seen = std::collections::HashSet::new();
        for t in &listing.tools {
            let name = t.get("name").and_then(Value::as_str).map(str::to_owned);
            if let Some(n) = &name {
                if !seen.insert(n.clone()) {
                    tools.push(json!({"duplicate_of": tool_id(server, n)}));
                    continue;
                }
            }
            tools.push(tool_entry(server, name, t, s));
        }
        // Prompts are searchable beside the tools (a prompt named like a tool is left to it).
        for p in &listing.offers.prompts {
            let Some(name) = p.get("name").and_then(Value::as_str) else { continue };
            if !seen.insert(name.to_owned()) {
                continue;
            }
            let mut entry = crate::offers::prompt_entry(server, tool_id(server, name), name, p);
            if let Some(r) = s.requires.get(server) {
                entry["requires"] = json!(r);
            }
            tools.push(entry);
        }
    }
    // A server with no listing yet (starting, down, waiting for a login, on a first run with
    // nothing kept): a pending group, so a call to one of its tools says why it is not there.
    for server in config.servers.keys().filter(|s| !listings.contains_key(*s)) {
        let mut pending = json!({"prefix": tool_id(server, "")});
        if let Some(r) = s.requires.get(server) {
            pending["requires"] = json!(r);
        }
        groups.push(json!({
            "id": server, "visibility": "conditional", "check": format!("upstream:{server}"), "ttl_secs": 0,
            "pending": pending,
        }));
    }
    json!({"nodes": nodes, "groups": groups, "tools": tools})
}

/// One upstream tool as a manifest entry.
fn tool_entry(server: &str, name: Option<String>, t: &Value, s: &crate::config::GatewaySettings) -> Value {
    let description = bounded_description(t.get("description").and_then(Value::as_str).unwrap_or_default().trim());
    let annotations = t.get("annotations").filter(|a| a.is_object());
    let mut tags = Vec::new();
    let mut meta = json!({"upstream_name": name});
    let title = t.get("title").or_else(|| annotations.and_then(|a| a.get("title"))).and_then(Value::as_str);
    if let Some(title) = title {
        meta["title"] = json!(title);
    }
    if let Some(a) = annotations {
        meta["annotations"] = a.clone();
        tags.extend(annotation_tags(a));
    }
    let mut tool = json!({
        "id": name.as_deref().map(|n| tool_id(server, n)),
        "name": name,
        "path": [server],
        "description": description,
        "tags": tags,
        "group": server,
        "meta": meta,
    });
    if let Some(schema) = t.get("inputSchema").filter(|v| !v.is_null()) {
        tool["args_schema"] = schema.clone();
    }
    if let Some(out) = t.get("outputSchema").filter(|v| !v.is_null()) {
        tool["result_schema"] = out.clone();
    }
    if let Some(r) = s.requires.get(server) {
        tool["requires"] = json!(r);
    }
    if let Some(examples) = name.as_deref().and_then(|n| s.examples.get(&tool_id(server, n))) {
        tool["examples"] = json!(examples);
    }
    tool
}

/// The `toolsearch.examples` ids of `server` naming a tool its listing does not have (most
/// likely a misspelling): reported, so the operator learns why an example changed nothing.
pub(crate) fn unmatched_examples(server: &str, listing: &Listing, config: &GatewayConfig) -> Vec<String> {
    let offered = |tool: &str| listing.tools.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(tool));
    let prefix = tool_id(server, "");
    config
        .settings
        .examples
        .keys()
        .filter(|id| id.strip_prefix(&prefix).is_some_and(|tool| !offered(tool)))
        .cloned()
        .collect()
}

/// Loads `manifest`, leaving out each tool the catalogue refuses (and each second tool of one
/// name in a server), so one upstream tool cannot take the others down: one pass over the
/// tools, each checked once. Every tool left out or indexed without validation is reported as
/// a `tool_skipped` or `tool_unvalidated` event and kept in the catalogue's warnings, which the
/// gateway's status lists.
pub fn load_lenient(mut manifest: Value, status: &dyn Status) -> Result<Option<Catalog>, ServeError> {
    let source = Path::new("<upstream tools>");
    let mut duplicates = Vec::new();
    if let Some(tools) = manifest["tools"].as_array_mut() {
        tools.retain(|t| match t.get("duplicate_of").and_then(Value::as_str) {
            Some(id) => {
                duplicates.push(id.to_owned());
                false
            }
            None => true,
        });
    }
    if manifest["tools"].as_array().is_none_or(Vec::is_empty) {
        return Ok(None);
    }
    let mut catalog = parse_lenient(source, &manifest.to_string(), Some(Format::Manifest))
        .map_err(|e| ServeError::Config(source.to_path_buf(), e.to_string()))?;
    for id in duplicates {
        catalog.warnings.push(CatalogWarning {
            kind: WarningKind::DuplicateName,
            tool: Some(id.clone()),
            at: source.display().to_string(),
            message: format!("a second tool named like {id:?}: the first is kept, this one left out"),
        });
    }
    for w in &catalog.warnings {
        let kind = match w.kind {
            WarningKind::Unvalidated => "tool_unvalidated",
            _ => "tool_skipped",
        };
        status.event(kind, json!({"tool": w.tool, "kind": w.kind, "reason": w.message}));
    }
    Ok((!catalog.tools.is_empty()).then_some(catalog))
}

/// A pins file's stamp (`pins::pins_stamp`).
pub(crate) type PinsStamp = (u64, std::time::SystemTime);

/// Guards `listings` (filters, pins, held tools: `crate::pins`), then builds the index of what
/// passed into `STATE/index` (atomically; unchanged tools keep their vectors). `false` when
/// there is nothing to index; with the pins file's stamp after the guard wrote it. `trust_new`
/// as `pins::guard` takes it.
pub(crate) fn rebuild(
    listings: &BTreeMap<String, Listing>,
    config: &GatewayConfig,
    embedder: &dyn Embedder,
    state: &Path,
    held: &HeldNow,
    status: &dyn Status,
    trust_new: bool,
) -> Result<(bool, Option<PinsStamp>), ServeError> {
    for (server, listing) in listings {
        let unmatched = unmatched_examples(server, listing, config);
        if !unmatched.is_empty() {
            status.event("examples_unmatched", json!({"server": server, "tools": unmatched}));
        }
    }
    let guarded = pins::guard(listings, config, state, status, trust_new)?;
    *held.lock().unwrap_or_else(|p| p.into_inner()) = (guarded.held, guarded.flagged);
    let dir = state.join("index");
    let Some(catalog) = load_lenient(manifest_of(&guarded.listings, config), status)? else {
        return Ok((false, guarded.stamp));
    };
    let report = build_index(&catalog, embedder, &dir, &BuildOptions::default())
        .map_err(|e| ServeError::Config(dir.to_path_buf(), e.to_string()))?;
    drop(catalog);
    // What the build held (the catalogue, its JSON, the staging buffers) goes back to the
    // system, so tool-list churn does not ratchet the gateway's memory up.
    toolsearch_embed::memory::give_back();
    private(&dir).map_err(|e| ServeError::Config(dir.to_path_buf(), e.to_string()))?;
    status.event(
        "indexed",
        json!({
            "tools": report.tools,
            "embedded": report.embedded,
            "reused": report.reused,
            "seconds": report.total_seconds,
            "model": embedder.model_id(),
        }),
    );
    Ok((true, guarded.stamp))
}

/// Makes `dir` and everything in it private to the user (0700 directories, 0600 files): the
/// state holds every upstream's tool definitions.
pub(crate) fn private(dir: &Path) -> std::io::Result<()> {
    use toolsearch_catalog::platform::make_private;
    make_private(dir, true)?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            private(&entry.path())?;
        } else if kind.is_file() {
            make_private(&entry.path(), false)?;
        }
    }
    Ok(())
}

fn first_line(text: &str, fallback: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(fallback);
    truncate(line, 500)
}

/// The most characters of an upstream tool's description that the catalogue keeps (so one
/// `expand_tool` cannot flood a model's context); a longer one is cut with a notice.
pub const MAX_DESCRIPTION_CHARS: usize = 8 * 1024;

/// `text` as the catalogue keeps it: whole, or cut to [`MAX_DESCRIPTION_CHARS`] with a notice
/// saying how long it was.
fn bounded_description(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= MAX_DESCRIPTION_CHARS {
        return text.to_owned();
    }
    format!(
        "{}\n[cut by the gateway: the server's description is {chars} characters, over the limit of {MAX_DESCRIPTION_CHARS}]",
        truncate(text, MAX_DESCRIPTION_CHARS)
    )
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server with no listing yet is a pending group under its tools' prefix, told only to
    /// callers with its `requires`; a listed one is a plain group.
    #[test]
    fn a_server_with_no_listing_is_a_pending_group_with_its_scopes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let config = json!({"mcpServers": {"up": {"command": "a"}, "slow": {"command": "b"}},
            "toolsearch": {"requires": {"slow": ["alarms"]}}});
        std::fs::write(&path, config.to_string()).unwrap();
        let config = GatewayConfig::load(&path).unwrap();
        let listing = Listing { summary: "Up.".into(), tools: vec![json!({"name": "t"})], ..Listing::default() };
        let manifest = manifest_of(&BTreeMap::from([("up".to_owned(), listing)]), &config);
        let groups = manifest["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{manifest}");
        assert!(groups[0].get("pending").is_none(), "{manifest}");
        assert_eq!(groups[1]["id"], "slow");
        assert_eq!(groups[1]["pending"], json!({"prefix": "slow.", "requires": ["alarms"]}));
        struct Quiet;
        impl Status for Quiet {
            fn event(&self, _: &str, _: Value) {}
        }
        let catalog = load_lenient(manifest, &Quiet).unwrap().unwrap();
        assert_eq!(catalog.groups[1].pending.as_ref().unwrap().prefix, "slow.");
    }
}
