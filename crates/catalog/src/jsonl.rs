//! JSON Lines of tools, one object a line: the `../shared/bench` format
//! (`id, name, description, parameters, path, tags, meta`). Unknown fields are ignored, so
//! producers may add their own; blank lines are skipped. A line without an `id` holding an
//! OpenAI, Anthropic or MCP tool is read as that tool.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::CatalogError;
use crate::import;
use crate::limits::MAX_FILE_BYTES;
use crate::manifest::RawTool;
use crate::model::{Catalog, Tool};
use crate::normalize::{Normalizer, Origin};
use crate::shapes;

/// The catalogue of the JSON Lines `text`, each tool normalised as its line is read.
pub(crate) fn parse(file: &Path, text: &str) -> Result<Catalog, CatalogError> {
    let mut out = Normalizer::new(file, Vec::new(), Vec::new())?;
    let mut tools = Vec::new();
    for (i, line) in text.lines().enumerate() {
        tools.extend(parse_line(file, i + 1, line, &mut out)?);
    }
    finish(file, out, tools)
}

/// [`parse`] reading `input` a line at a time, so neither the file's text nor its raw records
/// are ever held whole (a million-tool catalogue is over a gigabyte of each).
pub(crate) fn parse_reader(file: &Path, input: impl Read, max: u64) -> Result<Catalog, CatalogError> {
    let mut reader = JsonlTools::new(file, input, max)?;
    let mut tools = Vec::new();
    while let Some(tool) = reader.next_tool()? {
        tools.push(tool);
    }
    let mut catalog = reader.finish()?;
    catalog.tools = tools;
    Ok(catalog)
}

/// A JSON Lines catalogue read a tool at a time, for a build that streams its tools to disk
/// rather than hold them: [`JsonlTools::next_tool`] hands over each tool, validated, in file
/// order, and [`JsonlTools::finish`] the rest of the catalogue. The checks are those of
/// [`crate::load_path`]: at most [`MAX_FILE_BYTES`], no NUL byte, UTF-8 only, every tool
/// valid and its id unique, each error reported at its line.
pub struct JsonlTools<R> {
    file: PathBuf,
    reader: BufReader<R>,
    buf: Vec<u8>,
    /// Bytes read, the most allowed, lines read.
    total: u64,
    max: u64,
    line: usize,
    /// Whether every line so far was blank.
    blank: bool,
    out: Normalizer,
}

impl JsonlTools<std::fs::File> {
    /// Opens the JSON Lines catalogue at `file`.
    pub fn open(file: &Path) -> Result<JsonlTools<std::fs::File>, CatalogError> {
        let meta = std::fs::metadata(file).map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            return Err(CatalogError::file(file, "is a directory, expected a catalogue file"));
        }
        let f = std::fs::File::open(file).map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
        JsonlTools::new(file, f, MAX_FILE_BYTES)
    }
}

impl<R: Read> JsonlTools<R> {
    /// Reads `input`, at most `max` bytes of it, as the JSON Lines catalogue `file`.
    pub(crate) fn new(file: &Path, input: R, max: u64) -> Result<JsonlTools<R>, CatalogError> {
        Ok(JsonlTools {
            file: file.to_path_buf(),
            reader: BufReader::with_capacity(64 * 1024, input),
            buf: Vec::new(),
            total: 0,
            max,
            line: 0,
            blank: true,
            out: Normalizer::new(file, Vec::new(), Vec::new())?,
        })
    }

