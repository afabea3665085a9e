//! Bounded least-recently-used caches: query embeddings (a repeated query skips the model) and
//! ranked results (a repeated request skips retrieval too). Both belong to one engine, hence to
//! one index generation, so they never serve answers of another index.

use std::collections::HashMap;
use std::sync::Mutex;

/// Key -> value, at most `capacity` entries; the least recently used is evicted first.
pub(crate) struct Lru<V> {
    capacity: usize,
    inner: Mutex<Inner<V>>,
}

struct Inner<V> {
    tick: u64,
    map: HashMap<String, (V, u64)>,
}

impl<V: Clone> Lru<V> {
    pub(crate) fn new(capacity: usize) -> Lru<V> {
        Lru { capacity, inner: Mutex::new(Inner { tick: 0, map: HashMap::new() }) }
    }

    pub(crate) fn get(&self, key: &str) -> Option<V> {
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

    pub(crate) fn put(&self, key: String, value: V) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.tick += 1;
        let tick = g.tick;
        if g.map.len() >= self.capacity && !g.map.contains_key(&key) {
            // O(capacity) eviction; capacities are small and eviction is off the hit path.
            if let Some(oldest) = g.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) {
                g.map.remove(&oldest);
            }
        }
        g.map.insert(key, (value, tick));
    }

    pub(crate) fn clear(&self) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn evicts_the_least_recently_used_entry() {
        let c = Lru::new(2);
        c.put("a".into(), vec![1.0]);
        c.put("b".into(), vec![2.0]);
        assert_eq!(c.get("a"), Some(vec![1.0]));
        c.put("c".into(), vec![3.0]);
        assert_eq!(c.get("b"), None);
        assert_eq!(c.get("a"), Some(vec![1.0]));
        assert_eq!(c.get("c"), Some(vec![3.0]));
    }

    #[test]
    fn capacity_zero_disables_the_cache() {
        let c = Lru::new(0);
        c.put("a".into(), 1);
        assert_eq!(c.get("a"), None);
    }
}
