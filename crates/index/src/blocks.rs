//! Integrity by block for the two large mapped files, the vectors and the tool records.
//!
//! Checking every byte of an index when it opens costs a pass over files that a search then
//! touches only a few pages of (at a million tools, 1.5 GB read to answer one query). So
//! these two files are checked 4 KiB at a time instead: `blocks.bin` holds the XXH3-64 of
//! each of their blocks (and is itself checked whole on open, by its sum in the metadata),
//! and a [`Checked`] map verifies a block the first time anything reads it. A block whose
//! bytes differ from those written is never used: its reader gets an error naming the file
//! and the block (rows of a corrupted vector block read as zeros until the search that met
//! them returns that error instead of an answer). Every other file is small next to these,
//! or read whole on open anyway, and is checked whole before it is used.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{io, IndexError};
use crate::format::{RECORDS_FILE, VECTORS_FILE};

/// Bytes per checked block: one page, so checking a block costs what mapping it in does.
pub(crate) const BLOCK: usize = 4096;

/// The files checked by block, in the order their sums appear in `blocks.bin`.
pub(crate) const BLOCK_CHECKED: [&str; 2] = [VECTORS_FILE, RECORDS_FILE];

/// The file of block sums.
pub(crate) const BLOCKS_FILE: &str = "blocks.bin";

/// XXH3-64 of each [`BLOCK`] of `bytes` (the last one may be short).
pub(crate) fn sums_of(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes.chunks(BLOCK).map(xxhash_rust::xxh3::xxh3_64)
}

/// Writes `blocks.bin` in `dir` for the [`BLOCK_CHECKED`] files there: for each, its number of
/// blocks, then each block's sum (little-endian `u64`s). Reads the files, never maps them.
pub(crate) fn write(dir: &Path) -> Result<(), IndexError> {
    use std::io::{Read, Write};
    let out_path = dir.join(BLOCKS_FILE);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&out_path).map_err(io(&out_path))?);
    let mut buf = vec![0u8; 256 * BLOCK];
    for rel in BLOCK_CHECKED {
        let path = dir.join(rel);
        let mut file = std::fs::File::open(&path).map_err(io(&path))?;
        let len = file.metadata().map_err(io(&path))?.len();
        let blocks = len.div_ceil(BLOCK as u64);
        out.write_all(&blocks.to_le_bytes()).map_err(io(&out_path))?;
        let mut left = len;
        while left > 0 {
            let take = left.min(buf.len() as u64) as usize;
            file.read_exact(&mut buf[..take]).map_err(io(&path))?;
            for sum in sums_of(&buf[..take]) {
                out.write_all(&sum.to_le_bytes()).map_err(io(&out_path))?;
            }
            left -= take as u64;
        }
    }
    out.flush().map_err(io(&out_path))
}

/// Reads `blocks.bin` in `dir`, checked against its XXH3 `sum` (from the metadata) on the
/// bytes read: the block sums of each [`BLOCK_CHECKED`] file, checked against the file's
/// length `lens[i]`.
pub(crate) fn read(dir: &Path, sum: Option<u64>, lens: [u64; 2]) -> Result<[Vec<u64>; 2], IndexError> {
    let path = dir.join(BLOCKS_FILE);
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    let bad = |why: String| IndexError::Corrupted(path.clone(), why);
    if sum != Some(xxhash_rust::xxh3::xxh3_64(&bytes)) {
        return Err(bad("checksum mismatch".into()));
    }
    let mut words = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
    if bytes.len() % 8 != 0 {
        return Err(bad("not a whole number of sums".into()));
    }
    let mut out = [Vec::new(), Vec::new()];
    for (i, sums) in out.iter_mut().enumerate() {
        let want = lens[i].div_ceil(BLOCK as u64);
        let count = words.next().ok_or_else(|| bad("truncated".into()))?;
        if count != want {
            return Err(bad(format!("{count} blocks for {}, expected {want}", BLOCK_CHECKED[i])));
        }
        sums.extend(words.by_ref().take(count as usize));
        if sums.len() as u64 != count {
            return Err(bad("truncated".into()));
        }
    }
    if words.next().is_some() {
        return Err(bad("trailing bytes".into()));
    }
    Ok(out)
}

/// The block sums of one mapped file, and which blocks have been checked so far.
/// `Send + Sync`: concurrent readers may check one block twice, never skip one.
pub(crate) struct Checked {
    sums: Vec<u64>,
    /// One bit a block, set once the block's bytes matched its sum.
    checked: Box<[AtomicU64]>,
    /// The first block found corrupted (`u64::MAX`: none so far).
    fault: AtomicU64,
    path: PathBuf,
}

