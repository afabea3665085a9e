//! Writing the lexical index: one tantivy index of tools and one of categories.

use std::path::Path;

use tantivy::{Index, IndexWriter, TantivyDocument};

use super::schema::{analyzer, part_dir, schema, DocKind, Fields, ANALYZER};
use crate::document::LexicalFields;
use crate::error::IndexError;

/// Builds the lexical index in `dir` (a fresh, empty directory): one tantivy index of tools
/// in `dir/tools` and one of categories in `dir/nodes`. Kept apart, a search of either is a
/// plain union of term queries, which tantivy answers with block-max WAND instead of scoring
/// every matching document.
pub(crate) struct LexicalWriter {
    tools: IndexWriter,
    nodes: IndexWriter,
    fields: Fields,
    dir: std::path::PathBuf,
}

impl LexicalWriter {
    pub(crate) fn create(dir: &Path) -> Result<LexicalWriter, IndexError> {
        // Tantivy's smallest budget for the nodes (fewer, shorter documents).
        let writer = |kind: DocKind| -> Result<IndexWriter, IndexError> {
            let dir = part_dir(dir, kind);
            let err = |e: tantivy::TantivyError| IndexError::Lexical(dir.clone(), e.to_string());
            std::fs::create_dir_all(&dir).map_err(crate::error::io(&dir))?;
            let index = Index::create_in_dir(&dir, schema().0).map_err(err)?;
            index.tokenizers().register(ANALYZER, analyzer());
            let budget = match kind {
                DocKind::Tool => 32 << 20,
                DocKind::Node => 15 << 20,
            };
            index.writer_with_num_threads(1, budget).map_err(err)
        };
        Ok(LexicalWriter {
            tools: writer(DocKind::Tool)?,
            nodes: writer(DocKind::Node)?,
            fields: schema().1,
            dir: dir.to_path_buf(),
        })
    }

    /// Adds one document. `scopes` are the display forms of every category prefix the
    /// document sits under (the root is `""`).
    pub(crate) fn add(
        &mut self,
        kind: DocKind,
        ord: u32,
        doc: &LexicalFields,
        scopes: &[String],
    ) -> Result<(), IndexError> {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        d.add_text(f.text, doc.all());
        for s in scopes {
            d.add_text(f.scope, s);
        }
        d.add_text(f.kind, kind.term());
        d.add_u64(f.ord, u64::from(ord));
        let writer = match kind {
            DocKind::Tool => &mut self.tools,
            DocKind::Node => &mut self.nodes,
        };
        writer.add_document(d).map_err(|e| IndexError::Lexical(self.dir.clone(), e.to_string()))?;
        Ok(())
    }

    /// Commits and merges into as few segments as tantivy decides, and waits for merges.
    pub(crate) fn finish(self) -> Result<(), IndexError> {
        for mut writer in [self.tools, self.nodes] {
            let err = |e: tantivy::TantivyError| IndexError::Lexical(self.dir.clone(), e.to_string());
            writer.commit().map_err(err)?;
            writer.wait_merging_threads().map_err(err)?;
        }
        Ok(())
    }
}
