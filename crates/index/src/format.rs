//! The index's file layout and its checksummed metadata. Shared by writer and reader.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::adapter::QueryAdapter;
use crate::calibration::Calibration;
use crate::error::{io, IndexError};

/// The format version this build writes and reads. Bumped on any layout change.
pub const FORMAT_VERSION: u32 = 12;
/// The versions before it, still read. Each one's metadata is the next one's without the
/// fields that version appended (bincode writes fields in order, unframed): version 8 lacks the
/// model's pooling and source (its indexes were all built with the stock, mean-pooled model),
/// version 9 its prompts, version 10 its max length, and version 11 its tokenizer.
const OLDER_VERSIONS: [u32; 4] = [8, 9, 10, 11];
const MAGIC: &[u8; 8] = b"TSINDEX\0";

/// The index's metadata file. A build swaps in a whole new directory and `calibrate` or `learn`
/// replace this file, each atomically: a change of its bytes means a changed index.
pub const META_FILE: &str = "meta.bin";
/// The lean catalogue table (bincode), see [`crate::store`].
pub(crate) const CATALOG_FILE: &str = "catalog.bin";
/// Each tool's full record (JSON), read on demand.
pub(crate) const RECORDS_FILE: &str = "tools.json";
/// One f16 row per document, see [`crate::vectors`].
pub(crate) const VECTORS_FILE: &str = "vectors.f16";
/// The HNSW graph over the tool rows, see [`crate::graph`].
pub(crate) const GRAPH_FILE: &str = "graph.bin";
/// The 128-bit hash of each document's embedded text (tools, then nodes): a rebuild reuses
/// the vectors of unchanged documents by it.
pub(crate) const HASHES_FILE: &str = "hashes.bin";
pub(crate) const LEXICAL_DIR: &str = "lexical";

/// One file of the index with its size and checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    /// Path relative to the index directory.
    pub path: String,
    /// Size in bytes.
    pub len: u64,
    /// XXH3-64 of the content: detects corruption at memory speed (the metadata itself is
    /// protected by sha256).
    pub xxh3: u64,
}

/// Everything about an index that is not the data itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// Embedding model id.
    pub model_id: String,
    /// sha256 of the model weights.
    pub model_sha256: String,
    /// Vector dimension.
    pub dimension: u32,
    /// Content hash of the normalised catalogue.
    pub catalog_hash: String,
    /// Random per build; binds cursors and caches to this exact index.
    pub generation: u64,
    /// Tool documents (the first rows of the vector file).
    pub tools: u32,
    /// Node documents (the rows after the tools).
    pub nodes: u32,
    /// Every data file with its checksum.
    pub files: Vec<FileSum>,
    /// Unix time of the build.
    pub created_unix: u64,
    /// The confidence map fitted to this catalogue by `toolsearch calibrate`, if any; a
    /// rebuild of the same index keeps it.
    pub calibration: Option<Calibration>,
    /// The query adapter fitted to this catalogue's labels by `toolsearch learn`, if any; a
    /// rebuild with the same model keeps it.
    pub adapter: Option<QueryAdapter>,
    /// How the model pools tokens (`mean`, `cls`, `lasttoken`).
    pub model_pooling: String,
    /// The directory of a model that is not a named one, as given when the index was built:
    /// where a query finds it when no model is named.
    pub model_source: Option<String>,
    /// The model's query and document prompts; `None` in an index of a version that did not
    /// record them (then they are not checked).
    pub model_prompts: Option<(String, String)>,
    /// The most tokens of a text the model read; `None` in an index of a version that did not
    /// record it, or built by an embedder that does not say (then it is not checked).
    pub model_max_length: Option<u32>,
    /// The fingerprint of the model's tokenizer (`Embedder::tokenizer_fingerprint`); `None` in
    /// an index of a version that did not record it, or built by an embedder that does not say
    /// (then it is not checked).
    pub model_tokenizer: Option<String>,
}

