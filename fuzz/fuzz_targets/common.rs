//! The engine the protocol targets run against: the index `scripts/fuzz` builds from the
//! sample catalogue (`$TOOLSEARCH_FUZZ_INDEX`), opened once per process.

use std::path::PathBuf;
use std::sync::OnceLock;

use toolsearch_query::{Engine, ErrorCode, ProtocolError};

/// The shared engine.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let dir = std::env::var_os("TOOLSEARCH_FUZZ_INDEX").map(PathBuf::from).expect("set TOOLSEARCH_FUZZ_INDEX");
        Engine::open(&dir).unwrap_or_else(|e| panic!("cannot open {}: {e}", dir.display()))
    })
}

/// Fails the run on an error no request should produce.
pub fn check_error(e: &ProtocolError, allowed: &[ErrorCode]) {
    assert!(allowed.contains(&e.code), "unexpected {:?}: {}", e.code, e.message);
    assert!(!e.message.is_empty());
}
