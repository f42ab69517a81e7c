'use strict'
// The oracles' seeded generator (mulberry32): one definition, so a seed
// replays the same cases in every oracle. Test code only; it shares nothing
// with the checker.

/** `() => [0, 1)`, from `seed` (0 reads as 1). */
function prng(seed) {
  let s = seed >>> 0 || 1
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

/** `prng` with the helpers the generators use: `int(n)`, `pick(xs)`, `chance(p)`. */
function rng(seed) {
  const next = prng(seed)
  const int = (n) => Math.floor(next() * n)
  return { next, int, pick: (xs) => xs[int(xs.length)], chance: (p) => next() < p }
}

module.exports = { prng, rng }
