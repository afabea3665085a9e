//! Kept listings: a server's last tool listing, kept in the state directory
//! (`listings/NAME.json`) with a digest of how it is started, and read back at the next start.
//!
//! A lazy server's kept listing stands in for connecting to it (`super::lazy`). Any other
//! server's is indexed while the server is still starting, or down, with its tools held
//! unavailable: a call to one is answered `UNAVAILABLE` naming the server ("it is still
//! starting"), not `TOOL_NOT_FOUND`, and the tools need no embedding again when it is up. A
//! changed entry (command, arguments, environment, URL, headers) has another digest, and its
//! server starts afresh.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::ServerSpec;
use crate::listing::Listing;

/// Where one server's listing is kept, and the digest of its entry.
#[derive(Debug)]
pub(crate) struct KeptListing {
    /// The state directory.
    state: PathBuf,
    /// Digest of how it is started (command, arguments, environment, URL, headers).
    digest: String,
    /// Digest of the listing last written or read back: an unchanged listing (a reconnect, a
    /// relist that changed nothing) is not written (and synced) again.
    written: Mutex<Option<[u8; 32]>>,
}

/// A kept listing, as written.
#[derive(Serialize, Deserialize)]
struct Kept {
    digest: String,
    listing: Listing,
}

impl KeptListing {
    /// Server `name`'s kept listing under `state`, for the entry `spec`.
    pub(super) fn new(state: PathBuf, name: &str, spec: &ServerSpec) -> KeptListing {
        let digest = format!("{:x}", Sha256::digest(format!("{name}\0{spec:?}").as_bytes()));
        KeptListing { state, digest, written: Mutex::new(None) }
    }

    /// The listing kept for `name`, if one was kept for this very entry.
    pub(super) fn load(&self, name: &str) -> Option<Listing> {
        let text = std::fs::read(self.state.join("listings").join(format!("{name}.json"))).ok()?;
        let kept: Kept = serde_json::from_slice(&text).ok()?;
        if kept.digest != self.digest {
            return None;
        }
        *self.written.lock().unwrap_or_else(|p| p.into_inner()) = Some(digest_of(&kept.listing));
        Some(kept.listing)
    }

    /// Keeps `listing` for `name` (a failure to write only costs the next start its speed).
    pub(super) fn keep(&self, name: &str, listing: &Listing) {
        let listed = digest_of(listing);
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if *written == Some(listed) {
            return;
        }
        let dir = self.state.join("listings");
        // Private, as the rest of the state directory: a listing names the server's tools.
        if std::fs::create_dir_all(&dir).and_then(|()| toolsearch_catalog::platform::make_private(&dir, true)).is_err()
        {
            return;
        }
        let kept = Kept { digest: self.digest.clone(), listing: listing.clone() };
        if crate::pins::write_atomic(&dir, &format!("{name}.json"), &kept).is_ok() {
            *written = Some(listed);
        }
    }
}

/// A listing's digest, to tell whether it changed.
fn digest_of(listing: &Listing) -> [u8; 32] {
    Sha256::digest(serde_json::to_vec(listing).unwrap_or_default()).into()
}
