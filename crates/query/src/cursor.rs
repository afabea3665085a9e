//! Paging cursors: opaque, tamper-evident, and bound to one index build and one request.
//!
//! A cursor is the next offset and a hash of the request it continues, followed by an
//! HMAC-SHA256 tag under a key derived from the index's random build generation (never
//! revealed) and its catalogue hash. A changed byte, a cursor from another request, or one
//! from an earlier build of the index fails the check and gets `INVALID_CURSOR`.

use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, ProtocolError};
use crate::scope::Filter;

const TAG_BYTES: usize = 16;
/// Offset (4 bytes) + request hash (8 bytes).
const PAYLOAD_BYTES: usize = 12;

/// The key cursors are signed with.
pub(crate) struct CursorKey([u8; 32]);

impl CursorKey {
    pub(crate) fn new(generation: u64, catalog_hash: &str) -> CursorKey {
        let mut h = Sha256::new();
        h.update(b"toolsearch cursor key v1");
        h.update(generation.to_le_bytes());
        h.update(catalog_hash.as_bytes());
        CursorKey(h.finalize().into())
    }

    /// The cursor continuing `request` at `offset`.
    pub(crate) fn encode(&self, offset: usize, request: u64) -> String {
        let mut payload = Vec::with_capacity(PAYLOAD_BYTES);
        payload.extend_from_slice(&(offset.min(u32::MAX as usize) as u32).to_le_bytes());
        payload.extend_from_slice(&request.to_le_bytes());
        let tag = self.mac(&payload);
        hex(&payload) + &hex(&tag[..TAG_BYTES])
    }

    /// The offset a cursor continues at, if it is genuine and belongs to `request`.
    pub(crate) fn decode(&self, cursor: &str, request: u64) -> Result<usize, ProtocolError> {
        let invalid = |why: &str| {
            ProtocolError::new(ErrorCode::InvalidCursor, format!("invalid cursor: {why}"))
                .with_hints(vec!["repeat the request without a cursor to start from the first page".into()])
        };
        let bytes = unhex(cursor.trim())
            .filter(|b| b.len() == PAYLOAD_BYTES + TAG_BYTES)
            .ok_or_else(|| invalid("malformed"))?;
        let (payload, tag) = bytes.split_at(PAYLOAD_BYTES);
        let expected = self.mac(payload);
        // Constant-time comparison: no early exit on the first differing byte.
        let diff = expected[..TAG_BYTES].iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return Err(invalid("it was altered, or was issued by another index or an earlier build of this one"));
        }
        let offset = u32::from_le_bytes(payload[..4].try_into().expect("4 bytes")) as usize;
        let bound = u64::from_le_bytes(payload[4..].try_into().expect("8 bytes"));
        if bound != request {
            return Err(invalid("it belongs to another request (query, path or tags differ)"));
        }
        Ok(offset)
    }

    /// HMAC-SHA256 (RFC 2104).
    fn mac(&self, message: &[u8]) -> [u8; 32] {
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let pad = |byte: u8| block.map(|b| b ^ byte);
        let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
        Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
    }
}

/// A stable hash of what a cursor is bound to: the call, its query and its filter (path,
/// tags and the caller's scopes). Every part is length-prefixed, so no two requests collide
/// by moving text between parts.
pub(crate) fn request_hash(call: &str, query: &str, filter: &Filter) -> u64 {
    let mut h = Sha256::new();
    let mut part = |p: &str| {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    };
    part(call);
    part(query);
    for list in [Some(&filter.path), Some(&filter.tags), filter.scopes.as_ref()] {
        match list {
            None => part("\u{0}none"),
            Some(items) => {
                part(&items.len().to_string());
                items.iter().for_each(|s| part(s));
            }
        }
    }
    u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lower-case hex to bytes. Strict: only `[0-9a-f]`, so every cursor has exactly one spelling
/// (`u8::from_str_radix` would also take a sign: "+3" parsed as 0x03, found by fuzzing).
fn unhex(s: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes.chunks(2).map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_canonical_spelling_decodes() {
        let key = CursorKey::new(7, "hash");
        let cursor = key.encode(3, 42);
        assert_eq!(key.decode(&cursor, 42).unwrap(), 3);
        let signed = format!("+{}", &cursor[1..]);
        assert!(cursor.starts_with('0') && key.decode(&signed, 42).is_err(), "a sign is not a hex digit");
        assert!(key.decode(&cursor.to_uppercase(), 42).is_err());
        assert!(key.decode(&format!("{cursor}0"), 42).is_err());
        assert!(key.decode("é", 42).is_err());
    }

    #[test]
    fn a_cursor_round_trips_for_its_own_request() {
        let key = CursorKey::new(42, "abc");
        let req = request_hash("search", "send mail", &Filter::default());
        assert_eq!(key.decode(&key.encode(20, req), req).unwrap(), 20);
    }

    #[test]
    fn any_altered_character_is_refused() {
        let key = CursorKey::new(42, "abc");
        let req = request_hash("q", "", &Filter::default());
        let cursor = key.encode(10, req);
        for i in 0..cursor.len() {
            let mut bytes = cursor.clone().into_bytes();
            bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
            let altered = String::from_utf8(bytes).unwrap();
            assert_eq!(key.decode(&altered, req).unwrap_err().code, ErrorCode::InvalidCursor, "position {i}");
        }
    }

    #[test]
    fn foreign_stale_and_garbage_cursors_are_refused() {
        let key = CursorKey::new(42, "abc");
        let req = request_hash("q", "", &Filter::default());
        let cursor = key.encode(10, req);
        assert!(key
            .decode(&cursor, request_hash("other", "", &Filter::default()))
            .unwrap_err()
            .message
            .contains("another request"));
        assert!(CursorKey::new(43, "abc").decode(&cursor, req).is_err(), "a rebuilt index refuses old cursors");
        for junk in ["", "zz", "00", &"0".repeat(56), "é"] {
            assert_eq!(key.decode(junk, req).unwrap_err().code, ErrorCode::InvalidCursor);
        }
    }
}
