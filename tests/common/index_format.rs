//! Writing an index's metadata back in an older format version, as an index written by an
//! earlier release is: the fields later versions appended are dropped (bincode writes fields
//! in order, unframed), and the payload is hashed again.

use std::path::Path;

use sha2::{Digest, Sha256};
use toolsearch::index::IndexMeta;

/// Writes the metadata of the index in `dir` back as `version`, from the version it is at,
/// dropping what each later version appended: version 12 the tokenizer's fingerprint (`Some`,
/// its length and bytes, or `None`), version 11 the max length (`Some` and its
/// varint, or `None`), version 10 the prompts (`Some`, then each string's length and bytes),
/// version 9 the pooling ("mean": length 4, then 4 bytes) and no source.
pub fn downgrade(dir: &Path, version: u32) {
    let path = dir.join("meta.bin");
    let bytes = std::fs::read(&path).unwrap();
    let from = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let meta = IndexMeta::read(dir).unwrap();
    let length = match meta.model_max_length {
        Some(n) if n < 251 => vec![1, n as u8],
        Some(n) => [&[1u8, 251][..], &(n as u16).to_le_bytes()].concat(),
        None => vec![0],
    };
    let tokenizer = match meta.model_tokenizer {
        Some(t) => [&[1u8, t.len() as u8][..], t.as_bytes()].concat(),
        None => vec![0],
    };
    let prompts = meta.model_prompts.map(|(q, d)| {
        let mut tail = vec![1u8, q.len() as u8];
        tail.extend(q.bytes());
        tail.push(d.len() as u8);
        tail.extend(d.bytes());
        tail
    });
    // (the version that appended them, the bytes), the last appended first.
    let appended = [(12, Some(tokenizer)), (11, Some(length)), (10, prompts), (9, Some(b"\x04mean\x00".to_vec()))];
    let mut old = &bytes[44..];
    for (at, tail) in appended {
        if at > from || at <= version {
            continue;
        }
        let tail = tail.expect("a field this version writes");
        let (rest, found) = old.split_at(old.len() - tail.len());
        assert_eq!(found, tail, "the metadata of version {from} ends in version {at}'s fields");
        old = rest;
    }
    let mut out = bytes[..8].to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&Sha256::digest(old));
    out.extend_from_slice(old);
    std::fs::write(&path, out).unwrap();
}
