//! The text that is indexed for each tool and node. One function builds the embedded text,
//! another the lexical fields, so both indexes see the same facts.

use serde_json::Value;
use toolsearch_catalog::{Node, Tool};

/// Most parameters described in a document.
const MAX_PARAMS: usize = 24;
/// Longest parameter description kept, in characters.
const MAX_PARAM_DESC: usize = 160;
/// Longest description kept in the embedded text, in characters (the model reads 256 tokens).
const MAX_DENSE_DESC: usize = 1_200;
/// Longest description indexed by BM25, in characters: a very long description (some servers
/// paste whole manuals) is indexed by its first part and shown whole by `expand_tool`.
const MAX_LEXICAL_DESC: usize = 16_384;

/// Splits an identifier into lower-case words: on `_`, `-`, `.`, `/`, `:`, spaces and
/// camelCase boundaries (`getUserByID_v2` -> `get user by id v2`); digits stay with their
/// word (`s3`, `ec2`).
pub fn split_identifier(s: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let boundary = match prev {
            Some(p) if p.is_alphanumeric() => {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
            }
            _ => false,
        };
        if boundary && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words.join(" ")
}

/// The lexical fields of one document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LexicalFields {
    /// Name: split into words, plus the raw form.
    pub name: String,
    /// Category path segment names.
    pub path: String,
    /// Summary, description, examples.
    pub body: String,
    /// Parameter names (split) and descriptions.
    pub params: String,
    /// Tags.
    pub tags: String,
}

impl LexicalFields {
    /// Every part in one text (the `all` field, scored as one document by BM25), with
    /// identifiers also written as their words.
    pub fn all(&self) -> String {
        let parts = [&self.name, &self.path, &self.body, &self.params, &self.tags];
        let joined = parts.iter().filter(|p| !p.is_empty()).map(|p| p.as_str()).collect::<Vec<_>>().join("\n");
        expand_identifiers(&joined)
    }
}

/// `text` with every camelCase or PascalCase word followed by its parts (`getUserById` ->
/// `getUserById get user by id`), so the analyser, which splits only on punctuation
/// (snake_case, dotted and `::` names already fall apart there), matches either form.
pub fn expand_identifiers(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for word in text.split_inclusive(|c: char| !c.is_alphanumeric()) {
        out.push_str(word);
        let core = word.trim_end_matches(|c: char| !c.is_alphanumeric());
        let camel = core.chars().zip(core.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        if camel {
            out.push(' ');
            out.push_str(&split_identifier(core));
            out.push(' ');
        }
    }
    out
}

/// The text embedded for a tool: name words, category path, summary, description, parameters.
/// Never its `examples`: they go to the BM25 body only, where they help every dev set; in the
/// embedded text they pull other requests toward the tools that carry them (docs/benchmarks.md,
/// "Where an example belongs").
pub fn tool_dense_text(tool: &Tool) -> String {
    let mut out = split_identifier(&tool.name);
    let paths = path_phrases(&tool.paths);
    if !paths.is_empty() {
        out.push_str(" (");
        out.push_str(&paths);
        out.push(')');
    }
    out.push_str(": ");
    out.push_str(&tool.summary);
    if !tool.details.description.is_empty() && !tool.details.description.starts_with(tool.summary.trim_end_matches('…'))
    {
        out.push(' ');
    }
    let rest = tool.details.description.strip_prefix(tool.summary.as_str()).unwrap_or(&tool.details.description);
    out.push_str(&truncate_chars(rest.trim(), MAX_DENSE_DESC));
    let params = param_phrases(&tool.details.args_schema.value());
    if !params.is_empty() {
        out.push_str(" Parameters: ");
        out.push_str(&params.join("; "));
        out.push('.');
    }
    out
}

/// The lexical fields of a tool.
pub fn tool_lexical(tool: &Tool) -> LexicalFields {
    let split = split_identifier(&tool.name);
    let name = if split == tool.name.to_lowercase() { split } else { format!("{split} {}", tool.name) };
    let description = truncate_chars(&tool.details.description, MAX_LEXICAL_DESC);
    let mut body = tool.summary.clone();
    if !description.starts_with(tool.summary.trim_end_matches('…')) {
        body.push('\n');
        body.push_str(&description);
    } else {
        body = description;
    }
    for ex in &tool.details.examples {
        body.push('\n');
        body.push_str(ex);
    }
    LexicalFields {
        name,
        path: path_phrases(&tool.paths),
        body,
        params: param_text(&tool.details.args_schema.value()),
        tags: tool.tags.join(" "),
    }
}

/// The text embedded for a category node: its path, summary and description. Never the names
/// of the tools under it: a category's document must not carry anything of a tool that a
/// caller may not see (the engine adds the evidence of the tools a caller does see at query
/// time).
pub fn node_dense_text(node: &Node) -> String {
    let mut out = node.path.join(" / ");
    out.push_str(": ");
    if node.summary != node.path.last().map(String::as_str).unwrap_or("") {
        out.push_str(&node.summary);
        out.push(' ');
    }
    if let Some(d) = &node.description {
        out.push_str(&truncate_chars(d, MAX_DENSE_DESC / 2));
        out.push(' ');
    }
    out.trim().to_owned()
}

/// The lexical fields of a category node (its own text only, as [`node_dense_text`]).
pub fn node_lexical(node: &Node) -> LexicalFields {
    let last = node.path.last().cloned().unwrap_or_default();
    let mut body = node.summary.clone();
    if let Some(d) = &node.description {
        body.push('\n');
        body.push_str(d);
    }
    LexicalFields {
        name: format!("{} {last}", split_identifier(&last)),
        path: node.path.join(" "),
        body,
        params: String::new(),
        tags: node.tags.join(" "),
    }
}

fn path_phrases(paths: &[Vec<String>]) -> String {
    paths.iter().filter(|p| !p.is_empty()).map(|p| p.join(" > ")).collect::<Vec<_>>().join("; ")
}

fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema.get("properties").and_then(Value::as_object).into_iter().flatten().take(MAX_PARAMS)
}

