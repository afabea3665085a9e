//! What upstream servers offer beyond tools (resources, resource templates, prompts), and how
//! their names cross the gateway.
//!
//! Prompts are named like tools, `SERVER.NAME`. A resource's URI gets the prefix
//! `toolsearch://SERVER/` in front of the URI its server gave, so any URI round-trips (a
//! server name holds no `/`): a template's variables stay where they were, and the URI a client
//! builds from a namespaced template is a namespaced URI. URIs inside answers (a read's
//! contents, a prompt's embedded resources, a tool result's resource links) are namespaced
//! the same way, so a client can read what it is pointed at through the gateway.

use rmcp::service::Peer;
use rmcp::RoleClient;
use serde_json::{json, Value};

use crate::listing::{list_all, ListKind, ListLimits, Offers};

/// The scheme of namespaced resource URIs.
pub const URI_PREFIX: &str = "toolsearch://";

/// The tag of catalogue entries that are upstream prompts (searches filter on it by `kind`).
pub const PROMPT_TAG: &str = toolsearch_disclosure::PROMPT_TAG;

/// Lists what the server behind `peer` offers beyond tools, as its capabilities say it does.
/// A list it fails to give is left empty: its tools still count.
pub(crate) async fn list_offers(peer: &Peer<RoleClient>, limits: &ListLimits) -> Offers {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    let mut offers = Offers::default();
    let mut problems = Vec::new();
    let mut kept = |listed: Result<Vec<Value>, String>| {
        listed.unwrap_or_else(|reason| {
            problems.push(reason);
            Vec::new()
        })
    };
    if let Some(resources) = &capabilities.resources {
        offers.subscribe = resources.subscribe == Some(true);
        offers.resources = kept(list_all(peer, ListKind::Resources, limits).await);
        offers.templates = kept(list_all(peer, ListKind::Templates, limits).await);
    }
    if capabilities.prompts.is_some() {
        offers.prompts = kept(list_all(peer, ListKind::Prompts, limits).await);
        offers.prompt_texts = prompt_texts(peer, &offers.prompts).await;
    }
    offers.problems = problems;
    offers
}

/// How many prompts of a server have their text fetched to pin, and for how long each.
const SAMPLED_PROMPTS: usize = 32;
const SAMPLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// The value every required argument gets when a prompt's text is fetched to pin.
pub(crate) const SAMPLE_ARGUMENT: &str = "example";
/// The most characters of a prompt's text that are kept to pin.
const SAMPLE_CHARS: usize = 16 * 1024;

/// The text `prompts/get` answers for each of the first [`SAMPLED_PROMPTS`] prompts, with every
/// required argument set to [`SAMPLE_ARGUMENT`]; a prompt the server does not answer that way
/// (an error, a timeout) is left out.
async fn prompt_texts(peer: &Peer<RoleClient>, prompts: &[Value]) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for p in prompts.iter().take(SAMPLED_PROMPTS) {
        let Some(name) = p.get("name").and_then(Value::as_str) else { continue };
        let required = p.get("arguments").and_then(Value::as_array).into_iter().flatten().filter_map(|a| {
            let required = a.get("required").and_then(Value::as_bool) == Some(true);
            a.get("name").and_then(Value::as_str).filter(|_| required)
        });
        let arguments: serde_json::Map<String, Value> =
            required.map(|n| (n.to_owned(), json!(SAMPLE_ARGUMENT))).collect();
        let mut params = rmcp::model::GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let request = rmcp::model::ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params));
        let mut options = rmcp::service::PeerRequestOptions::no_options();
        options.timeout = Some(SAMPLE_TIMEOUT);
        let Ok(handle) = peer.send_request_with_option(request, options).await else { continue };
        let Ok(answer) = handle.await_response().await else { continue };
        let Ok(answer) = serde_json::to_value(answer) else { continue };
        let text = prompt_as_result(&answer)
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        out.insert(name.to_owned(), text.chars().take(SAMPLE_CHARS).collect());
    }
    out
}

/// `uri` of `server` as clients of the gateway see it.
pub fn namespace_uri(server: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{server}/{uri}")
}

