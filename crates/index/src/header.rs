//! `catalog.bin`'s header, after the chunks of tools: each chunk's length, the record
//! offsets, the categories and the groups (bincode, standard configuration), written through
//! serde and read by hand in two steps. The [`Head`] (the chunks, the offsets and the number of
//! categories) is read before the tools, which need it; the [`Tail`] (the categories, a few
//! allocations each, and the groups) is read beside the tools, on the other core. The name
//! tables ([`crate::names`]) follow the header from the next multiple of 8 bytes, and the
//! file ends with the header's position (8 bytes, little-endian).

use serde::Serialize;
use toolsearch_catalog::Node;

use crate::names;
use crate::table::CHUNK;
use crate::wire::Bytes;

/// A category as the header holds it, for writing: every field, none skipped, the rare
/// facade settings as JSON (read back by [`read_node`]).
#[derive(Serialize)]
pub(crate) struct LeanNodeRef<'a> {
    path: &'a [String],
    summary: &'a str,
    description: Option<&'a str>,
    tags: &'a [String],
    usage_notes: Option<&'a str>,
    facade: Option<String>,
    implicit: bool,
}

impl<'a> LeanNodeRef<'a> {
    /// The header's copy of category `n`.
    pub(crate) fn of(n: &'a Node) -> Result<LeanNodeRef<'a>, serde_json::Error> {
        Ok(LeanNodeRef {
            path: &n.path,
            summary: &n.summary,
            description: n.description.as_deref(),
            tags: &n.tags,
            usage_notes: n.usage_notes.as_deref(),
            facade: n.facade.as_ref().map(serde_json::to_string).transpose()?,
            implicit: n.implicit,
        })
    }
}

/// A [`LeanNodeRef`] as written, read back.
fn read_node(b: &mut Bytes) -> Result<Node, String> {
    let (path, summary, description, tags) = (b.strings()?, b.string()?, b.option()?, b.strings()?);
    let (usage_notes, facade, implicit) = (b.option()?, b.option()?, b.bool()?);
    let facade = facade.as_deref().map(serde_json::from_str).transpose().map_err(|e| format!("facade: {e}"))?;
    Ok(Node { path, summary, description, tags, usage_notes, facade, implicit })
}

/// Bytes a [`LeanNodeRef`] takes at least: a length or tag a field, a byte the flag.
const MIN_NODE_BYTES: usize = 7;

/// The header as written.
#[derive(Serialize)]
pub(crate) struct HeaderRef<'a> {
    pub(crate) chunks: &'a [u64],
    pub(crate) offsets: &'a [u64],
    pub(crate) nodes: Vec<LeanNodeRef<'a>>,
    pub(crate) groups: String,
}

/// The start of the table's header, read before the tools: where each chunk of tools lies,
/// the record offsets, and how many categories follow (read with the rest by [`Tail::read`]).
pub(crate) struct Head<'a> {
    /// Each chunk's byte range, in order from the start of the file.
    pub(crate) chunks: Vec<std::ops::Range<usize>>,
    pub(crate) offsets: Vec<u64>,
    /// How many categories the header holds.
    pub(crate) nodes: u32,
    /// Where the name tables start (a multiple of 8, [`crate::names`]).
    pub(crate) names_at: usize,
    pub(crate) tail: Tail<'a>,
}

/// The rest of the header: the categories and the groups.
pub(crate) struct Tail<'a>(Bytes<'a>);

impl<'a> Head<'a> {
    /// The head of the table `bytes`, which holds `tools` tools, checked against the file's
    /// layout.
    pub(crate) fn read(bytes: &'a [u8], tools: usize) -> Result<Head<'a>, String> {
        // A tool takes at least a byte for each of its eight fields and 24 bytes of name
        // tables: a larger count is not believed (nor given room).
        let least = tools.checked_mul(8).zip(names::tables_len(tools)).and_then(|(a, b)| a.checked_add(b));
        if least.is_none_or(|least| least > bytes.len()) {
            return Err(format!("{} bytes cannot hold {tools} tools", bytes.len()));
        }
        let body = bytes.len().checked_sub(8).ok_or("truncated")?;
        let at = u64::from_le_bytes(bytes[body..].try_into().expect("8 bytes"));
        let names_at = names::tables_len(tools).and_then(|len| body.checked_sub(len)).ok_or("truncated")?;
        if names_at % 8 != 0 {
            return Err("the name tables do not start on a word".into());
        }
        let at = usize::try_from(at).ok().filter(|&a| a <= names_at).ok_or("bad header position")?;
        let mut b = Bytes::new(&bytes[at..names_at]);
        let header = |e: String| format!("header: {e}");
        let (lens, offsets) = (b.varints().map_err(header)?, b.varints().map_err(header)?);
        let nodes = b.sized_len(MIN_NODE_BYTES).map_err(header)?;
        let nodes = u32::try_from(nodes).map_err(|_| "too many categories".to_string())?;
        if offsets.len() != tools + 1 {
            return Err(format!("{} record offsets for {tools} tools", offsets.len()));
        }
        let mut chunks = Vec::with_capacity(lens.len());
        let mut from = 0usize;
        for len in lens {
            let to = usize::try_from(len).ok().and_then(|l| from.checked_add(l)).filter(|&t| t <= at);
            let to = to.ok_or("a chunk of tools runs past the header")?;
            chunks.push(from..to);
            from = to;
        }
        if from != at {
            return Err("the chunks of tools do not fill the space before the header".into());
        }
        if chunks.len() != tools.div_ceil(CHUNK) {
            return Err(format!("{} chunks of tools for {tools} record offsets", chunks.len()));
        }
        Ok(Head { chunks, offsets, nodes, names_at, tail: Tail(b) })
    }
}

impl Tail<'_> {
    /// The `nodes` categories and the groups (JSON), which end the header.
    pub(crate) fn read(self, nodes: u32) -> Result<(Vec<Node>, String), String> {
        let mut b = self.0;
        let nodes = b.items(nodes as usize, MIN_NODE_BYTES, read_node)?;
        let groups = b.string()?;
        // Up to the name tables, which start on a word: at most 7 bytes of zeros.
        if b.left() > 7 || b.rest().iter().any(|&z| z != 0) {
            return Err("trailing bytes after the header".into());
        }
        Ok((nodes, groups))
    }
}
