//! `toolsearch gateway audit`: the audit trail read back for an operator, from the gateway's
//! state directory (or a replica's `--audit-dir`), or a fleet's whole trail from its PostgreSQL
//! store.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolsearch::gateway::audit_query::{read_dir, AuditQuery, ReadCount};
use toolsearch::gateway::store::store_error;
use toolsearch::mcp::GatewayConfig;

use super::common::Global;
use super::failure::{Failure, Problem};
use super::output::{say_err, write_out};
use super::render;

/// Which lines to read, and from where.
#[derive(clap::Args, Debug)]
pub(crate) struct AuditArgs {
    /// Lines written at or after TIME: Unix milliseconds, an RFC 3339 time
    /// (2026-12-07T20:00:00Z), a date (2026-12-07, UTC), or a span back from now (30s, 15m, 2h, 7d).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    since: Option<u64>,
    /// Lines written at or before TIME (as for --since).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<u64>,
    /// Lines of the caller with this name, as the trail records it: a `tokens` entry's name, or
    /// SUBJECT@ISSUER for a user of an identity provider.
    #[arg(long, value_name = "NAME")]
    token: Option<String>,
    /// Lines about this tool, SERVER.TOOL (its expansions and calls, refused ones too).
    #[arg(long, value_name = "ID")]
    tool: Option<String>,
    /// Lines of this session.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Lines of this kind: search, choose, expand, unfold, fold, call (refused ones too: their
    /// `outcome` is the refusal's code), rejected (a name nothing answers to), tool_set_remade.
    #[arg(long, value_name = "KIND")]
    event: Option<String>,
    /// Only the newest N lines that match (still printed oldest first).
    #[arg(long, value_name = "N")]
    last: Option<usize>,
    /// Read the trail in DIR (a replica's --audit-dir) instead of the state directory's or
    /// the fleet's store.
    #[arg(long, value_name = "DIR")]
    audit_dir: Option<PathBuf>,
}

/// Prints the trail lines `args` asks for, oldest first: each line as written with `--json`,
/// else one readable line each. A fleet's lines (from its store) carry the `replica` that
/// wrote them.
pub(crate) fn run(global: &Global, config: &GatewayConfig, state: &Path, args: &AuditArgs) -> Result<(), Failure> {
    let query = AuditQuery {
        since: args.since,
        until: args.until,
        token: args.token.clone(),
        tool: args.tool.clone(),
        session: args.session.clone(),
        event: args.event.clone(),
        last: args.last,
    };
    let mut out = Buffered::default();
    let mut print = |line: Value| out.push(&if global.json { line.to_string() } else { readable(&line) });
    // One replica's files, the state directory's, or the fleet's store.
    let dir = match (&args.audit_dir, config.settings.state.postgres()) {
        (Some(dir), _) => dir.clone(),
        (None, None) => state.join("audit"),
        (None, Some(url)) => {
            let count = super::gateway::shared(|| toolsearch::gateway::store::audit::read_in(url, &query, &mut print))
                .map_err(|e| Problem::InvalidConfig.because(store_error(&config.path, e)))?;
            out.flush();
            report(count, None);
            return Ok(());
        }
    };
    let count = read_dir(&dir, &query, &mut print).map_err(|e| Problem::Io.because(e))?;
    out.flush();
    report(count, Some(&dir));
    Ok(())
}

/// What was read besides the lines, on stderr: a directory holding no trail at all is said to
/// be one (a --state or --audit-dir that is not the gateway's, say).
fn report(count: ReadCount, dir: Option<&Path>) {
    if count.unreadable > 0 {
        say_err!("warning: {} unreadable trail lines skipped (cut short by a crash, say)", count.unreadable);
    }
    match dir {
        Some(dir) if count.files == Some(0) => say_err!(
            "no audit trail in {}: is that the gateway's state directory (--state) or a replica's --audit-dir?",
            dir.display()
        ),
        _ if count.shown == 0 => say_err!("no trail line matches"),
        _ => {}
    }
}

