//! The audit trail shipped to the shared store: each replica keeps writing its trail to its
//! state dir before it answers (the file is the write-ahead log: a replica killed mid-call loses
//! no line it answered for), and a task ships what is new to `toolsearch_audit`, append-only,
//! every half second. Where it got to is kept beside the trail (`shipped.json`: the file's
//! identity and a byte offset), and rows are keyed by replica, file and offset, so a line
//! shipped twice (a crash between the insert and the cursor) is stored once. While the database
//! is away the trail's own bounded files are the buffer; it catches up when the database is
//! back (lines rotated away before they were shipped are counted and reported), shipping full
//! batches back to back until it has caught up. With `state.audit_days`, lines shipped longer
//! ago are deleted. An operator reads the fleet's trail back with `toolsearch gateway audit`
//! ([`read_in`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolsearch_catalog::platform::file_identity;
use toolsearch_mcp::ops::Status;
use toolsearch_mcp::trail::files;

use crate::audit_query::{AuditQuery, ReadCount};

/// How often new lines are looked for.
const EVERY: Duration = Duration::from_millis(500);
/// The most lines one insert carries (one statement: a backlog of a full trail window, 80 MiB,
/// ships in a few hundred).
const BATCH: usize = 2000;
/// The most bytes of a trail file read a look (a trail line is far shorter: its fields are
/// bounded).
const CHUNK: u64 = 4 << 20;
/// How often a replica deletes lines older than `audit_days`.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// The most lines one pruning statement deletes.
const PRUNE_BATCH: i64 = 10_000;
/// The cursor's file in the trail directory.
const CURSOR: &str = "shipped.json";

/// Where shipping got to: a trail file (by identity) and the byte offset past the last
/// shipped line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Cursor {
    file: u64,
    offset: u64,
}

fn read_cursor(dir: &Path) -> Option<Cursor> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(CURSOR)).ok()?).ok()
}

/// The lines to ship next from the trail in `dir` after `cursor`: (file identity, offset of
/// the line, the line), at most [`BATCH`], whole lines only; and whether the cursor's file
/// was rotated away (lines lost before they were shipped).
fn next_lines(dir: &Path, cursor: Option<Cursor>) -> (Vec<(u64, u64, String)>, bool) {
    let all: Vec<(PathBuf, u64)> = files(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, file_identity(&m))))
        .collect();
    let start = cursor.and_then(|c| all.iter().position(|(_, id)| *id == c.file));
    let lost = cursor.is_some_and(|c| c.offset > 0) && start.is_none();
    let mut out = Vec::new();
    for (i, (path, id)) in all.iter().enumerate().skip(start.unwrap_or(0)) {
        let from = if Some(i) == start { cursor.map_or(0, |c| c.offset) } else { 0 };
        // Only what lies past the cursor is read, at most a chunk a look.
        let Ok(bytes) = read_from(path, from) else { continue };
        let mut at = 0;
        while at < bytes.len() && out.len() < BATCH {
            let Some(end) = bytes[at..].iter().position(|b| *b == b'\n') else { break };
            out.push((*id, from + at as u64, String::from_utf8_lossy(&bytes[at..at + end]).into_owned()));
            at += end + 1;
        }
        if out.len() >= BATCH {
            break;
        }
    }
    (out, lost)
}