    /// The next tool, validated, or `None` after the last.
    pub fn next_tool(&mut self) -> Result<Option<Tool>, CatalogError> {
        let file = self.file.as_path();
        loop {
            self.buf.clear();
            // One byte past the limit is enough to know it is passed.
            let read = Read::take(&mut self.reader, self.max - self.total + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
            if read == 0 {
                return Ok(None);
            }
            self.total += read as u64;
            self.line += 1;
            if self.total > self.max {
                return Err(CatalogError::file(file, format!("is over the limit of {} bytes", self.max)));
            }
            if self.buf.contains(&0) {
                return Err(CatalogError::file(file, "contains a NUL byte: not a text catalogue"));
            }
            let line = std::str::from_utf8(&self.buf).map_err(|e| {
                let (at, byte) = (e.valid_up_to(), self.buf[e.valid_up_to()]);
                CatalogError::line(file, self.line, at + 1, None, format!("is not UTF-8 text: byte {byte:#04x}"))
            })?;
            let line = if self.line == 1 { line.strip_prefix('\u{feff}').unwrap_or(line) } else { line };
            self.blank &= line.trim().is_empty();
            if let Some(tool) = parse_line(file, self.line, line, &mut self.out)? {
                return Ok(Some(tool));
            }
        }
    }

    /// The catalogue without its tools, once every tool was read: its categories (every
    /// ancestor of every tool's paths) and groups (none: a line is a tool). Fails if the file
    /// held no tool.
    pub fn finish(self) -> Result<Catalog, CatalogError> {
        if self.blank {
            return Err(CatalogError::file(&self.file, "is empty"));
        }
        finish(&self.file, self.out, Vec::new())
    }
}

/// The tool on line `n` (1-based), validated by `out`; none on a blank line.
fn parse_line(file: &Path, n: usize, line: &str, out: &mut Normalizer) -> Result<Option<Tool>, CatalogError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(|e| {
        let mut err = CatalogError::from_json(file, &e);
        err.location = crate::Location::Line { line: n, column: e.column() };
        err
    })?;
    if !value.is_object() {
        return Err(CatalogError::line(file, n, 0, None, "each line must be a JSON object describing one tool"));
    }
    let origin = Origin::Line(n);
    // A line holding an OpenAI, Anthropic or MCP tool (no `id`) is that tool, its id its name;
    // a provider-defined one is left out with a warning.
    if value.get("id").is_none() {
        if let Some(kind) = shapes::provider_defined(&value) {
            let at = format!("{}:{n}", file.display());
            out.warnings.push(import::left_out_provider_defined(at, &value, kind));
            return Ok(None);
        }
        if let Some(shape) = shapes::shape_of(&value) {
            return out.tool(origin, import::foreign_tool(&value, shape)).map(Some);
        }
    }
    let mut tool: RawTool = origin.record(file, &value)?;
    tool.note_schema_names(&value);
    out.tool(origin, tool).map(Some)
}

fn finish(file: &Path, out: Normalizer, tools: Vec<Tool>) -> Result<Catalog, CatalogError> {
    if out.tools() == 0 {
        return Err(CatalogError::file(file, "no tools: the file has no JSON object lines"));
    }
    let mut catalog = out.finish()?;
    catalog.tools = tools;
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(catalog: Catalog) -> String {
        serde_json::to_string(&catalog).unwrap()
    }

    #[test]
    fn a_line_at_a_time_reads_what_the_whole_text_reads() {
        let text = "\u{feff}{\"id\": \"a\", \"name\": \"A é\"}\r\n\n  \n{\"id\": \"b\", \"name\": \"B\"}";
        let p = Path::new("t.jsonl");
        let whole = parse(p, text.strip_prefix('\u{feff}').unwrap()).unwrap();
        // Read in tiny pieces, so lines and characters are cut across reads.
        let streamed =
            parse_reader(p, std::io::Read::chain(&text.as_bytes()[..7], &text.as_bytes()[7..]), 1 << 20).unwrap();
        assert_eq!(streamed.tools.len(), 2);
        assert_eq!(normalised(whole), normalised(streamed));
    }

    #[test]
    fn a_line_at_a_time_keeps_the_whole_file_checks() {
        let p = Path::new("t.jsonl");
        let err = |input: &[u8], max: u64| parse_reader(p, input, max).err().unwrap().to_string();
        assert!(err(b"{\"id\": \"a\", \"name\": \"A\"}\n\0", 1 << 20).contains("NUL"));
        let latin1 = b"{\"id\": \"a\", \"name\": \"A\"}\n{\"id\": \"b\", \"name\": \"\xe9\"}\n";
        assert_eq!(err(latin1, 1 << 20), "t.jsonl:2:22: is not UTF-8 text: byte 0xe9");
        assert!(err(b"{\"id\": \"a\", \"name\": \"A\"}\n{\"id\": \"b\"", 20).contains("over the limit of 20 bytes"));
        assert!(err(b"  \n\n", 1 << 20).contains("is empty"));
        let e = parse_reader(p, &b"{\"id\": \"a\", \"name\": \"A\"}\n{oops}\n"[..], 1 << 20).err().unwrap();
        assert_eq!(e.location, crate::Location::Line { line: 2, column: 2 });
        // An endless stream stops at the limit rather than filling memory.
        assert!(parse_reader(p, std::io::repeat(b' '), 1 << 16).err().unwrap().to_string().contains("limit"));
    }
}
