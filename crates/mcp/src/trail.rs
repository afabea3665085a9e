//! The audit trail on disk: every session's audit entries as JSON Lines under the state
//! directory, bounded and rotated, for operators and for `toolsearch learn INDEX TRAIL`.
//!
//! Each line is one entry of a tool set's trail (`toolsearch_disclosure::AuditEntry`) with
//! who and when: `time` (Unix milliseconds), `session`, `token` (the token's name, never its
//! value), and for calls `request_id` and `latency_ms`. Argument values are written only when
//! the config asks (`audit.arguments`); otherwise a call keeps its argument names only.
//! A gateway also writes its forwarded reads and prompts (`resources/read`, `prompts/get`) and
//! each session's tool set made again by a reload (`tool_set_remade`).
//!
//! `trail.jsonl` grows to `max_bytes`, then becomes `trail.1.jsonl` (the older files shift up
//! to `trail.KEEP.jsonl`, the oldest dropped), so the trail never holds more than
//! `(keep + 1) * max_bytes`. Each line is written whole and flushed at once.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{Map, Value};

/// The `toolsearch.audit` section of a gateway config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    /// Write the trail (default true).
    pub enabled: bool,
    /// Write calls' argument values (default false: names only; values may hold personal data).
    pub arguments: bool,
    /// Bytes of the current file before it is rotated (default 16 MiB).
    pub max_bytes: u64,
    /// Rotated files kept (default 4).
    pub keep: usize,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings { enabled: true, arguments: false, max_bytes: 16 << 20, keep: 4 }
    }
}

/// The time a record is written, as its `time` field holds it: Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The name of the current file of a trail directory.
pub const CURRENT: &str = "trail.jsonl";

/// A trail being written.
#[derive(Debug)]
pub struct Trail {
    dir: PathBuf,
    /// Its settings, replaced by a reloaded config's ([`Trail::set_settings`]).
    settings: std::sync::RwLock<AuditSettings>,
    file: Mutex<Option<(File, u64)>>,
}

impl Trail {
    /// A trail in `dir` (created now if `settings.enabled`, else at its first record written
    /// once a reload turns it on; private to the user).
    pub fn open(dir: &Path, settings: AuditSettings) -> std::io::Result<Trail> {
        if settings.enabled {
            make_dir(dir)?;
        }
        Ok(Trail { dir: dir.to_path_buf(), settings: std::sync::RwLock::new(settings), file: Mutex::new(None) })
    }

    fn settings(&self) -> AuditSettings {
        *self.settings.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether records are written at all (`audit.enabled`, as the config says now).
    pub fn enabled(&self) -> bool {
        self.settings().enabled
    }

    /// Whether argument values are written.
    pub fn arguments(&self) -> bool {
        self.settings().arguments
    }

    /// Applies `settings` (a reloaded config's) from the next record on: whether records are
    /// written at all (what happens while the trail is off is never written), whether argument
    /// values are, and the bounds of the files (the current one is rotated at its next write if
    /// it is past the new `max_bytes`; rotated files past the new `keep` go at the next
    /// rotation).
    pub fn set_settings(&self, settings: AuditSettings) {
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = settings;
    }

    /// Appends one record (an object), rotating first when it would pass `max_bytes`; nothing
    /// while the trail is off. A write that fails is given up silently: the trail must never
    /// stop a call.
    pub fn write(&self, record: Map<String, Value>) {
        if !self.enabled() {
            return;
        }
        let mut line = Value::Object(record).to_string();
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self.append(&mut file, line.as_bytes());
    }

    fn append(&self, file: &mut Option<(File, u64)>, line: &[u8]) -> std::io::Result<()> {
        let current = self.dir.join(CURRENT);
        let AuditSettings { max_bytes, keep, .. } = self.settings();
        if file.as_ref().is_some_and(|(_, len)| len + line.len() as u64 > max_bytes && *len > 0) {
            *file = None;
            self.rotate(keep)?;
        }
        if file.is_none() {
            if !self.dir.is_dir() {
                make_dir(&self.dir)?;
            }
            let f = toolsearch_catalog::platform::private_file_options(OpenOptions::new().create(true).append(true))
                .open(&current)?;
            let len = f.metadata()?.len();
            *file = Some((f, len));
            if len > 0 && len + line.len() as u64 > max_bytes {
                *file = None;
                self.rotate(keep)?;
                return self.append(file, line);
            }
        }
        let (f, len) = file.as_mut().expect("opened above");
        f.write_all(line)?;
        *len += line.len() as u64;
        Ok(())
    }

    /// `trail.jsonl` -> `trail.1.jsonl`, each older file one up, the oldest past `keep` gone.
    fn rotate(&self, keep: usize) -> std::io::Result<()> {
        let name = |k: usize| self.dir.join(if k == 0 { CURRENT.to_owned() } else { format!("trail.{k}.jsonl") });
        // The files from `keep` on go: one, or more where a reload lowered `keep`.
        let mut k = keep;
        while k == keep || name(k).exists() {
            let _ = std::fs::remove_file(name(k));
            k += 1;
        }
        for k in (0..keep).rev() {
            if name(k).exists() {
                std::fs::rename(name(k), name(k + 1))?;
            }
        }
        Ok(())
    }
}

/// Creates the trail's directory, private to the user.
fn make_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    toolsearch_catalog::platform::make_private(dir, true)
}