/// One trail line for a reader: when, who, what, and the line's particulars.
fn readable(line: &Value) -> String {
    let text = |k: &str| line.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
    let time = line
        .get("time")
        .and_then(Value::as_i64)
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(|| "-".to_owned(), |t| format!("{t:.3}"));
    let mut parts = vec![time];
    if let Some(replica) = line.get("replica").and_then(Value::as_str) {
        parts.push(replica.to_owned());
    }
    parts.extend([text("token"), text("session"), text("event")]);
    if let Some(tool) = line.get("tool_id").and_then(Value::as_str) {
        parts.push(tool.to_owned());
    }
    if let Some(query) = line.get("query").and_then(Value::as_str) {
        parts.push(format!("{query:?}"));
    }
    if let Some(outcome) = line.get("outcome").and_then(Value::as_str) {
        parts.push(outcome.to_owned());
    }
    if let Some(ms) = line.get("latency_ms").and_then(Value::as_f64) {
        parts.push(format!("{ms:.1} ms"));
    }
    render::printable(&parts.join("  "))
}

/// Stdout written a block at a time (a trail can be long), a closed pipe ending the process
/// quietly.
#[derive(Default)]
struct Buffered {
    text: String,
}

impl Buffered {
    fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        if self.text.len() >= 64 << 10 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        write_out(&self.text);
        self.text.clear();
    }
}

/// A time given to --since or --until, as Unix milliseconds.
fn parse_time(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let bad = || {
        format!(
            "{s:?} is not a time: give Unix milliseconds, an RFC 3339 time (2026-12-07T20:00:00Z), a date \
             (2026-12-07) or a span back from now (30s, 15m, 2h, 7d)"
        )
    };
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| bad());
    }
    if let Some(unit) = s.chars().last().filter(|_| s.len() > 1) {
        let seconds = match unit {
            's' => Some(1),
            'm' => Some(60),
            'h' => Some(3_600),
            'd' => Some(86_400),
            _ => None,
        };
        if let (Some(per), Ok(n)) = (seconds, s[..s.len() - 1].parse::<u64>()) {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|_| bad())?;
            let back = n.checked_mul(per).and_then(|b| b.checked_mul(1_000)).ok_or_else(bad)?;
            return Ok((now.as_millis() as u64).saturating_sub(back));
        }
    }
    let full = if s.len() == 10 { format!("{s}T00:00:00Z") } else { s.to_owned() };
    let t: jiff::Timestamp = full.parse().map_err(|_| bad())?;
    u64::try_from(t.as_millisecond()).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_read_as_unix_ms_rfc3339_dates_and_spans_back_from_now() {
        assert_eq!(parse_time("1765137600000"), Ok(1_765_137_600_000));
        assert_eq!(parse_time("2025-12-07T20:00:00Z"), Ok(1_765_137_600_000));
        assert_eq!(parse_time("2025-12-07T21:00:00+01:00"), Ok(1_765_137_600_000));
        assert_eq!(parse_time("2025-12-07"), Ok(1_765_065_600_000));
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
        let hour_ago = parse_time("1h").unwrap();
        assert!(now - hour_ago >= 3_600_000 && now - hour_ago < 3_660_000, "{}", now - hour_ago);
        assert!(parse_time("7d").unwrap() < parse_time("2h").unwrap());
        for bad in ["", "yesterday", "5w", "h", "2025-13-01", "-5m", "99999999999999999999d"] {
            let e = parse_time(bad).unwrap_err();
            assert!(e.contains("is not a time") && e.contains("RFC 3339"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_readable_line_says_when_who_and_what_without_control_characters() {
        let call = json!({"time": 1_765_137_600_123u64, "token": "ide", "session": "s1", "event": "call",
                          "tool_id": "gh.issue", "outcome": "ok", "latency_ms": 2.54, "replica": "r1"});
        assert_eq!(readable(&call), "2025-12-07T20:00:00.123Z  r1  ide  s1  call  gh.issue  ok  2.5 ms");
        let search = json!({"time": 0, "token": "ide", "event": "search", "query": "red\u{1b}[31m alert"});
        let text = readable(&search);
        assert!(text.starts_with("1970-01-01T00:00:00.000Z  ide  -  search  \"red"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
