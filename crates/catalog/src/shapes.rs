//! Which foreign format a tool list is, judged by the shape of its tools: what the importers
//! accept and what a bare JSON array that fits none of them is told.

use serde_json::Value;

/// Which foreign format a document is, judged by its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Foreign {
    Mcp,
    OpenAi,
    Anthropic,
    Gemini,
}

/// The tool array of a document, with its JSON pointer, if it has one.
pub(crate) fn tool_array(v: &Value) -> Option<(&Vec<Value>, String)> {
    match v {
        Value::Array(a) => Some((a, String::new())),
        Value::Object(o) => match o.get("tools") {
            Some(Value::Array(a)) => Some((a, "/tools".into())),
            _ => match (o.get("result").and_then(|r| r.get("tools")), o.get("functions")) {
                (Some(Value::Array(a)), _) => Some((a, "/result/tools".into())),
                (_, Some(Value::Array(a))) => Some((a, "/functions".into())),
                _ => None,
            },
        },
        _ => None,
    }
}

/// The format one tool's shape says: an OpenAI tool is `{"type": "function", "function": {...}}`
/// (Chat Completions), `{"type": "function", "name", ...}` (the Responses API) or `{"name",
/// "description", "parameters"}` (the older `functions`), an Anthropic
/// one has `input_schema`, an MCP one `inputSchema`.
pub(crate) fn shape_of(tool: &Value) -> Option<Foreign> {
    let o = tool.as_object()?;
    let named = |o: &serde_json::Map<String, Value>| o.get("name").is_some_and(Value::is_string);
    let typed = o.get("type").and_then(Value::as_str) == Some("function");
    if (typed && (o.get("function").is_some_and(Value::is_object) || named(o))) || is_function(tool) {
        Some(Foreign::OpenAi)
    } else if o.contains_key("input_schema") && !o.contains_key("id") {
        Some(Foreign::Anthropic)
    } else if o.contains_key("inputSchema") {
        Some(Foreign::Mcp)
    } else {
        None
    }
}

/// A tool with a name and no schema at all (`{"name", "description"}`): real MCP servers list
/// such tools, meaning "no arguments". It fits an MCP or Anthropic list.
fn is_bare(tool: &Value) -> bool {
    let Some(o) = tool.as_object() else { return false };
    o.get("name").is_some_and(Value::is_string)
        && !["inputSchema", "input_schema", "function", "parameters"].iter().any(|k| o.contains_key(*k))
}

/// The fields of a function in Chat Completions' older `functions` parameter (and of many
/// frameworks' dumps): `{"name", "description", "parameters"}`, with no `type`.
const FUNCTION_FIELDS: &[&str] = &["name", "description", "parameters", "strict"];

/// A function of the older `functions` form: a name, a `parameters` object, nothing else but
/// a description (a native tool has an `id`).
fn is_function(tool: &Value) -> bool {
    tool.as_object().is_some_and(|o| {
        o.get("name").is_some_and(Value::is_string)
            && o.get("parameters").is_some_and(Value::is_object)
            && o.keys().all(|k| FUNCTION_FIELDS.contains(&k.as_str()))
    })
}

/// The `type` of a provider-defined tool: one the model provider runs or defines itself, or
/// that takes free-form text rather than JSON arguments (OpenAI's `web_search`, `file_search`,
/// `code_interpreter`, `mcp`, `custom`, ...; Anthropic's `web_search_20250305`,
/// `bash_20250124`, ...). It has a `type` other than `function` and no argument schema, so
/// nothing here can index it or check a call.
pub(crate) fn provider_defined(tool: &Value) -> Option<&str> {
    let o = tool.as_object()?;
    let kind = o.get("type")?.as_str().filter(|t| *t != "function")?;
    let schema = ["inputSchema", "input_schema", "parameters", "function"].iter().any(|k| o.contains_key(*k));
    (!schema).then_some(kind)
}

/// Whether `tool` may stand in a list of `format` tools. An OpenAI or Anthropic list may hold
/// provider-defined tools (left out when imported, with a warning).
pub(crate) fn fits(tool: &Value, format: Foreign) -> bool {
    shape_of(tool) == Some(format)
        || match format {
            Foreign::Mcp => is_bare(tool),
            Foreign::Anthropic => is_bare(tool) || provider_defined(tool).is_some(),
            Foreign::OpenAi => provider_defined(tool).is_some(),
            // Read by its tool objects (`crate::gemini`), never tool by tool.
            Foreign::Gemini => false,
        }
}