/// The files of the trail in `dir`, oldest first (`trail.N.jsonl` down to `trail.jsonl`).
pub fn files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut rotated: Vec<(usize, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if let Some(k) = name.strip_prefix("trail.").and_then(|r| r.strip_suffix(".jsonl")).and_then(|k| k.parse().ok())
        {
            rotated.push((k, path));
        }
    }
    rotated.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut out: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    if dir.join(CURRENT).exists() {
        out.push(dir.join(CURRENT));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trail_rotates_and_keeps_a_bounded_number_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let settings = AuditSettings { max_bytes: 200, keep: 2, ..AuditSettings::default() };
        let trail = Trail::open(dir.path(), settings).unwrap();
        for i in 0..40 {
            let mut m = Map::new();
            m.insert("step".into(), Value::from(i));
            m.insert("pad".into(), Value::from("x".repeat(40)));
            trail.write(m);
        }
        let files = files(dir.path()).unwrap();
        let names: Vec<String> = files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["trail.2.jsonl", "trail.1.jsonl", "trail.jsonl"]);
        let mut steps = Vec::new();
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(text.len() as u64 <= 200, "{f:?} is {} bytes", text.len());
            for line in text.lines() {
                steps.push(serde_json::from_str::<Value>(line).unwrap()["step"].as_u64().unwrap());
            }
        }
        // The newest entries, in order, none cut.
        assert!(steps.windows(2).all(|w| w[1] == w[0] + 1) && *steps.last().unwrap() == 39, "{steps:?}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&files[2]).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn settings_set_while_it_runs_apply_to_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let settings = AuditSettings { max_bytes: 100, keep: 4, ..AuditSettings::default() };
        let trail = Trail::open(dir.path(), settings).unwrap();
        let line =
            |i: u64| Map::from_iter([("step".to_owned(), Value::from(i)), ("pad".into(), "x".repeat(40).into())]);
        for i in 0..12 {
            trail.write(line(i));
        }
        assert_eq!(files(dir.path()).unwrap().len(), 5);
        assert!(!trail.arguments());
        trail.set_settings(AuditSettings { arguments: true, keep: 1, ..settings });
        assert!(trail.arguments());
        trail.write(line(12));
        trail.write(line(13));
        let names: Vec<String> =
            files(dir.path()).unwrap().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["trail.1.jsonl", "trail.jsonl"], "the files past the new `keep` are gone");
    }

    #[test]
    fn a_trail_off_writes_nothing_and_makes_no_directory_until_a_reload_turns_it_on() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("audit");
        let on = AuditSettings::default();
        let trail = Trail::open(&dir, AuditSettings { enabled: false, ..on }).unwrap();
        let line = |i: u64| Map::from_iter([("step".to_owned(), Value::from(i))]);
        trail.write(line(1));
        assert!(!trail.enabled() && !dir.exists(), "no directory while off");
        trail.set_settings(on);
        trail.write(line(2));
        trail.set_settings(AuditSettings { enabled: false, ..on });
        trail.write(line(3));
        trail.set_settings(on);
        trail.write(line(4));
        let text = std::fs::read_to_string(dir.join(CURRENT)).unwrap();
        let steps: Vec<u64> =
            text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["step"].as_u64().unwrap()).collect();
        assert_eq!(steps, [2, 4], "only what was written while on");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
