//! Size limits that keep indexing memory bounded. Input over a limit is refused with an error
//! naming the field, never truncated silently; the one exception is a tool's description, which
//! real servers sometimes make very long: past [`MAX_DESCRIPTION_BYTES`] it is cut, with a
//! warning naming the tool.

/// Longest tool id, in bytes.
pub const MAX_ID_BYTES: usize = 512;
/// Longest tool name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest path segment, in bytes.
pub const MAX_SEGMENT_BYTES: usize = 256;
/// Deepest category path.
pub const MAX_PATH_DEPTH: usize = 16;
/// Longest summary, in bytes.
pub const MAX_SUMMARY_BYTES: usize = 2_048;
/// Longest usage notes or category description, in bytes.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// Longest tool description kept, in bytes (cut there, with a warning). The index reads only
/// a bounded prefix of it; `expand_tool` shows all that is kept.
pub const MAX_DESCRIPTION_BYTES: usize = 1024 * 1024;
/// Largest serialised JSON Schema (arguments or result), in bytes.
pub const MAX_SCHEMA_BYTES: usize = 1024 * 1024;
/// Most tools in one catalogue.
pub const MAX_TOOLS: usize = 1_000_000;
/// Largest input file, in bytes.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Largest serialised `meta` of a tool, in bytes.
pub const MAX_META_BYTES: usize = 64 * 1024;
/// Most tags of a tool or node.
pub const MAX_TAGS: usize = 64;
/// Longest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 128;
/// Most examples of a tool.
pub const MAX_EXAMPLES: usize = 32;
/// Longest example, in bytes.
pub const MAX_EXAMPLE_BYTES: usize = 2_048;
