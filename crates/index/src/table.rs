//! `catalog.bin`, the lean table: what every answer may need of every tool (id, name, paths,
//! summary, tags, scopes, group, version, and the category node at its path), the categories
//! and groups, and where each tool's full record starts in `tools.json`.
//!
//! It is the one file an open reads and decodes whole, so its layout is for decoding fast:
//! the tools come first, in chunks of [`CHUNK`] tools that are decoded in parallel, each
//! straight into the catalogue's own type; then a header (bincode) with each chunk's length,
//! the record offsets, the categories and the groups; then the header's position (8 bytes,
//! little-endian). Written as a stream: a build never holds the table.
//!
//! The whole file's checksum is verified while the tools are decoded, not before: on two
//! cores the sum and the categories (read in order) take one core while the other starts on
//! the tools. Nothing decoded is kept unless the sum matched, and the decoders are bounded on
//! any bytes, so a damaged table is refused, never answered from.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;
use toolsearch_catalog::{Group, Node, Tool};

use crate::error::{io, IndexError};
use crate::format::CATALOG_FILE;
use crate::header::{Head, HeaderRef, LeanNodeRef};
use crate::lean::{self, LeanToolRef};
use crate::lookups::{NodePaths, ToolFacets};
use crate::names;
use crate::room::{Kept, Room};

/// Tools a chunk: enough chunks at a million tools to keep two cores busy, few enough that
/// the header stays small.
pub(crate) const CHUNK: usize = 16_384;

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Writes `catalog.bin` in `dir`: the lean fields of the `offsets.len() - 1` tools `tools`
/// yields, the records' `offsets`, the nodes and the groups.
pub(crate) fn write<'a>(
    dir: &Path,
    tools: impl Iterator<Item = Result<Cow<'a, Tool>, IndexError>>,
    offsets: &[u64],
    nodes: &[Node],
    groups: &[Group],
) -> Result<(), IndexError> {
    let path = dir.join(CATALOG_FILE);
    let encode_err = |e: bincode::error::EncodeError| IndexError::Corrupted(path.clone(), e.to_string());
    let json_err = |e: serde_json::Error| IndexError::Io(path.clone(), e.into());
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io(&path))?);
    let (mut chunks, mut chunk, mut in_chunk, mut count) = (Vec::new(), 0u64, 0usize, 0usize);
    let node_paths = NodePaths::new(nodes);
    let mut last: Option<(Vec<String>, u32)> = None;
    let mut names = names::Tables::default();
    for t in tools {
        let t = t?;
        names.add(&t);
        // A catalogue lists a server's or a category's tools together: a path is compared
        // with the one before it before it is looked up.
        let node = match &t.paths[..] {
            [p] => match &last {
                Some((q, n)) if q == p => *n,
                _ => {
                    let n = node_paths.find(nodes, p).unwrap_or(NO_NODE);
                    last = Some((p.clone(), n));
                    n
                }
            },
            _ => NO_NODE,
        };
        let lean = LeanToolRef::of(&t, node);
        chunk += bincode::serde::encode_into_std_write(&lean, &mut out, config()).map_err(encode_err)? as u64;
        (in_chunk, count) = (in_chunk + 1, count + 1);
        if in_chunk == CHUNK {
            chunks.push(chunk);
            (chunk, in_chunk) = (0, 0);
        }
    }
    if in_chunk > 0 {
        chunks.push(chunk);
    }
    if count + 1 != offsets.len() {
        return Err(IndexError::Corrupted(path, format!("{count} tools but {} record offsets", offsets.len())));
    }
    let header = HeaderRef {
        chunks: &chunks,
        offsets,
        nodes: nodes.iter().map(LeanNodeRef::of).collect::<Result<_, _>>().map_err(json_err)?,
        groups: serde_json::to_string(groups).map_err(json_err)?,
    };
    let at: u64 = chunks.iter().sum();
    let written = bincode::serde::encode_into_std_write(&header, &mut out, config()).map_err(encode_err)? as u64;
    // The name tables start on a word, so an open uses them in place.
    let pad = (8 - (at + written) % 8) % 8;
    out.write_all(&[0; 8][..pad as usize]).map_err(io(&path))?;
    names::write_tables(&mut out, &names.finish()).map_err(io(&path))?;
    out.write_all(&at.to_le_bytes()).map_err(io(&path))?;
    out.flush().map_err(io(&path))
}

