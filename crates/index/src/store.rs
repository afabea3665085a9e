//! The catalogue in the index: a lean table read whole on open, and each tool's full record
//! read on demand.
//!
//! Searching, listing and authorising need a tool's id, name, paths, summary, tags, scopes and
//! group; only `expand_tool`, `call_tool` and tool definitions need its description, schemas,
//! notes and metadata, which are most of its bytes. So `catalog.bin` holds the lean fields of
//! every tool, the categories and groups, and the byte range of each tool's full JSON record
//! in `tools.json` ([`crate::table`]), which the reader memory-maps and parses one record at
//! a time, each checked by block before it is parsed ([`crate::blocks`]).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use toolsearch_catalog::{Catalog, Tool};

use crate::blocks::Checked;
use crate::error::{io, IndexError};
use crate::format::{CATALOG_FILE, RECORDS_FILE};
use crate::lookups::{NodePaths, ToolFacets};
use crate::names::Names;

/// Writes `catalog.bin` and `tools.json` for `catalog` in `dir`, streaming both (a build holds
/// no copy of the catalogue).
pub(crate) fn write(dir: &Path, catalog: &Catalog) -> Result<(), IndexError> {
    let mut records = Records::create(dir)?;
    for tool in &catalog.tools {
        records.add(tool)?;
    }
    let offsets = records.finish()?;
    let tools = catalog.tools.iter().map(|t| Ok(Cow::Borrowed(t)));
    crate::table::write(dir, tools, &offsets, &catalog.nodes, &catalog.groups)
}

/// `tools.json` being written a tool at a time: each tool's full record, one JSON object a
/// line, and where each starts.
pub(crate) struct Records {
    out: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
    offsets: Vec<u64>,
}

impl Records {
    /// Creates `tools.json` in `dir`.
    pub(crate) fn create(dir: &Path) -> Result<Records, IndexError> {
        let path = dir.join(RECORDS_FILE);
        let out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io(&path))?);
        Ok(Records { out, path, offsets: vec![0] })
    }

    /// Appends `tool`'s record.
    pub(crate) fn add(&mut self, tool: &Tool) -> Result<(), IndexError> {
        use std::io::Write;
        let mut counted = Counted { inner: &mut self.out, bytes: 0 };
        serde_json::to_writer(&mut counted, tool).map_err(|e| IndexError::Io(self.path.clone(), e.into()))?;
        counted.write_all(b"\n").map_err(io(&self.path))?;
        let end = self.offsets.last().copied().unwrap_or(0) + counted.bytes;
        self.offsets.push(end);
        Ok(())
    }

    /// Flushes the file; returns the `tools + 1` offsets of the records.
    pub(crate) fn finish(mut self) -> Result<Vec<u64>, IndexError> {
        use std::io::Write;
        self.out.flush().map_err(io(&self.path))?;
        Ok(self.offsets)
    }
}

/// A writer that counts the bytes through it.
struct Counted<'a, W> {
    inner: &'a mut W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The opened catalogue of an index.
pub(crate) struct CatalogStore {
    lean: Catalog,
    offsets: Vec<u64>,
    names: Names,
    tool_nodes: Vec<u32>,
    node_paths: NodePaths,
    facets: ToolFacets,
    records: Option<memmap2::Mmap>,
    /// The records' block sums, each block checked before a record in it is parsed.
    records_check: Option<Checked>,
    records_path: PathBuf,
}

