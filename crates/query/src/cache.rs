//! Bounded least-recently-used caches: query embeddings (a repeated query skips the model) and
//! ranked results (a repeated request skips retrieval too). Both belong to one engine, hence to
//! one index generation, so they never serve answers of another index.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// How many bytes a cached value holds (its heap part and itself).
pub(crate) trait Weigh {
    /// Bytes held.
    fn weight(&self) -> usize;
}

impl<T> Weigh for Vec<T> {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>() + self.capacity() * std::mem::size_of::<T>()
    }
}

impl Weigh for String {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>() + self.len()
    }
}

impl Weigh for i32 {
    fn weight(&self) -> usize {
        4
    }
}

/// Key -> value, at most `capacity` entries and `max_bytes` of keys and values together; the
/// least recently used is evicted first. An entry over an eighth of the byte budget is not
/// kept at all, so a few huge requests cannot flush the cache or grow it.
pub(crate) struct Lru<K, V> {
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Inner<K, V>>,
}

struct Inner<K, V> {
    tick: u64,
    bytes: usize,
    map: HashMap<K, (V, u64)>,
}

/// Fixed cost of one entry besides its key and value (map slot, tick).
const ENTRY_OVERHEAD: usize = 64;

fn entry_bytes<K: Weigh, V: Weigh>(key: &K, value: &V) -> usize {
    key.weight() + value.weight() + ENTRY_OVERHEAD
}

impl<K: Clone + Eq + Hash + Weigh, V: Clone + Weigh> Lru<K, V> {
    pub(crate) fn new(capacity: usize, max_bytes: usize) -> Lru<K, V> {
        Lru { capacity, max_bytes, inner: Mutex::new(Inner { tick: 0, bytes: 0, map: HashMap::new() }) }
    }

    /// The bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        if self.capacity == 0 {
            return None;
        }
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.tick += 1;
        let tick = g.tick;
        g.map.get_mut(key).map(|(v, used)| {
            *used = tick;
            v.clone()
        })
    }

    pub(crate) fn put(&self, key: K, value: V) {
        let size = entry_bytes(&key, &value);
        if self.capacity == 0 || size > self.max_bytes / 8 {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.tick += 1;
        let tick = g.tick;
        if let Some((old, _)) = g.map.remove(&key) {
            g.bytes -= entry_bytes(&key, &old);
        }
        while !g.map.is_empty() && (g.map.len() >= self.capacity || g.bytes + size > self.max_bytes) {
            // O(capacity) eviction; capacities are small and eviction is off the hit path.
            let Some(oldest) = g.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) else {
                break;
            };
            if let Some((v, _)) = g.map.remove(&oldest) {
                g.bytes -= entry_bytes(&oldest, &v);
            }
        }
        g.bytes += size;
        g.map.insert(key, (value, tick));
    }

    /// The entries held, least recently used first (reading them uses none).
    pub(crate) fn entries(&self) -> Vec<(K, V)> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut entries: Vec<(&K, &V, u64)> = g.map.iter().map(|(k, (v, used))| (k, v, *used)).collect();
        entries.sort_unstable_by_key(|&(_, _, used)| used);
        entries.into_iter().map(|(k, v, _)| (k.clone(), v.clone())).collect()
    }

    pub(crate) fn clear(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.map.clear();
        g.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn evicts_the_least_recently_used_entry() {
        let c: Lru<String, Vec<f64>> = Lru::new(2, 1 << 20);
        c.put("a".into(), vec![1.0]);
        c.put("b".into(), vec![2.0]);
        assert_eq!(c.get(&"a".to_owned()), Some(vec![1.0]));
        c.put("c".into(), vec![3.0]);
        assert_eq!(c.get(&"b".to_owned()), None);
        assert_eq!(c.get(&"a".to_owned()), Some(vec![1.0]));
        assert_eq!(c.get(&"c".to_owned()), Some(vec![3.0]));
    }

    #[test]
    fn entries_come_least_recently_used_first_and_reading_them_uses_none() {
        let c: Lru<String, i32> = Lru::new(3, 1 << 20);
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] {
            c.put(k.into(), v);
        }
        c.get(&"a".to_owned());
        let entries = [("b".to_owned(), 2), ("c".to_owned(), 3), ("a".to_owned(), 1)];
        assert_eq!(c.entries(), entries);
        assert_eq!(c.entries(), entries);
    }

    #[test]
    fn capacity_zero_disables_the_cache() {
        let c: Lru<String, i32> = Lru::new(0, 1 << 20);
        c.put("a".into(), 1);
        assert_eq!(c.get(&"a".to_owned()), None);
    }
}

#[cfg(test)]
mod byte_tests {
    use super::Lru;

    #[test]
    fn huge_keys_neither_grow_nor_flush_the_cache() {
        let c: Lru<String, Vec<f32>> = Lru::new(1024, 1 << 20);
        c.put("small".into(), vec![1.0; 8]);
        for i in 0..100 {
            c.put(format!("{i}{}", "q".repeat(8 << 20)), vec![0.0; 384]);
        }
        assert!(c.bytes() <= 1 << 20, "{}", c.bytes());
        assert_eq!(
            c.get(&"small".to_owned()),
            Some(vec![1.0; 8]),
            "huge entries are not cached, so they evict nothing"
        );
        for i in 0..1000 {
            c.put(format!("{i}{}", "k".repeat(10_000)), vec![0.0; 384]);
        }
        assert!(c.bytes() <= 1 << 20, "{}", c.bytes());
    }
}
