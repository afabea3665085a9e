//! Token names: what logs and the audit trail call a bearer token the config leaves unnamed.
//! A keyed digest (`token-` and 8 hex digits), keyed by a secret of the state directory
//! (`STATE/token-names.key`, private to the user, never logged), so a name tells tokens apart
//! without revealing them, stays the same across restarts and replicas, and cannot be used
//! to confirm a guessed token offline by anyone who reads the logs.

use std::path::Path;

use crate::config::{Grant, ServeError};

/// The file of a state directory that holds the key token names are made with.
pub const TOKEN_KEY_FILE: &str = "token-names.key";

/// `token-` and 8 hex digits of the SHA-256 of `key` and the token: tells tokens apart in logs
/// and the audit trail without revealing them, and, keyed by a secret of the state directory
/// (never logged), without letting anyone who reads the logs confirm a guessed token offline.
pub fn token_name(key: &[u8; 32], token: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"toolsearch token name\0");
    h.update(key);
    h.update(token.as_bytes());
    let d = h.finalize();
    format!("token-{:02x}{:02x}{:02x}{:02x}", d[0], d[1], d[2], d[3])
}

/// 32 random bytes from the system's generator (getrandom(2), BCryptGenRandom, ...).
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    if getrandom::fill(&mut key).is_err() {
        // No generator answered: the clock, the process and an address, hashed.
        use sha2::{Digest, Sha256};
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let mut h = Sha256::new();
        h.update(now.as_nanos().to_le_bytes());
        h.update(std::process::id().to_le_bytes());
        h.update((&key as *const _ as usize).to_le_bytes());
        key = h.finalize().into();
    }
    key
}

/// A token's name under this process's key ([`token_name`]): what names a token before a
/// state directory's key is read (`toolsearch gateway` names its tokens with that key).
pub fn process_token_name(token: &str) -> String {
    token_name(process_key(), token)
}

/// This process's key, for token names before a state directory's key is read.
fn process_key() -> &'static [u8; 32] {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    KEY.get_or_init(random_key)
}

/// The state directory's key for token names, made (private to the user) on first use.
pub fn state_token_key(state: &Path) -> Result<[u8; 32], ServeError> {
    use std::io::Write;
    let path = state.join(TOKEN_KEY_FILE);
    let err = |e: std::io::Error| ServeError::Config(path.clone(), e.to_string());
    match std::fs::read(&path) {
        Ok(bytes) => {
            return bytes.try_into().map_err(|_| {
                ServeError::Config(path.clone(), "not a key file (32 bytes); remove it to make a new one".into())
            })
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err(e)),
        Err(_) => {}
    }
    std::fs::create_dir_all(state).map_err(err)?;
    let key = random_key();
    let aside = state.join(format!(".{TOKEN_KEY_FILE}.{}", std::process::id()));
    let mut f = toolsearch_catalog::platform::private_file_options(
        std::fs::OpenOptions::new().create(true).truncate(true).write(true),
    )
    .open(&aside)
    .map_err(err)?;
    f.write_all(&key).and_then(|()| f.sync_all()).map_err(err)?;
    // A gateway started at the same moment may have made one: the first stays.
    match std::fs::hard_link(&aside, &path) {
        Ok(()) => {
            let _ = std::fs::remove_file(&aside);
            Ok(key)
        }
        Err(_) => {
            let _ = std::fs::remove_file(&aside);
            std::fs::read(&path).map_err(err)?.try_into().map_err(|_| err(std::io::Error::other("not a key file")))
        }
    }
}

impl Grant {
    /// A grant of `scopes`, named by a keyed digest of the token under this process's key
    /// (see [`token_name`]).
    pub fn new(token: &str, scopes: Vec<String>) -> Grant {
        Grant { name: process_token_name(token), scopes }
    }
}
