//! JSON Lines of tools, one object a line: the `../shared/bench` format
//! (`id, name, description, parameters, path, tags, meta`). Unknown fields are ignored, so
//! producers may add their own; blank lines are skipped.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use crate::error::CatalogError;
use crate::manifest::RawTool;
use crate::normalize::{Origin, RawCatalog};

pub(crate) fn parse(file: &Path, text: &str) -> Result<RawCatalog, CatalogError> {
    let mut raw = RawCatalog::default();
    for (i, line) in text.lines().enumerate() {
        parse_line(file, i + 1, line, &mut raw)?;
    }
    finish(file, raw)
}

/// [`parse`] reading `input` a line at a time, so the file's text is never held whole (a
/// million-tool catalogue is over a gigabyte of it). The checks are those of the whole-file
/// reader: at most `max` bytes, no NUL byte, UTF-8 only, each failing at the line it is seen.
pub(crate) fn parse_reader(file: &Path, input: impl Read, max: u64) -> Result<RawCatalog, CatalogError> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut raw = RawCatalog::default();
    let (mut buf, mut total, mut n, mut blank) = (Vec::new(), 0u64, 0usize, true);
    loop {
        buf.clear();
        // One byte past the limit is enough to know it is passed.
        let read = Read::take(&mut reader, max - total + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| CatalogError::file(file, format!("cannot read: {e}")))?;
        if read == 0 {
            break;
        }
        total += read as u64;
        n += 1;
        if total > max {
            return Err(CatalogError::file(file, format!("is over the limit of {max} bytes")));
        }
        if buf.contains(&0) {
            return Err(CatalogError::file(file, "contains a NUL byte: not a text catalogue"));
        }
        let line = std::str::from_utf8(&buf).map_err(|_| CatalogError::file(file, "is not UTF-8 text"))?;
        let line = if n == 1 { line.strip_prefix('\u{feff}').unwrap_or(line) } else { line };
        blank &= line.trim().is_empty();
        parse_line(file, n, line, &mut raw)?;
    }
    if blank {
        return Err(CatalogError::file(file, "is empty"));
    }
    finish(file, raw)
}

/// Adds line `n` (1-based) to `raw`; a blank line adds nothing.
fn parse_line(file: &Path, n: usize, line: &str, raw: &mut RawCatalog) -> Result<(), CatalogError> {
    if line.trim().is_empty() {
        return Ok(());
    }
    let value: Value = serde_json::from_str(line).map_err(|e| {
        let mut err = CatalogError::from_json(file, &e);
        err.location = crate::Location::Line { line: n, column: e.column() };
        err
    })?;
    if !value.is_object() {
        return Err(CatalogError::line(file, n, 0, None, "each line must be a JSON object describing one tool"));
    }
    let tool: RawTool =
        serde_json::from_value(value).map_err(|e| CatalogError::line(file, n, 0, None, e.to_string()))?;
    raw.tools.push((Origin::Line(n), tool));
    Ok(())
}

fn finish(file: &Path, raw: RawCatalog) -> Result<RawCatalog, CatalogError> {
    if raw.tools.is_empty() {
        return Err(CatalogError::file(file, "no tools: the file has no JSON object lines"));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(raw: RawCatalog) -> String {
        serde_json::to_string(&crate::normalize::normalize(Path::new("t.jsonl"), raw).unwrap()).unwrap()
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
        assert!(err(b"{\"id\": \"a\", \"name\": \"\xff\"}\n", 1 << 20).contains("UTF-8"));
        assert!(err(b"{\"id\": \"a\", \"name\": \"A\"}\n{\"id\": \"b\"", 20).contains("over the limit of 20 bytes"));
        assert!(err(b"  \n\n", 1 << 20).contains("is empty"));
        let e = parse_reader(p, &b"{\"id\": \"a\", \"name\": \"A\"}\n{oops}\n"[..], 1 << 20).err().unwrap();
        assert_eq!(e.location, crate::Location::Line { line: 2, column: 2 });
        // An endless stream stops at the limit rather than filling memory.
        assert!(parse_reader(p, std::io::repeat(b' '), 1 << 16).err().unwrap().to_string().contains("limit"));
    }
}
