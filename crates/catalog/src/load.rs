//! Reading a catalogue from a file or a string, with format detection.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::CatalogError;
use crate::import;
use crate::limits::MAX_FILE_BYTES;
use crate::manifest::{unknown_field, RawTool, GROUP_FIELDS, MANIFEST_FIELDS, NODE_FIELDS, TOOL_FIELDS};
use crate::model::Catalog;
use crate::normalize::{normalize, Origin, RawCatalog};
use crate::shapes::{self, Foreign};
use crate::{jsonl, schema::escape};

/// An input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The native JSON manifest: `{nodes, tools, groups}`.
    Manifest,
    /// JSON Lines, one tool a line.
    Jsonl,
    /// MCP `tools/list` results: one server's, or a map of server name to result.
    Mcp,
    /// An OpenAI `tools` array (`{"type": "function", "function": {...}}`).
    OpenAi,
    /// Anthropic tool definitions (`{name, description, input_schema}`).
    Anthropic,
    /// Gemini function declarations (`[{"functionDeclarations": [{name, description,
    /// parameters}]}]`).
    Gemini,
}

impl Format {
    /// Parses a format name as the CLI takes it (`manifest`, `jsonl`).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "manifest" | "json" => Some(Format::Manifest),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "mcp" => Some(Format::Mcp),
            "openai" => Some(Format::OpenAi),
            "anthropic" => Some(Format::Anthropic),
            "gemini" => Some(Format::Gemini),
            _ => None,
        }
    }

    /// JSON Lines or a JSON document by the file extension alone (`None` when it does not say).
    pub fn by_extension(file: &Path) -> Option<Format> {
        match file.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("jsonl" | "ndjson") => Some(Format::Jsonl),
            Some("json") => Some(Format::Manifest),
            _ => None,
        }
    }

    /// Picks JSON Lines or a JSON document from the file extension, then from the content. A
    /// JSON document's exact format (manifest, MCP, OpenAI, Anthropic) is decided from its
    /// shape by [`parse_str`] when no format is given.
    pub fn detect(file: &Path, text: &str) -> Format {
        match Format::by_extension(file) {
            Some(format) => format,
            None => {
                // A manifest is one document; JSON Lines has an object on each of several lines.
                let mut lines = text.lines().filter(|l| !l.trim().is_empty());
                let first = lines.next().unwrap_or("");
                let second = lines.next();
                let first_is_record =
                    first.trim_start().starts_with('{') && serde_json::from_str::<Value>(first).is_ok();
                if first_is_record && second.is_some() {
                    Format::Jsonl
                } else {
                    Format::Manifest
                }
            }
        }
    }
}

/// Reads and validates the catalogue in `file`; `format` of `None` detects it.
///
/// Any file works, a pipe or a device included (`/dev/stdin`, process substitution), but it is
/// read through a bounded reader: more than [`MAX_FILE_BYTES`], a NUL byte or bytes that are
/// not UTF-8 stop the read with an error as soon as they are seen.
pub fn load_path(file: &Path, format: Option<Format>) -> Result<Catalog, CatalogError> {
    load_path_as(file, format, None)
}

/// [`load_path`] for a file of one server's tools: with `namespace`, a flat OpenAI or
/// Anthropic file's tools get ids `NAMESPACE.name` under a category and group of that name
/// (and an MCP result is filed under that server name).
pub fn load_path_as(file: &Path, format: Option<Format>, namespace: Option<&str>) -> Result<Catalog, CatalogError> {
    let meta = std::fs::metadata(file).map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(CatalogError::file(file, "is a directory, expected a catalogue file"));
    }
    let f = std::fs::File::open(file).map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
    // JSON Lines is parsed as it is read: its text is never held whole.
    if format.or_else(|| Format::by_extension(file)) == Some(Format::Jsonl) {
        return jsonl::parse_reader(file, f, MAX_FILE_BYTES);
    }
    let text = read_bounded(f, MAX_FILE_BYTES).map_err(|e| CatalogError::file(file, e))?;
    parse_str_as(file, &text, format, namespace)
}

