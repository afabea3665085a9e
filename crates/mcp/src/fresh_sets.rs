//! The starting tool sets a hub keeps for session-free requests: one per catalogue generation
//! and caller, at most [`KEPT`], the least recently used given up first. Building a tool set
//! derives facades and names from the whole catalogue; a kept one is cloned instead.

/// How many callers' starting tool sets are kept.
pub(crate) const KEPT: usize = 32;

/// Values by catalogue generation and key, bounded, least recently used first.
pub(crate) struct FreshSets<K, V> {
    /// Least recently used first.
    entries: Vec<(u64, K, V)>,
    cap: usize,
}

impl<K, V> Default for FreshSets<K, V> {
    fn default() -> Self {
        FreshSets { entries: Vec::new(), cap: KEPT }
    }
}

impl<K: PartialEq, V: Clone> FreshSets<K, V> {
    /// The value kept for `key` at `generation` (a copy), now the most recently used.
    pub(crate) fn get(&mut self, generation: u64, key: &K) -> Option<V> {
        let i = self.entries.iter().position(|(g, k, _)| *g == generation && k == key)?;
        let entry = self.entries.remove(i);
        let value = entry.2.clone();
        self.entries.push(entry);
        Some(value)
    }

    /// Keeps `value` for `key` at `generation`, in place of what was kept for it. Values of
    /// other generations are dropped (the catalogue they were built from is gone), and the
    /// least recently used one when `cap` are kept.
    pub(crate) fn put(&mut self, generation: u64, key: K, value: V) {
        self.entries.retain(|(g, k, _)| *g == generation && *k != key);
        if self.entries.len() >= self.cap {
            self.entries.remove(0);
        }
        self.entries.push((generation, key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_so_many_are_kept_and_the_least_recently_used_goes_first() {
        let mut kept = FreshSets { entries: Vec::new(), cap: 3 };
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] {
            kept.put(7, k, v);
        }
        assert_eq!(kept.get(7, &"a"), Some(1)); // a is now the most recently used
        kept.put(7, "d", 4); // full: b, the least recently used, goes
        assert_eq!(kept.entries.len(), 3);
        assert_eq!(kept.get(7, &"b"), None);
        assert_eq!((kept.get(7, &"a"), kept.get(7, &"c"), kept.get(7, &"d")), (Some(1), Some(3), Some(4)));
        kept.put(7, "c", 30); // replaces, does not add
        assert_eq!((kept.entries.len(), kept.get(7, &"c")), (3, Some(30)));
        assert_eq!(kept.get(8, &"a"), None, "another generation's value is not this one's");
        kept.put(8, "a", 10); // a new catalogue: what was built from the old one goes
        assert_eq!((kept.entries.len(), kept.get(7, &"c"), kept.get(8, &"a")), (1, None, Some(10)));
    }

    #[test]
    fn the_default_keeps_kept_many() {
        let mut kept = FreshSets::default();
        for k in 0..KEPT + 5 {
            kept.put(1, k, k);
        }
        assert_eq!(kept.entries.len(), KEPT);
        assert_eq!(kept.get(1, &4), None);
        assert_eq!(kept.get(1, &5), Some(5));
    }
}
