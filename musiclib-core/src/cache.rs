//! A small in-process cache whose entries expire after a fixed time, for lookups every
//! stream request repeats (the caller's account, the track's audio row). Writers in this
//! process invalidate what they change; other replicas see a change within the TTL. Each
//! cache has a name, under which its hits and misses are counted (`crate::metrics`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct TtlCache<K, V> {
    name: &'static str,
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    /// A cache counted as `name` in the metrics.
    pub(crate) fn new(name: &'static str, ttl: Duration, capacity: usize) -> Self {
        TtlCache {
            name,
            ttl,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value of `key` when it was stored less than the TTL ago.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let value = {
            let entries = self.entries.lock().expect("poisoned");
            entries
                .get(key)
                .filter(|(_, stored)| stored.elapsed() < self.ttl)
                .map(|(value, _)| value.clone())
        };
        crate::metrics::cache_lookup(self.name, value.is_some());
        value
    }

    pub(crate) fn insert(&self, key: K, value: V) {
        let mut entries = self.entries.lock().expect("poisoned");
        if entries.len() >= self.capacity {
            let ttl = self.ttl;
            entries.retain(|_, (_, stored)| stored.elapsed() < ttl);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (value, Instant::now()));
    }

    pub(crate) fn remove(&self, key: &K) {
        self.entries.lock().expect("poisoned").remove(key);
    }

    pub(crate) fn clear(&self) {
        self.entries.lock().expect("poisoned").clear();
    }
}

/// A [`TtlCache`] of values read at a version of the data: something cheap to read (a few
/// index lookups) that changes whenever the data does, whichever replica wrote. A value is
/// used only while the version it was read at is still current, so it is never stale.
#[derive(Debug)]
pub(crate) struct VersionedCache<K, Ver, V> {
    inner: TtlCache<K, (Ver, V)>,
}

impl<K: Eq + Hash + Clone, Ver: PartialEq + Clone, V: Clone> VersionedCache<K, Ver, V> {
    /// A cache counted as `name` in the metrics.
    pub(crate) fn new(name: &'static str, ttl: Duration, capacity: usize) -> Self {
        VersionedCache {
            inner: TtlCache::new(name, ttl, capacity),
        }
    }

    /// The value of `key` when it was read at `version`.
    pub(crate) fn get(&self, key: &K, version: &Ver) -> Option<V> {
        self.inner
            .get(key)
            .filter(|(read_at, _)| read_at == version)
            .map(|(_, value)| value)
    }

    /// Keeps `value`, read at `version`.
    pub(crate) fn insert(&self, key: K, version: Ver, value: V) {
        self.inner.insert(key, (version, value));
    }
}

/// Rows kept at one version of the data (the sync clock): a page takes the rows it lists from
/// here and reads only the others. Rows of a newer version replace every kept one, rows of an
/// older version are not kept, and reaching the capacity empties it.
#[derive(Debug)]
pub(crate) struct VersionedRows<K, V> {
    name: &'static str,
    capacity: usize,
    rows: Mutex<(i64, HashMap<K, V>)>,
}

impl<K: Eq + Hash + Clone, V: Clone> VersionedRows<K, V> {
    /// Rows counted as `name` in the metrics, at most `capacity` of them.
    pub(crate) fn new(name: &'static str, capacity: usize) -> Self {
        VersionedRows {
            name,
            capacity,
            rows: Mutex::new((i64::MIN, HashMap::new())),
        }
    }