impl IndexMeta {
    /// Whether `embedder` is the model this index was built with: the same weights (sha256),
    /// dimension, pooling, prompts, max length and tokenizer (one network exported with another
    /// pooling, or given other prompts, another max length or another tokenizer, gives other
    /// vectors).
    pub fn built_with(&self, embedder: &dyn toolsearch_embed::Embedder) -> bool {
        self.model_sha256 == embedder.model_sha256()
            && self.dimension as usize == embedder.dimension()
            && self.model_pooling == embedder.pooling()
            && self.model_prompts.as_ref().is_none_or(|(q, d)| (q.as_str(), d.as_str()) == embedder.prompts())
            && self.model_max_length.zip(embedder.max_length()).is_none_or(|(built, now)| built as usize == now)
            && self
                .model_tokenizer
                .as_deref()
                .zip(embedder.tokenizer_fingerprint())
                .is_none_or(|(built, now)| built == now)
    }

    /// Fails unless `embedder` is the model this index (in `dir`) was built with, naming both
    /// models (and the pooling, prompts, max length or tokenizer, when they are what differs).
    pub fn check_model(&self, dir: &Path, embedder: &dyn toolsearch_embed::Embedder) -> Result<(), IndexError> {
        if !self.built_with(embedder) {
            let (m, e) = (self, embedder);
            // The pooling, prompts, max length or tokenizer are named when they are what differs
            // (the same weights), the first of them that does.
            let built_prompts = m.model_prompts.as_ref().map(|(q, d)| (q.as_str(), d.as_str()));
            let lengths = m.model_max_length.zip(e.max_length()).filter(|(b, n)| *b as usize != *n);
            let tokenizers = m.model_tokenizer.as_deref().zip(e.tokenizer_fingerprint()).filter(|(b, n)| b != n);
            let (a, b) = if m.model_sha256 != e.model_sha256() {
                (String::new(), String::new())
            } else if m.model_pooling != e.pooling() {
                (format!(", {} pooling", m.model_pooling), format!(", {} pooling", e.pooling()))
            } else if built_prompts.is_some_and(|p| p != e.prompts()) {
                let prompts = |(q, d): (&str, &str)| format!(", query prompt {q:?}, document prompt {d:?}");
                (prompts(built_prompts.unwrap_or_default()), prompts(e.prompts()))
            } else if let Some((built, now)) = lengths {
                (format!(", max length {built}"), format!(", max length {now}"))
            } else if let Some((built, now)) = tokenizers {
                (format!(", tokenizer {}", short(built)), format!(", tokenizer {}", short(now)))
            } else {
                (String::new(), String::new())
            };
            return Err(IndexError::ModelMismatch {
                path: dir.join(META_FILE),
                found: format!("{} (sha256 {}{a})", m.model_id, short(&m.model_sha256)),
                expected: format!("{} (sha256 {}{b})", e.model_id(), short(e.model_sha256())),
            });
        }
        Ok(())
    }

    /// What tells this index's model apart from every other across processes (a fleet keeps
    /// its learned adapters under it): the id, and the sha256, pooling and prompts that make two
    /// models give the same vectors, so two local models of one name never share an adapter.
    /// A local model's tokenizer too (a named model's comes with its weights, so its sha256
    /// says it). The max length is left out: an adapter maps query vectors, and a query is far
    /// shorter than any model's max length.
    pub fn model_key(&self) -> String {
        let mut key = format!("{} sha256:{} {}", self.model_id, self.model_sha256, self.model_pooling);
        if let Some((q, d)) = self.some_prompts() {
            let digest = format!("{:x}", Sha256::digest(format!("{q}\0{d}")));
            key.push_str(&format!(" prompts:{}", &digest[..16]));
        }
        let named = toolsearch_embed::ModelSpec::name_of(&self.model_id).is_some();
        if let Some(tokenizer) = self.model_tokenizer.as_deref().filter(|_| !named) {
            key.push_str(&format!(" tokenizer:{}", &tokenizer[..tokenizer.len().min(16)]));
        }
        key
    }

