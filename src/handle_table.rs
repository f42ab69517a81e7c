//! A slab addressed by stamp-checked numeric handles: the binding's policy
//! and budget tables (`src/binding/handles.rs` says why). It is here, outside
//! the binding, so `cargo test` without the napi feature tests it.
//!
//! A handle is `(stamp << 1 | kind) << INDEX_BITS | index`, an integer below
//! 2^53 (exact as a JS number). Every insert, in every table of every thread,
//! takes the next stamp of one process-wide counter; the slot keeps it, and a
//! handle names the slot only while the slot holds the value stamped with its
//! low `STAMP_BITS` bits. So a released handle never names a later occupant
//! of its slot, and a handle from another thread's table (each thread has its
//! own, filled from the same indices) names nothing here: for either, the
//! slot's stamp would have to come exactly a multiple of 2^31 inserts later.
//! Anything else (a number of the other kind, a never-issued slot, a
//! fraction, a non-number) names nothing and the caller refuses it: a handle
//! is never read as a pointer. Slots are reused and nothing runs out.

use std::sync::atomic::{AtomicU64, Ordering};

const INDEX_BITS: u32 = 21;
/// Live slots per table and thread (2,097,152).
const MAX_SLOTS: usize = 1 << INDEX_BITS;
/// The stamp bits a handle carries: 53 - INDEX_BITS - 1 (the kind bit).
const STAMP_BITS: u32 = 53 - INDEX_BITS - 1;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;

/// The process-wide stamp counter (a u64: it never wraps).
static STAMPS: AtomicU64 = AtomicU64::new(1);

/// Which table a handle names: the low bit above the index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Policy = 0,
    Budget = 1,
}

struct Slot<T> {
    stamp: u64,
    value: Option<T>,
}

/// A slab of `T` addressed by stamp-checked handles.
pub(crate) struct Table<T> {
    kind: Kind,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

/// The fields of a handle number (kind, index, stamp bits), or `None` for anything that is not one.
pub(crate) fn decode(h: f64) -> Option<(Kind, usize, u64)> {
    // An exact non-negative integer below 2^53 (NaN and infinities fail too).
    // (`as` truncates; a fraction does not survive the round trip. No `fract`:
    // it is a libm call on the budget tracker's hot path.)
    if !(0.0..9_007_199_254_740_992.0).contains(&h) || h as u64 as f64 != h {
        return None;
    }
    let h = h as u64;
    let index = (h & (MAX_SLOTS as u64 - 1)) as usize;
    let high = h >> INDEX_BITS;
    let kind = if high & 1 == 0 { Kind::Policy } else { Kind::Budget };
    Some((kind, index, high >> 1))
}

fn encode(kind: Kind, index: usize, stamp: u64) -> f64 {
    ((((stamp & STAMP_MASK) << 1 | kind as u64) << INDEX_BITS) | index as u64) as f64
}

impl<T> Table<T> {
    pub(crate) const fn new(kind: Kind) -> Self {
        Self { kind, slots: Vec::new(), free: Vec::new() }
    }