/// Up to [`CHUNK`] bytes of `path` from byte `from`.
fn read_from(path: &Path, from: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    let mut f = std::fs::File::open(path)?;
    f.seek(std::io::SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    f.take(CHUNK).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Ships the trail in `dir` of replica `replica` to the store at `url`, until the gateway stops.
pub(crate) async fn ship(url: String, replica: String, dir: PathBuf, status: Arc<dyn Status>) {
    let mut client: Option<tokio_postgres::Client> = None;
    let mut backlog = false;
    loop {
        // A full batch shipped means more is waiting (a store that was away, traffic faster
        // than a look's worth): the next goes at once, at the store's pace.
        if !std::mem::take(&mut backlog) {
            tokio::time::sleep(EVERY).await;
        }
        let (lines, lost) = next_lines(&dir, read_cursor(&dir));
        if lost {
            status.event("audit_lines_lost", json!({"reason": "rotated away before the store took them"}));
            let _ = std::fs::remove_file(dir.join(CURSOR));
        }
        if lines.is_empty() {
            continue;
        }
        if client.as_ref().is_none_or(tokio_postgres::Client::is_closed) {
            client = super::postgres::open(&url).await.ok().map(|(c, _)| c);
        }
        let Some(c) = client.as_mut() else { continue };
        match insert(c, &replica, &lines).await {
            Ok(()) => {
                let (file, offset, line) = lines.last().expect("not empty");
                let cursor = Cursor { file: *file, offset: offset + line.len() as u64 + 1 };
                let _ = crate::pins::write_atomic(&dir, CURSOR, &cursor);
                backlog = lines.len() >= BATCH;
            }
            Err(_) => client = None,
        }
    }
}

/// Deletes the fleet's trail lines shipped more than `days` days ago from the store at `url`,
/// when the gateway starts and then every [`PRUNE_EVERY`] (a moment after the database is back,
/// if it was away), until it stops; each run's count is an `audit_pruned` status event. A task
/// of its own: a first run over years of lines never holds up shipping.
pub(crate) async fn keep_pruned(url: String, days: u32, status: Arc<dyn Status>) {
    let mut client: Option<tokio_postgres::Client> = None;
    loop {
        if client.as_ref().is_none_or(tokio_postgres::Client::is_closed) {
            client = super::postgres::open(&url).await.ok().map(|(c, _)| c);
        }
        let pruned = match client.as_ref() {
            Some(c) => prune(c, days).await,
            None => Err(String::new()),
        };
        match pruned {
            Ok(lines) if lines > 0 => status.event("audit_pruned", json!({"lines": lines, "older_than_days": days})),
            Ok(_) => {}
            Err(_) => {
                client = None;
                tokio::time::sleep(EVERY * 2).await;
                continue;
            }
        }
        tokio::time::sleep(PRUNE_EVERY).await;
    }
}

/// Deletes the fleet's trail lines shipped more than `days` days ago, [`PRUNE_BATCH`] a
/// statement (each its own transaction, so a long backlog of old lines never holds one open
/// long); how many. Replicas pruning at once skip what another deleted.
async fn prune(c: &tokio_postgres::Client, days: u32) -> Result<u64, String> {
    let db = |e: tokio_postgres::Error| crate::secrets::mask(&e.to_string());
    let days = i32::try_from(days).unwrap_or(i32::MAX);
    let mut total = 0;
    loop {
        let deleted = c
            .execute(
                "DELETE FROM toolsearch_audit WHERE ctid = ANY(ARRAY(SELECT ctid FROM toolsearch_audit \
                 WHERE shipped_at < now() - make_interval(days => $1) LIMIT $2))",
                &[&days, &PRUNE_BATCH],
            )
            .await
            .map_err(db)?;
        total += deleted;
        if deleted < PRUNE_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// Stores `lines` in one statement (the whole batch or none of it); a line already stored
/// (shipped before a crash moved the cursor) is left as it is.
async fn insert(c: &tokio_postgres::Client, replica: &str, lines: &[(u64, u64, String)]) -> Result<(), String> {
    let db = |e: tokio_postgres::Error| crate::secrets::mask(&e.to_string());
    let files: Vec<i64> = lines.iter().map(|l| l.0 as i64).collect();
    let offsets: Vec<i64> = lines.iter().map(|l| l.1 as i64).collect();
    let values: Vec<Value> =
        lines.iter().map(|l| serde_json::from_str(&l.2).unwrap_or_else(|_| json!({"unreadable": l.2}))).collect();
    c.execute(
        "INSERT INTO toolsearch_audit (replica, file, at, line) \
         SELECT $1, f, a, l FROM unnest($2::bigint[], $3::bigint[], $4::jsonb[]) AS t(f, a, l) \
         ON CONFLICT (replica, file, at) DO NOTHING",
        &[&replica, &files, &offsets, &values],
    )
    .await
    .map_err(db)?;
    Ok(())
}

/// `gateway audit` against the store at `url`: the fleet's trail lines `query` asks for, handed
/// to `out` oldest first by the time each was written (ties in the order each replica wrote
/// them), each with the `replica` that wrote it. Lines are streamed from the database in the
/// index's order, so no more than `query.last` rows are ever held, here or there.
pub async fn read_in(url: &str, query: &AuditQuery, out: &mut dyn FnMut(Value)) -> Result<ReadCount, String> {
    use futures::StreamExt;
    use tokio_postgres::types::ToSql;
    let (client, _) = super::postgres::open(url).await?;
    let db = |e: tokio_postgres::Error| crate::secrets::mask(&e.to_string());
    let ms = |t: Option<u64>| t.map(|t| t.min(i64::MAX as u64) as i64);
    let (since, until) = (ms(query.since), ms(query.until));
    let last = query.last.map(|n| n.min(i64::MAX as usize) as i64);
    let params: [&(dyn ToSql + Sync); 7] =
        [&since, &until, &query.token, &query.tool, &query.session, &query.event, &last];
    // Both forms walk the index by time (migration 8): the whole trail forwards, streamed from
    // its first line; the newest N backwards, then those N turned oldest first.
    let timed = concat!(
        "WITH timed AS (SELECT replica, file, at, line, ",
        super::migrations::audit_time!(),
        " AS time \
         FROM toolsearch_audit) "
    );
    let filters = "($1::bigint IS NULL OR time >= $1) AND ($2::bigint IS NULL OR time <= $2) \
         AND ($3::text IS NULL OR line->>'token' = $3) AND ($4::text IS NULL OR line->>'tool_id' = $4) \
         AND ($5::text IS NULL OR line->>'session' = $5) AND ($6::text IS NULL OR line->>'event' = $6)";
    let (sql, params) = match last {
        Some(_) => (
            format!(
                "{timed}SELECT replica, line FROM (SELECT * FROM timed WHERE {filters} \
                 ORDER BY time DESC NULLS LAST, replica DESC, file DESC, at DESC LIMIT $7) picked \
                 ORDER BY time NULLS FIRST, replica, file, at"
            ),
            &params[..],
        ),
        None => (
            format!(
                "{timed}SELECT replica, line FROM timed WHERE {filters} ORDER BY time NULLS FIRST, replica, file, at"
            ),
            &params[..6],
        ),
    };
    let rows = client.query_raw(&sql, params.iter().map(|p| *p as &dyn ToSql)).await.map_err(db)?;
    let mut rows = std::pin::pin!(rows);
    let mut sink = crate::audit_query::Sink::new(None, out);
    while let Some(row) = rows.next().await {
        let row = row.map_err(db)?;
        let (replica, mut line): (String, Value) = (row.get(0), row.get(1));
        match line.as_object_mut() {
            Some(fields) if !fields.contains_key("unreadable") => {
                fields.entry("replica").or_insert(json!(replica));
                sink.push(line);
            }
            _ => sink.unreadable(),
        }
    }
    Ok(sink.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_taken_whole_after_the_cursor_and_a_rotated_away_file_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trail.1.jsonl"), "{\"a\":1}\n{\"a\":2}\n").unwrap();
        std::fs::write(dir.path().join("trail.jsonl"), "{\"a\":3}\n{\"a\":4").unwrap();
        let (lines, lost) = next_lines(dir.path(), None);
        let texts: Vec<&str> = lines.iter().map(|l| l.2.as_str()).collect();
        assert_eq!(texts, ["{\"a\":1}", "{\"a\":2}", "{\"a\":3}"], "the unfinished line waits");
        assert!(!lost);
        let (file, offset, line) = &lines[1];
        let after = Cursor { file: *file, offset: offset + line.len() as u64 + 1 };
        let (rest, _) = next_lines(dir.path(), Some(after));
        assert_eq!(rest.iter().map(|l| l.2.as_str()).collect::<Vec<_>>(), ["{\"a\":3}"]);
        let (_, lost) = next_lines(dir.path(), Some(Cursor { file: 1, offset: 10 }));
        assert!(lost, "a file no longer there");
    }
}
