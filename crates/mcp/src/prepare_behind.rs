//! Working out behind a request what a caller first met at it may see, whole.
//!
//! A server prepares the callers it knows ahead (its default caller, its tokens' scope sets):
//! their views keep every word's postings, so no search of theirs walks a word's whole list,
//! hidden tools included, the first time it reads the word. A caller whose scope set arrives
//! with a request (a token of an identity provider) is worked out at that request without its
//! words: the walk of every posting list takes time that grows with the whole index, which a
//! request must not pay. So the hub prepares such a caller on a thread of its own as its first
//! tool set is made, once at a time per caller, and its later requests read whole views.

use std::sync::{Arc, Mutex};

use toolsearch_query::{Engine, Principal};

/// The callers being prepared behind their requests.
#[derive(Default)]
pub(crate) struct Preparing {
    now: Arc<Mutex<Vec<Principal>>>,
}

impl Preparing {
    /// Prepares `who` on a thread of its own (`Engine::prepare_for`) unless `engine` has it
    /// prepared or it is being prepared now; returns that thread, if it started one.
    pub(crate) fn behind(&self, engine: Arc<Engine>, who: &Principal) -> Option<std::thread::JoinHandle<()>> {
        if engine.is_prepared_for(who) {
            return None;
        }
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        if now.contains(who) {
            return None;
        }
        now.push(who.clone());
        let (caller, preparing) = (who.clone(), Arc::clone(&self.now));
        let thread = std::thread::Builder::new().name("toolsearch-prepare".into()).spawn(move || {
            engine.prepare_for([&caller]);
            preparing.lock().unwrap_or_else(|p| p.into_inner()).retain(|p| p != &caller);
        });
        match thread {
            Ok(handle) => Some(handle),
            Err(_) => {
                // No thread to be had: its requests read views without their words, as before.
                now.retain(|p| p != who);
                None
            }
        }
    }
}
