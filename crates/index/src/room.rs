//! Room for the decoded tools: one allocation, made resident beside the table's header while it
//! is decoded, into which each chunk of tools is written once, in parallel.
//!
//! Filling the room with default tools first, then overwriting each, wrote every byte of it
//! twice (360 bytes a tool: a third of a gigabyte at a million tools, 0.2-0.3 s of an open's
//! critical path). Here a slot is written once, by [`Chunk::push`]; a chunk that is not filled
//! drops what it wrote, and the room becomes a vector only when every chunk was filled.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Room for `len` values, written by chunks before any is read.
pub(crate) struct Room<T> {
    vec: Vec<T>,
    len: usize,
    size: usize,
}

/// One chunk of a [`Room`]'s slots, written in order. Dropped unkept, it drops what it wrote.
pub(crate) struct Chunk<'a, T> {
    at: usize,
    slots: &'a mut [MaybeUninit<T>],
    written: usize,
}

/// Proof that the chunk at `at` of `len` slots was filled and its values kept.
pub(crate) struct Kept {
    at: usize,
    len: usize,
}

impl<T: Send> Room<T> {
    /// Room for `len` values, in chunks of `size`.
    pub(crate) fn new(len: usize, size: usize) -> Room<T> {
        Room { vec: Vec::with_capacity(len), len, size: size.max(1) }
    }

    /// Makes the room's pages resident now, as huge pages where the kernel allows, so no write
    /// into it faults a page in: two calls, made before the chunks are written (while the
    /// other core sums the table and reads its categories). Linux
    /// (MADV_POPULATE_WRITE, 5.14 and later); elsewhere, or when refused, the writes fault the
    /// pages in as they come.
    pub(crate) fn populate(&mut self) {
        #[cfg(target_os = "linux")]
        {
            const PAGE: usize = 4096;
            let slots = &mut self.vec.spare_capacity_mut()[..self.len];
            let start = slots.as_mut_ptr() as usize;
            let (from, to) = (start.next_multiple_of(PAGE), (start + std::mem::size_of_val(slots)) / PAGE * PAGE);
            if to > from {
                // SAFETY: the whole pages of [from, to) lie inside this vector's unused
                // capacity, memory this process allocated and nothing has written or read;
                // both advices change only how the pages are backed, never a byte's value.
                unsafe {
                    libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
                    libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_POPULATE_WRITE);
                }
            }
        }
    }

    /// The chunks, in order, to write in parallel.
    pub(crate) fn chunks(&mut self) -> impl IndexedParallelIterator<Item = Chunk<'_, T>> {
        let size = self.size;
        self.vec.spare_capacity_mut()[..self.len].par_chunks_mut(size).enumerate().map(move |(i, slots)| Chunk {
            at: i * size,
            slots,
            written: 0,
        })
    }

    /// The values, when `kept` holds every chunk of this room, in order; else `None`, the
    /// chunks that were kept dropped.
    pub(crate) fn finish(mut self, kept: Vec<Kept>) -> Option<Vec<T>> {
        let tiles = kept.iter().try_fold(0, |end, k| (k.at == end).then_some(end + k.len));
        if tiles == Some(self.len) && kept.iter().all(|k| k.len == self.size.min(self.len - k.at)) {
            // SAFETY: the kept chunks tile 0..len in order, and a `Kept` is made only by
            // `Chunk::keep` once every slot of its chunk was written.
            unsafe { self.vec.set_len(self.len) };
            return Some(self.vec);
        }
        let slots = self.vec.spare_capacity_mut();
        for k in kept {
            for slot in &mut slots[k.at..k.at + k.len] {
                // SAFETY: as above, every slot of a kept chunk was written, and is dropped once
                // here (the vector's length stays 0, so it drops none of them again).
                unsafe { slot.assume_init_drop() };
            }
        }
        None
    }
}

impl<T> Chunk<'_, T> {
    /// Slots in this chunk.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Writes `value` into the next slot; gives it back when the chunk is full.
    pub(crate) fn push(&mut self, value: T) -> Result<(), T> {
        match self.slots.get_mut(self.written) {
            Some(slot) => {
                slot.write(value);
                self.written += 1;
                Ok(())
            }
            None => Err(value),
        }
    }

    /// Keeps the values when every slot was written; else `None` (and they are dropped).
    pub(crate) fn keep(mut self) -> Option<Kept> {
        let kept = (self.written == self.slots.len()).then_some(Kept { at: self.at, len: self.written });
        if kept.is_some() {
            self.written = 0; // the room owns them now
        }
        kept
    }
}

impl<T> Drop for Chunk<'_, T> {
    fn drop(&mut self) {
        for slot in &mut self.slots[..self.written] {
            // SAFETY: the first `written` slots were written by `push` and not yet dropped.
            unsafe { slot.assume_init_drop() };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static LIVE: AtomicUsize = AtomicUsize::new(0);

    /// A value that counts how many of its kind are alive.
    struct Counted(#[allow(dead_code)] String);

    impl Counted {
        fn new(i: usize) -> Counted {
            LIVE.fetch_add(1, Ordering::SeqCst);
            Counted(i.to_string())
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Fills a room of `len` in chunks of 4, chunk `fail` (if any) stopping after 2 values
    /// (the last chunk of a room of 10 holds 2: it cannot fail so).
    fn fill(len: usize, fail: Option<usize>) -> Option<Vec<Counted>> {
        let mut room = Room::new(len, 4);
        room.populate();
        let kept: Vec<Option<Kept>> = room
            .chunks()
            .enumerate()
            .map(|(i, mut chunk)| {
                let stop = if fail == Some(i) { 2 } else { chunk.len() };
                for _ in 0..stop {
                    assert!(chunk.push(Counted::new(i)).is_ok());
                }
                assert!(stop < chunk.len() || chunk.push(Counted::new(i)).is_err(), "a full chunk takes no more");
                chunk.keep()
            })
            .collect();
        room.finish(kept.into_iter().flatten().collect())
    }

    #[test]
    fn a_filled_room_is_a_vector_and_an_unfilled_one_drops_every_value() {
        let all = fill(10, None).expect("every chunk filled");
        assert_eq!(all.len(), 10);
        assert_eq!(LIVE.load(Ordering::SeqCst), 10);
        drop(all);
        assert_eq!(LIVE.load(Ordering::SeqCst), 0);
        for fail in 0..2 {
            assert!(fill(10, Some(fail)).is_none());
            assert_eq!(LIVE.load(Ordering::SeqCst), 0, "chunk {fail} failing leaves nothing alive");
        }
        assert_eq!(fill(0, None).map(|v| v.len()), Some(0));
    }
}
