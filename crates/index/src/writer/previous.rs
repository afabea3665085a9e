//! What a rebuild reuses of the index it replaces: vectors by text hash, and the graph.

use std::collections::HashMap;
use std::path::Path;

use toolsearch_embed::{Embedder, ModelSpec};

use crate::error::IndexError;
use crate::format::{file_sum, read_hashes, IndexMeta, GRAPH_FILE, HASHES_FILE, VECTORS_FILE};
use crate::graph::Graph;
use crate::vectors::OldVectors;

/// What a rebuild takes from the previous index built with the same model: its vectors, by
/// document text hash (f16 rows come back as f32 and are stored as the same f16 again, so
/// reuse is lossless), and its graph. Only files whose checksum verifies are used.
pub(super) struct Previous {
    /// Row of each document text hash (the first, for duplicates).
    pub(super) rows: HashMap<u128, u32>,
    pub(super) vectors: OldVectors,
    /// Tool rows (the first rows).
    pub(super) tools: usize,
    pub(super) graph: Option<Graph>,
}

impl Previous {
    /// The previous index in `dir`, if it was built with `embedder`'s model (prompts, max
    /// length and tokenizer included) and its vectors and hashes verify; else why not.
    pub(super) fn open(dir: &Path, embedder: &dyn Embedder) -> Result<Previous, IndexError> {
        let meta = IndexMeta::read(dir)?;
        if let Err(IndexError::ModelMismatch { found, expected, .. }) = meta.check_model(dir, embedder) {
            let reason = format!("built with model {found}, and this build embeds with {expected}");
            return Err(IndexError::Unreusable(dir.to_path_buf(), reason));
        }
        // An index of a version that did not record the prompts may have been embedded with
        // other ones: its vectors are reused only by a model that has none. One that did not
        // record the max length, only by a named model at its own (a local model's config may
        // have said another, and a library caller may have set one). One that did not record
        // the tokenizer, only by a named model (whose tokenizer comes with its weights).
        let prompts_known = meta.model_prompts.is_some() || embedder.prompts() == ("", "");
        let named = ModelSpec::name_of(&meta.model_id).and_then(ModelSpec::named);
        let own_length = named.as_ref().is_some_and(|spec| embedder.max_length() == Some(spec.max_length));
        let length_known = meta.model_max_length.is_some() || embedder.max_length().is_none() || own_length;
        let tokenizer_known =
            meta.model_tokenizer.is_some() || embedder.tokenizer_fingerprint().is_none() || named.is_some();
        let unreusable = |reason: &str| IndexError::Unreusable(dir.to_path_buf(), reason.to_owned());
        if !prompts_known || !length_known || !tokenizer_known {
            return Err(unreusable("an older format that did not record the model's prompts, max length or tokenizer"));
        }
        let verified = |rel: &str| {
            let sum = meta.files.iter().find(|f| f.path == rel);
            sum.is_some_and(|s| file_sum(dir, rel).is_ok_and(|now| now.xxh3 == s.xxh3 && now.len == s.len))
        };
        if !verified(HASHES_FILE) || !verified(VECTORS_FILE) {
            return Err(unreusable("its vectors or their hashes do not match their checksums"));
        }
        let count = (meta.tools + meta.nodes) as usize;
        let hashes = read_hashes(&dir.join(HASHES_FILE), count)?;
        let vectors = OldVectors::open(&dir.join(VECTORS_FILE), count, meta.dimension as usize)
            .ok_or_else(|| unreusable("its vectors do not open"))?;
        let mut rows = HashMap::with_capacity(hashes.len());
        for (row, h) in hashes.into_iter().enumerate() {
            rows.entry(h).or_insert(row as u32);
        }
        let tools = meta.tools as usize;
        let graph = verified(GRAPH_FILE).then(|| Graph::open(&dir.join(GRAPH_FILE), tools).ok()).flatten();
        Ok(Previous { rows, vectors, tools, graph })
    }
}
