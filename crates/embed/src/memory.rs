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

/// Makes large allocations (256 KiB and up) always their own mappings, returned to the system
/// when freed, for a process that builds indexes again and again (the gateway). glibc otherwise
/// raises its mmap threshold after the first large free, so later large buffers (tantivy's
/// indexing arena, a build's staging) come from the heap and leave holes that `malloc_trim`
/// cannot return: measured, 40 rebuilds of an unchanged 204-tool catalogue grew anonymous
/// memory from 142 to 219 MB; with the threshold fixed, 139 to 140 MB.
pub fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tuning; no pointer is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Returns the allocator's free pages to the system (glibc on Linux; elsewhere nothing).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free; no pointer is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}