    /// Stores `value`; its handle, or `None` when every slot is taken.
    pub(crate) fn insert(&mut self, value: T) -> Option<f64> {
        let stamp = STAMPS.fetch_add(1, Ordering::Relaxed);
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = Slot { stamp, value: Some(value) };
                index as usize
            }
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot { stamp, value: Some(value) });
                self.slots.len() - 1
            }
            None => return None,
        };
        Some(encode(self.kind, index, stamp))
    }

    fn slot(&self, h: f64) -> Option<usize> {
        let (kind, index, stamp) = decode(h)?;
        let slot = self.slots.get(index)?;
        (kind == self.kind && slot.stamp & STAMP_MASK == stamp && slot.value.is_some()).then_some(index)
    }

    pub(crate) fn get(&self, h: f64) -> Option<&T> {
        self.slot(h).and_then(|i| self.slots[i].value.as_ref())
    }

    /// Mutable access (the test-hooks addon's budget states).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn get_mut(&mut self, h: f64) -> Option<&mut T> {
        self.slot(h).and_then(|i| self.slots[i].value.as_mut())
    }

    /// Takes the value out; the handle names nothing after (the slot's next value has a new stamp).
    pub(crate) fn remove(&mut self, h: f64) -> Option<T> {
        let i = self.slot(h)?;
        let value = self.slots[i].value.take();
        self.free.push(i as u32);
        value
    }

    #[cfg(test)]
    fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.value.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_name_only_their_own_slot_kind_and_stamp() {
        let mut t = Table::new(Kind::Policy);
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_eq!((t.get(a), t.get(b)), (Some(&"a"), Some(&"b")));
        assert_ne!(a, b);
        // The other kind's number for the same slot and stamp names nothing here.
        let (_, index, stamp) = decode(a).unwrap();
        assert_eq!(t.get(encode(Kind::Budget, index, stamp)), None);
        // Released: the old handle names nothing, even once the slot is reused.
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.get(a), None);
        assert_eq!(t.remove(a), None);
        let c = t.insert("c").unwrap();
        assert_eq!(decode(c).unwrap().1, index, "the freed slot is reused");
        assert_ne!(c, a);
        assert_eq!((t.get(a), t.get(c)), (None, Some(&"c")));
        assert_eq!(t.live(), 2);
    }

    #[test]
    fn another_tables_handles_name_nothing() {
        // Two threads' tables fill the same indices; their handles never cross.
        let (mut mine, mut theirs) = (Table::new(Kind::Policy), Table::new(Kind::Policy));
        let m: Vec<f64> = (0..64).map(|i| mine.insert(i).unwrap()).collect();
        let t: Vec<f64> = (0..64).map(|i| theirs.insert(i + 100).unwrap()).collect();
        for (a, b) in m.iter().zip(&t) {
            assert_eq!(decode(*a).unwrap().1, decode(*b).unwrap().1, "same index");
            assert_eq!(mine.get(*b), None);
            assert_eq!(theirs.get(*a), None);
        }
        assert!(m.iter().all(|h| mine.get(*h).is_some()) && t.iter().all(|h| theirs.get(*h).is_some()));
    }

    #[test]
    fn non_handles_name_nothing() {
        let mut t = Table::new(Kind::Budget);
        let h = t.insert(7u8).unwrap();
        let next_stamp = (1u64 << (INDEX_BITS + 1)) as f64;
        for bad in [
            h + 0.5,
            -h,
            f64::NAN,
            f64::INFINITY,
            2f64.powi(53),
            h + (1u64 << INDEX_BITS) as f64,
            h + 1.0,
            h + next_stamp,
            0.0,
            -0.0,
        ] {
            assert_eq!(t.get(bad), None, "{bad}");
            assert_eq!(t.get_mut(bad), None, "{bad}");
        }
        assert_eq!(t.get(h), Some(&7));
        assert_eq!(t.get_mut(h), Some(&mut 7));
    }

    #[test]
    fn every_handle_is_an_exact_js_number() {
        let h = encode(Kind::Budget, MAX_SLOTS - 1, u64::MAX);
        assert!(h < 2f64.powi(53));
        assert_eq!(decode(h), Some((Kind::Budget, MAX_SLOTS - 1, STAMP_MASK)));
        assert_eq!(decode(encode(Kind::Policy, 0, 1)), Some((Kind::Policy, 0, 1)));
        // A stamp past 2^STAMP_BITS keeps its low bits only.
        assert_eq!(decode(encode(Kind::Policy, 3, STAMP_MASK + 2)), Some((Kind::Policy, 3, 1)));
    }

    #[test]
    fn a_full_table_refuses_and_a_freed_slot_is_taken_again() {
        let mut t = Table::new(Kind::Policy);
        let mut last = 0.0;
        for _ in 0..MAX_SLOTS {
            last = t.insert(()).expect("room up to MAX_SLOTS");
        }
        assert_eq!(decode(last).unwrap().1, MAX_SLOTS - 1);
        assert_eq!(t.insert(()), None, "no index beyond MAX_SLOTS (it would spill into the kind bit)");
        assert_eq!(t.remove(last), Some(()));
        let again = t.insert(()).unwrap();
        assert_eq!(decode(again).unwrap().1, MAX_SLOTS - 1);
        assert_eq!(t.insert(()), None);
    }
}
