//! Handing freed memory back to the system: after a model is loaded, and between an index
//! build's phases.
//!
//! glibc's allocator keeps freed memory in its arenas for reuse, and a phase that allocates
//! many small, short-lived things (parsing a million tools, tantivy's indexing, ONNX Runtime's
//! threads each with an arena of their own) leaves arenas that are mostly free but still
//! resident. Measured on the 300k-tool bench build, 180 MB of the 240 MB resident between the
//! BM25 phase and the graph were such free memory; the graph's parts then came on top of it.
//! Loading the model is such a phase too: its weights are read, parsed and copied into
//! ONNX Runtime's own form, and the copies freed leave ~50 MB resident (measured: 181 MB
//! after a load, 131 MB trimmed). [`give_back`] asks the allocator to return every free page
//! (`malloc_trim`), which costs a walk over the arenas: milliseconds, once per phase.

/// Returns the allocator's free pages to the system (glibc on Linux; elsewhere nothing).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free; no pointer is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}
