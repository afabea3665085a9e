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
        KeptListing { state, digest }
    }

    /// The listing kept for `name`, if one was kept for this very entry.
    pub(super) fn load(&self, name: &str) -> Option<Listing> {
        let text = std::fs::read(self.state.join("listings").join(format!("{name}.json"))).ok()?;
        let kept: Kept = serde_json::from_slice(&text).ok()?;
        (kept.digest == self.digest).then_some(kept.listing)
    }

    /// Keeps `listing` for `name` (a failure to write only costs the next start its speed).
    pub(super) fn keep(&self, name: &str, listing: &Listing) {
        let dir = self.state.join("listings");
        // Private, as the rest of the state directory: a listing names the server's tools.
        if std::fs::create_dir_all(&dir).and_then(|()| toolsearch_catalog::platform::make_private(&dir, true)).is_err()
        {
            return;
        }
        let kept = Kept { digest: self.digest.clone(), listing: listing.clone() };
        let _ = crate::pins::write_atomic(&dir, &format!("{name}.json"), &kept);
    }
}
