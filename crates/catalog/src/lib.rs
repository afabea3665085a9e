//! The tool catalogue: the data model of category nodes, tools and availability groups, the
//! loaders for every supported input format, and validation.
//!
//! Key design decision: a category is identified by its **path** (a sequence of segment names),
//! not by an id with a parent pointer. A tool lists one or more paths (a DAG: the same tool may
//! sit under several categories), and every ancestor of a declared path exists implicitly. The
//! category graph is therefore acyclic by construction, and "unknown parent" cannot happen: a
//! missing ancestor is created, with a summary derived from its name. Every loader returns a
//! fully normalised [`Catalog`] (summaries derived, ancestors created, ids unique), so the
//! indexer and the query engine never see a half-valid catalogue.
//!
//! ## Where things live
//!
//! - the model: `model.rs` (the normalised [`Catalog`]), `details.rs` (what only expanding or
//!   calling a tool needs), `facade.rs` (typed facade settings), `json.rs` (JSON kept as compact
//!   text: a parsed tree costs ~9x its text);
//! - reading: `load.rs` (files, format detection), `manifest.rs` (raw records), `jsonl.rs`,
//!   `import.rs` (MCP, OpenAI, Anthropic, registry maps), `merge.rs` (several files as one);
//! - checking: `normalize.rs` (raw records in, a valid catalogue out), `limits.rs`, `fields.rs`,
//!   `path.rs` (the one path rule), `schema/` (every JSON Schema dialect tools use, and what
//!   compiles), `glob.rs`;
//! - reporting: `error.rs` (file, place and field), `warning.rs` (what was tolerated);
//!   `platform.rs` (what differs between operating systems).
#![deny(missing_docs)]

mod details;
mod error;
mod facade;
mod fields;
mod gemini;
mod glob;
mod import;
mod json;
mod jsonl;
pub mod limits;
mod load;
mod manifest;
mod merge;
mod model;
mod normalize;
mod path;
pub mod platform;
pub mod schema;
mod shapes;
mod warning;

pub use details::{Details, ToolDetails};
pub use error::{too_deep, CatalogError, Location};
pub use facade::{
    fold_name, is_discovery_name, sanitize_name, FacadeSelect, FacadeSettings, DEFAULT_QUERY_LIMIT, MAX_NAME_CHARS,
};
pub use glob::glob;
pub use import::{annotation_tags, tool_id};
pub use json::Json;
pub use jsonl::JsonlTools;
pub use load::{load_path, load_path_as, parse_lenient, parse_str, parse_str_as, text_of, Format};
pub use merge::{load_paths, load_paths_as};
pub use model::{Catalog, Group, Node, Pending, Tool, Visibility};
pub use path::{display_path, CategoryPath, PathError, PathSpec};
pub use schema::{Dialect, SchemaValidator, Validation};
pub use warning::{CatalogWarning, WarningKind};
