//! The catalogue in the index: a lean table read whole on open, and each tool's full record
//! read on demand.
//!
//! Searching, listing and authorising need a tool's id, name, paths, summary, tags, scopes and
//! group; only `expand_tool`, `call_tool` and tool definitions need its description, schemas,
//! notes and metadata, which are most of its bytes. So `catalog.bin` holds the lean fields of
//! every tool (bincode), the categories and groups, and the byte range of each tool's full
//! JSON record in `tools.json`, which the reader memory-maps and parses one record at a time.

use std::borrow::Cow;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolsearch_catalog::{Catalog, Group, Node, Tool};

use crate::error::{io, IndexError};
use crate::format::{CATALOG_FILE, RECORDS_FILE};

/// The fields of a tool every answer may need (no skipped fields: bincode is positional).
#[derive(Serialize, Deserialize)]
struct LeanTool {
    id: String,
    name: String,
    paths: Vec<Vec<String>>,
    summary: String,
    tags: Vec<String>,
    requires: Vec<String>,
    group: Option<String>,
    version: Option<String>,
}

/// `catalog.bin`.
#[derive(Serialize, Deserialize)]
struct CatalogFile {
    tools: Vec<LeanTool>,
    /// `tools + 1` byte offsets of the records in `tools.json`.
    offsets: Vec<u64>,
    /// The nodes, as JSON (they carry optional and nested fields bincode cannot skip).
    nodes: String,
    /// The groups, as JSON.
    groups: String,
}

/// A tool's lean fields, borrowed, for writing: serialised exactly as a [`LeanTool`].
#[derive(Serialize)]
struct LeanToolRef<'a> {
    id: &'a str,
    name: &'a str,
    paths: &'a [Vec<String>],
    summary: &'a str,
    tags: &'a [String],
    requires: &'a [String],
    group: Option<&'a str>,
    version: Option<&'a str>,
}

/// Every tool's lean fields, serialised as a sequence as `tools` yields them (from memory, or
/// read back from the records file one at a time), without a copy of the table.
struct LeanTools<'a, I>(RefCell<I>, usize, PhantomData<&'a Tool>);

impl<'a, I: Iterator<Item = Result<Cow<'a, Tool>, IndexError>>> Serialize for LeanTools<'a, I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.1))?;
        let mut tools = self.0.borrow_mut();
        for _ in 0..self.1 {
            let t = tools.next().ok_or_else(|| S::Error::custom("fewer tools than counted"))?;
            let t = t.map_err(S::Error::custom)?;
            seq.serialize_element(&LeanToolRef {
                id: &t.id,
                name: &t.name,
                paths: &t.paths,
                summary: &t.summary,
                tags: &t.tags,
                requires: &t.requires,
                group: t.group.as_deref(),
                version: t.version.as_deref(),
            })?;
        }
        seq.end()
    }
}

/// `catalog.bin` as written: serialised exactly as a [`CatalogFile`].
#[derive(Serialize)]
#[serde(bound = "")]
struct CatalogFileRef<'a, I: Iterator<Item = Result<Cow<'a, Tool>, IndexError>>> {
    tools: LeanTools<'a, I>,
    offsets: &'a [u64],
    nodes: String,
    groups: String,
}

/// Writes `catalog.bin` and `tools.json` for `catalog` in `dir`, streaming both (a build holds
/// no copy of the catalogue).
pub(crate) fn write(dir: &Path, catalog: &Catalog) -> Result<(), IndexError> {
    let mut records = Records::create(dir)?;
    for tool in &catalog.tools {
        records.add(tool)?;
    }
    let offsets = records.finish()?;
    let tools = catalog.tools.iter().map(|t| Ok(Cow::Borrowed(t)));
    write_table(dir, tools, &offsets, &catalog.nodes, &catalog.groups)
}

