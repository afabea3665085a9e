//! A tokenizer's fingerprint: what an index records of the tokenizer that embedded it, so that
//! a tokenizer changed under it (a re-download, a hand edit) is refused instead of silently
//! embedding queries with different token ids.

use fastembed::TextEmbedding;
use sha2::{Digest, Sha256};

use crate::EmbedError;

/// Texts whose token ids stand for how a tokenizer splits text: case, accents, CJK, digits,
/// punctuation, symbols, markup, special tokens and spacing. Each is short, and they are
/// tokenized without truncation or padding, so the fingerprint does not depend on the max
/// length (recorded on its own). Changing them, or what [`tokenizer_fingerprint`] hashes,
/// changes every model's fingerprint, and so refuses every index: only with a new index format
/// version (whose older versions open without the check).
const PROBES: [&str; 12] = [
    "Send a message to the #general channel",
    "Mixed CaSe WORDS and camelCaseNames or snake_case_names",
    "Café naïve résumé Ångström ß œ",
    "日本語のテキスト 中文 한국어 русский текст العربية",
    "3.14159 1,000,000 2026-12-05T07:40:47Z v1.2.3 0x1F",
    "GET /api/v1/users?id=42&sort=desc HTTP/2 https://example.com/a#b",
    "don't stop-believing; (really) [maybe] {json: \"yes\"} <tag/>",
    "emoji 🚀🔥 ✓ → € £ ¥ © ™ …",
    "[CLS] [SEP] [MASK] [PAD] [UNK] <s> </s> <pad> <|endoftext|>",
    "tabs\tand\nnew lines  and   runs of spaces",
    "antidisestablishmentarianism pneumonoultramicroscopic",
    "",
];

/// The fingerprint of `session`'s tokenizer ([`crate::Embedder::tokenizer_fingerprint`]): the ids it
/// gives the probe texts, then its vocabulary (each token, in id order), neither of which a
/// tokenizer file saved again changes. The session's truncation and padding are lifted for the
/// probes and put back (rather than probing a copy: copying a 30,000-token vocabulary takes
/// longer than the whole fingerprint).
pub(crate) fn tokenizer_fingerprint(session: &mut TextEmbedding) -> Result<String, EmbedError> {
    let runtime = |e: Box<dyn std::error::Error + Send + Sync>| EmbedError::Runtime(format!("the tokenizer: {e}"));
    let tokenizer = &mut session.tokenizer;
    let (truncation, padding) = (tokenizer.get_truncation().cloned(), tokenizer.get_padding().cloned());
    tokenizer.with_truncation(None).map_err(runtime)?;
    tokenizer.with_padding(None);
    let mut bytes = Vec::new();
    let probed = PROBES.iter().try_for_each(|text| {
        let encoding = tokenizer.encode(*text, true)?;
        encoding.get_ids().iter().for_each(|id| bytes.extend_from_slice(&id.to_le_bytes()));
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        Ok(())
    });
    tokenizer.with_truncation(truncation).map_err(runtime)?;
    tokenizer.with_padding(padding);
    probed.map_err(runtime)?;
    // The vocabulary too: a token no probe reaches still counts.
    for id in 0..tokenizer.get_vocab_size(true) as u32 {
        let token = tokenizer.id_to_token(id).unwrap_or_default();
        bytes.extend_from_slice(&(token.len() as u32).to_le_bytes());
        bytes.extend_from_slice(token.as_bytes());
    }
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::tokenizer_fingerprint;
    use crate::onnx::open_session;
    use crate::{Embedder, ModelFiles, OnnxEmbedder};

    /// The fingerprint lifts the session's truncation and padding for its probes and puts them
    /// back (a session left without them would embed long texts whole and fail on batches),
    /// and it is the same on every load.
    #[test]
    fn the_tokenizer_fingerprint_leaves_the_session_as_it_was() {
        let tiny = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/models/tiny-cls");
        let files = ModelFiles::choose(None, Some(tiny)).unwrap();
        let (mut session, _, opened) = open_session(&files, &Default::default(), None).unwrap();
        let settings = |s: &fastembed::TextEmbedding| {
            format!("{:?} {:?}", s.tokenizer.get_truncation(), s.tokenizer.get_padding())
        };
        let before = settings(&session);
        assert!(before.contains("max_length: 64") && before.contains("BatchLongest"), "{before}");
        let fingerprint = tokenizer_fingerprint(&mut session).unwrap();
        assert_eq!(settings(&session), before);
        assert_eq!((fingerprint.len(), &fingerprint), (64, &opened));
        let loaded = OnnxEmbedder::load(&files, Default::default()).unwrap();
        assert_eq!(loaded.tokenizer_fingerprint(), Some(fingerprint.as_str()));
    }
}