impl Checked {
    /// The sums `sums` of the file at `path` (for errors), none checked yet.
    pub(crate) fn new(path: &Path, sums: Vec<u64>) -> Checked {
        let checked = (0..sums.len().div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        Checked { sums, checked, fault: AtomicU64::new(u64::MAX), path: path.to_path_buf() }
    }

    /// Whether `range` of `bytes` (the whole file, mapped) may be used: every block it
    /// touches is checked now if it was not before. False if one differs from its sum (which
    /// is remembered: see [`Checked::fault`]).
    #[inline]
    pub(crate) fn ok(&self, bytes: &[u8], range: Range<usize>) -> bool {
        if range.is_empty() {
            return true;
        }
        let (first, last) = (range.start / BLOCK, (range.end - 1) / BLOCK);
        (first..=last).all(|b| self.block_ok(bytes, b))
    }

    #[inline]
    fn block_ok(&self, bytes: &[u8], b: usize) -> bool {
        let (word, bit) = (b / 64, 1u64 << (b % 64));
        let Some(cell) = self.checked.get(word) else {
            // Past the file's last block: never a byte to use (remembered like a bad block).
            let _ = self.fault.compare_exchange(u64::MAX, b as u64, Ordering::AcqRel, Ordering::Acquire);
            return false;
        };
        if cell.load(Ordering::Acquire) & bit != 0 {
            return true;
        }
        self.check_block(bytes, b, cell, bit)
    }

    #[cold]
    fn check_block(&self, bytes: &[u8], b: usize, cell: &AtomicU64, bit: u64) -> bool {
        let block = &bytes[(b * BLOCK).min(bytes.len())..((b + 1) * BLOCK).min(bytes.len())];
        if self.sums.get(b) == Some(&xxhash_rust::xxh3::xxh3_64(block)) {
            cell.fetch_or(bit, Ordering::Release);
            true
        } else {
            let _ = self.fault.compare_exchange(u64::MAX, b as u64, Ordering::AcqRel, Ordering::Acquire);
            false
        }
    }

    /// `range` of `bytes` once every block it touches is checked, or the error naming the
    /// file and the first corrupted block.
    pub(crate) fn bytes<'a>(&self, bytes: &'a [u8], range: Range<usize>) -> Result<&'a [u8], IndexError> {
        if self.ok(bytes, range.clone()) {
            Ok(&bytes[range])
        } else {
            Err(self.fault().expect_err("a block failed its check"))
        }
    }

    /// The error for the first corrupted block found, if one was.
    pub(crate) fn fault(&self) -> Result<(), IndexError> {
        match self.fault.load(Ordering::Acquire) {
            u64::MAX => Ok(()),
            b => Err(IndexError::Corrupted(
                self.path.clone(),
                format!(
                    "bytes {}..{} differ from those written (block checksum mismatch)",
                    b * BLOCK as u64,
                    (b + 1) * BLOCK as u64
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_used_only_if_it_matches_its_sum() {
        let written: Vec<u8> = (0..3 * BLOCK + 100).map(|i| (i * 7 % 251) as u8).collect();
        let checked = Checked::new(Path::new("f"), sums_of(&written).collect());
        assert!(checked.ok(&written, 0..written.len()));
        assert!(checked.fault().is_ok());

        let mut damaged = written.clone();
        damaged[2 * BLOCK + 5] ^= 1;
        let checked = Checked::new(Path::new("f"), sums_of(&written).collect());
        assert!(checked.ok(&damaged, 0..2 * BLOCK), "the blocks before the damaged one");
        assert!(checked.fault().is_ok());
        assert!(!checked.ok(&damaged, 2 * BLOCK - 1..2 * BLOCK + 1), "a range reaching into it");
        let err = checked.bytes(&damaged, 2 * BLOCK..2 * BLOCK + 1).unwrap_err().to_string();
        assert!(err.starts_with("f: corrupted") && err.contains("8192..12288"), "{err}");
        assert!(checked.fault().is_err(), "the fault is remembered");
        assert!(!checked.ok(&damaged, 2 * BLOCK..2 * BLOCK + 1), "and the block never trusted");
        assert_eq!(checked.bytes(&damaged, 3 * BLOCK..3 * BLOCK + 100).unwrap(), &written[3 * BLOCK..]);
    }
}