/// Writes `catalog.bin`: the lean fields of the `offsets.len() - 1` tools `tools` yields, the
/// records' `offsets`, the nodes and the groups.
pub(crate) fn write_table<'a>(
    dir: &Path,
    tools: impl Iterator<Item = Result<Cow<'a, Tool>, IndexError>>,
    offsets: &'a [u64],
    nodes: &[Node],
    groups: &[Group],
) -> Result<(), IndexError> {
    use std::io::Write;
    let path = dir.join(CATALOG_FILE);
    let json_err = |e: serde_json::Error| IndexError::Io(path.clone(), e.into());
    let file = CatalogFileRef {
        tools: LeanTools(RefCell::new(tools), offsets.len().saturating_sub(1), PhantomData),
        offsets,
        nodes: serde_json::to_string(nodes).map_err(json_err)?,
        groups: serde_json::to_string(groups).map_err(json_err)?,
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io(&path))?);
    bincode::serde::encode_into_std_write(&file, &mut out, bincode::config::standard())
        .map_err(|e| IndexError::Corrupted(path.clone(), e.to_string()))?;
    out.flush().map_err(io(&path))
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
    records: Option<memmap2::Mmap>,
    records_path: PathBuf,
}

impl CatalogStore {
    /// Reads the lean table and maps the records, checking counts, offsets and the invariants
    /// the engine relies on.
    pub(crate) fn open(dir: &Path, tools: usize, nodes: usize) -> Result<CatalogStore, IndexError> {
        let path = dir.join(CATALOG_FILE);
        let bad = |why: String| IndexError::Corrupted(path.clone(), why);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let (file, _): (CatalogFile, usize) =
            bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).map_err(|e| bad(e.to_string()))?;
        drop(bytes);
        let nodes_list: Vec<Node> = serde_json::from_str(&file.nodes).map_err(|e| bad(e.to_string()))?;
        let groups: Vec<Group> = serde_json::from_str(&file.groups).map_err(|e| bad(e.to_string()))?;
        if file.tools.len() != tools || nodes_list.len() != nodes || file.offsets.len() != tools + 1 {
            return Err(bad("document counts differ from the metadata".into()));
        }
        // The loaders guarantee these; an index opened without checksum verification might not.
        if let Some(t) = file.tools.iter().find(|t| t.paths.is_empty() || t.id.is_empty()) {
            return Err(bad(format!("tool {:?} has no id or no path", t.id)));
        }
        if nodes_list.iter().any(|n| n.path.is_empty()) {
            return Err(bad("a category has an empty path".into()));
        }
        let records_path = dir.join(RECORDS_FILE);
        let records_file = std::fs::File::open(&records_path).map_err(io(&records_path))?;
        let len = records_file.metadata().map_err(io(&records_path))?.len();
        if file.offsets[0] != 0 || file.offsets.windows(2).any(|w| w[0] > w[1]) || file.offsets[tools] != len {
            return Err(bad(format!("record offsets do not fit {RECORDS_FILE}")));
        }
        // SAFETY: index files are never modified in place (a rebuild swaps a new directory in).
        let records = if len == 0 {
            None
        } else {
            Some(unsafe { memmap2::Mmap::map(&records_file) }.map_err(io(&records_path))?)
        };
        let lean = Catalog {
            nodes: nodes_list,
            tools: file
                .tools
                .into_iter()
                .map(|t| Tool {
                    id: t.id,
                    name: t.name,
                    paths: t.paths,
                    summary: t.summary,
                    tags: t.tags,
                    requires: t.requires,
                    group: t.group,
                    version: t.version,
                    ..Tool::default()
                })
                .collect(),
            groups,
            warnings: Vec::new(),
        };
        Ok(CatalogStore { lean, offsets: file.offsets, records, records_path })
    }

    /// The lean catalogue: tools without description, schemas, notes, examples or metadata.
    pub(crate) fn lean(&self) -> &Catalog {
        &self.lean
    }

    /// Tool `ord`'s full record.
    pub(crate) fn tool(&self, ord: u32) -> Result<Tool, IndexError> {
        let i = ord as usize;
        let (Some(records), Some(&from), Some(&to)) = (&self.records, self.offsets.get(i), self.offsets.get(i + 1))
        else {
            return Err(IndexError::Corrupted(self.records_path.clone(), format!("no record for tool {ord}")));
        };
        let tool: Tool = serde_json::from_slice(&records[from as usize..to as usize])
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