/// Reads `input` as UTF-8 text of at most `max` bytes, stopping at the first chunk that
/// breaks a rule, so an endless or binary input costs one chunk of memory, not all of it.
pub(crate) fn read_bounded(mut input: impl Read, max: u64) -> Result<String, String> {
    let mut bytes: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read: {e}")),
        };
        if (bytes.len() + n) as u64 > max {
            return Err(format!("is over the limit of {max} bytes"));
        }
        if chunk[..n].contains(&0) {
            return Err("contains a NUL byte: not a text catalogue".into());
        }
        // Re-check from the start of the last character of the previous chunk (it may have
        // been cut in two).
        let mut checked_from = bytes.len().saturating_sub(3);
        while checked_from > 0 && bytes[checked_from] & 0xC0 == 0x80 {
            checked_from -= 1;
        }
        bytes.extend_from_slice(&chunk[..n]);
        // Bytes that can never become UTF-8 (an incomplete sequence at the end may still).
        if let Err(e) = std::str::from_utf8(&bytes[checked_from..]) {
            if e.error_len().is_some() {
                return Err(not_utf8(&bytes, checked_from + e.valid_up_to()));
            }
        }
    }
    text_of(bytes)
}

/// `bytes` as UTF-8 text, or what a person is told of the first place they are not (the line
/// and the byte), to follow a file's name: `is not UTF-8 text: byte 0xe9 at line 2, byte 13 of
/// the line`, rather than that the stream "did not contain valid UTF-8".
pub fn text_of(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let (bytes, at) = (e.as_bytes(), e.utf8_error().valid_up_to());
        match e.utf8_error().error_len() {
            Some(_) => not_utf8(bytes, at),
            None => format!("is not UTF-8 text: it ends inside a character (line {})", line_of(bytes, at).0),
        }
    })
}

/// What a text whose byte `at` starts no UTF-8 character is told: where, and the byte.
fn not_utf8(bytes: &[u8], at: usize) -> String {
    let (line, column) = line_of(bytes, at);
    format!("is not UTF-8 text: byte {:#04x} at line {line}, byte {column} of the line", bytes[at])
}

/// The line (from 1) and the byte in it (from 1) of byte `at` of `bytes`.
fn line_of(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (before.iter().filter(|&&b| b == b'\n').count() + 1, at - start + 1)
}

/// Validates the catalogue in `text`, reporting errors against `file`.
pub fn parse_str(file: &Path, text: &str, format: Option<Format>) -> Result<Catalog, CatalogError> {
    parse_str_as(file, text, format, None)
}

/// [`parse_str`] with a namespace (see [`load_path_as`]).
pub fn parse_str_as(
    file: &Path,
    text: &str,
    format: Option<Format>,
    namespace: Option<&str>,
) -> Result<Catalog, CatalogError> {
    parse(file, text, format, namespace, false)
}

/// [`parse_str`] that leaves out each tool it would refuse, with a
/// [`WarningKind::Skipped`](crate::WarningKind::Skipped) warning in the catalogue naming the tool
/// and why, instead of refusing the catalogue: for the gateway, where one upstream's bad tool
/// must cost only itself. Each tool is checked once (linear in the catalogue). What is not a
/// catalogue at all (not JSON, no tools) is still an error.
pub fn parse_lenient(file: &Path, text: &str, format: Option<Format>) -> Result<Catalog, CatalogError> {
    parse(file, text, format, None, true)
}

fn parse(
    file: &Path,
    text: &str,
    format: Option<Format>,
    namespace: Option<&str>,
    lenient: bool,
) -> Result<Catalog, CatalogError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(CatalogError::file(file, "is empty"));
    }
    let raw = match format.unwrap_or_else(|| Format::detect(file, text)) {
        Format::Jsonl => return jsonl::parse(file, text),
        document => {
            let value: Value = serde_json::from_str(text).map_err(|e| json_error(file, text, &e))?;
            let foreign = match (format, document) {
                (None, _) => shapes::detect(&value),
                (_, Format::Mcp) => Some(Foreign::Mcp),
                (_, Format::OpenAi) => Some(Foreign::OpenAi),
                (_, Format::Anthropic) => Some(Foreign::Anthropic),
                (_, Format::Gemini) => Some(Foreign::Gemini),
                _ => None,
            };
            match foreign {
                Some(f) => import::import(file, &value, f, namespace)?,
                None => parse_manifest(file, value)?,
            }
        }
    };
    normalize(file, raw, lenient)
}

/// A JSON syntax error, said plainly when the text is no JSON at all (YAML, TOML, CSV).
fn json_error(file: &Path, text: &str, e: &serde_json::Error) -> CatalogError {
    let mut error = CatalogError::from_json(file, e);
    if !text.trim_start().starts_with(['{', '[']) {
        let ext = file.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let yaml = matches!(ext.as_deref(), Some("yaml" | "yml"));
        error.message = format!(
            "not JSON: a catalogue is a JSON manifest, an MCP, OpenAI, Anthropic or Gemini tool list in JSON, or \
             JSON Lines (one tool a line){}",
            if yaml { "; YAML is not read: convert it to JSON" } else { "" }
        );
    }
    error
}

