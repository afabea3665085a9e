//! [`Progress`]: how long-running work (embedding a catalogue, running a benchmark) reports how
//! far it got. The library only counts; a front-end decides how to draw it (the CLI draws a
//! bar on a terminal), so no library crate depends on a terminal toolkit.

use std::sync::Arc;

/// Receives progress of one long-running job. Implementations must be cheap: `advance` is
/// called once per chunk of work.
pub trait Progress: Send + Sync {
    /// A job of `total` units starts; `what` names the job and its unit (e.g. "embedding documents").
    fn start(&self, what: &str, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
    /// The job ended (successfully or not).
    fn finish(&self);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _what: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}

/// A shared progress receiver, [`Silent`] by default.
#[derive(Clone)]
pub struct Reporter(pub Arc<dyn Progress>);

impl Default for Reporter {
    fn default() -> Self {
        Reporter(Arc::new(Silent))
    }
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}

impl Reporter {
    /// Wraps a receiver.
    pub fn new(progress: impl Progress + 'static) -> Reporter {
        Reporter(Arc::new(progress))
    }
}

impl std::ops::Deref for Reporter {
    type Target = dyn Progress;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref()
    }
}
