//! Working out behind a request what a caller first met at it may see, whole.
//!
//! A host prepares the callers it knows ahead ([`crate::Ranker::prepare_for`]: a server's
//! default caller, its tokens' scope sets): their views keep every word's postings, so no
//! search of theirs walks a word's whole list, hidden tools included, the first time it reads
//! the word. A caller whose scope set arrives with a request (a token of an identity provider,
//! a Python host's own users) is worked out at that request without its words: the walk of
//! every posting list takes time that grows with the whole index, which a request must not pay.
//! So the host prepares such a caller on a thread of its own right after the request, once at a
//! time per caller, and its later requests read whole views.

use std::sync::{Arc, Mutex};

use crate::{Engine, Principal};

/// The callers being prepared behind their requests: one per host (the MCP hub, a Python
/// `Index`), shared by its requests.
#[derive(Default)]
pub struct PrepareBehind {
    now: Arc<Mutex<Vec<Principal>>>,
}

impl std::fmt::Debug for PrepareBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let now = self.now.lock().unwrap_or_else(|p| p.into_inner()).len();
        f.debug_struct("PrepareBehind").field("preparing", &now).finish()
    }
}

/// How many callers are prepared at once, at most: each walks every posting list, so more
/// would only take cores from the requests (a caller not claimed now is on its next request).
const AT_ONCE: usize = 2;

impl PrepareBehind {
    /// Prepares `who` on a thread of its own ([`crate::Ranker::prepare_for`]) unless `engine`
    /// has it prepared, it is being prepared now, or two others are; returns that
    /// thread, if it started one. Trusted callers need nothing.
    pub fn behind(&self, engine: Arc<Engine>, who: &Principal) -> Option<std::thread::JoinHandle<()>> {
        if engine.is_prepared_for(who) || !self.claim(who) {
            return None;
        }
        let (caller, preparing) = (who.clone(), Arc::clone(&self.now));
        let thread = std::thread::Builder::new().name("toolsearch-prepare".into()).spawn(move || {
            engine.prepare_for([&caller]);
            release(&preparing, &caller);
        });
        match thread {
            Ok(handle) => Some(handle),
            Err(_) => {
                // No thread to be had: its requests read views without their words, as before.
                release(&self.now, who);
                None
            }
        }
    }

    /// Whether `who` may be prepared now (then it is counted as being prepared): not already
    /// being prepared, and fewer than [`AT_ONCE`] others are.
    fn claim(&self, who: &Principal) -> bool {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        if now.contains(who) || now.len() >= AT_ONCE {
            return false;
        }
        now.push(who.clone());
        true
    }
}

/// `who` is no longer being prepared.
fn release(now: &Mutex<Vec<Principal>>, who: &Principal) {
    now.lock().unwrap_or_else(|p| p.into_inner()).retain(|p| p != who);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_is_prepared_once_at_a_time_and_at_most_two_at_once() {
        let preparing = PrepareBehind::default();
        let (a, b, c) = (Principal::with_scopes(["a"]), Principal::with_scopes(["b"]), Principal::with_scopes(["c"]));
        assert!(preparing.claim(&a));
        assert!(!preparing.claim(&a), "the same caller twice at once");
        assert!(preparing.claim(&b));
        assert!(!preparing.claim(&c), "a third caller while two are prepared");
        release(&preparing.now, &a);
        assert!(preparing.claim(&c));
        assert!(!preparing.claim(&a));
        release(&preparing.now, &b);
        assert!(preparing.claim(&a));
    }
}
