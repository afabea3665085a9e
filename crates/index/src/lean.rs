//! A tool's lean fields as `catalog.bin` stores them: written with bincode's standard
//! configuration (serde), read back by a decoder of that encoding written for them.
//!
//! The table's tools are most of an open's work at a million tools, and through serde each
//! string cost a zeroed allocation, a copy and a visitor's calls; read by hand, it is one
//! allocation and one copy, each length checked against the bytes left before anything is
//! allocated (so damaged bytes are an error, never a huge allocation or a panic).

use serde::Serialize;
use toolsearch_catalog::Tool;

use crate::wire::Bytes;

/// The fields of a tool every answer may need, borrowed from a [`Tool`], for writing (no
/// skipped fields: bincode is positional, and [`decode`] reads them in this order).
#[derive(Serialize)]
pub(crate) struct LeanToolRef<'a> {
    id: &'a str,
    name: &'a str,
    paths: &'a [Vec<String>],
    summary: &'a str,
    tags: &'a [String],
    requires: &'a [String],
    group: Option<&'a str>,
    version: Option<&'a str>,
    /// The node at the tool's path when it has one path and a node is there, else
    /// [`NO_NODE`](crate::NO_NODE): found when the table is written, so an open looks no
    /// path up.
    node: u32,
}

impl<'a> LeanToolRef<'a> {
    /// The lean fields of `t`, at category `node`.
    pub(crate) fn of(t: &'a Tool, node: u32) -> LeanToolRef<'a> {
        LeanToolRef {
            id: &t.id,
            name: &t.name,
            paths: &t.paths,
            summary: &t.summary,
            tags: &t.tags,
            requires: &t.requires,
            group: t.group.as_deref(),
            version: t.version.as_deref(),
            node,
        }
    }
}

/// Decodes the tool at the start of `bytes` (a [`LeanToolRef`] as written): the tool, the node
/// at its path, and the bytes it took.
pub(crate) fn decode(bytes: &[u8]) -> Result<(Tool, u32, usize), String> {
    let mut b = Bytes::new(bytes);
    let (id, name) = (b.string()?, b.string()?);
    let paths = b.list(Bytes::strings)?;
    let (summary, tags, requires) = (b.string()?, b.strings()?, b.strings()?);
    let (group, version) = (b.option()?, b.option()?);
    let node = b.varint()?;
    let node = u32::try_from(node).map_err(|_| format!("node {node} is not a u32"))?;
    let tool = Tool { id, name, paths, summary, tags, requires, group, version, ..Tool::default() };
    Ok((tool, node, bytes.len() - b.left()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(t: &Tool, node: u32) -> Vec<u8> {
        bincode::serde::encode_to_vec(LeanToolRef::of(t, node), bincode::config::standard()).unwrap()
    }

    #[test]
    fn what_bincode_writes_decodes_field_for_field() {
        let long = "é".repeat(40_000); // a length past one byte and past u16
        let tool = Tool {
            id: "a".into(),
            name: long.clone(),
            paths: vec![vec!["x".into(), "y".repeat(300)], vec![]],
            summary: String::new(),
            tags: vec!["t".into(); 260],
            requires: vec!["admin".into()],
            group: Some("g".into()),
            version: None,
            ..Tool::default()
        };
        for node in [0, 250, 251, 70_000, u32::MAX] {
            let mut bytes = encoded(&tool, node);
            let len = bytes.len();
            bytes.extend_from_slice(b"next");
            let (got, got_node, used) = decode(&bytes).unwrap();
            assert_eq!((got_node, used), (node, len));
            assert_eq!((&got.id, &got.name, &got.paths, &got.summary), (&tool.id, &long, &tool.paths, &tool.summary));
            assert_eq!(
                (&got.tags, &got.requires, &got.group, &got.version),
                (&tool.tags, &tool.requires, &tool.group, &tool.version)
            );
        }
    }

    #[test]
    fn a_length_past_the_end_is_an_error_before_any_allocation() {
        let mut bytes = vec![253];
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&bytes).unwrap_err().contains("past the end"));
        assert!(decode(&[]).is_err());
        assert!(decode(&[2, 0xff, 0xfe]).is_err(), "not UTF-8");
    }
}