    /// The model this index was built with, in words: its id, then what tells it apart from
    /// other models of that id (the sha256 of its weights, dimension, pooling, prompts when it
    /// has any, max length and tokenizer, each when recorded) and the directory it was loaded
    /// from, if any.
    pub fn describe_model(&self) -> String {
        let mut parts = vec![
            format!("sha256 {}", short(&self.model_sha256)),
            format!("{} dimensions", self.dimension),
            format!("{} pooling", self.model_pooling),
        ];
        if let Some((q, d)) = self.some_prompts() {
            parts.push(format!("query prompt {q:?}, document prompt {d:?}"));
        }
        parts.extend(self.model_max_length.map(|n| format!("max length {n}")));
        parts.extend(self.model_tokenizer.as_deref().map(|t| format!("tokenizer {}", short(t))));
        parts.extend(self.model_source.as_deref().map(|dir| format!("from {dir}")));
        format!("{} ({})", self.model_id, parts.join(", "))
    }

    /// The model's prompts, when it has any (recorded and not both empty).
    fn some_prompts(&self) -> Option<&(String, String)> {
        self.model_prompts.as_ref().filter(|(q, d)| !(q.is_empty() && d.is_empty()))
    }

    /// The model to query this index with: a named model's name, or the directory a local
    /// model was loaded from; `None` when the index names neither.
    pub fn model_choice(&self) -> Option<String> {
        toolsearch_embed::ModelSpec::name_of(&self.model_id).map(str::to_owned).or_else(|| self.model_source.clone())
    }

