//! A slab addressed by generation-checked numeric handles: the binding's
//! policy and budget tables (`src/binding/handles.rs` says why). It is here,
//! outside the binding, so `cargo test` without the napi feature tests it.
//!
//! A handle is `(generation << 1 | kind) << INDEX_BITS | index`, an integer
//! below 2^53 (exact as a JS number). Anything else (a number of the other
//! kind, a released or never-issued slot, a fraction, a non-number) names
//! nothing and the caller refuses it: a handle is never read as a pointer. A
//! slot's generation rises on every release and a slot whose generation is
//! used up is retired, so no handle ever names a later occupant of its slot.

const INDEX_BITS: u32 = 24;
/// Live slots per table and thread (16,777,216).
const MAX_SLOTS: usize = 1 << INDEX_BITS;
/// Generations run 1..GEN_END; 2^(53 - 24 - 1) keeps every handle below 2^53.
const GEN_END: u32 = 1 << (53 - INDEX_BITS - 1);

/// Which table a handle names: the low bit above the index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Policy = 0,
    Budget = 1,
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A slab of `T` addressed by generation-checked handles.
pub(crate) struct Table<T> {
    kind: Kind,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

/// The fields of a handle number, or `None` for anything that is not one.
pub(crate) fn decode(h: f64) -> Option<(Kind, usize, u32)> {
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
    Some((kind, index, (high >> 1) as u32))
}

fn encode(kind: Kind, index: usize, generation: u32) -> f64 {
    ((((generation as u64) << 1 | kind as u64) << INDEX_BITS) | index as u64) as f64
}

impl<T> Table<T> {
    pub(crate) const fn new(kind: Kind) -> Self {
        Self { kind, slots: Vec::new(), free: Vec::new() }
    }

    /// Stores `value`; its handle, or `None` when every slot is taken.
    pub(crate) fn insert(&mut self, value: T) -> Option<f64> {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Some(encode(self.kind, index as usize, slot.generation));
        }
        if self.slots.len() >= MAX_SLOTS {
            return None;
        }
        self.slots.push(Slot { generation: 1, value: Some(value) });
        Some(encode(self.kind, self.slots.len() - 1, 1))
    }

    fn slot(&self, h: f64) -> Option<usize> {
        let (kind, index, generation) = decode(h)?;
        let slot = self.slots.get(index)?;
        (kind == self.kind && slot.generation == generation && slot.value.is_some()).then_some(index)
    }

    pub(crate) fn get(&self, h: f64) -> Option<&T> {
        self.slot(h).and_then(|i| self.slots[i].value.as_ref())
    }

    pub(crate) fn get_mut(&mut self, h: f64) -> Option<&mut T> {
        self.slot(h).and_then(|i| self.slots[i].value.as_mut())
    }

    /// Takes the value out; the handle (and every earlier one of its slot) names nothing after.
    pub(crate) fn remove(&mut self, h: f64) -> Option<T> {
        let i = self.slot(h)?;
        let slot = &mut self.slots[i];
        let value = slot.value.take();
        slot.generation += 1;
        if slot.generation < GEN_END {
            self.free.push(i as u32);
        }
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
    fn handles_name_only_their_own_slot_kind_and_generation() {
        let mut t = Table::new(Kind::Policy);
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_eq!((t.get(a), t.get(b)), (Some(&"a"), Some(&"b")));
        assert_ne!(a, b);
        // The other kind's number for the same slot and generation names nothing here.
        let (_, index, generation) = decode(a).unwrap();
        assert_eq!(t.get(encode(Kind::Budget, index, generation)), None);
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
    fn non_handles_name_nothing() {
        let mut t = Table::new(Kind::Budget);
        let h = t.insert(7u8).unwrap();
        for bad in [h + 0.5, -h, f64::NAN, f64::INFINITY, 2f64.powi(53), h + (1u64 << INDEX_BITS) as f64, h + 1.0, 0.0]
        {
            assert_eq!(t.get(bad), None, "{bad}");
            assert_eq!(t.get_mut(bad), None, "{bad}");
        }
        assert_eq!(t.get(h), Some(&7));
        assert_eq!(t.get_mut(h), Some(&mut 7));
    }

    #[test]
    fn every_handle_is_an_exact_js_number() {
        let h = encode(Kind::Budget, MAX_SLOTS - 1, GEN_END - 1);
        assert!(h < 2f64.powi(53));
        assert_eq!(decode(h), Some((Kind::Budget, MAX_SLOTS - 1, GEN_END - 1)));
        assert_eq!(decode(encode(Kind::Policy, 0, 1)), Some((Kind::Policy, 0, 1)));
    }

    #[test]
    fn a_used_up_slot_is_retired_not_reused() {
        let mut t = Table::new(Kind::Policy);
        let h = t.insert(1).unwrap();
        t.slots[0].generation = GEN_END - 1;
        let last = encode(Kind::Policy, 0, GEN_END - 1);
        assert_eq!(t.get(h), None);
        assert_eq!(t.remove(last), Some(1));
        assert!(t.free.is_empty(), "retired");
        let next = t.insert(2).unwrap();
        assert_eq!(decode(next).unwrap().1, 1, "a new slot, not the retired one");
        assert_eq!(t.get(last), None);
    }
}
