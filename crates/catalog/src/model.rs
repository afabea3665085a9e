//! The normalised catalogue: what every loader produces and the indexer consumes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::details::Details;
use crate::facade::FacadeSettings;
use crate::path::CategoryPath;
use crate::warning::CatalogWarning;

/// A whole catalogue: category nodes, tools and availability groups, normalised.
///
/// Invariants (established by the loaders): tool ids are unique and non-empty; every tool has
/// at least one path (possibly the root, `[]`); every ancestor of every tool path and node path
/// has a node; node paths are unique; every tool's `group` names a group in `groups`; nodes
/// are sorted by path and tools keep input order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// Category nodes, sorted by path. The root is not listed.
    pub nodes: Vec<Node>,
    /// Tools, in input order.
    pub tools: Vec<Tool>,
    /// Availability groups.
    pub groups: Vec<Group>,
    /// What the loader tolerated rather than refused (see [`CatalogWarning`]), in input order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<CatalogWarning>,
}

/// A category in the tree (or DAG) of tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Segments from the root.
    pub path: CategoryPath,
    /// One line: what the tools under this node are for.
    pub summary: String,
    /// Longer description, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Free-form labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Guidance shown to a model only when this node is unfolded as a facade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_notes: Option<String>,
    /// Facade settings for the disclosure runtime, checked at load. Boxed: few nodes have
    /// them, and a catalogue may hold hundreds of thousands of nodes (72 of a node's 200
    /// bytes when inline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facade: Option<Box<FacadeSettings>>,
    /// True when the node was created because a tool or node path needed it.
    #[serde(default)]
    pub implicit: bool,
}

/// A tool an agent can call.
///
/// Its JSON has every field inline (`description`, `args_schema`, `result_schema`,
/// `usage_notes`, `examples` and `meta` beside the rest); in memory those are its
/// [`details`](Tool::details), boxed apart (see [`Details`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tool {
    /// Unique, stable identifier.
    pub id: String,
    /// The name a model calls it by.
    pub name: String,
    /// Every category the tool sits under (at least one; `[]` is the root).
    pub paths: Vec<CategoryPath>,
    /// One line: what pointers show.
    pub summary: String,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// Scopes a caller must hold to see and call the tool.
    pub requires: Vec<String>,
    /// The availability group the tool belongs to.
    pub group: Option<String>,
    /// Version string, if any.
    pub version: Option<String>,
    /// Description, schemas, usage notes, examples and source metadata: empty in an index's
    /// lean copy of the tool, read from its records when the tool is expanded.
    pub details: Details,
}

impl Tool {
    /// A stable content hash of everything about the tool (sha256, hex). Two tools with the
    /// same hash produce the same index documents.
    pub fn content_hash(&self) -> String {
        sha256_of_json(self)
    }

    /// True if the tool sits at or below `prefix` through any of its paths.
    pub fn is_under(&self, prefix: &[String]) -> bool {
        self.paths.iter().any(|p| p.starts_with(prefix))
    }
}

/// Whether a group's tools are always shown or depend on an availability check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Always visible.
    #[default]
    Always,
    /// Visible while the group's availability check passes.
    Conditional,
}

/// An availability group: tools that come and go together (one server, one integration).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Unique id, referenced by `Tool::group`.
    pub id: String,
    /// Always or conditional.
    #[serde(default)]
    pub visibility: Visibility,
    /// Name of the host-registered availability check (conditional groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// How long a check result is cached, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<u64>,
    /// What to tell a caller when the group is unavailable (what to start or configure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Set while the group's tools are not listed yet (a gateway server still starting, with
    /// no listing kept from an earlier run): see [`Pending`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
}

/// A conditional group whose tools are not listed yet. While it is unavailable, a call or
/// expand of an id under `prefix` that no tool the caller may use has is answered with the
/// group's state (`UNAVAILABLE`, "it is still starting") rather than as an unknown tool, and a
/// search names the group under `unavailable`, so a model learns that more tools are coming.
/// Only callers holding every scope in `requires` are told (the scopes its tools will
/// require). Nothing promises that a given id will be listed once the group is up (a gateway's
/// tool filter may leave it out): the answer says only that it is not listed yet, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The prefix the ids of its tools will have (`SERVER.` for a gateway server).
    pub prefix: String,
    /// Scopes a caller needs to be told of the group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
}

impl Pending {
    /// Whether `id` is under the prefix, in any case (tools are called by name in any case):
    /// an id the group's tools may have once it is up.
    pub fn covers(&self, id: &str) -> bool {
        id.get(..self.prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(&self.prefix))
    }
}

impl Catalog {
    /// A content hash of the whole catalogue (sha256, hex).
    pub fn content_hash(&self) -> String {
        sha256_of_json(self)
    }

    /// [`Catalog::content_hash`] of this catalogue with the tools whose JSON `tools` reads, one
    /// compact object a line, in place of its own: for a build that streams the tools to a
    /// file rather than hold them. Equal to the hash of the catalogue holding those tools.
    pub fn content_hash_with_tools(&self, tools: impl std::io::BufRead) -> std::io::Result<String> {
        use std::io::Write;
        let mut h = Hashing(Sha256::new());
        write!(h, "{{\"nodes\":")?;
        serde_json::to_writer(&mut h, &self.nodes)?;
        write!(h, ",\"tools\":[")?;
        let mut first = true;
        for line in tools.split(b'\n') {
            let line = line?;
            if !line.is_empty() {
                h.write_all(if first { b"" } else { b"," })?;
                h.write_all(&line)?;
                first = false;
            }
        }
        write!(h, "],\"groups\":")?;
        serde_json::to_writer(&mut h, &self.groups)?;
        write!(h, "}}")?;
        Ok(hex(&h.0.finalize()))
    }

    /// The node at exactly `path`, if any.
    pub fn node(&self, path: &[String]) -> Option<&Node> {
        self.nodes.binary_search_by(|n| n.path.as_slice().cmp(path)).ok().map(|i| &self.nodes[i])
    }
}

/// The sha256 (hex) of `value`'s JSON, hashed as it is written rather than from a copy (a
/// 100k-tool catalogue's JSON is ~100 MB).
fn sha256_of_json(value: &impl Serialize) -> String {
    let mut h = Hashing(Sha256::new());
    // Serialising the catalogue's types to JSON cannot fail (string keys only).
    let _ = serde_json::to_writer(&mut h, value);
    hex(&h.0.finalize())
}

/// A writer into a sha256.
struct Hashing(Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::Pending;

    #[test]
    fn a_pending_group_covers_ids_under_its_prefix_in_any_case() {
        let p = Pending { prefix: "slow.".into(), requires: Vec::new() };
        assert!(p.covers("slow.set_alarm") && p.covers("SLOW.set_alarm") && p.covers("slow."));
        assert!(!p.covers("slow") && !p.covers("slower.x") && !p.covers("quick.set_alarm") && !p.covers(""));
        // A prefix cut inside a character is no match, not a panic.
        let p = Pending { prefix: "a".into(), requires: Vec::new() };
        assert!(!p.covers("é") && p.covers("A.x"));
        // Any case is ASCII's: other letters are as written.
        let p = Pending { prefix: "é.".into(), requires: Vec::new() };
        assert!(!p.covers("É.x") && p.covers("é.x"));
    }
}
