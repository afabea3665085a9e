//! Approving held tools, and what the guard let through.
//!
//! An approval names the definition the operator reviewed by its digest
//! (`toolsearch gateway approve SERVER.TOOL --digest D`, the digest `gateway held` prints): a
//! server that changes the definition again between `held` and `approve` is not approved, and
//! the new definition is shown instead. Calls are checked against `passed_digests` before
//! they are forwarded (`crate::vetted`).

use std::collections::HashMap;
use std::path::Path;

use crate::pins::{lock, read_pins, write_atomic, Held, HELD_FILE, LOCK_FILE, PINS_FILE, PINS_VERSION};
use toolsearch_mcp::ServeError;

/// The fewest hex digits of a digest an approval may name.
pub const MIN_DIGEST_PREFIX: usize = 12;

/// `toolsearch gateway approve SERVER.TOOL --digest D`: pins the held definition whose digest
/// starts with `digest` (at least [`MIN_DIGEST_PREFIX`] hex digits), so the gateway (which
/// watches the pins) serves it again. An error, showing the definition held now and its
/// digest, when the tool is not held, no digest is given, or the held definition is not the
/// one named.
pub fn approve(state: &Path, tool: &str, digest: Option<&str>) -> Result<Held, ServeError> {
    let _lock = lock(state).map_err(|e| ServeError::Config(state.join(LOCK_FILE), e.to_string()))?;
    let held_path = state.join(HELD_FILE);
    let held: Vec<Held> = match std::fs::read_to_string(&held_path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| ServeError::Config(held_path.clone(), e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(ServeError::Config(held_path, e.to_string())),
    };
    let h = pick(&held, tool, digest).map_err(|e| ServeError::Config(held_path, e))?;
    let mut pins = read_pins(state)?;
    pins.version = PINS_VERSION;
    let mut pin = h.seen.clone();
    pin.approved_flagged = !h.flags.is_empty();
    pins.pins.insert(h.tool.clone(), pin);
    write_atomic(state, PINS_FILE, &pins)?;
    let rest: Vec<&Held> = held.iter().filter(|x| x.tool != tool).collect();
    write_atomic(state, HELD_FILE, &rest)?;
    Ok(h)
}

/// The held item an approval of `tool` with `digest` names, among `held` (one tool may be held
/// under several definitions when replicas see different ones); an error saying what is held
/// when none matches.
pub(crate) fn pick(held: &[Held], tool: &str, digest: Option<&str>) -> Result<Held, String> {
    let of_tool: Vec<&Held> = held.iter().filter(|h| h.tool == tool).collect();
    let Some(first) = of_tool.first() else {
        let mut names: Vec<&str> = held.iter().map(|h| h.tool.as_str()).collect();
        names.dedup();
        let listed =
            if names.is_empty() { "no tool is held".to_owned() } else { format!("held: {}", names.join(", ")) };
        return Err(format!("{tool} is not held ({listed})"));
    };
    let shown = || {
        let each: Vec<String> = of_tool
            .iter()
            .map(|h| {
                let lines: Vec<String> = h.diff.iter().chain(&h.flags).map(|l| format!("    {l}")).collect();
                format!("{} ({}), digest {}:\n{}", h.tool, h.reason, &h.seen.digest[..16], lines.join("\n"))
            })
            .collect();
        each.join("\n")
    };
    let named = match digest.map(str::trim) {
        None => {
            return Err(format!(
                "approving needs the digest of the definition you reviewed. Held now: {}\nIf that is what you \
                 reviewed, run again with --digest {}",
                shown(),
                &first.seen.digest[..16]
            ))
        }
        Some(d) => d.to_ascii_lowercase(),
    };
    if named.len() < MIN_DIGEST_PREFIX || !named.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "--digest {named:?}: give at least {MIN_DIGEST_PREFIX} hex digits of the digest `gateway held` prints"
        ));
    }
    match of_tool.iter().find(|h| h.seen.digest.starts_with(&named)) {
        Some(h) => Ok((*h).clone()),
        None => Err(format!(
            "{tool} was not approved: its definition changed again since the one you reviewed (digest {named}). \
             Held now: {}\nReview it, then approve that digest",
            shown()
        )),
    }
}

/// The state directory's held tools, as the last rebuild left them.
pub fn held_tools(state: &Path) -> Vec<Held> {
    std::fs::read_to_string(state.join(HELD_FILE)).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

/// What the last guard pass judged, by id: the digests it let through (each pinned id's, less
/// the held ones) and the digests it held. (Read by a replica too: the primary's guard writes
/// both files.)
#[derive(Debug, Default)]
pub(crate) struct Judged {
    pub(crate) passed: HashMap<String, String>,
    pub(crate) held: HashMap<String, String>,
}

impl Judged {
    /// As `STATE/pins.json` and `STATE/held.json` say now.
    pub(crate) fn read(state: &Path) -> Judged {
        let held: HashMap<String, String> = held_tools(state).into_iter().map(|h| (h.tool, h.seen.digest)).collect();
        let passed = match read_pins(state) {
            Ok(pins) => {
                pins.pins.into_iter().filter(|(id, _)| !held.contains_key(id)).map(|(id, p)| (id, p.digest)).collect()
            }
            Err(_) => HashMap::new(),
        };
        Judged { passed, held }
    }
}
