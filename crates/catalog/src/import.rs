//! Importers for the tool-definition formats agents already use: MCP `tools/list` results,
//! OpenAI `tools` arrays and Anthropic tool definitions. Each becomes raw records, normalised
//! and validated like a native manifest.
//!
//! - MCP: one server's `tools/list` result (`{"tools": [...]}`, optionally inside a JSON-RPC
//!   response, optionally with `"server": {"name", "description"}`), or a map of server name to
//!   such a result. Each server becomes a category (its description as summary) and an
//!   availability group; tool ids are `server.tool`.
//! - OpenAI: Chat Completions' `[{"type": "function", "function": {name, description,
//!   parameters}}]` or the Responses API's `[{"type": "function", name, description,
//!   parameters, output_schema}]`, bare or under `"tools"`; the older `{name, description,
//!   parameters}` functions also under `"functions"`. Tools sit at the root.
//! - Gemini: function declarations ([`crate::gemini`]), read as OpenAI functions.
//! - Anthropic: `[{name, description, input_schema}]`, bare or under `"tools"`.
//! - Provider-defined tools in an OpenAI or Anthropic list (`{"type": "web_search"}`,
//!   `{"type": "bash_20250124", "name": "bash"}`, ...) have no argument schema: each is left
//!   out with a [`WarningKind::ProviderDefined`] warning.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::CatalogError;
use crate::gemini;
use crate::json::Json;
use crate::manifest::{RawGroup, RawNode, RawTool};
use crate::normalize::{Origin, RawCatalog};
use crate::path::PathSpec;
use crate::shapes::{
    all_provider_defined, fits, is_mcp_map, list_shape, only_provider_defined, provider_defined, shape_of, tool_array,
    Foreign,
};
use crate::warning::{CatalogWarning, WarningKind};

/// Converts a foreign document into raw records.
/// `namespace` names the server a flat OpenAI or Anthropic file comes from: its tools get ids
/// `NAMESPACE.name` under a category and group of that name, so files of several servers merge
/// without name clashes.
pub(crate) fn import(
    file: &Path,
    v: &Value,
    format: Foreign,
    namespace: Option<&str>,
) -> Result<RawCatalog, CatalogError> {
    let mut raw = RawCatalog::default();
    match format {
        Foreign::Mcp if is_mcp_map(v) => {
            for (server, result) in v.as_object().expect("a map") {
                mcp_server(file, &mut raw, server, result, &format!("/{}", crate::schema::escape(server)), None)?;
            }
        }
        Foreign::Mcp => {
            let name = v
                .get("server")
                .or_else(|| v.get("serverInfo"))
                .and_then(|s| s.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| file.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "server".into());
            let result = v.get("result").filter(|r| r.get("tools").is_some()).unwrap_or(v);
            let base = if std::ptr::eq(result, v) { String::new() } else { "/result".into() };
            let name = namespace.map_or(name, str::to_owned);
            let mut with_info = result.clone();
            if let (Some(info), Value::Object(o)) = (v.get("server"), &mut with_info) {
                o.insert("server".into(), info.clone());
            }
            mcp_server(file, &mut raw, &name, &with_info, &base, Some(Foreign::Mcp))?;
        }
        Foreign::Gemini => gemini_tools(file, &mut raw, v, namespace)?,
        Foreign::OpenAi | Foreign::Anthropic => {
            let Some((tools, at)) = tool_array(v) else {
                return Err(CatalogError::at(file, "", None, "expected an array of tool definitions"));
            };
            if let Some(server) = namespace {
                // The user says which server the file is: namespaced like an MCP server.
                let tools = Value::Array(tools.clone());
                mcp_server(file, &mut raw, server, &tools, &at, Some(format))?;
            } else {
                let mut seen: HashSet<&str> = HashSet::new();
                for (i, t) in tools.iter().enumerate() {
                    let pointer = format!("{at}/{i}");
                    check_shape(file, t, format, &pointer)?;
                    if let Some(kind) = provider_defined(t) {
                        raw.warnings.push(left_out_provider_defined(
                            format!("{} at {pointer}", file.display()),
                            t,
                            kind,
                        ));
                        continue;
                    }
                    if let Some(name) = name_of(t).filter(|n| !seen.insert(n)) {
                        raw.warnings.push(duplicate(file, &pointer, name.to_owned(), "the file"));
                        continue;
                    }
                    let shape = shape_of(t).unwrap_or(format);
                    // An OpenAI tool's fields are in its `function` (a bare one's in itself).
                    let wrapped = shape == Foreign::OpenAi && t.get("function").is_some();
                    let def_at = if wrapped { format!("{pointer}/function") } else { pointer };
                    raw.tools.push((Origin::Pointer(def_at), foreign_tool(t, shape)));
                }
            }
        }
    }
    if raw.tools.is_empty() {
        if let Some(kinds) = tool_array(v).and_then(|(tools, _)| all_provider_defined(tools)) {
            return Err(CatalogError::file(file, only_provider_defined(&kinds)));
        }
        return Err(CatalogError::file(file, "no tools in the document"));
    }
    Ok(raw)
}