impl CatalogStore {
    /// Reads the lean table and maps the records, checking counts, offsets and the invariants
    /// the engine relies on, and the table's bytes against `table` (XXH3-64 of the whole
    /// `catalog.bin`; `None` for an index opened without checks) beside their decode, which
    /// is kept only when they match. The records are checked once
    /// [`CatalogStore::check_records`] gave their block sums.
    pub(crate) fn open(dir: &Path, tools: usize, nodes: usize, table: Option<u64>) -> Result<CatalogStore, IndexError> {
        let path = dir.join(CATALOG_FILE);
        let bad = |why: String| IndexError::Corrupted(path.clone(), why);
        let file = std::fs::File::open(&path).map_err(io(&path))?;
        // Mapped, not read: the table is decoded from the page cache without a copy.
        // SAFETY: index files are never modified in place (a rebuild swaps a new directory in).
        let bytes = unsafe { memmap2::Mmap::map(&file) }.map_err(io(&path))?;
        // The decode checks the bytes against `table` (keeping nothing it decoded when they
        // differ), and that every tool has an id and a path and every category a path: the
        // loaders guarantee these; an index opened without checksum verification might not.
        let decoded = crate::table::decode(&path, &bytes, tools, table)?;
        drop(bytes);
        // The name tables are used in place, from a map of their own: the whole table's map,
        // every page of it read by the decode, would stay resident (a fifth of a KB a tool).
        // Its offset is a multiple of 64 KiB, so of any page size.
        let from = decoded.names_at & !0xffff;
        // SAFETY: as above.
        let map = unsafe { memmap2::MmapOptions::new().offset(from as u64).map(&file) }.map_err(io(&path))?;
        let names = Names::mapped(map, decoded.names_at - from, tools);
        if decoded.nodes.len() != nodes {
            return Err(bad("document counts differ from the metadata".into()));
        }
        let records_path = dir.join(RECORDS_FILE);
        let records_file = std::fs::File::open(&records_path).map_err(io(&records_path))?;
        let len = records_file.metadata().map_err(io(&records_path))?.len();
        if decoded.offsets[0] != 0 || decoded.offsets.windows(2).any(|w| w[0] > w[1]) || decoded.offsets[tools] != len {
            return Err(bad(format!("record offsets do not fit {RECORDS_FILE}")));
        }
        // SAFETY: as above.
        let records = if len == 0 {
            None
        } else {
            Some(unsafe { memmap2::Mmap::map(&records_file) }.map_err(io(&records_path))?)
        };
        let lean = Catalog { nodes: decoded.nodes, tools: decoded.tools, groups: decoded.groups, warnings: Vec::new() };
        Ok(CatalogStore {
            lean,
            offsets: decoded.offsets,
            names,
            tool_nodes: decoded.tool_nodes,
            node_paths: decoded.node_paths,
            facets: decoded.facets,
            records,
            records_check: None,
            records_path,
        })
    }

    /// The tools by id and by folded id and name.
    pub(crate) fn names(&self) -> &Names {
        &self.names
    }

    /// Per tool: the node at its one path, or [`crate::table::NO_NODE`].
    pub(crate) fn tool_nodes(&self) -> &[u32] {
        &self.tool_nodes
    }

    /// The nodes by path.
    pub(crate) fn node_paths(&self) -> &NodePaths {
        &self.node_paths
    }

    /// The tools by tag, and those that require scopes.
    pub(crate) fn facets(&self) -> &ToolFacets {
        &self.facets
    }

    /// Checks each block of `tools.json` against `sums` before its bytes are first used
    /// (`None`: records are read unchecked, as an index opened without verification reads them).
    pub(crate) fn check_records(&mut self, sums: Option<Vec<u64>>) {
        self.records_check = sums.map(|s| Checked::new(&self.records_path, s));
    }

    /// The lean catalogue: tools without description, schemas, notes, examples or metadata.
    pub(crate) fn lean(&self) -> &Catalog {
        &self.lean
    }

    /// The bytes of tool `ord`'s record in `tools.json` (its JSON line), after the blocks they
    /// lie in were checked.
    pub(crate) fn record_bytes(&self, ord: u32) -> Result<&[u8], IndexError> {
        let i = ord as usize;
        let (Some(records), Some(&from), Some(&to)) = (&self.records, self.offsets.get(i), self.offsets.get(i + 1))
        else {
            return Err(IndexError::Corrupted(self.records_path.clone(), format!("no record for tool {ord}")));
        };
        let range = from as usize..to as usize;
        match &self.records_check {
            Some(check) => check.bytes(records, range),
            None => Ok(&records[range]),
        }
    }

    /// Tool `ord`'s full record.
    pub(crate) fn tool(&self, ord: u32) -> Result<Tool, IndexError> {
        let i = ord as usize;
        let bytes = self.record_bytes(ord)?;
        let tool: Tool = serde_json::from_slice(bytes)
            .map_err(|e| IndexError::Corrupted(self.records_path.clone(), format!("record {ord}: {e}")))?;
        if tool.id != self.lean.tools[i].id {
            return Err(IndexError::Corrupted(self.records_path.clone(), format!("record {ord} is another tool")));
        }
        Ok(tool)
    }

    /// The whole catalogue, every record parsed.
    pub(crate) fn full(&self) -> Result<Catalog, IndexError> {
        let tools = (0..self.lean.tools.len() as u32).map(|o| self.tool(o)).collect::<Result<_, _>>()?;
        Ok(Catalog { nodes: self.lean.nodes.clone(), tools, groups: self.lean.groups.clone(), warnings: Vec::new() })
    }
}