/// The decoded table.
pub(crate) struct Table {
    pub(crate) tools: Vec<Tool>,
    pub(crate) offsets: Vec<u64>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) groups: Vec<Group>,
    /// Where the name tables start ([`Names::mapped`]).
    pub(crate) names_at: usize,
    /// Per tool: the node at its path when it has one path and a node is there, else
    /// [`NO_NODE`].
    pub(crate) tool_nodes: Vec<u32>,
    /// The nodes by path.
    pub(crate) node_paths: NodePaths,
    /// The tools by tag and the tools that require scopes.
    pub(crate) facets: ToolFacets,
}

/// In [`IndexReader::tool_nodes`](crate::IndexReader::tool_nodes): a tool with several
/// paths, or at a path no category node has.
pub const NO_NODE: u32 = u32::MAX;

/// Decodes `bytes`, the content of the `catalog.bin` at `path` (for errors), which the
/// metadata says holds `tools` tools: the chunks of tools in parallel, beside the check of the
/// bytes against their XXH3 `sum` (when given) and the decode of the categories.
///
/// Bytes are decoded before their sum is known, but nothing decoded leaves this function
/// unless the sum matched: the decoders are bounded and checked on any bytes (a damaged
/// length is an error before it is allocated), so damaged bytes cost a refused open, never an
/// answer, a panic or a large allocation.
pub(crate) fn decode(path: &Path, bytes: &[u8], tools: usize, sum: Option<u64>) -> Result<Table, IndexError> {
    let bad = |why: String| IndexError::Corrupted(path.to_path_buf(), why);
    let checked = || match sum {
        Some(sum) if sum != xxhash_rust::xxh3::xxh3_64(bytes) => Err(bad("checksum mismatch".into())),
        _ => Ok(()),
    };
    // A fault found before the sum is known is named as a checksum mismatch when it is one.
    let Head { chunks: ranges, offsets, nodes: node_count, names_at, tail } =
        Head::read(bytes, tools).map_err(|why| checked().err().unwrap_or_else(|| bad(why)))?;
    let mut room: Room<Tool> = Room::new(tools, CHUNK);
    // Each chunk is decoded straight into its place, and what is derived from a tool is
    // derived while its bytes are in cache: no chunk is copied after.
    let mut tool_nodes = vec![NO_NODE; tools];
    let decode_chunks = || {
        room.populate();
        ranges
            .into_par_iter()
            .zip(room.chunks())
            .zip(tool_nodes.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(i, ((range, mut out), nodes_out))| {
                let mut rest = &bytes[range];
                let mut facets = ToolFacets::default();
                let mut n = 0;
                while !rest.is_empty() {
                    if n == out.len() {
                        return Err(bad(format!("chunk {i} holds more than {} tools", out.len())));
                    }
                    let (t, node, used) = lean::decode(rest).map_err(|e| bad(format!("chunk {i}, tool {n}: {e}")))?;
                    if t.paths.is_empty() || t.id.is_empty() {
                        return Err(bad(format!("tool {:?} has no id or no path", t.id)));
                    }
                    if node != NO_NODE && (node >= node_count || t.paths.len() != 1) {
                        return Err(bad(format!("tool {:?} is at category {node} of {node_count}", t.id)));
                    }
                    let ord = u32::try_from(i * CHUNK + n).map_err(|_| bad("too many tools".into()))?;
                    facets.add(ord, &t.tags, &t.requires);
                    nodes_out[n] = node;
                    // A chunk has room for as many tools as it is checked to hold above.
                    let _ = out.push(t);
                    n += 1;
                    rest = &rest[used..];
                }
                let expected = out.len();
                out.keep()
                    .map(|kept| (kept, facets))
                    .ok_or_else(|| bad(format!("chunk {i} holds {n} tools, expected {expected}")))
            })
            .collect::<Vec<Result<(Kept, ToolFacets), IndexError>>>()
    };
    // The sum and the categories (a few allocations each, read in order) beside the tools.
    let categories = || {
        checked()?;
        let (nodes, groups) = tail.read(node_count).map_err(|why| bad(format!("header: {why}")))?;
        if let Some(n) = nodes.iter().find(|n| n.path.is_empty()) {
            return Err(bad(format!("a category has an empty path ({:?})", n.summary)));
        }
        let groups: Vec<Group> = serde_json::from_str(&groups).map_err(|e| bad(e.to_string()))?;
        let node_paths = NodePaths::new(&nodes);
        Ok((nodes, groups, node_paths))
    };
    let (categories, chunks) = rayon::join(categories, decode_chunks);
    // Every chunk is decoded before a fault is answered, so the room knows which it must drop.
    let (mut kept, mut facets, mut fault) = (Vec::with_capacity(chunks.len()), ToolFacets::default(), None);
    for chunk in chunks {
        match chunk {
            Ok((k, f)) => {
                kept.push(k);
                facets.append(f);
            }
            Err(e) => fault = fault.or(Some(e)),
        }
    }
    let all = room.finish(kept);
    // The sum's verdict first: a damaged table is named as such, whatever else failed.
    let (nodes, groups, node_paths) = categories?;
    let all = match (all, fault) {
        (Some(all), None) => all,
        (_, fault) => return Err(fault.unwrap_or_else(|| bad("a chunk of tools was not filled".into()))),
    };
    Ok(Table { tools: all, offsets, nodes, groups, names_at, tool_nodes, node_paths, facets })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('/').map(str::to_owned).collect()
    }

    /// `n` tools (more than a chunk when `n` > [`CHUNK`]): tool `i` at `a/b` when `i` is
    /// even, at `a` when odd, except tool 1 (at `a` and `a/b`) and tool 3 (at `x/y`, no node).
    fn written(n: usize) -> (tempfile::TempDir, Vec<Tool>) {
        let nodes: Vec<Node> = ["a", "a/b"].iter().map(|p| Node { path: path(p), ..Node::default() }).collect();
        let tools: Vec<Tool> = (0..n)
            .map(|i| Tool {
                id: format!("t{i}"),
                name: format!("Tool {i}"),
                paths: match i {
                    1 => vec![path("a"), path("a/b")],
                    3 => vec![path("x/y")],
                    _ if i % 2 == 0 => vec![path("a/b")],
                    _ => vec![path("a")],
                },
                ..Tool::default()
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let offsets: Vec<u64> = (0..=n as u64).collect();
        write(dir.path(), tools.iter().map(|t| Ok(Cow::Borrowed(t))), &offsets, &nodes, &[]).unwrap();
        (dir, tools)
    }

    #[test]
    fn tools_decode_with_their_nodes_and_names_across_chunks() {
        let n = CHUNK + 5;
        let (dir, tools) = written(n);
        let bytes = std::fs::read(dir.path().join(CATALOG_FILE)).unwrap();
        let table = decode(Path::new("catalog.bin"), &bytes, n, None).unwrap();
        assert_eq!(table.tools.len(), n);
        assert_eq!(table.tools[CHUNK + 4].id, tools[CHUNK + 4].id);
        assert_eq!(table.tools[1].paths, tools[1].paths);
        assert_eq!(&table.tool_nodes[..6], &[1, NO_NODE, 1, NO_NODE, 1, 0]);
        assert_eq!(table.tool_nodes[CHUNK], 1, "the first tool of a chunk is looked up");
        assert_eq!(table.names_at % 8, 0, "the name tables start on a word");
        let names = crate::names::Names::copied(&bytes, table.names_at, n);
        assert_eq!(names.by_id(&format!("t{}", CHUNK + 2), &table.tools), Some(CHUNK as u32 + 2));
        assert_eq!(names.exact("TOOL 7", &table.tools), vec![7]);
    }

    #[test]
    fn categories_and_groups_decode_field_for_field() {
        use toolsearch_catalog::{FacadeSelect, FacadeSettings, Visibility};
        let facade = FacadeSettings {
            name: "open_git".into(),
            description: "Git tools".into(),
            remove_on_invoke: true,
            exclusive: false,
            select: FacadeSelect::Query { limit: 7 },
            foldable: true,
        };
        let nodes = vec![
            Node { path: path("a"), ..Node::default() },
            Node {
                path: path("a/é"),
                summary: "s".repeat(300),
                description: Some("d".into()),
                tags: vec!["t".into(), String::new()],
                usage_notes: Some("u".into()),
                facade: Some(Box::new(facade)),
                implicit: true,
            },
        ];
        let groups = vec![Group {
            id: "g".into(),
            visibility: Visibility::Conditional,
            check: Some("c".into()),
            ttl_secs: Some(9),
            suggestion: None,
            pending: None,
        }];
        let tool = Tool { id: "t".into(), paths: vec![path("a/é")], ..Tool::default() };
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), std::iter::once(Ok(Cow::Borrowed(&tool))), &[0, 300], &nodes, &groups).unwrap();
        let bytes = std::fs::read(dir.path().join(CATALOG_FILE)).unwrap();
        let table = decode(Path::new("catalog.bin"), &bytes, 1, None).unwrap();
        assert_eq!(table.nodes, nodes);
        assert_eq!(table.groups, groups);
        assert_eq!(table.offsets, [0, 300]);
        assert_eq!(table.tool_nodes, [1]);
    }

    #[test]
    fn bytes_unlike_their_checksum_are_refused() {
        let (dir, _) = written(10);
        let bytes = std::fs::read(dir.path().join(CATALOG_FILE)).unwrap();
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes);
        assert!(decode(Path::new("catalog.bin"), &bytes, 10, Some(sum)).is_ok());
        let err = decode(Path::new("catalog.bin"), &bytes, 10, Some(sum ^ 1)).err().expect("refused");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn a_damaged_byte_anywhere_is_named_a_checksum_mismatch_whatever_else_it_breaks() {
        // The sum is verified beside the decode: whether the damage is in a tool, the head of
        // the header, a category or the header's position, the sum's verdict is the answer.
        let (dir, _) = written(40);
        let bytes = std::fs::read(dir.path().join(CATALOG_FILE)).unwrap();
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes);
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x01;
            let err = decode(Path::new("catalog.bin"), &damaged, 40, Some(sum)).err().expect("refused");
            assert!(err.to_string().contains("checksum mismatch"), "byte {at}: {err}");
        }
    }

    #[test]
    fn a_count_the_table_does_not_hold_is_an_error() {
        let (dir, _) = written(10);
        let bytes = std::fs::read(dir.path().join(CATALOG_FILE)).unwrap();
        for wrong in [9, 11, usize::MAX / 2] {
            let err = decode(Path::new("catalog.bin"), &bytes, wrong, None).err().expect("refused");
            assert!(err.to_string().contains("catalog.bin"), "{err}");
        }
    }

    #[test]
    fn damaged_bytes_are_an_error_or_a_table_never_a_panic() {
        let (dir, _) = written(40);
        let bytes = std::fs::read(dir.path().join(CATALOG_FILE)).unwrap();
        for at in 0..bytes.len() {
            for flip in [0x01, 0x80] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                if let Ok(table) = decode(Path::new("catalog.bin"), &damaged, 40, None) {
                    let nodes = table.nodes.len() as u32;
                    let at_one = |o: usize| table.tools[o].paths.len() == 1;
                    assert!(
                        table.tool_nodes.iter().enumerate().all(|(o, &n)| n == NO_NODE || (n < nodes && at_one(o))),
                        "a stored node is a category of the table, for a tool with one path"
                    );
                }
            }
        }
    }
}
