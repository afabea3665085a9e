//! Embedding the documents a build could not reuse, in chunks of similar length, each
//! vector written to its row of the vector file as it comes.

use toolsearch_embed::Embedder;

use crate::document::{node_dense_text, tool_dense_text};
use crate::error::IndexError;
use crate::progress::Reporter;
use crate::source::Source;
use crate::vectors::VectorFile;

/// Texts embedded between two progress updates.
const EMBED_CHUNK: usize = 256;

/// The embedded text of document `i` (tools first, then nodes).
fn dense_text(source: &Source<'_>, i: usize) -> Result<String, IndexError> {
    let tools = source.tool_count();
    Ok(match i.checked_sub(tools) {
        None => tool_dense_text(source.tool(i)?.as_ref()),
        Some(n) => node_dense_text(&source.nodes()[n]),
    })
}

/// Embeds the documents `missing` (tools first, then nodes) into their rows of `file`, reporting
/// progress.
pub(super) fn embed_missing(
    embedder: &dyn Embedder,
    source: &Source<'_>,
    lengths: &[u32],
    missing: Vec<u32>,
    file: &VectorFile,
    progress: &Reporter,
) -> Result<(), IndexError> {
    if missing.is_empty() {
        return Ok(());
    }
    progress.start("embedding documents", missing.len() as u64);
    let result = embed_in_chunks(embedder, source, lengths, missing, file, progress);
    progress.finish();
    result
}

fn embed_in_chunks(
    embedder: &dyn Embedder,
    source: &Source<'_>,
    lengths: &[u32],
    mut order: Vec<u32>,
    file: &VectorFile,
    progress: &Reporter,
) -> Result<(), IndexError> {
    // Chunks of similar length, so the embedder's token-budgeted batches pad little; chunking
    // also paces progress and bounds the texts held at once.
    order.sort_by_key(|&i| lengths[i as usize]);
    for chunk in order.chunks(EMBED_CHUNK) {
        let texts: Vec<String> = chunk.iter().map(|&i| dense_text(source, i as usize)).collect::<Result<_, _>>()?;
        let batch: Vec<&str> = texts.iter().map(String::as_str).collect();
        for (&i, v) in chunk.iter().zip(embedder.embed(&batch)?) {
            file.put(i as usize, &v)?;
        }
        progress.advance(chunk.len() as u64);
    }
    Ok(())
}
