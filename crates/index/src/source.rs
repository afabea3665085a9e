//! What a build reads its catalogue from: a [`Catalog`] in memory, or a JSON Lines file whose
//! tools are streamed into the index's records file as they are read.
//!
//! A catalogue in memory costs about 1.4 KB a tool (1.4 GB at a million). A streamed one is
//! never held: each tool is validated, written to `tools.json` and dropped, and everything
//! the build needs afterwards (the document texts, the lean table, the BM25 index) reads the
//! tools back from that file, one at a time. Both give the same index, byte for byte.

use std::borrow::Cow;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use toolsearch_catalog::platform::read_exact_at;

use toolsearch_catalog::{Catalog, CatalogWarning, JsonlTools, Node, Tool};

use crate::error::{io, IndexError};
use crate::format::RECORDS_FILE;
use crate::store::Records;

/// Tools read one at a time, from memory or from the records file.
pub(crate) type Tools<'a> = Box<dyn Iterator<Item = Result<Cow<'a, Tool>, IndexError>> + 'a>;

/// The catalogue of a build.
pub(crate) enum Source<'a> {
    /// In memory, lent or owned.
    Held(Cow<'a, Catalog>),
    /// Streamed into the records file.
    Streamed(Streamed),
}

/// A catalogue whose tools are in the records file, not in memory.
pub(crate) struct Streamed {
    /// The catalogue without its tools: categories and groups.
    rest: Catalog,
    /// `tools + 1` offsets of the records.
    offsets: Vec<u64>,
    records: std::fs::File,
    path: PathBuf,
}

impl Streamed {
    /// Reads the JSON Lines catalogue `file`, writing each tool's record to `tools.json` in
    /// `dir` as it is validated.
    pub(crate) fn write(file: &Path, dir: &Path) -> Result<Streamed, IndexError> {
        let mut tools = JsonlTools::open(file)?;
        let mut records = Records::create(dir)?;
        while let Some(tool) = tools.next_tool()? {
            records.add(&tool)?;
        }
        let rest = compacted(file, tools.finish()?)?;
        let offsets = records.finish()?;
        let path = dir.join(RECORDS_FILE);
        let records = std::fs::File::open(&path).map_err(io(&path))?;
        Ok(Streamed { rest, offsets, records, path })
    }

    /// Tool `i`, read back from its record.
    fn tool(&self, i: usize) -> Result<Tool, IndexError> {
        let (from, to) = (self.offsets[i], self.offsets[i + 1]);
        let mut bytes = vec![0u8; (to - from) as usize];
        read_exact_at(&self.records, &mut bytes, from).map_err(io(&self.path))?;
        serde_json::from_slice(&bytes).map_err(|e| IndexError::Io(self.path.clone(), e.into()))
    }

    /// Every tool in order, read back from the records file as it is consumed.
    fn tools(&self) -> Result<impl Iterator<Item = Result<Tool, IndexError>> + '_, IndexError> {
        let file = std::fs::File::open(&self.path).map_err(io(&self.path))?;
        let lines = BufReader::with_capacity(1 << 20, file).split(b'\n');
        Ok(lines.take(self.offsets.len() - 1).map(|line| {
            let line = line.map_err(io(&self.path))?;
            serde_json::from_slice(&line).map_err(|e| IndexError::Io(self.path.clone(), e.into()))
        }))
    }
}

/// `rest` moved to fresh memory. Its categories were allocated one by one as the tools that
/// named them were read, between each tool's short-lived parse; freeing those leaves the
/// allocator's heap full of holes it cannot hand back (150 MB of them at the 1M bench, more
/// than the categories themselves). Written out, dropped, the heap handed back, and read in
/// again, they sit together and the holes go back to the system.
/// (`file` is the catalogue, named if that ever fails.)
fn compacted(file: &Path, rest: Catalog) -> Result<Catalog, IndexError> {
    let invalid = |e: serde_json::Error| IndexError::Io(file.to_path_buf(), e.into());
    let bytes = serde_json::to_vec(&rest).map_err(invalid)?;
    drop(rest);
    toolsearch_embed::memory::give_back();
    serde_json::from_slice(&bytes).map_err(invalid)
}

impl Source<'_> {
    /// Tools in the catalogue.
    pub(crate) fn tool_count(&self) -> usize {
        match self {
            Source::Held(c) => c.tools.len(),
            Source::Streamed(s) => s.offsets.len() - 1,
        }
    }

    /// What the catalogue's loader tolerated.
    pub(crate) fn warnings(&self) -> &[CatalogWarning] {
        match self {
            Source::Held(c) => &c.warnings,
            Source::Streamed(s) => &s.rest.warnings,
        }
    }

    /// The categories, sorted by path.
    pub(crate) fn nodes(&self) -> &[Node] {
        match self {
            Source::Held(c) => &c.nodes,
            Source::Streamed(s) => &s.rest.nodes,
        }
    }

    /// Tool `i`.
    pub(crate) fn tool(&self, i: usize) -> Result<Cow<'_, Tool>, IndexError> {
        match self {
            Source::Held(c) => Ok(Cow::Borrowed(&c.tools[i])),
            Source::Streamed(s) => s.tool(i).map(Cow::Owned),
        }
    }

    /// Every tool, in order.
    pub(crate) fn tools(&self) -> Result<Tools<'_>, IndexError> {
        Ok(match self {
            Source::Held(c) => Box::new(c.tools.iter().map(|t| Ok(Cow::Borrowed(t)))),
            Source::Streamed(s) => Box::new(s.tools()?.map(|t| t.map(Cow::Owned))),
        })
    }

    /// [`Catalog::content_hash`].
    pub(crate) fn content_hash(&self) -> Result<String, IndexError> {
        match self {
            Source::Held(c) => Ok(c.content_hash()),
            Source::Streamed(s) => {
                let file = std::fs::File::open(&s.path).map_err(io(&s.path))?;
                s.rest.content_hash_with_tools(BufReader::with_capacity(1 << 20, file)).map_err(io(&s.path))
            }
        }
    }

    /// Writes the lean table (`catalog.bin`) and, for a catalogue in memory, the records
    /// (a streamed one wrote them as it was read).
    pub(crate) fn write_store(&self, dir: &Path) -> Result<(), IndexError> {
        match self {
            Source::Held(c) => crate::store::write(dir, c),
            Source::Streamed(s) => crate::table::write(
                dir,
                s.tools()?.map(|t| t.map(Cow::Owned)),
                &s.offsets,
                &s.rest.nodes,
                &s.rest.groups,
            ),
        }
    }
}
