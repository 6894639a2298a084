//! A map that keeps at most `cap` entries, letting go of the least recently used one (read or
//! written) when a new one would pass the cap. An entry the caller marks as pinned (a Task
//! still running) is never let go; the map may then hold more than `cap` until it is unpinned.

use std::collections::{BTreeMap, HashMap};

pub struct Lru<V> {
    cap: usize,
    tick: u64,
    entries: HashMap<String, (V, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> Lru<V> {
    /// A map of at most `cap` entries (`0` reads as 1).
    pub fn new(cap: usize) -> Lru<V> {
        Lru { cap: cap.max(1), tick: 0, entries: HashMap::new(), order: BTreeMap::new() }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn touch(&mut self, key: &str) {
        self.tick += 1;
        if let Some((_, at)) = self.entries.get_mut(key) {
            self.order.remove(at);
            *at = self.tick;
            self.order.insert(self.tick, key.to_string());
        }
    }

    /// The entry, counted as used.
    pub fn get(&mut self, key: &str) -> Option<&V> {
        self.touch(key);
        self.entries.get(key).map(|(v, _)| v)
    }

    /// Keep `value` under `key`; answers what was let go (the old value of `key` first, then
    /// the least recently used entries that made room), for the caller to drop where it likes.
    pub fn insert(&mut self, key: String, value: V, pinned: impl Fn(&V) -> bool) -> Vec<V> {
        let mut gone = Vec::new();
        self.tick += 1;
        if let Some((old, at)) = self.entries.insert(key.clone(), (value, self.tick)) {
            self.order.remove(&at);
            gone.push(old);
        }
        self.order.insert(self.tick, key);
        if self.entries.len() > self.cap {
            let over = self.entries.len() - self.cap;
            // The oldest entries that may go, as many as needed (pinned ones are stepped over).
            let victims: Vec<(u64, String)> = self
                .order
                .iter()
                .filter(|(t, k)| **t != self.tick && self.entries.get(*k).is_some_and(|(v, _)| !pinned(v)))
                .take(over)
                .map(|(t, k)| (*t, k.clone()))
                .collect();
            for (t, k) in victims {
                self.order.remove(&t);
                if let Some((v, _)) = self.entries.remove(&k) {
                    gone.push(v);
                }
            }
        }
        gone
    }

    /// Take the entry out.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let (v, at) = self.entries.remove(key)?;
        self.order.remove(&at);
        Some(v)
    }

    /// Every entry, in no order, none counted as used.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, (v, _))| (k, v))
    }

    /// The keys that start with `prefix`.
    pub fn keys_with_prefix(&self, prefix: &str) -> Vec<String> {
        self.entries.keys().filter(|k| k.starts_with(prefix)).cloned().collect()
    }

    /// Every value, for the caller to drop as it likes.
    pub fn drain(&mut self) -> Vec<V> {
        self.order.clear();
        self.entries.drain().map(|(_, (v, _))| v).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first_and_a_pinned_one_never() {
        let mut m = Lru::new(2);
        assert!(m.insert("a".into(), 1, |_| false).is_empty());
        assert!(m.insert("b".into(), 2, |_| false).is_empty());
        assert_eq!(m.get("a"), Some(&1)); // a is now the most recent
        assert_eq!(m.insert("c".into(), 3, |_| false), vec![2]);
        assert_eq!(m.get("b"), None);
        assert_eq!(m.get("a"), Some(&1));
        assert_eq!(m.get("c"), Some(&3));
        // Replacing a key answers its old value and evicts nothing.
        assert_eq!(m.insert("a".into(), 10, |_| false), vec![1]);
        assert_eq!(m.len(), 2);
        // Pinned (odd) values stay: the map grows past its cap rather than drop them.
        let mut p = Lru::new(1);
        p.insert("x".into(), 1, |v| v % 2 == 1);
        assert!(p.insert("y".into(), 3, |v| v % 2 == 1).is_empty());
        assert_eq!(p.len(), 2);
        assert_eq!(p.insert("z".into(), 4, |v| v % 2 == 1), Vec::<i32>::new());
        assert_eq!(p.len(), 3);
        // Once unpinned (replaced by an even value), it may go when room is needed.
        assert_eq!(p.insert("x".into(), 2, |v| v % 2 == 1), vec![1, 4]);
        assert_eq!(p.insert("w".into(), 5, |v| v % 2 == 1), vec![2]);
        assert_eq!(p.len(), 2);
        assert_eq!(p.get("y"), Some(&3));
        assert_eq!(p.get("w"), Some(&5));
    }
}