/// The fields an MCP tool may carry besides its schemas (2025-11-25).
const MCP_TOOL_FIELDS: &[&str] =
    &["name", "title", "description", "annotations", "icons", "execution", "_meta", "outputSchema"];

/// The one shape of every tool in `tools` (bare tools fit any but OpenAI's), if they share one.
/// A list of bare tools only, each with nothing but an MCP tool's fields, is a `tools/list`
/// result whose tools declare no schema; a native manifest's tools have an `id`.
pub(crate) fn list_shape(tools: &[Value]) -> Option<Foreign> {
    let Some(first) = tools.iter().find_map(shape_of) else {
        let mcp_only =
            |t: &Value| t.as_object().is_some_and(|o| o.keys().all(|k| MCP_TOOL_FIELDS.contains(&k.as_str())));
        return (!tools.is_empty() && tools.iter().all(|t| is_bare(t) && mcp_only(t))).then_some(Foreign::Mcp);
    };
    tools.iter().all(|t| fits(t, first)).then_some(first)
}

/// Why a bare JSON array is no manifest: the index of the first tool that breaks it as a tool
/// list, and what is wrong with that tool (no known shape, or not the shape of the tools
/// before it); or, for a list of one format, that it is a tool list.
pub(crate) fn unshaped(tools: &[Value]) -> (usize, String) {
    let Some(first) = tools.iter().find_map(shape_of) else {
        if let Some(kinds) = all_provider_defined(tools) {
            return (0, only_provider_defined(&kinds));
        }
        let why = "a JSON array is read as an OpenAI, Anthropic or MCP tool list, and no tool has their shape \
                   (an OpenAI tool is {\"type\": \"function\", \"function\": {...}} or {\"type\": \"function\", \
                   \"name\", \"parameters\"}, an Anthropic one has `input_schema`, an MCP one `inputSchema`); a \
                   native manifest is a JSON object: {\"tools\": [...]}";
        return (0, why.to_owned());
    };
    let name = match first {
        Foreign::Mcp => "MCP",
        Foreign::OpenAi => "OpenAI",
        Foreign::Anthropic => "Anthropic",
        Foreign::Gemini => "Gemini",
    };
    match tools.iter().position(|t| !fits(t, first)) {
        Some(at) => (
            at,
            format!("this tool is not an {name} tool, as the list's others are: every tool of a list has one format"),
        ),
        // A whole list of one format, read as a manifest because the caller said so.
        None => {
            (0, format!("a manifest must be a JSON object with `tools`; this is an {name} tool list: read it as one"))
        }
    }
}

/// Why a list of provider-defined tools only (their `kinds`) is refused.
pub(crate) fn only_provider_defined(kinds: &str) -> String {
    format!(
        "every tool here is provider-defined, with no argument schema ({kinds}): toolsearch indexes function tools, \
         and there are none"
    )
}

/// The distinct types of `tools`, when every one is provider-defined.
pub(crate) fn all_provider_defined(tools: &[Value]) -> Option<String> {
    let all: Vec<&str> =
        tools.iter().map(provider_defined).collect::<Option<_>>().filter(|a: &Vec<_>| !a.is_empty())?;
    let mut kinds: Vec<&str> = Vec::new();
    for kind in all {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Some(kinds.join(", "))
}

/// The foreign format of `v`, when every tool in it has that one shape.
pub(crate) fn detect(v: &Value) -> Option<Foreign> {
    if crate::gemini::tool_objects(v).is_some() {
        return Some(Foreign::Gemini);
    }
    if is_mcp_map(v) {
        return Some(Foreign::Mcp);
    }
    let (tools, _) = tool_array(v)?;
    if crate::gemini::is_declaration_list(tools) {
        return Some(Foreign::Gemini);
    }
    // A list of provider-defined tools only is imported to say so, by name, and refused.
    list_shape(tools).or(all_provider_defined(tools).map(|_| Foreign::OpenAi))
}

/// `{"server": {"tools": [...]}, ...}` or the registry form `{"server": [...], ...}`: every
/// value is a `tools/list` result or a bare array of one server's tools (MCP, OpenAI or
/// Anthropic shaped). Not `{"functions": [...]}`, Chat Completions' older parameter.
pub(crate) fn is_mcp_map(v: &Value) -> bool {
    let Value::Object(o) = v else { return false };
    !o.is_empty()
        && !o.contains_key("functions")
        && !o.contains_key("tools")
        && o.values().all(|s| {
            let tools = match s {
                Value::Array(a) => Some(a),
                other => other.get("tools").and_then(Value::as_array),
            };
            tools.is_some_and(|a| list_shape(a).is_some())
        })
}