/// The properties nested one level under a parameter: an object's own, or those of an array's
/// items (`entities: [{name, entityType, observations}]`), which say what the tool takes as
/// much as the top-level names do.
fn nested(v: &Value) -> impl Iterator<Item = (&String, &Value)> {
    let inner = match v.get("items") {
        Some(items) if items.get("properties").is_some() => items,
        _ => v,
    };
    properties(inner)
}

/// One parameter as `name words (its description)`, the description shortened.
fn param_phrase(k: &str, v: &Value) -> Option<String> {
    let name = split_identifier(k);
    let desc = v.get("description").and_then(Value::as_str).map(|d| truncate_chars(d.trim(), MAX_PARAM_DESC));
    match desc {
        _ if name.is_empty() => None,
        Some(d) if !d.is_empty() => Some(format!("{name} ({d})")),
        _ => Some(name),
    }
}

/// Each parameter as `name words (its description)`, followed by those nested one level
/// under it; at most [`MAX_PARAMS`] in all.
fn param_phrases(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in properties(schema) {
        out.extend(param_phrase(k, v));
        out.extend(nested(v).filter_map(|(k, v)| param_phrase(k, v)));
    }
    out.truncate(MAX_PARAMS);
    out
}

/// The parameters' names (as words) and descriptions for BM25, those nested one level under
/// a parameter too.
fn param_text(schema: &Value) -> String {
    let mut out = String::new();
    let mut add = |k: &str, v: &Value| {
        out.push_str(&split_identifier(k));
        out.push(' ');
        if let Some(d) = v.get("description").and_then(Value::as_str) {
            out.push_str(&truncate_chars(d, MAX_PARAM_DESC));
            out.push(' ');
        }
    };
    let mut n = 0;
    for (k, v) in properties(schema) {
        for (k, v) in std::iter::once((k, v)).chain(nested(v)) {
            if n < MAX_PARAMS {
                add(k, v);
            }
            n += 1;
        }
    }
    out
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_owned(),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_snake_kebab_dots_and_camel_case() {
        assert_eq!(split_identifier("getUserByID_v2"), "get user by id v2");
        assert_eq!(split_identifier("s3.list-buckets"), "s3 list buckets");
        assert_eq!(split_identifier("HTMLParser"), "html parser");
        assert_eq!(split_identifier("Songkick concert"), "songkick concert");
        assert_eq!(split_identifier(""), "");
    }

    #[test]
    fn camel_case_words_are_also_written_as_their_parts() {
        assert_eq!(expand_identifiers("call getUserById now"), "call getUserById  get user by id now");
        assert_eq!(expand_identifiers("plain words, HTML"), "plain words, HTML");
        assert_eq!(expand_identifiers("x.fooBar"), "x.fooBar foo bar ");
    }

    #[test]
    fn parameters_nested_one_level_are_described_too() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "entities": {"type": "array", "items": {"type": "object", "properties": {
                "entityType": {"type": "string", "description": "The type of the entity"},
                "observations": {"type": "array", "items": {"type": "string"}}}}},
            "options": {"type": "object", "properties": {"outputPath": {"description": "Where to save"}}}}});
        assert_eq!(
            param_phrases(&schema),
            [
                "entities",
                "entity type (The type of the entity)",
                "observations",
                "options",
                "output path (Where to save)"
            ]
        );
        assert_eq!(
            param_text(&schema),
            "entities entity type The type of the entity observations options output path Where to save "
        );
    }

    #[test]
    fn examples_are_searched_as_words_but_never_embedded() {
        let text = r#"{"id":"m.create","name":"create_entities","paths":[["m"]],"summary":"Create entities","description":"Create entities","tags":[],"args_schema":null,"examples":["save a new fact about someone"],"requires":[]}"#;
        let tool: Tool = serde_json::from_str(text).unwrap();
        assert!(tool_lexical(&tool).body.contains("save a new fact about someone"));
        let dense = tool_dense_text(&tool);
        assert!(!dense.contains("fact"), "{dense}");
        assert_eq!(dense, "create entities (m): Create entities");
    }
}
