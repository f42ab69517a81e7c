//! A map that stays a plain list while it is small.
//!
//! Most compiled policies hold one or two entries per map (one host, one
//! `*.json` pattern in a directory). A hash map's smallest table has four
//! buckets plus control bytes: with one entry, three quarters of it is never
//! used, and a policy pays that per map (issue K: memory per policy). A
//! [`SmallMap`] keeps up to [`FEW`] entries in a list with no spare capacity
//! and looks them up by comparison; past that it is a hash map, so lookups
//! stay O(1) however many entries a manifest brings.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// Entries kept in the list before it becomes a hash map.
pub(crate) const FEW: usize = 8;

/// A map of at most [`FEW`] entries in a list (insertion order, capacity ==
/// length), or a hash map with hasher `S` beyond.
#[derive(Debug, Clone)]
pub(crate) enum SmallMap<K, V, S = std::hash::RandomState> {
    /// Up to [`FEW`] entries, distinct keys.
    Few(Vec<(K, V)>),
    /// More than [`FEW`] entries (boxed: the enum stays the size of a `Vec`,
    /// which is what every map of a small policy costs inline).
    #[allow(clippy::box_collection)]
    Many(Box<HashMap<K, V, S>>),
}

impl<K, V, S> Default for SmallMap<K, V, S> {
    fn default() -> Self {
        SmallMap::Few(Vec::new())
    }
}

impl<K: Eq + Hash, V, S: BuildHasher + Default> SmallMap<K, V, S> {
    /// The value under `key`.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        match self {
            SmallMap::Few(v) => v.iter().find(|(k, _)| k.borrow() == key).map(|(_, v)| v),
            SmallMap::Many(m) => m.get(key),
        }
    }

    /// Whether `key` has a value.
    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.get(key).is_some()
    }

    /// The value under `key`, inserted as `V::default()` when absent.
    pub(crate) fn entry_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        if let SmallMap::Few(list) = self {
            if list.len() >= FEW && !list.iter().any(|(k, _)| *k == key) {
                let map: HashMap<K, V, S> = std::mem::take(list).into_iter().collect();
                *self = SmallMap::Many(Box::new(map));
            }
        }
        match self {
            SmallMap::Few(list) => {
                let i = match list.iter().position(|(k, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        // Exactly one more slot: a small list never carries spare capacity.
                        list.reserve_exact(1);
                        list.push((key, V::default()));
                        list.len() - 1
                    }
                };
                &mut list[i].1
            }
            SmallMap::Many(m) => m.entry(key).or_default(),
        }
    }

    /// Every entry (a list in insertion order; a map in its own order).
    pub(crate) fn iter(&self) -> SmallIter<'_, K, V> {
        match self {
            SmallMap::Few(v) => SmallIter::Few(v.iter()),
            SmallMap::Many(m) => SmallIter::Many(m.iter()),
        }
    }

    /// Calls `f` with every value, mutably.
    pub(crate) fn each_value_mut(&mut self, mut f: impl FnMut(&mut V)) {
        match self {
            SmallMap::Few(v) => v.iter_mut().for_each(|(_, v)| f(v)),
            SmallMap::Many(m) => m.values_mut().for_each(f),
        }
    }

    /// Every value.
    #[cfg(test)]
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// How many entries.
    pub(crate) fn len(&self) -> usize {
        match self {
            SmallMap::Few(v) => v.len(),
            SmallMap::Many(m) => m.len(),
        }
    }

    /// Whether it has no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The iterator of [`SmallMap::iter`].
pub(crate) enum SmallIter<'a, K, V> {
    Few(std::slice::Iter<'a, (K, V)>),
    Many(std::collections::hash_map::Iter<'a, K, V>),
}

impl<'a, K, V> Iterator for SmallIter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            SmallIter::Few(i) => i.next().map(|(k, v)| (k, v)),
            SmallIter::Many(i) => i.next(),
        }
    }
}

impl<'a, K: Eq + Hash, V, S: BuildHasher + Default> IntoIterator for &'a SmallMap<K, V, S> {
    type Item = (&'a K, &'a V);
    type IntoIter = SmallIter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_up_to_few_then_a_map_with_every_entry_kept() {
        let mut m: SmallMap<String, u32> = SmallMap::default();
        assert!(m.is_empty());
        for round in 0..2u32 {
            for i in 0..3 * FEW {
                *m.entry_or_default(format!("k{i}")) += 1 + round;
                let few = matches!(m, SmallMap::Few(_));
                // Distinct keys: a list while at most FEW, a map after.
                assert_eq!(few, m.len() <= FEW, "{i} {round}");
                if let SmallMap::Few(v) = &m {
                    assert_eq!(v.capacity(), v.len(), "no spare capacity");
                }
            }
        }
        assert_eq!(m.len(), 3 * FEW);
        for i in 0..3 * FEW {
            assert_eq!(m.get(format!("k{i}").as_str()), Some(&3), "k{i}");
            assert!(m.contains_key(format!("k{i}").as_str()));
        }
        assert_eq!(m.get("k"), None);
        assert!(!m.contains_key(format!("k{}", 3 * FEW).as_str()));
        assert_eq!(m.iter().count(), 3 * FEW);
        assert_eq!(m.values().sum::<u32>(), 3 * 3 * FEW as u32);
    }

    #[test]
    fn it_is_the_size_of_a_vec() {
        assert_eq!(std::mem::size_of::<SmallMap<String, u8>>(), std::mem::size_of::<Vec<(String, u8)>>());
    }

    #[test]
    fn a_small_map_finds_and_updates_in_place() {
        let mut m: SmallMap<&str, u8> = SmallMap::default();
        *m.entry_or_default("a") |= 1;
        *m.entry_or_default("b") |= 2;
        *m.entry_or_default("a") |= 4;
        assert_eq!(m.len(), 2);
        assert_eq!(m.get("a"), Some(&5));
        assert_eq!(m.get("b"), Some(&2));
        assert_eq!(m.get("c"), None);
        assert_eq!((&m).into_iter().map(|(k, _)| *k).collect::<Vec<_>>(), ["a", "b"]);
    }
}