    /// Writes the metadata: magic, version, sha256 of the payload, payload.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), IndexError> {
        let path = dir.join(META_FILE);
        let payload = bincode::serde::encode_to_vec(self, bincode::config::standard())
            .map_err(|e| IndexError::Corrupted(path.clone(), e.to_string()))?;
        let mut bytes = Vec::with_capacity(payload.len() + 44);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&Sha256::digest(&payload));
        bytes.extend_from_slice(&payload);
        std::fs::write(&path, bytes).map_err(io(&path))
    }

    /// Stores `calibration` in the index in `dir`, replacing the metadata file atomically
    /// (write beside, fsync, rename).
    pub fn set_calibration(dir: &Path, calibration: &Calibration) -> Result<(), IndexError> {
        IndexMeta::update(dir, |meta| meta.calibration = Some(*calibration))
    }

    /// Stores `adapter` in the index in `dir` (or removes the one there, with `None`), as
    /// [`IndexMeta::set_calibration`] does.
    pub fn set_adapter(dir: &Path, adapter: Option<QueryAdapter>) -> Result<(), IndexError> {
        IndexMeta::update(dir, |meta| meta.adapter = adapter)
    }

    /// Rewrites the metadata with `change` applied, atomically.
    fn update(dir: &Path, change: impl FnOnce(&mut IndexMeta)) -> Result<(), IndexError> {
        let mut meta = IndexMeta::read(dir)?;
        change(&mut meta);
        let staging = dir.join(".meta-update");
        std::fs::create_dir_all(&staging).map_err(io(&staging))?;
        meta.write(&staging)?;
        let new = staging.join(META_FILE);
        std::fs::File::open(&new).and_then(|f| f.sync_all()).map_err(io(&new))?;
        let target = dir.join(META_FILE);
        std::fs::rename(&new, &target).map_err(io(&target))?;
        let _ = std::fs::remove_dir(&staging);
        let _ = std::fs::File::open(dir).and_then(|f| f.sync_all());
        Ok(())
    }

    /// Reads and checks the metadata of the index in `dir`.
    pub fn read(dir: &Path) -> Result<IndexMeta, IndexError> {
        let path = dir.join(META_FILE);
        if dir.is_file() {
            let hint = format!(
                "a file, not an index directory (a catalogue? build its index with `toolsearch index {} --out DIR`)",
                dir.display()
            );
            return Err(IndexError::NotAnIndex(dir.to_path_buf(), hint));
        }
        if !dir.is_dir() {
            return Err(IndexError::NotAnIndex(dir.to_path_buf(), "no such index directory".into()));
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(IndexError::NotAnIndex(
                    dir.to_path_buf(),
                    format!("not a toolsearch index (no {META_FILE})"),
                ))
            }
            Err(e) => return Err(IndexError::Io(path, e)),
        };
        if bytes.len() < 44 || &bytes[..8] != MAGIC {
            return Err(IndexError::Corrupted(path, "not a toolsearch metadata file".into()));
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION && !OLDER_VERSIONS.contains(&version) {
            return Err(IndexError::Version { path, found: version, expected: FORMAT_VERSION });
        }
        let payload = &bytes[44..];
        if Sha256::digest(payload).as_slice() != &bytes[12..44] {
            return Err(IndexError::Corrupted(path, "checksum mismatch".into()));
        }
        let corrupted = |e: bincode::error::DecodeError| IndexError::Corrupted(path.clone(), e.to_string());
        let encode = |e: bincode::error::EncodeError| IndexError::Corrupted(path.clone(), e.to_string());
        let config = bincode::config::standard();
        // An older payload, completed with the fields later versions appended, at what they
        // mean for it: a stock model's mean pooling and no source (8), prompts not recorded (9),
        // max length not recorded (10), tokenizer not recorded (11).
        let mut payload = payload.to_vec();
        if version == 8 {
            let added = ("mean", None::<String>);
            payload.extend(bincode::serde::encode_to_vec(added, config).map_err(encode)?);
        }
        if version <= 9 {
            let added = None::<(String, String)>;
            payload.extend(bincode::serde::encode_to_vec(added, config).map_err(encode)?);
        }
        if version <= 10 {
            payload.extend(bincode::serde::encode_to_vec(None::<u32>, config).map_err(encode)?);
        }
        if version <= 11 {
            payload.extend(bincode::serde::encode_to_vec(None::<String>, config).map_err(encode)?);
        }
        let (meta, used): (IndexMeta, usize) =
            bincode::serde::decode_from_slice(&payload, config).map_err(corrupted)?;
        if used != payload.len() {
            return Err(IndexError::Corrupted(path, format!("{} bytes after the metadata", payload.len() - used)));
        }
        Ok(meta)
    }
}

/// The first 12 hex digits of a sha256 or fingerprint, as errors and reports show it.
pub(crate) fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// XXH3-64 of a file, streaming (read, not mapped: checking does not grow the process).
pub(crate) fn file_sum(dir: &Path, rel: &str) -> Result<FileSum, IndexError> {
    use std::io::Read;
    let path = dir.join(rel);
    let mut f = std::fs::File::open(&path).map_err(io(&path))?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io(&path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
    Ok(FileSum { path: rel.to_owned(), len, xxh3: h.digest() })
}

/// The 128-bit hash a document's vector is reused by.
pub(crate) fn text_hash(text: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes())
}

/// Writes the document hashes ([`HASHES_FILE`]).
pub(crate) fn write_hashes(path: &Path, hashes: &[u128]) -> Result<(), IndexError> {
    let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
    std::fs::write(path, bytes).map_err(io(path))
}

/// Reads the document hashes of an index with `rows` documents.
pub(crate) fn read_hashes(path: &Path, rows: usize) -> Result<Vec<u128>, IndexError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    if bytes.len() != rows * 16 {
        return Err(IndexError::Corrupted(
            path.to_path_buf(),
            format!("{} bytes, expected {}", bytes.len(), rows * 16),
        ));
    }
    Ok(bytes.chunks_exact(16).map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes"))).collect())
}
