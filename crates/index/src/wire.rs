//! bincode's standard encoding, read from a slice by hand, for the parts of `catalog.bin` an
//! open decodes (the lean tools and the header): one allocation a string, vectors made at
//! their length, and every length checked against the bytes left before anything is
//! allocated, so damaged bytes are an error, never a huge allocation or a panic.
//!
//! The writer still writes through serde's bincode; tests hold each reader to it.

/// bincode's encoding, read from a slice.
pub(crate) struct Bytes<'a> {
    rest: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// A reader at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Bytes<'a> {
        Bytes { rest: bytes }
    }

    /// How many bytes are not read yet.
    pub(crate) fn left(&self) -> usize {
        self.rest.len()
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.rest.len() {
            return Err(format!("{n} bytes wanted, {} left", self.rest.len()));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// A `bool`: one byte, 0 or 1.
    pub(crate) fn bool(&mut self) -> Result<bool, String> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("bad bool {b}")),
        }
    }

    /// An unsigned integer: one byte below 251, else a tag (251, 252, 253) and 2, 4 or 8
    /// little-endian bytes.
    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        Ok(match self.byte()? {
            b @ 0..=250 => u64::from(b),
            251 => u64::from(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"))),
            252 => u64::from(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"))),
            253 => u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")),
            tag => return Err(format!("bad integer tag {tag}")),
        })
    }

    /// A length of items each at least a byte long: never more than the bytes left.
    fn len(&mut self) -> Result<usize, String> {
        let n = self.varint()?;
        usize::try_from(n).ok().filter(|&n| n <= self.rest.len()).ok_or_else(|| format!("length {n} past the end"))
    }

    /// A string: its length, then its UTF-8 bytes.
    pub(crate) fn string(&mut self) -> Result<String, String> {
        let n = self.len()?;
        let bytes = self.take(n)?;
        // Most strings are ASCII, which a word-at-a-time check confirms faster than full
        // UTF-8 validation; the rest are validated.
        if bytes.is_ascii() {
            // SAFETY: ASCII bytes are valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) }.to_owned());
        }
        std::str::from_utf8(bytes).map(str::to_owned).map_err(|e| e.to_string())
    }

    /// A list of strings.
    pub(crate) fn strings(&mut self) -> Result<Vec<String>, String> {
        self.list(Bytes::string)
    }

    /// A list of unsigned integers, in a vector made at its length (each takes a byte or more).
    pub(crate) fn varints(&mut self) -> Result<Vec<u64>, String> {
        self.sized_list(1, Bytes::varint)
    }

    /// A list, held in a vector of its exact length (collecting from an iterator of results
    /// would start it at four, and double it): room for at most [`ROOM`] items is made before
    /// they are read, so a damaged length cannot make a large allocation.
    pub(crate) fn list<T>(&mut self, item: impl Fn(&mut Self) -> Result<T, String>) -> Result<Vec<T>, String> {
        const ROOM: usize = 64;
        let n = self.len()?;
        let mut items = Vec::with_capacity(n.min(ROOM));
        for _ in 0..n {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// A list of items each at least `min_bytes` long (at least 1), in a vector made at its
    /// length: a length that the bytes left cannot hold is an error before anything is
    /// allocated.
    pub(crate) fn sized_list<T>(
        &mut self,
        min_bytes: usize,
        item: impl Fn(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        let n = self.sized_len(min_bytes)?;
        self.items(n, min_bytes, item)
    }

    /// The length of a list of items each at least `min_bytes` long (at least 1), checked
    /// against the bytes left; the items are read by [`Bytes::items`].
    pub(crate) fn sized_len(&mut self, min_bytes: usize) -> Result<usize, String> {
        let n = self.len()?;
        self.fits(n, min_bytes)?;
        Ok(n)
    }

    /// `n` items each at least `min_bytes` long, in a vector made at length `n` once the bytes
    /// left are checked to hold them.
    pub(crate) fn items<T>(
        &mut self,
        n: usize,
        min_bytes: usize,
        item: impl Fn(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        self.fits(n, min_bytes)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(item(self)?);
        }
        Ok(items)
    }

    fn fits(&self, n: usize, min_bytes: usize) -> Result<(), String> {
        match n.saturating_mul(min_bytes.max(1)) > self.rest.len() {
            true => Err(format!("{n} items of {min_bytes} bytes or more past the end")),
            false => Ok(()),
        }
    }

    /// An optional string: a tag byte (0 none, 1 some), then the string.
    pub(crate) fn option(&mut self) -> Result<Option<String>, String> {
        match self.byte()? {
            0 => Ok(None),
            1 => self.string().map(Some),
            tag => Err(format!("bad option tag {tag}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: impl serde::Serialize) -> Vec<u8> {
        bincode::serde::encode_to_vec(value, bincode::config::standard()).unwrap()
    }

    #[test]
    fn what_bincode_writes_reads_back() {
        let numbers = vec![0u64, 250, 251, 65_535, 65_536, u64::from(u32::MAX) + 1, u64::MAX];
        let bytes = encoded((&numbers, true, false, Some("é".repeat(300)), None::<String>, vec!["a", ""]));
        let mut b = Bytes::new(&bytes);
        assert_eq!(b.varints().unwrap(), numbers);
        assert_eq!((b.bool().unwrap(), b.bool().unwrap()), (true, false));
        assert_eq!(b.option().unwrap(), Some("é".repeat(300)));
        assert_eq!(b.option().unwrap(), None);
        assert_eq!(b.strings().unwrap(), ["a", ""]);
        assert_eq!(b.left(), 0);
        assert!(b.bool().is_err(), "nothing left");
    }

    #[test]
    fn bad_tags_and_lengths_are_errors() {
        assert!(Bytes::new(&[2]).bool().unwrap_err().contains("bad bool"));
        assert!(Bytes::new(&[2]).option().unwrap_err().contains("bad option"));
        assert!(Bytes::new(&[254]).varint().unwrap_err().contains("bad integer"));
        assert!(Bytes::new(&[251, 1]).varint().is_err(), "a tag without its bytes");
        assert!(Bytes::new(&[3, 1, 2]).varints().unwrap_err().contains("past the end"));
        assert!(Bytes::new(&[250, 0]).strings().unwrap_err().contains("past the end"));
        let two_pairs = [2, 1, 2, 3, 4];
        assert_eq!(Bytes::new(&two_pairs).sized_list(2, |b| Ok((b.varint()?, b.varint()?))).unwrap(), [(1, 2), (3, 4)]);
        assert!(Bytes::new(&two_pairs).sized_list(3, |b| b.varint()).unwrap_err().contains("past the end"));
    }
}