/// The server and its own URI of a namespaced `uri`; `None` for a URI the gateway did not give.
pub fn split_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (server, original) = rest.split_once('/')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

/// Whether `uri` could be built from the URI template `template` (RFC 6570): its literal
/// parts in order, each `{...}` expression matching any text. Wider than the RFC (a safe
/// side for refusing what a held template would serve).
pub fn built_from(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return template == uri,
        }
    }
    if literals.is_empty() {
        return template == uri;
    }
    let (first, last) = (literals[0], rest);
    let Some(mut left) = uri.strip_prefix(first) else { return false };
    for middle in &literals[1..] {
        match left.find(middle) {
            Some(at) => left = &left[at + middle.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

/// The server and its own name of a namespaced prompt name `SERVER.NAME`.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let (server, original) = name.split_once('.')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

/// A resource of `server` as clients see it: its URI namespaced, its name prefixed.
pub(crate) fn resource(server: &str, item: &Value) -> Value {
    namespaced(server, item, "uri")
}

/// A resource template of `server` as clients see it.
pub(crate) fn template(server: &str, item: &Value) -> Value {
    namespaced(server, item, "uriTemplate")
}

/// `item` with the URI under `key` namespaced and its name prefixed.
fn namespaced(server: &str, item: &Value, key: &str) -> Value {
    let mut item = prompt(server, item);
    if let Some(uri) = item.get(key).and_then(Value::as_str) {
        item[key] = json!(namespace_uri(server, uri));
    }
    item
}

/// A prompt of `server` as clients see it: named `SERVER.NAME`.
pub(crate) fn prompt(server: &str, item: &Value) -> Value {
    let mut item = item.clone();
    prefix_name(server, &mut item);
    item
}

fn prefix_name(server: &str, item: &mut Value) {
    if let Some(name) = item.get("name").and_then(Value::as_str) {
        item["name"] = json!(format!("{server}.{name}"));
    }
}

/// Namespaces every resource URI in an answer of `server` (a read's `contents`, a prompt's
/// `messages`, a tool result's `content`): the `uri` of resource contents, embedded resources
/// and resource links, wherever they sit.
pub(crate) fn namespace_answer(server: &str, answer: &mut Value) {
    match answer {
        Value::Object(map) => {
            let is_resource = map.contains_key("uri")
                && match map.get("type").and_then(Value::as_str) {
                    None => map.contains_key("text") || map.contains_key("blob"),
                    Some(kind) => kind == "resource_link",
                };
            if is_resource {
                if let Some(Value::String(uri)) = map.get_mut("uri") {
                    *uri = namespace_uri(server, uri);
                }
            }
            for (key, value) in map.iter_mut() {
                // Structured content and `_meta` are the tool's own data, not protocol objects.
                if key != "structuredContent" && key != "_meta" && key != "uri" {
                    namespace_answer(server, value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| namespace_answer(server, v)),
        _ => {}
    }
}

/// An upstream prompt as a catalogue entry of the gateway's manifest, so searches find it
/// (with `kind: "prompt"`) and `call_tool` fetches it: its arguments become string
/// properties, and it is marked read-only (getting a prompt changes nothing).
pub(crate) fn prompt_entry(server: &str, id: String, name: &str, item: &Value) -> Value {
    let description = item.get("description").and_then(Value::as_str).unwrap_or_default().trim();
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for arg in item.get("arguments").and_then(Value::as_array).into_iter().flatten() {
        let Some(arg_name) = arg.get("name").and_then(Value::as_str) else { continue };
        let mut property = json!({"type": "string"});
        if let Some(d) = arg.get("description").and_then(Value::as_str) {
            property["description"] = json!(d);
        }
        properties.insert(arg_name.to_owned(), property);
        if arg.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(arg_name.to_owned());
        }
    }
    let mut meta = json!({
        "upstream_name": name,
        "kind": "prompt",
        "annotations": {"readOnlyHint": true, "destructiveHint": false},
    });
    if let Some(title) = item.get("title").and_then(Value::as_str) {
        meta["title"] = json!(title);
    }
    json!({
        "id": id,
        "name": name,
        "path": [server],
        "description": if description.is_empty() { format!("The prompt {name}.") } else { description.to_owned() },
        "tags": [PROMPT_TAG],
        "group": server,
        "meta": meta,
        "args_schema": {"type": "object", "properties": properties, "required": required},
    })
}

/// A `prompts/get` answer as a tool result: each message as a line `role: text`, other
/// content as its JSON.
pub(crate) fn prompt_as_result(answer: &Value) -> rmcp::model::CallToolResult {
    let mut lines = Vec::new();
    if let Some(d) = answer.get("description").and_then(Value::as_str) {
        lines.push(d.to_owned());
    }
    for message in answer.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("user");
        let content = &message["content"];
        let text = match content.get("text").and_then(Value::as_str) {
            Some(t) => t.to_owned(),
            None => content.to_string(),
        };
        lines.push(format!("{role}: {text}"));
    }
    rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(lines.join("\n"))])
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_uri_is_matched_to_the_template_it_could_be_built_from() {
        assert!(built_from("phase://{item}", "phase://thing"));
        assert!(built_from("repo://{owner}/{name}/readme", "repo://a/b/readme"));
        assert!(!built_from("repo://{owner}/{name}/readme", "repo://a/b/license"));
        assert!(!built_from("phase://{item}", "other://thing"));
        assert!(built_from("plain://x", "plain://x") && !built_from("plain://x", "plain://y"));
        assert!(!built_from("bad://{x", "bad://y"));
    }

    use super::*;

    #[test]
    fn uris_round_trip_through_the_prefix() {
        for uri in ["demo://resource/static/document/a.md", "file:///tmp/a%20b.txt", "https://x.org/p?q=1#f"] {
            let namespaced = namespace_uri("docs-1", uri);
            assert_eq!(split_uri(&namespaced), Some(("docs-1", uri)));
        }
        assert_eq!(split_uri("demo://resource/x"), None);
        assert_eq!(split_uri("toolsearch://docs"), None);
        assert_eq!(split_uri("toolsearch:///x"), None);
        assert_eq!(split_name("everything.args-prompt"), Some(("everything", "args-prompt")));
        assert_eq!(split_name("noserver"), None);
    }

    #[test]
    fn answers_have_their_resource_uris_namespaced_and_nothing_else() {
        let mut answer = json!({
            "contents": [{"uri": "demo://a", "text": "x"}],
            "content": [
                {"type": "resource_link", "uri": "demo://b", "name": "b"},
                {"type": "resource", "resource": {"uri": "demo://c", "blob": "AA=="}},
                {"type": "text", "text": "see demo://d", "uri": "not-a-resource"}
            ],
            "structuredContent": {"uri": "demo://e", "text": "kept"}
        });
        namespace_answer("s", &mut answer);
        assert_eq!(answer["contents"][0]["uri"], "toolsearch://s/demo://a");
        assert_eq!(answer["content"][0]["uri"], "toolsearch://s/demo://b");
        assert_eq!(answer["content"][1]["resource"]["uri"], "toolsearch://s/demo://c");
        assert_eq!(answer["content"][2]["text"], "see demo://d");
        assert_eq!(answer["structuredContent"]["uri"], "demo://e");
    }

    #[test]
    fn a_prompt_becomes_a_read_only_catalogue_entry_with_string_arguments() {
        let item = json!({"name": "args-prompt", "description": "Ask about a city",
            "arguments": [{"name": "city", "required": true}, {"name": "state", "description": "US state"}]});
        let entry = prompt_entry("everything", "everything.args-prompt".into(), "args-prompt", &item);
        assert_eq!(entry["tags"], json!([PROMPT_TAG]));
        assert_eq!(entry["args_schema"]["required"], json!(["city"]));
        assert_eq!(entry["args_schema"]["properties"]["state"]["type"], "string");
        assert_eq!(entry["meta"]["annotations"]["readOnlyHint"], true);
        let result =
            prompt_as_result(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}));
        assert_eq!(serde_json::to_value(result).unwrap()["content"][0]["text"], "user: hi");
    }
}
