//! The audit trail read back for an operator (`toolsearch gateway audit`): which lines are
//! asked for ([`AuditQuery`]), and the reading of one gateway's trail files, oldest first.
//! A fleet's trail is read from its store (`store::audit::read_in`) with the same query.
//!
//! Reading keeps at most the `last` lines asked for in memory (or none: lines are handed on as
//! they are read), so a trail of any length is read in bounded memory.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

/// Which trail lines to read: every filter given must match, and with `last` only the newest
/// that many of those are kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    /// Lines written at or after this time (Unix milliseconds).
    pub since: Option<u64>,
    /// Lines written at or before this time (Unix milliseconds).
    pub until: Option<u64>,
    /// Lines of the caller with this token name (`token`).
    pub token: Option<String>,
    /// Lines about this tool (`tool_id`: expansions, calls, refusals).
    pub tool: Option<String>,
    /// Lines of this session (`session`).
    pub session: Option<String>,
    /// Lines of this kind (`event`: `search`, `expand`, `call`, ...).
    pub event: Option<String>,
    /// Only the newest this many of the lines that match.
    pub last: Option<usize>,
}

impl AuditQuery {
    /// Whether the trail line `line` is one asked for (`last` aside).
    pub fn matches(&self, line: &Value) -> bool {
        let time = line.get("time").and_then(Value::as_u64);
        let text = |field: &str, want: &Option<String>| {
            want.as_deref().is_none_or(|w| line.get(field).and_then(Value::as_str) == Some(w))
        };
        self.since.is_none_or(|s| time.is_some_and(|t| t >= s))
            && self.until.is_none_or(|u| time.is_some_and(|t| t <= u))
            && text("token", &self.token)
            && text("tool_id", &self.tool)
            && text("session", &self.session)
            && text("event", &self.event)
    }
}

/// What reading a trail found besides its lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCount {
    /// Lines that matched and were handed on.
    pub shown: usize,
    /// Lines that are not JSON objects (a line cut short by a crash, say), skipped.
    pub unreadable: usize,
    /// Trail files found, when read from a directory (none: it holds no trail at all); `None`
    /// when read from the fleet's store.
    pub files: Option<usize>,
}

/// Keeps the newest `last` lines handed to it, or hands each on at once when there is no
/// `last`.
pub(crate) struct Sink<'a> {
    last: Option<usize>,
    kept: VecDeque<Value>,
    out: &'a mut dyn FnMut(Value),
    count: ReadCount,
}

