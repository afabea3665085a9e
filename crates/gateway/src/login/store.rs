//! Grants and client registrations on disk, under `STATE/oauth/`: the directory 0700, each
//! file 0600 and written whole (a temporary file renamed over it), a per-server lock file that
//! a login, a logout and a refresh take so they never cross.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// One server's grant, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) issuer: String,
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) resource: String,
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// When the access token was had (seconds since the epoch), to know its lifetime.
    #[serde(default)]
    pub(crate) obtained_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
}

/// A client registered with an authorization server (RFC 7591), kept per issuer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) redirect_uri: String,
}

/// `STATE/oauth`.
pub(crate) fn dir(state: &Path) -> PathBuf {
    state.join("oauth")
}

fn grant_path(state: &Path, server: &str) -> PathBuf {
    dir(state).join(format!("{server}.grant.json"))
}

fn ensure_dir(state: &Path) -> Result<PathBuf, String> {
    let d = dir(state);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&d)
        .map_err(|e| format!("cannot make {}: {e}", d.display()))?;
    Ok(d)
}

/// Writes `value` to `path` whole, 0600.
fn write_private<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    f.write_all(&text).and_then(|_| f.sync_all()).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The grant kept for `server`, and when its file last changed.
pub(crate) fn load_grant(state: &Path, server: &str) -> Option<(Grant, SystemTime)> {
    let path = grant_path(state, server);
    let changed = fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    let grant = serde_json::from_slice(&fs::read(&path).ok()?).ok()?;
    Some((grant, changed))
}

/// The servers that have a grant file under `state`.
pub(crate) fn servers_with_grants(state: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir(state)) else { return Vec::new() };
    entries.filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".grant.json").map(str::to_owned)).collect()
}

/// When `server`'s grant file last changed (`None`: there is none).
pub(crate) fn grant_changed(state: &Path, server: &str) -> Option<SystemTime> {
    fs::metadata(grant_path(state, server)).and_then(|m| m.modified()).ok()
}

impl Grant {
    /// Whether the access token should be renewed now: within 30 s of its expiry, or within
    /// half its lifetime of it for a token that lives less than a minute.
    pub(crate) fn due(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|e| {
            let early = (e.saturating_sub(self.obtained_at) / 2).min(30);
            e <= now + early
        })
    }
}

pub(crate) fn save_grant(state: &Path, server: &str, grant: &Grant) -> Result<(), String> {
    ensure_dir(state)?;
    write_private(&grant_path(state, server), grant)
}

/// Forgets `server`'s grant; whether there was one.
pub(crate) fn remove_grant(state: &Path, server: &str) -> Result<bool, String> {
    match fs::remove_file(grant_path(state, server)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove the grant of {server}: {e}")),
    }
}

/// The registrations kept, by issuer.
pub(crate) fn registrations(state: &Path) -> BTreeMap<String, Registration> {
    fs::read(dir(state).join("clients.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

pub(crate) fn save_registration(state: &Path, issuer: &str, registration: Registration) -> Result<(), String> {
    let d = ensure_dir(state)?;
    let mut all = registrations(state);
    all.insert(issuer.to_owned(), registration);
    write_private(&d.join("clients.json"), &all)
}

/// An exclusive lock, held until dropped.
pub(crate) struct Lock(#[allow(dead_code)] File);

/// Takes the lock `STATE/oauth/NAME.lock` if nobody holds it (never waits: the gateway's
/// serving thread must not block). `Ok(None)`: another holds it.
pub(crate) fn try_lock(state: &Path, name: &str) -> Result<Option<Lock>, String> {
    let d = ensure_dir(state)?;
    let path = d.join(format!("{name}.lock"));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a file descriptor this function owns; no memory is involved.
    match unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } {
        0 => Ok(Some(Lock(file))),
        _ => Ok(None),
    }
}

/// Takes the lock `NAME`, waiting (asynchronously, up to 15 s) while another holds it.
pub(crate) async fn lock(state: &Path, name: &str) -> Result<Lock, String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        if let Some(lock) = try_lock(state, name)? {
            return Ok(lock);
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("the grant of {name} stayed locked for 15 s"));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(obtained_at: u64, expires_at: Option<u64>) -> Grant {
        Grant {
            issuer: "i".into(),
            token_endpoint: "t".into(),
            client_id: "c".into(),
            client_secret: None,
            resource: "r".into(),
            access_token: "a".into(),
            refresh_token: None,
            expires_at,
            obtained_at,
            scope: None,
        }
    }

    #[test]
    fn a_token_is_due_30_s_before_expiry_or_at_half_a_short_life() {
        let hour = grant(1000, Some(4600));
        assert!(!hour.due(4569) && hour.due(4570));
        let short = grant(1000, Some(1004));
        assert!(!short.due(1001) && short.due(1002));
        assert!(!grant(1000, None).due(u64::MAX / 2), "a token without expiry is never due");
    }
}