fn parse_manifest(file: &Path, value: Value) -> Result<RawCatalog, CatalogError> {
    if let Value::Array(tools) = &value {
        if tools.is_empty() {
            return Err(CatalogError::file(file, "is an empty tool list: there is nothing to index"));
        }
        let (at, why) = shapes::unshaped(tools);
        return Err(CatalogError::at(file, format!("/{at}"), None, why));
    }
    let Value::Object(top) = value else {
        return Err(CatalogError::at(
            file,
            "",
            None,
            "a manifest must be a JSON object with `tools` (and optionally `nodes`, `groups`)",
        ));
    };
    if let Some(k) = unknown_field(&top, MANIFEST_FIELDS) {
        return Err(CatalogError::at(
            file,
            format!("/{}", escape(k)),
            Some(k),
            format!("unknown field; expected one of {MANIFEST_FIELDS:?}"),
        ));
    }
    let mut tools: Vec<(Origin, RawTool)> = records(file, &top, "tools", TOOL_FIELDS)?;
    if let Some(Value::Array(items)) = top.get("tools") {
        for ((_, tool), item) in tools.iter_mut().zip(items) {
            tool.note_schema_names(item);
        }
    }
    let raw = RawCatalog {
        tools,
        nodes: records(file, &top, "nodes", NODE_FIELDS)?,
        groups: records(file, &top, "groups", GROUP_FIELDS)?,
        warnings: Vec::new(),
    };
    if raw.tools.is_empty() {
        return Err(CatalogError::at(file, "/tools", Some("tools"), "a manifest needs at least one tool"));
    }
    Ok(raw)
}

/// Deserialises the array `top[key]` into records, each located by its JSON pointer.
fn records<T: DeserializeOwned>(
    file: &Path,
    top: &Map<String, Value>,
    key: &str,
    fields: &[&str],
) -> Result<Vec<(Origin, T)>, CatalogError> {
    let Some(v) = top.get(key) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err(CatalogError::at(file, format!("/{key}"), Some(key), "must be an array"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("/{key}/{i}");
        let Value::Object(obj) = item else {
            return Err(CatalogError::at(file, at, None, "must be an object"));
        };
        if let Some(k) = unknown_field(obj, fields) {
            return Err(CatalogError::at(
                file,
                format!("{at}/{}", escape(k)),
                Some(k),
                format!("unknown field; expected one of {fields:?}"),
            ));
        }
        let origin = Origin::Pointer(at);
        let rec: T = origin.record(file, item)?;
        out.push((origin, rec));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::read_bounded;
    use std::io::Read;

    #[test]
    fn json_nested_past_what_is_read_is_said_so() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let err = super::parse_str(std::path::Path::new("deep.json"), &deep, None).unwrap_err().to_string();
        assert!(err.starts_with("deep.json:1:"), "{err}");
        assert!(err.ends_with("nested more than 128 levels deep, the most read (flatten what nests here)"), "{err}");
    }

    #[test]
    fn endless_or_binary_input_stops_early() {
        // An endless stream of zeros (like /dev/zero) stops at the first chunk.
        let err = read_bounded(std::io::repeat(0), u64::MAX).unwrap_err();
        assert!(err.contains("NUL"), "{err}");
        // An endless stream of text stops at the limit.
        let err = read_bounded(std::io::repeat(b'x'), 1 << 20).unwrap_err();
        assert!(err.contains("limit"), "{err}");
        let err = read_bounded(&[b'{', 0xff, 0xfe, b'}'][..], 1 << 20).unwrap_err();
        assert_eq!(err, "is not UTF-8 text: byte 0xff at line 1, byte 2 of the line");
        let err = read_bounded(&b"{\n  \"name\": \"x\xe9\"\n}"[..], 1 << 20).unwrap_err();
        assert_eq!(err, "is not UTF-8 text: byte 0xe9 at line 2, byte 13 of the line", "Latin-1 text");
        let err = read_bounded(&b"{\n\n \xe2\x82"[..], 1 << 20).unwrap_err();
        assert_eq!(err, "is not UTF-8 text: it ends inside a character (line 3)");
        let text = "{\"tools\": [\"é€😀\"]}".repeat(5000);
        assert_eq!(read_bounded(text.as_bytes().chain(&b""[..]), 1 << 20).unwrap(), text);
    }
}