impl<'a> Sink<'a> {
    /// A sink handing what it keeps to `out`.
    pub(crate) fn new(last: Option<usize>, out: &'a mut dyn FnMut(Value)) -> Sink<'a> {
        Sink { last, kept: VecDeque::new(), out, count: ReadCount::default() }
    }

    /// One line that matched, oldest first.
    pub(crate) fn push(&mut self, line: Value) {
        match self.last {
            None => {
                self.count.shown += 1;
                (self.out)(line)
            }
            Some(0) => {}
            Some(n) => {
                if self.kept.len() == n {
                    self.kept.pop_front();
                }
                self.kept.push_back(line);
            }
        }
    }

    /// One line that could not be read.
    pub(crate) fn unreadable(&mut self) {
        self.count.unreadable += 1;
    }

    /// Hands on what was kept; what was read.
    pub(crate) fn finish(mut self) -> ReadCount {
        for line in self.kept.drain(..) {
            self.count.shown += 1;
            (self.out)(line);
        }
        self.count
    }
}

/// Reads the trail in `dir` (`trail.N.jsonl` down to `trail.jsonl`, oldest first), handing each
/// line `query` asks for to `out` in the order written. A directory with no trail reads as
/// none; one that cannot be read is an error naming it.
pub fn read_dir(dir: &Path, query: &AuditQuery, out: &mut dyn FnMut(Value)) -> Result<ReadCount, String> {
    let files = match toolsearch_mcp::trail::files(dir) {
        Ok(files) => files,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut sink = Sink::new(query.last, out);
    let found = files.len();
    for path in files {
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            // Rotated away between the listing and the open: its lines are in the next file.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        for line in std::io::BufReader::new(file).split(b'\n') {
            let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
            match serde_json::from_slice::<Value>(&line) {
                Ok(v) if v.is_object() => {
                    if query.matches(&v) {
                        sink.push(v);
                    }
                }
                _ if line.iter().all(u8::is_ascii_whitespace) => {}
                _ => sink.unreadable(),
            }
        }
    }
    Ok(ReadCount { files: Some(found), ..sink.finish() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(dir: &Path, query: &AuditQuery) -> (Vec<Value>, ReadCount) {
        let mut lines = Vec::new();
        let count = read_dir(dir, query, &mut |v| lines.push(v)).unwrap();
        (lines, count)
    }

    #[test]
    fn every_filter_must_match_and_last_keeps_the_newest_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let line = |time: u64, token: &str, event: &str, tool: &str| {
            json!({"time": time, "token": token, "event": event, "tool_id": tool, "session": "s1"}).to_string()
        };
        let old = [line(1_000, "ide", "call", "gh.issue"), line(2_000, "bot", "call", "gh.issue")].join("\n");
        std::fs::write(dir.path().join("trail.1.jsonl"), old + "\n").unwrap();
        let new = [line(3_000, "ide", "search", ""), "{\"time\": 4000, \"tok".to_owned()].join("\n");
        std::fs::write(dir.path().join("trail.jsonl"), new + "\n").unwrap();

        let times = |lines: &[Value]| lines.iter().map(|l| l["time"].as_u64().unwrap()).collect::<Vec<_>>();
        let (all, count) = read(dir.path(), &AuditQuery::default());
        assert_eq!(times(&all), [1_000, 2_000, 3_000], "rotated files first");
        assert_eq!(count, ReadCount { shown: 3, unreadable: 1, files: Some(2) });
        let ide = AuditQuery { token: Some("ide".into()), ..AuditQuery::default() };
        assert_eq!(times(&read(dir.path(), &ide).0), [1_000, 3_000]);
        let q = AuditQuery { token: Some("ide".into()), event: Some("call".into()), ..AuditQuery::default() };
        assert_eq!(times(&read(dir.path(), &q).0), [1_000]);
        let q = AuditQuery { tool: Some("gh.issue".into()), since: Some(1_500), ..AuditQuery::default() };
        assert_eq!(times(&read(dir.path(), &q).0), [2_000]);
        let q = AuditQuery { until: Some(2_000), session: Some("s1".into()), ..AuditQuery::default() };
        assert_eq!(times(&read(dir.path(), &q).0), [1_000, 2_000]);
        let q = AuditQuery { session: Some("s2".into()), ..AuditQuery::default() };
        assert!(read(dir.path(), &q).0.is_empty());
        let last = |n| AuditQuery { last: Some(n), ..AuditQuery::default() };
        assert_eq!(times(&read(dir.path(), &last(2)).0), [2_000, 3_000], "the newest two, oldest first");
        assert_eq!(read(dir.path(), &last(2)).1.shown, 2);
        assert!(read(dir.path(), &last(0)).0.is_empty());
        assert_eq!(times(&read(dir.path(), &last(10)).0), [1_000, 2_000, 3_000]);
        // A line with no time is never inside a time window.
        std::fs::remove_file(dir.path().join("trail.1.jsonl")).unwrap();
        std::fs::write(dir.path().join("trail.jsonl"), "{\"event\": \"call\"}\n").unwrap();
        assert_eq!(read(dir.path(), &AuditQuery::default()).0.len(), 1);
        assert!(read(dir.path(), &AuditQuery { since: Some(0), ..AuditQuery::default() }).0.is_empty());
    }

    #[test]
    fn no_trail_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(&dir.path().join("never-made"), &AuditQuery::default()).0, Vec::<Value>::new());
        assert!(read(dir.path(), &AuditQuery::default()).0.is_empty());
    }
}