    /// The rows of `keys` kept at `version`.
    pub(crate) fn get_many<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k K>,
        version: i64,
    ) -> HashMap<K, V>
    where
        K: 'k,
    {
        let mut found = HashMap::new();
        let mut misses = 0;
        {
            let rows = self.rows.lock().expect("poisoned");
            for key in keys {
                match rows.1.get(key).filter(|_| rows.0 == version) {
                    Some(row) => {
                        found.insert(key.clone(), row.clone());
                    }
                    None => misses += 1,
                }
            }
        }
        crate::metrics::cache_lookups(self.name, found.len() as u64, misses);
        found
    }

    /// Keeps `rows`, read at `version`.
    pub(crate) fn insert_many(&self, version: i64, rows: impl IntoIterator<Item = (K, V)>) {
        let mut kept = self.rows.lock().expect("poisoned");
        if version < kept.0 {
            return;
        }
        if version > kept.0 {
            *kept = (version, HashMap::new());
        }
        for (key, row) in rows {
            if kept.1.len() >= self.capacity {
                kept.1.clear();
            }
            kept.1.insert(key, row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_versioned_value_is_used_only_at_its_version() {
        let cache = VersionedCache::new("test", Duration::from_secs(60), 4);
        cache.insert("a", 1, "one");
        assert_eq!(cache.get(&"a", &1), Some("one"));
        assert_eq!(cache.get(&"a", &2), None);
        cache.insert("a", 2, "two");
        assert_eq!(cache.get(&"a", &2), Some("two"));
    }

    #[test]
    fn rows_are_used_only_at_their_version() {
        let rows = VersionedRows::new("test", 3);
        rows.insert_many(5, [("a", 1), ("b", 2)]);
        let found = rows.get_many(&["a", "b", "c"], 5);
        assert_eq!(found, HashMap::from([("a", 1), ("b", 2)]));
        assert!(rows.get_many(&["a"], 6).is_empty());
        // Older rows are not kept; newer ones replace the rest.
        rows.insert_many(4, [("c", 3)]);
        assert!(rows.get_many(&["c"], 4).is_empty());
        rows.insert_many(6, [("c", 3)]);
        assert_eq!(rows.get_many(&["a", "c"], 6), HashMap::from([("c", 3)]));
        // At the capacity, what was kept goes.
        rows.insert_many(6, [("d", 4), ("e", 5), ("f", 6)]);
        assert!(rows.rows.lock().unwrap().1.len() <= 3);
        assert_eq!(rows.get_many(&["f"], 6), HashMap::from([("f", 6)]));
    }

    #[test]
    fn entries_expire_and_the_size_is_bounded() {
        // An hour: nothing expires by itself while the test runs, however slowly.
        let mut cache = TtlCache::new("test", Duration::from_secs(3600), 2);
        cache.insert("a", 1);
        assert_eq!(cache.get(&"a"), Some(1));
        cache.remove(&"a");
        assert_eq!(cache.get(&"a"), None);
        cache.insert("a", 1);
        cache.insert("b", 2);
        cache.insert("c", 3);
        assert!(cache.entries.lock().unwrap().len() <= 2);
        assert_eq!(cache.get(&"c"), Some(3));
        // Its TTL passes (as if the hour had gone by): it expires.
        cache.ttl = Duration::ZERO;
        assert_eq!(cache.get(&"c"), None);
    }
}

/// One async lock per key, so concurrent work on one thing in this process runs once: the
/// first caller does it, the others wait and then find it done. A key is forgotten when
/// nobody holds or waits on its lock.
#[derive(Debug)]
pub(crate) struct KeyedLocks<K> {
    locks: Mutex<HashMap<K, std::sync::Arc<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for KeyedLocks<K> {
    fn default() -> Self {
        KeyedLocks {
            locks: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> KeyedLocks<K> {
    /// Runs `work` holding `key`'s lock.
    pub(crate) async fn run<T>(&self, key: &K, work: impl std::future::Future<Output = T>) -> T {
        let lock = {
            let mut locks = self.locks.lock().expect("poisoned");
            locks.entry(key.clone()).or_default().clone()
        };
        let result = {
            let _held = lock.lock().await;
            work.await
        };
        let mut locks = self.locks.lock().expect("poisoned");
        if std::sync::Arc::strong_count(&lock) == 2 {
            // Only the map and this caller have it: nobody else is waiting.
            locks.remove(key);
        }
        result
    }
}