/// One server's tools, namespaced. `expected` is the shape every tool must have (`None`: each
/// may have any known shape, as in a registry map).
fn mcp_server(
    file: &Path,
    raw: &mut RawCatalog,
    server: &str,
    result: &Value,
    at: &str,
    expected: Option<Foreign>,
) -> Result<(), CatalogError> {
    let (tools, tools_at) = match result {
        Value::Array(a) => (a, at.to_owned()),
        other => match other.get("tools") {
            Some(Value::Array(a)) => (a, format!("{at}/tools")),
            _ => {
                return Err(CatalogError::at(file, at, Some("tools"), "an MCP tools/list result needs a `tools` array"))
            }
        },
    };
    let info = result.get("server");
    let description = info
        .and_then(|s| s.get("description").or_else(|| s.get("instructions")))
        .or_else(|| result.get("description"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    server_category(raw, server, at, description);
    let list = expected.or_else(|| list_shape(tools)).unwrap_or(Foreign::Mcp);
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, t) in tools.iter().enumerate() {
        let pointer = format!("{tools_at}/{i}");
        check_shape(file, t, list, &pointer)?;
        if let Some(kind) = provider_defined(t).filter(|_| list != Foreign::Mcp) {
            raw.warnings.push(left_out_provider_defined(format!("{} at {pointer}", file.display()), t, kind));
            continue;
        }
        let mut tool = foreign_tool(t, shape_of(t).unwrap_or(list));
        if let Some(name) = name_of(t).filter(|n| !seen.insert(n)) {
            raw.warnings.push(duplicate(file, &pointer, tool_id(server, name), &format!("server {server:?}")));
            continue;
        }
        in_server(&mut tool, server);
        raw.tools.push((Origin::Pointer(pointer), tool));
    }
    Ok(())
}

/// The category and availability group of server `server` (from `at`).
fn server_category(raw: &mut RawCatalog, server: &str, at: &str, description: Option<String>) {
    raw.nodes.push((
        Origin::Pointer(at.to_owned()),
        RawNode {
            path: Some(PathSpec::Segments(vec![server.to_owned()])),
            summary: description.clone(),
            description,
            tags: vec!["mcp".into()],
            ..RawNode::default()
        },
    ));
    raw.groups.push((Origin::Pointer(at.to_owned()), RawGroup { id: Some(server.to_owned()), ..RawGroup::default() }));
}

/// `tool` as one of server `server`'s: id `SERVER.NAME`, in its category and group.
fn in_server(tool: &mut RawTool, server: &str) {
    tool.id = tool.name.as_ref().map(|n| tool_id(server, n));
    tool.path = Some(PathSpec::Segments(vec![server.to_owned()]));
    tool.group = Some(server.to_owned());
    tool.tags.insert(0, "mcp".into());
}

/// A Gemini document's declarations ([`crate::gemini`]), each read as an OpenAI function;
/// its tool objects without declarations are left out with a warning. With `namespace`, its
/// tools are that server's.
fn gemini_tools(file: &Path, raw: &mut RawCatalog, v: &Value, namespace: Option<&str>) -> Result<(), CatalogError> {
    let mut lists: Vec<(&Vec<Value>, String)> = Vec::new();
    if let Some(objects) = gemini::tool_objects(v) {
        for (t, at) in objects {
            if let Some((list, key)) = gemini::declarations_of(t) {
                lists.push((list, format!("{at}/{key}")));
            }
            // Google's own tools, in an object of their own or beside declarations.
            for kind in gemini::provided(t) {
                let pointer = format!("{at}/{}", crate::schema::escape(kind));
                raw.warnings.push(left_out_provider_defined(
                    format!("{} at {pointer}", file.display()),
                    &Value::Null,
                    kind,
                ));
            }
        }
    } else if let Some((list, at)) = tool_array(v) {
        // `--format gemini` on what `functionDeclarations` holds: the declarations themselves.
        lists.push((list, at));
    } else {
        return Err(CatalogError::at(file, "", None, "expected Gemini tools: [{\"functionDeclarations\": [...]}]"));
    }
    if let Some(server) = namespace {
        server_category(raw, server, "", None);
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for (list, at) in lists {
        for (j, d) in list.iter().enumerate() {
            let pointer = format!("{at}/{j}");
            let Some(name) = d.get("name").and_then(Value::as_str) else {
                let expected = "expected a Gemini function declaration: {\"name\", \"description\", \"parameters\"}";
                return Err(CatalogError::at(file, pointer, None, expected));
            };
            if !seen.insert(name) {
                raw.warnings.push(duplicate(file, &pointer, name.to_owned(), "the file"));
                continue;
            }
            let mut tool = foreign_tool(&gemini::as_function(d), Foreign::OpenAi);
            if let Some(server) = namespace {
                in_server(&mut tool, server);
            }
            raw.tools.push((Origin::Pointer(pointer), tool));
        }
    }
    Ok(())
}

/// One tool of a foreign format as a raw record (at the root, id = name). MCP annotations
/// become tags (`read-only`, `destructive`, `idempotent`, `open-world`); `title` and
/// `annotations` are kept in `meta`, where `expand_tool` shows them.
pub(crate) fn foreign_tool(t: &Value, shape: Foreign) -> RawTool {
    let (def, schema_key, result_key) = match shape {
        Foreign::OpenAi | Foreign::Gemini => (t.get("function").unwrap_or(t), "parameters", Some("output_schema")),
        Foreign::Anthropic => (t, "input_schema", None),
        Foreign::Mcp => (t, "inputSchema", Some("outputSchema")),
    };
    let name = string(def, "name");
    let mut known = vec!["name", "description", schema_key];
    known.extend(result_key);
    if shape != Foreign::Mcp {
        // `function` (a Responses API tool) or `custom` (an Anthropic one): the format, not metadata.
        known.push("type");
    }
    let tags = def.get("annotations").map_or_else(Vec::new, |a| annotation_tags(a).map(str::to_owned).collect());
    RawTool {
        id: name.clone(),
        name,
        description: string(def, "description"),
        tags,
        args_schema: def.get(schema_key).map(Json::new),
        result_schema: result_key.and_then(|k| def.get(k)).map(Json::new),
        args_field: Some(schema_key),
        result_field: result_key,
        meta: extras(def, &known).map(Json::from),
        ..RawTool::default()
    }
}

/// The tags an MCP tool's `annotations` earn it: `read-only`, `destructive`, `idempotent` and
/// `open-world`, each for its hint set to `true` (a hint is a claim of the server, kept as a tag
/// to filter on, never trusted as a permission).
pub fn annotation_tags(annotations: &Value) -> impl Iterator<Item = &'static str> + '_ {
    [
        ("readOnlyHint", "read-only"),
        ("destructiveHint", "destructive"),
        ("idempotentHint", "idempotent"),
        ("openWorldHint", "open-world"),
    ]
    .into_iter()
    .filter(|(hint, _)| annotations.get(hint).and_then(Value::as_bool) == Some(true))
    .map(|(_, tag)| tag)
}

/// A tool's name, in any of the shapes.
fn name_of(t: &Value) -> Option<&str> {
    t.get("name").or_else(|| t.get("function").and_then(|f| f.get("name"))).and_then(Value::as_str)
}

/// The warning for a provider-defined tool (see [`provider_defined`]) `at` a place, which is
/// left out.
pub(crate) fn left_out_provider_defined(at: String, t: &Value, kind: &str) -> CatalogWarning {
    CatalogWarning {
        message: format!(
            "{kind:?} is a provider-defined tool, with no argument schema here to index or check calls against: \
             left out (toolsearch indexes function tools)"
        ),
        kind: WarningKind::ProviderDefined,
        tool: name_of(t).map(str::to_owned),
        at,
    }
}

/// The warning for a second tool of one name, which is left out.
fn duplicate(file: &Path, pointer: &str, id: String, whose: &str) -> CatalogWarning {
    CatalogWarning {
        message: format!("{whose} lists a second tool named {id:?}: the first is kept, this one left out"),
        kind: WarningKind::DuplicateName,
        tool: Some(id),
        at: format!("{} at {pointer}", file.display()),
    }
}

/// The id of tool `name` of server `server`: `SERVER.NAME`. A dot or `%` in the server's name
/// is written `%2E` or `%25`, so the id splits back at its first dot and no two (server, name)
/// pairs share an id, whatever dots, slashes, spaces or other letters the tool's name holds.
pub fn tool_id(server: &str, name: &str) -> String {
    let server =
        if server.contains(['.', '%']) { server.replace('%', "%25").replace('.', "%2E") } else { server.to_owned() };
    format!("{server}.{name}")
}

/// Refuses a tool that is not of the format being imported (e.g. `--format openai` on an
/// Anthropic file), so nothing is silently dropped.
fn check_shape(file: &Path, tool: &Value, format: Foreign, at: &str) -> Result<(), CatalogError> {
    if fits(tool, format) {
        return Ok(());
    }
    let expected = match format {
        Foreign::Mcp => "an MCP tool: {\"name\", \"description\", \"inputSchema\"}",
        Foreign::OpenAi => {
            "an OpenAI tool: {\"type\": \"function\", \"function\": {\"name\", \"description\", \"parameters\"}} \
             (Chat Completions) or {\"type\": \"function\", \"name\", \"description\", \"parameters\"} (Responses)"
        }
        Foreign::Anthropic => "an Anthropic tool: {\"name\", \"description\", \"input_schema\"}",
        Foreign::Gemini => "a Gemini tool: {\"functionDeclarations\": [...]}",
    };
    Err(CatalogError::at(file, at, None, format!("expected {expected}")))
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Every field of `v` except `known`, kept as metadata (never indexed).
fn extras(v: &Value, known: &[&str]) -> Option<Value> {
    let o = v.as_object()?;
    let rest: Map<String, Value> =
        o.iter().filter(|(k, _)| !known.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    (!rest.is_empty()).then_some(Value::Object(rest))
}
