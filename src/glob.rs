//! The fs glob engine: one parser for validation and matching, and an index
//! that keeps a check flat in the number of grants.
//!
//! A glob is parsed once into tokens, with `{a,b}` groups as a tree of
//! alternatives. Brace alternatives are alternatives, never text: variants
//! are expanded over tokens, so a `*` from an alternative beside a `*` outside
//! is two stars in one segment, which is one star (`/d/{*,x}*` is one segment
//! wide). Only a `**` written as a whole segment in the glob text (between
//! separators, outside any group: `/a/**/b`) is recursive; any other `**`,
//! including `{**,x}` and `{a/**,b}`, is rejected (the fail-safe reading of
//! SPEC §2: a manifest never gets recursion it did not spell out).
//!
//! Each variant is split into its literal directory prefix `L` (the segments
//! before the first wildcard) and the rest `R`. Grants are filed under `L` in
//! one hash map, by shape: `R` empty (an exact path), `R = **` (everything
//! below `L`), `R` one segment pattern (a name in directory `L`, e.g.
//! `*.json`), or anything else (matched segment by segment, filed under its
//! last segment when that is a literal name). A check looks up the path and
//! each of its ancestors: O(depth) hash lookups, whatever the grant count.
//! Identical variants are stored once.
//!
//! win32 matching compares names as NTFS does (see [`crate::ntfs_upcase`]):
//! literals are upper-cased per character with the NTFS table, class ranges
//! keep their bounds as written and match a character when any character NTFS
//! treats as equal to it lies in the range. A path segment shaped like an 8.3
//! short name (`NAME~1.EXT`, see [`is_short_name_shape`]) can alias any long
//! name, so on win32 it is matched only by a literal glob segment: never by a
//! wildcard, a class or `**`.
//!
//! Matching never backtracks exponentially: a segment pattern is matched by
//! the two-pointer wildcard algorithm (O(pattern × name)), segments by a
//! position-set walk (O(pattern segments × path segments)).

use std::collections::HashMap;

use crate::small_map::SmallMap;

/// The maps a check looks up by path text (directory prefixes, last names):
/// a fixed fast hash. Their keys come from the manifest (trusted); a path a
/// plugin chooses only looks up, which costs at most the probe length of a
/// table the manifest built, so a seeded hash buys no safety here.
type PathMap<V> = HashMap<PathKey, V, rustc_hash::FxBuildHasher>;

/// A [`PathMap`] key: up to [`PathKey::INLINE`] bytes are kept in the map's
/// own bucket, so the lookup that finds a directory prefix does not also
/// read a separate heap block for its text (with checks spread over
/// thousands of policies that block is a cache miss: issue K). Longer keys
/// are boxed. Hash, equality and lookups are those of the text's bytes
/// (`Borrow<[u8]>`: look up with `path.as_bytes()`).
#[derive(Clone)]
enum PathKey {
    Inline { len: u8, bytes: [u8; PathKey::INLINE] },
    Boxed(Box<str>),
}

impl PathKey {
    /// 30 bytes: the key is 32 bytes with its length and tag (a `String` is 24).
    const INLINE: usize = 30;

    fn as_bytes(&self) -> &[u8] {
        match self {
            PathKey::Inline { len, bytes } => &bytes[..*len as usize],
            PathKey::Boxed(s) => s.as_bytes(),
        }
    }
}

impl From<String> for PathKey {
    fn from(s: String) -> Self {
        if s.len() <= Self::INLINE {
            let mut bytes = [0u8; Self::INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            PathKey::Inline { len: s.len() as u8, bytes }
        } else {
            PathKey::Boxed(s.into_boxed_str())
        }
    }
}

impl std::borrow::Borrow<[u8]> for PathKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for PathKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for PathKey {}

impl std::hash::Hash for PathKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // As `[u8]` hashes, so a lookup by `&[u8]` finds it (the `Borrow` contract).
        self.as_bytes().hash(h)
    }
}

impl std::fmt::Debug for PathKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&String::from_utf8_lossy(self.as_bytes()), f)
    }
}

use crate::ntfs_upcase;
use crate::posix_fold;

/// Most brace-expanded variants one glob may produce.
pub const MAX_BRACE_VARIANTS: usize = 256;

/// Most pattern-against-name steps (characters compared or scanned) one
/// check may spend on wildcard segments. Legitimate manifests stay far below
/// it (a check costs about the name length per wildcard grant it tries); a
/// hostile one (thousands of `*??…?aaaa…b*` grants in one directory) would
/// otherwise cost seconds per check. Past it the remaining wildcard grants
/// do not match: the check fails closed, in a few milliseconds at most.
pub const MAX_MATCH_STEPS: usize = 4_000_000;

/// Steps one segment pattern may spend on one name, per character of the
/// two, besides the length of its longest run holding `?` or a class (counted
/// up to [`MAX_FREE_WILD_RUN`]). Literal runs are found in linear time, so only
/// a longer wildcard run slid across a periodic name can need more; it then
/// does not match (fail closed) and cannot starve the other grants of the
/// check's budget.
pub const MATCH_STEPS_PER_CHAR: usize = 8;

/// Wildcard runs up to this many characters are always matched in full.
pub const MAX_FREE_WILD_RUN: usize = 64;

/// The match steps one check may still spend (see [`MAX_MATCH_STEPS`]).
/// It also remembers whether it ever ran out, so a deny index can treat an
/// unfinished match as a match (fail closed).
#[derive(Debug)]
pub struct Budget(std::cell::Cell<usize>, std::cell::Cell<bool>);

impl Budget {
    pub fn new(steps: usize) -> Self {
        Self(std::cell::Cell::new(steps), std::cell::Cell::new(false))
    }

    fn left(&self) -> usize {
        self.0.get()
    }

    /// Spends `n` steps; false (and empty) when fewer are left.
    fn spend(&self, n: usize) -> bool {
        let left = self.0.get();
        self.0.set(left.saturating_sub(n));
        if left < n {
            self.1.set(true);
        }
        left >= n
    }

    /// Whether some match gave up because this budget (or a pattern's own) ran out.
    pub fn ran_out(&self) -> bool {
        self.1.get()
    }
}

#[cfg(test)]
thread_local! {
    /// Pattern match attempts on this thread (segment patterns and segment walks), for tests that count work.
    pub(crate) static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Match steps spent from check budgets on this thread.
    pub(crate) static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline]
fn count_work(_n: usize) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + _n as u64));
}

/// One element of a segment pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Atom {
    /// A literal character (NTFS upper case on win32).
    Char(char),
    /// `?`: one character.
    Any,
    /// `*`: any run of characters within the segment.
    Star,
    /// `[...]`: inclusive ranges as written, maybe negated; `fold`: the characters that fold alike match too.
    Class { negated: bool, fold: ClassFold, ranges: Vec<(char, char)> },
}

impl Atom {
    /// Whether a single-character atom matches `c` (already upper-cased on win32).
    fn matches_char(&self, c: char) -> bool {
        match self {
            Atom::Char(x) => *x == c,
            Atom::Any => true,
            Atom::Star => false,
            Atom::Class { negated, fold, ranges } => {
                let inside = |d: char| ranges.iter().any(|&(a, b)| a <= d && d <= b);
                match fold {
                    ClassFold::Exact => inside(c) != *negated,
                    ClassFold::Ntfs => ntfs_upcase::any_with_upcase(c, inside) != *negated,
                    ClassFold::Posix => posix_fold::class_hit(c, |d| inside(d) != *negated),
                }
            }
        }
    }
}

/// How a class compares a (folded) path character with its ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ClassFold {
    /// As written.
    Exact,
    /// win32: any character with the same NTFS upper case in a range.
    Ntfs,
    /// A posix deny glob ([`crate::posix_fold`]): the class as written
    /// matches some character with this fold.
    Posix,
}

/// A run of single-character atoms between two `*` (or an end of the pattern).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Chunk {
    /// The run's atoms; empty when `literal` holds the run (a policy keeps
    /// one copy of it: issue K, memory per policy).
    atoms: Box<[Atom]>,
    /// The run as text when every atom is a literal character.
    literal: Option<Box<str>>,
    /// The run's length in atoms (each matches one character).
    len: usize,
}

impl Chunk {
    fn new(atoms: &[Atom]) -> Self {
        let literal =
            atoms.iter().map(|a| if let Atom::Char(c) = a { Some(*c) } else { None }).collect::<Option<String>>();
        let len = atoms.len();
        match literal {
            Some(l) => Self { atoms: Box::default(), literal: Some(l.into_boxed_str()), len },
            None => Self { atoms: atoms.into(), literal: None, len },
        }
    }

    /// The byte length of the match of this run at the start of `s`, if any.
    fn at_start(&self, s: &str, budget: &Budget) -> Option<usize> {
        if let Some(lit) = self.literal.as_deref() {
            // The first byte before a library compare: most names differ there.
            let ok = match lit.as_bytes().first() {
                None => true,
                Some(b) => s.as_bytes().first() == Some(b) && budget.spend(lit.len()) && s.starts_with(lit),
            };
            return ok.then_some(lit.len());
        }
        let mut end = 0;
        let mut chars = s.chars();
        for a in &self.atoms {
            let c = chars.next()?;
            if !budget.spend(1) || !a.matches_char(c) {
                return None;
            }
            end += c.len_utf8();
        }
        Some(end)
    }

    /// The end (in bytes) of the leftmost match of this run in `s`. A literal
    /// run is found by `str::find` (linear in `s` and the run).
    fn find_end(&self, s: &str, budget: &Budget) -> Option<usize> {
        if let Some(lit) = self.literal.as_deref() {
            // Two-way search: linear in the part of `s` it scans.
            let found = s.find(lit);
            let scanned = found.map_or(s.len(), |i| i + lit.len());
            return if budget.spend(scanned + lit.len()) { found.map(|i| i + lit.len()) } else { None };
        }
        for (i, _) in s.char_indices() {
            if let Some(n) = self.at_start(&s[i..], budget) {
                return Some(i + n);
            }
            if !budget.spend(1) {
                return None;
            }
        }
        None
    }
}

/// `name.starts_with(c)`, an ASCII `c` compared as one byte (the library
/// call encodes `c` and compares slices through `memcmp`: most of a
/// rejected deny pattern's cost).
#[inline]
fn starts_with_char(name: &str, c: char) -> bool {
    if c.is_ascii() {
        name.as_bytes().first() == Some(&(c as u8))
    } else {
        name.starts_with(c)
    }
}

/// `name.ends_with(c)`, an ASCII `c` compared as one byte (see [`starts_with_char`]).
#[inline]
fn ends_with_char(name: &str, c: char) -> bool {
    if c.is_ascii() {
        name.as_bytes().last() == Some(&(c as u8))
    } else {
        name.ends_with(c)
    }
}

/// A pattern for one path segment (no separators).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SegPattern {
    atoms: Vec<Atom>,
    /// The atoms split at each `*`: one more chunk than stars.
    chunks: Box<[Chunk]>,
    /// Steps per name character this pattern may spend (see [`MATCH_STEPS_PER_CHAR`]).
    rate: usize,
    /// The pattern is `*`: every name matches.
    any: bool,
    /// Quick rejects without touching the chunks: the fewest bytes a
    /// matching name has (one per non-star atom), and its first and last
    /// characters when the pattern fixes them.
    min_bytes: usize,
    head: Option<char>,
    tail: Option<char>,
}

impl SegPattern {
    /// Consecutive stars are one star.
    fn new(mut atoms: Vec<Atom>) -> Self {
        atoms.dedup_by(|b, a| *a == Atom::Star && *b == Atom::Star);
        atoms.shrink_to_fit();
        let chunks: Box<[Chunk]> = atoms.split(|a| *a == Atom::Star).map(Chunk::new).collect();
        let wild_run = chunks.iter().filter(|c| c.literal.is_none()).map(|c| c.len).max().unwrap_or(0);
        let rate = MATCH_STEPS_PER_CHAR + 1 + wild_run.min(MAX_FREE_WILD_RUN);
        let min_bytes = atoms.iter().filter(|a| **a != Atom::Star).count();
        let fixed = |a: Option<&Atom>| if let Some(Atom::Char(c)) = a { Some(*c) } else { None };
        let (head, tail) = (fixed(atoms.first()), fixed(atoms.last()));
        let any = atoms == [Atom::Star];
        Self { atoms, chunks, rate, min_bytes, head, tail, any }
    }

    pub(crate) fn is_literal(&self) -> bool {
        self.atoms.iter().all(|a| matches!(a, Atom::Char(_)))
    }

    /// Its atoms, consecutive stars merged (read by [`crate::diff`]'s automata).
    pub(crate) fn atoms(&self) -> &[Atom] {
        &self.atoms
    }

    pub(crate) fn literal(&self) -> String {
        self.atoms.iter().filter_map(|a| if let Atom::Char(c) = a { Some(*c) } else { None }).collect()
    }

    /// Matches one name: the first run anchored at the start, the last at the
    /// end, the runs between at their leftmost places in order (each run has a
    /// fixed length, so leftmost is never worse). Literal runs are found by
    /// substring search, so `*aaaa…b` against `aaaa…` stays linear.
    /// Past its own linear budget, or the check's `budget`, the answer is
    /// "no match" (fail closed).
    pub fn matches(&self, name: &str, budget: &Budget) -> bool {
        count_work(1);
        if name.len() < self.min_bytes
            || self.head.is_some_and(|c| !starts_with_char(name, c))
            || self.tail.is_some_and(|c| !ends_with_char(name, c))
        {
            return false;
        }
        if self.any {
            return true;
        }
        let own = (self.rate * (name.len() + self.atoms.len()) + 64).min(budget.left());
        let local = Budget::new(own);
        let hit = local.spend(1) && self.matches_within(name, &local);
        if !hit && local.ran_out() {
            budget.1.set(true);
        }
        let spent = own - local.left();
        #[cfg(test)]
        STEPS.with(|w| w.set(w.get() + spent as u64));
        budget.spend(spent);
        hit
    }

    fn matches_within(&self, name: &str, budget: &Budget) -> bool {
        let (first, rest) = self.chunks.split_first().expect("at least one chunk");
        let Some((last, middle)) = rest.split_last() else {
            return first.at_start(name, budget) == Some(name.len());
        };
        let Some(mut pos) = first.at_start(name, budget) else { return false };
        let tail_start = if last.len == 0 {
            name.len()
        } else {
            if !budget.spend(last.len) {
                return false;
            }
            match name.char_indices().rev().nth(last.len - 1) {
                Some((i, _)) => i,
                None => return false,
            }
        };
        if tail_start < pos || last.at_start(&name[tail_start..], budget) != Some(name.len() - tail_start) {
            return false;
        }
        for c in middle {
            match c.find_end(&name[pos..tail_start], budget) {
                Some(end) => pos += end,
                None => return false,
            }
        }
        true
    }
}

/// A glob segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    /// `**`: any number of segments (at least one when it is last).
    Rec,
    Pat(SegPattern),
}

/// Why a glob does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobError(pub &'static str);

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// A token of a glob body: brace groups stay a tree until expansion.
#[derive(Debug, Clone)]
enum Tok {
    Atom(Atom),
    Sep,
    /// A `**` written as a whole segment.
    Rec,
    Group(Vec<Vec<Tok>>),
}

struct Parser {
    chars: Vec<char>,
    i: usize,
    escapes: bool,
    fold: bool,
}

impl Parser {
    fn lit(&self, c: char) -> Atom {
        Atom::Char(if self.fold { ntfs_upcase::upcase(c) } else { c })
    }

    /// A sequence up to the end, or (inside a group) up to its `,` or `}`.
    fn seq(&mut self, depth: usize) -> Result<Vec<Tok>, GlobError> {
        // The whole body is one token per character at most.
        let mut out = if depth == 0 { Vec::with_capacity(self.chars.len()) } else { Vec::new() };
        while let Some(&c) = self.chars.get(self.i) {
            match c {
                ',' | '}' if depth > 0 => return Ok(out),
                '}' => return Err(GlobError("an unmatched '}' (write '[}]' for a literal one)")),
                '\\' if self.escapes => {
                    match self.chars.get(self.i + 1) {
                        None => return Err(GlobError("a trailing '\\' escapes nothing")),
                        Some('/') => return Err(GlobError("a '\\' before a separator (a name never holds '/')")),
                        Some(&n) => out.push(Tok::Atom(self.lit(n))),
                    }
                    self.i += 2;
                }
                '[' => out.push(Tok::Atom(self.class()?)),
                '{' => {
                    self.i += 1;
                    let mut alts = Vec::new();
                    loop {
                        let alt = self.seq(depth + 1)?;
                        if alt.is_empty() {
                            return Err(GlobError("an empty '{...}' alternative"));
                        }
                        alts.push(alt);
                        match self.chars.get(self.i) {
                            Some(',') => self.i += 1,
                            Some('}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(GlobError("an unclosed '{' (write '[{]' for a literal one)")),
                        }
                    }
                    out.push(Tok::Group(alts));
                }
                '/' => {
                    out.push(Tok::Sep);
                    self.i += 1;
                }
                '*' if self.chars.get(self.i + 1) == Some(&'*') => {
                    let after = self.chars.get(self.i + 2);
                    let whole = depth == 0
                        && self.i > 0
                        && self.chars[self.i - 1] == '/'
                        && (after.is_none() || after == Some(&'/'));
                    if !whole {
                        return Err(GlobError(
                            "`**` only as a whole segment written between separators, outside braces (`/a/**/b`)",
                        ));
                    }
                    out.push(Tok::Rec);
                    self.i += 2;
                }
                '*' => {
                    out.push(Tok::Atom(Atom::Star));
                    self.i += 1;
                }
                '?' => {
                    out.push(Tok::Atom(Atom::Any));
                    self.i += 1;
                }
                c => {
                    out.push(Tok::Atom(self.lit(c)));
                    self.i += 1;
                }
            }
        }
        Ok(out)
    }

    /// `[...]` at `self.i`. A `]` right after `[` or `[!` is literal.
    fn class(&mut self) -> Result<Atom, GlobError> {
        const UNCLOSED: GlobError = GlobError("an unclosed '[' (write '[[]' for a literal one)");
        let chars = &self.chars;
        let mut j = self.i + 1;
        let negated = matches!(chars.get(j), Some('!' | '^'));
        if negated {
            j += 1;
        }
        let escapes = self.escapes;
        // One class character at `k`: (char, width), escapes resolved.
        let item = |k: usize| -> Result<(char, usize), GlobError> {
            match chars.get(k) {
                None => Err(UNCLOSED),
                Some('\\') if escapes => chars.get(k + 1).map(|&e| (e, 2)).ok_or(UNCLOSED),
                Some(&x) => Ok((x, 1)),
            }
        };
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            if chars.get(j) == Some(&']') && !first {
                break;
            }
            first = false;
            let (x, w) = item(j)?;
            j += w;
            let (lo, hi) = if chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|&y| y != ']') {
                let (y, w2) = item(j + 1)?;
                j += 1 + w2;
                if y < x {
                    return Err(GlobError("a class range out of order"));
                }
                (x, y)
            } else {
                (x, x)
            };
            if (lo..=hi).contains(&'/') {
                return Err(GlobError("a class never holds a separator"));
            }
            ranges.push((lo, hi));
        }
        self.i = j + 1;
        Ok(Atom::Class { negated, fold: if self.fold { ClassFold::Ntfs } else { ClassFold::Exact }, ranges })
    }
}

/// How many variants a token sequence expands to (saturating).
fn variant_count(seq: &[Tok]) -> usize {
    seq.iter().fold(1usize, |n, t| match t {
        Tok::Group(alts) => n.saturating_mul(alts.iter().fold(0usize, |s, a| s.saturating_add(variant_count(a)))),
        _ => n,
    })
}

/// Flat tokens of one variant: an `Atom`, `Sep` or `Rec` each.
fn expand(seq: &[Tok], out: &mut Vec<Vec<Tok>>) {
    let mut cur: Vec<Vec<Tok>> = vec![Vec::new()];
    for t in seq {
        match t {
            Tok::Group(alts) => {
                let mut options = Vec::new();
                for a in alts {
                    expand(a, &mut options);
                }
                let mut next = Vec::with_capacity(cur.len() * options.len());
                for head in &cur {
                    for o in &options {
                        let mut v = head.clone();
                        v.extend(o.iter().cloned());
                        next.push(v);
                    }
                }
                cur = next;
            }
            t => cur.iter_mut().for_each(|v| v.push(t.clone())),
        }
    }
    out.extend(cur);
}

/// Whether a win32 path segment is shaped like an 8.3 short name, read
/// generously (fail-safe): the part before the first `.` has at most 8
/// characters and holds a `~` followed by an ASCII digit, and the part after
/// it has at most 3 characters. Windows generates `PROGRA~1`, `SECRET~1.TXT`,
/// `AB12~1.TXT`; any such name can alias a long name in the same directory.
pub fn is_short_name_shape(segment: &str) -> bool {
    let (base, ext) = match segment.find('.') {
        Some(i) => (&segment[..i], &segment[i + 1..]),
        None => (segment, ""),
    };
    base.chars().count() <= 8
        && ext.chars().count() <= 3
        && base.as_bytes().windows(2).any(|w| w[0] == b'~' && w[1].is_ascii_digit())
}

/// Upper-cases a whole string with the NTFS table (win32 matching).
pub fn fold_str(s: &str) -> String {
    s.chars().map(ntfs_upcase::upcase).collect()
}

/// A posix deny variant under the fold of [`crate::posix_fold`]: its
/// literal runs folded, its classes matching what folds alike. Match it
/// against `posix_fold::fold(path)`.
pub fn fold_posix(g: &ParsedGlob) -> ParsedGlob {
    fold_posix_by(g, posix_fold::fold)
}

/// A posix deny variant under another spelling of the fold (one of
/// [`posix_fold::OTHER_FORMS`]: the one-character fold keeps `ß` where
/// [`fold_posix`] writes `ss`, the decomposed ones write `é` as
/// `e\u{301}`): match it against `fold(path)`, where a `?` or a class stands
/// on the same characters it stood on in that spelling.
pub fn fold_posix_by(g: &ParsedGlob, fold: fn(&str) -> String) -> ParsedGlob {
    let rest = g
        .rest
        .iter()
        .map(|s| match s {
            Seg::Rec => Seg::Rec,
            Seg::Pat(p) => {
                let mut atoms = Vec::with_capacity(p.atoms.len());
                let mut run = String::new();
                let flush = |run: &mut String, atoms: &mut Vec<Atom>| {
                    atoms.extend(fold(run).chars().map(Atom::Char));
                    run.clear();
                };
                for a in &p.atoms {
                    match a {
                        Atom::Char(c) => run.push(*c),
                        Atom::Class { negated, ranges, .. } => {
                            flush(&mut run, &mut atoms);
                            atoms.push(Atom::Class {
                                negated: *negated,
                                fold: ClassFold::Posix,
                                ranges: ranges.clone(),
                            });
                        }
                        other => {
                            flush(&mut run, &mut atoms);
                            atoms.push(other.clone());
                        }
                    }
                }
                flush(&mut run, &mut atoms);
                Seg::Pat(SegPattern::new(atoms))
            }
        })
        .collect();
    ParsedGlob { prefix: fold(&g.prefix), rest }
}

/// The variants a `deny.fs` variant stands for (SPEC §10, a deny is never
/// narrower than it reads): itself and, when it ends in `**`, the
/// directory that `**` hangs from (whatever the segments before it match),
/// so `/srv/app/secrets/**` also denies `/srv/app/secrets` itself (its
/// rename, removal or replacement by a symlink would expose the contents).
pub fn deny_variants(g: ParsedGlob) -> Vec<ParsedGlob> {
    let mut out = vec![g];
    while let Some(Seg::Rec) = out.last().and_then(|g| g.rest.last()) {
        let mut d = out.last().expect("non-empty").clone();
        d.rest.pop();
        out.push(d);
    }
    out
}

/// A parsed, brace-free glob: its literal directory prefix and the rest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParsedGlob {
    /// Literal prefix without a trailing `/` (`""` for the posix root, `C:` for a win32 drive root).
    pub prefix: String,
    pub rest: Vec<Seg>,
}

impl ParsedGlob {
    /// Whether every literal character (its prefix and its segments'
    /// characters) is ASCII: every spelling of [`posix_fold::OTHER_FORMS`]
    /// then writes its literal text as [`fold_posix`] does.
    pub fn literal_text_is_ascii(&self) -> bool {
        self.prefix.is_ascii()
            && self.rest.iter().all(|s| match s {
                Seg::Rec => true,
                Seg::Pat(p) => p.atoms.iter().all(|a| !matches!(a, Atom::Char(c) if !c.is_ascii())),
            })
    }

    /// Its compiled size in elements: one per prefix byte, segment, atom and class range.
    pub fn size(&self) -> usize {
        self.prefix.len()
            + self
                .rest
                .iter()
                .map(|s| match s {
                    Seg::Rec => 1,
                    Seg::Pat(p) => {
                        1 + p
                            .atoms
                            .iter()
                            .map(|a| if let Atom::Class { ranges, .. } = a { 1 + ranges.len() } else { 1 })
                            .sum::<usize>()
                    }
                })
                .sum::<usize>()
    }
}

/// What a `\` in a glob is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backslash {
    /// posix: `\` makes the next character literal (`\*` is a star in a name).
    Escape,
    /// win32: an ordinary character (separators were normalised to `/` before parsing).
    Literal,
}

/// How glob literals and path names compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// posix: character for character.
    Exact,
    /// win32: as NTFS compares names, upper-cased with its table ([`crate::ntfs_upcase`]),
    /// and a name shaped like an 8.3 short name matched only by a literal segment.
    Ntfs,
}

/// The dialect a glob is parsed in: one per [`crate::Platform`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syntax {
    /// What a `\` is.
    pub backslash: Backslash,
    /// How literals compare.
    pub case: Case,
}

impl Syntax {
    /// posix globs: `\` escapes, names compare exactly.
    pub const POSIX: Syntax = Syntax { backslash: Backslash::Escape, case: Case::Exact };
    /// win32 globs: `\` is literal, names compare as NTFS does.
    pub const WIN32: Syntax = Syntax { backslash: Backslash::Literal, case: Case::Ntfs };
}

/// Parses a normalised glob (`/`-separated; win32 globs start `X:`) into its
/// variants (the index stores identical ones once), in the dialect `syntax`.
pub fn parse(glob: &str, syntax: Syntax) -> Result<Vec<ParsedGlob>, GlobError> {
    let escapes = syntax.backslash == Backslash::Escape;
    let fold = syntax.case == Case::Ntfs;
    let Some(slash) = glob.find('/') else { return Err(GlobError("an absolute glob")) };
    let (root, body) = glob.split_at(slash);
    if root.contains(['{', '}', '[', '*', '?', ',']) || (escapes && root.contains('\\')) {
        return Err(GlobError("an absolute glob"));
    }
    // Sized once (`chars()` promises only a quarter of the bytes as characters).
    let mut chars = Vec::with_capacity(body.len());
    chars.extend(body.chars());
    let mut parser = Parser { chars, i: 0, escapes, fold };
    let seq = parser.seq(0)?;
    if variant_count(&seq) > MAX_BRACE_VARIANTS {
        return Err(GlobError("brace expansion past 256 variants"));
    }
    let mut flat = Vec::new();
    if seq.iter().any(|t| matches!(t, Tok::Group(_))) {
        expand(&seq, &mut flat);
    } else {
        // No braces: the sequence is its one variant (no copy).
        flat.push(seq);
    }
    let root = if fold { fold_str(root) } else { root.to_owned() };
    let mut out: Vec<ParsedGlob> = Vec::with_capacity(flat.len());
    for v in flat {
        let mut prefix = String::with_capacity(root.len() + v.len());
        prefix.push_str(&root);
        let mut rest = Vec::new();
        // `v` starts with the body's leading separator.
        let mut segments = v.split(|t| matches!(t, Tok::Sep)).skip(1).peekable();
        if body == "/" {
            segments.next();
        }
        for s in segments {
            let seg = match s {
                [] => return Err(GlobError("no empty segments (a '{...}' alternative left '//')")),
                [Tok::Rec] => Seg::Rec,
                // A literal segment while the prefix is still literal joins
                // it as text (no pattern is built only to be read back).
                _ if rest.is_empty() && s.iter().all(|t| matches!(t, Tok::Atom(Atom::Char(_)))) => {
                    let at = prefix.len();
                    prefix.push('/');
                    prefix.extend(s.iter().map(|t| match t {
                        Tok::Atom(Atom::Char(c)) => *c,
                        _ => unreachable!("checked: every token is a character"),
                    }));
                    if matches!(&prefix[at + 1..], "." | "..") {
                        return Err(GlobError("no '.' or '..' segments"));
                    }
                    continue;
                }
                _ => {
                    let mut atoms: Vec<Atom> = Vec::with_capacity(s.len());
                    for t in s {
                        match t {
                            Tok::Atom(a) => atoms.push(a.clone()),
                            _ => return Err(GlobError("`**` only as a whole segment")),
                        }
                    }
                    let p = SegPattern::new(atoms);
                    if p.is_literal() && matches!(p.literal().as_str(), "." | "..") {
                        return Err(GlobError("no '.' or '..' segments"));
                    }
                    Seg::Pat(p)
                }
            };
            match (&seg, rest.is_empty()) {
                (Seg::Pat(p), true) if p.is_literal() => {
                    prefix.push('/');
                    prefix.push_str(&p.literal());
                }
                _ => rest.push(seg),
            }
        }
        out.push(ParsedGlob { prefix, rest });
    }
    Ok(out)
}

/// Matches segment patterns against path segments: a position-set walk.
/// `short[j]`: path segment `j` is an 8.3-shaped name, which only a literal
/// pattern segment matches (win32; empty elsewhere).
fn segs_match(pattern: &[Seg], path: &[&str], short: &[bool], budget: &Budget) -> bool {
    count_work(1);
    let is_short = |j: usize| short.get(j).copied().unwrap_or(false);
    // `**/name-pattern` (the common "any depth below" shape): the last
    // segment decides, no position sets.
    if let ([Seg::Rec, Seg::Pat(p)], true) = (pattern, short.is_empty()) {
        return match path.last() {
            Some(name) => p.matches(name, budget),
            None => false,
        };
    }
    if !pattern.contains(&Seg::Rec) {
        // One segment each: no position sets, no allocation.
        return pattern.len() == path.len()
            && pattern.iter().zip(path).enumerate().all(|(j, (seg, name))| match seg {
                Seg::Pat(p) => (p.is_literal() || !is_short(j)) && p.matches(name, budget),
                Seg::Rec => false,
            });
    }
    walk(
        pattern.iter(),
        path.len(),
        budget,
        |j| !is_short(j),
        |p, j| (p.is_literal() || !is_short(j)) && p.matches(path[j], budget),
    )
}

/// The position-set walk of segment patterns over `n` path segments:
/// `cur[j]` is "the pattern so far matched exactly the first `j` path
/// segments". `**` matches zero or more segments (one or more when last),
/// spanning only segments `spans(j)` allows; `hit(p, j)` says whether the
/// pattern segment `p` matches path segment `j`.
fn walk<'a>(
    pattern: impl ExactSizeIterator<Item = &'a Seg>,
    n: usize,
    budget: &Budget,
    spans: impl Fn(usize) -> bool,
    hit: impl Fn(&SegPattern, usize) -> bool,
) -> bool {
    let len = pattern.len();
    let mut cur = vec![false; n + 1];
    cur[0] = true;
    for (k, seg) in pattern.enumerate() {
        if !budget.spend(n + 1) {
            return false;
        }
        let last = k + 1 == len;
        let mut next = vec![false; n + 1];
        match seg {
            Seg::Rec => {
                // `open`: position j-1 is reached with zero or more segments.
                let mut open = false;
                for j in 0..=n {
                    let via = j > 0 && open && spans(j - 1);
                    let reached = via || cur[j];
                    next[j] = if last { via } else { reached };
                    open = reached;
                }
            }
            Seg::Pat(p) => {
                for j in 0..n {
                    if cur[j] && hit(p, j) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        cur = next;
    }
    cur[n]
}

/// Whether `g` matches `path` (folded like the index) when every 8.3-shaped
/// path segment may stand for any name: it matches any pattern segment, and
/// `**` may span it. For deny rules only (a grant never matches more).
pub fn matches_aliasing(g: &ParsedGlob, path: &str, root_len: usize, budget: &Budget) -> bool {
    if !path.starts_with(&g.prefix[..root_len.min(g.prefix.len())]) {
        return false;
    }
    let lits: Vec<Seg> = g.prefix[root_len..]
        .split('/')
        .skip(1)
        .map(|l| Seg::Pat(SegPattern::new(l.chars().map(Atom::Char).collect())))
        .collect();
    let pattern: Vec<&Seg> = lits.iter().chain(g.rest.iter()).collect();
    let segs: Vec<&str> = path[root_len..].split('/').skip(1).collect();
    walk(
        pattern.iter().copied(),
        segs.len(),
        budget,
        |_| true,
        |p, j| is_short_name_shape(segs[j]) || p.matches(segs[j], budget),
    )
}

const fn depth_bit(d: usize) -> u128 {
    1u128 << if d > 127 { 127 } else { d }
}

/// Mode bits: 1 read, 2 write, [`DENY`] a deny glob.
pub type Modes = u8;

/// The mode bit of a `deny.fs` glob in an index that holds grants and denies.
pub const DENY: Modes = 4;

/// The globs below one literal directory prefix. Most prefixes hold a
/// subtree or an in-directory pattern only, so the multi-segment maps live
/// behind one allocation made when the first one is added ([`Deep`]): a
/// policy with many prefixes stays small (issue K, memory per policy).
#[derive(Debug, Clone, Default)]
struct Entry {
    exact: Modes,
    subtree: Modes,
    in_dir: SmallMap<SegPattern, Modes>,
    deep: Option<Box<Deep>>,
    /// Bit [`seg_bit`]`(s)` set: no key of the index lies below this prefix
    /// through a next segment `s` with that bit, so a walk that found this
    /// entry stops there when the path's next segment has it (every lookup
    /// further down would find nothing). Clear bits claim nothing: the
    /// default, 0, prunes nothing, so an entry whose keys below are not known
    /// is only walked in full (issue K, deny lists: the walk past a grant).
    absent_below: u64,
}

/// The bit of one path segment in an [`Entry`]'s `absent_below`.
#[inline]
fn seg_bit(seg: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(seg);
    1 << (h.finish() >> 58)
}

/// The segment of `key` after its prefix `key[..at]` (`key[at]` is a `/`).
fn next_segment(key: &[u8], at: usize) -> &[u8] {
    let rest = &key[at + 1..];
    &rest[..rest.iter().position(|&b| b == b'/').unwrap_or(rest.len())]
}

/// The prefixes a walk looks up on its way to `key`, as `(at, segment)`:
/// `key[..at]` and the segment after it, from the root (`root_len`) on, the
/// same steps [`GlobIndex::scan`] takes along a path.
fn ancestors(key: &[u8], root_len: usize) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = root_len;
    std::iter::from_fn(move || {
        if at >= key.len() {
            return None;
        }
        let seg = next_segment(key, at);
        let here = at;
        at += 1 + seg.len();
        Some((here, seg))
    })
}

/// An [`Entry`]'s multi-segment patterns.
#[derive(Debug, Clone, Default)]
struct Deep {
    /// Multi-segment patterns whose last segment is a literal name, by that name.
    by_last: PathMap<SmallMap<Vec<Seg>, Modes>>,
    /// `**/name-pattern` (a wildcard name at any depth below): matched on
    /// the last path segment alone, without splitting the path.
    below: SmallMap<Vec<Seg>, Modes>,
    /// Other multi-segment patterns.
    general: SmallMap<Vec<Seg>, Modes>,
}

/// The empty [`Deep`] an entry without multi-segment patterns reads.
static NO_DEEP: std::sync::LazyLock<Deep> = std::sync::LazyLock::new(Deep::default);

/// The compiled fs grants of one policy.
#[derive(Debug, Clone, Default)]
pub struct GlobIndex {
    /// win32: NTFS upper-casing and the 8.3 short-name rule.
    fold: bool,
    root_len: usize,
    by_prefix: PathMap<Entry>,
    /// Bit `d` set when some key of `by_prefix` has `d` separators (bit 127: 127 or more),
    /// so a check looks up only the ancestors at depths that can match.
    depths: u128,
    /// Exact root grants (`/`, `C:/`).
    roots: Vec<(String, Modes)>,
}

impl GlobIndex {
    /// An empty index whose names compare by `case`; a root (`/`, `C:`) is `root_len` bytes.
    pub fn new(case: Case, root_len: usize) -> Self {
        Self { fold: case == Case::Ntfs, root_len, ..Default::default() }
    }

    /// Adds one parsed glob with its modes (an identical variant is stored once).
    pub fn add(&mut self, g: ParsedGlob, modes: Modes) {
        let ParsedGlob { prefix, mut rest } = g;
        if rest.is_empty() && prefix.len() == self.root_len {
            // The root itself: only a literal root grant covers it.
            let root = format!("{prefix}/");
            match self.roots.iter_mut().find(|(r, _)| *r == root) {
                Some((_, m)) => *m |= modes,
                None => self.roots.push((root, modes)),
            }
            return;
        }
        let depth = prefix.bytes().filter(|&b| b == b'/').count();
        let absent_below = (!self.by_prefix.contains_key(prefix.as_bytes())).then(|| self.new_key(&prefix, depth));
        self.depths |= depth_bit(depth);
        let e = self
            .by_prefix
            .entry(prefix.into())
            .or_insert_with(|| Entry { absent_below: absent_below.unwrap_or(0), ..Entry::default() });
        match rest.len() {
            0 => e.exact |= modes,
            1 if rest[0] == Seg::Rec => e.subtree |= modes,
            1 => {
                let Some(Seg::Pat(p)) = rest.pop() else { unreachable!() };
                *e.in_dir.entry_or_default(p) |= modes;
            }
            _ => {
                let d = e.deep.get_or_insert_with(Box::default);
                match rest.last() {
                    Some(Seg::Pat(p)) if p.is_literal() => {
                        *d.by_last.entry(p.literal().into()).or_default().entry_or_default(rest) |= modes;
                    }
                    _ if matches!(&rest[..], [Seg::Rec, Seg::Pat(_)]) => *d.below.entry_or_default(rest) |= modes,
                    _ => *d.general.entry_or_default(rest) |= modes,
                }
            }
        }
    }

    /// Before `key` (with `depth` separators) joins the index: its ancestors
    /// that are keys learn that something lies below them through its next
    /// segment; returns its own `absent_below`, from the keys already below
    /// it. Those are found by a scan of a small index only; in a large one, a
    /// key added after a deeper key gets 0 (nothing pruned below it).
    fn new_key(&mut self, key: &str, depth: usize) -> u64 {
        let k = key.as_bytes();
        for (at, seg) in ancestors(k, self.root_len) {
            if let Some(e) = self.by_prefix.get_mut(&k[..at]) {
                e.absent_below &= !seg_bit(seg);
            }
        }
        // A key below another has more separators, but for a key of the
        // root's length (the walk's first step need not cross a `/`).
        let deeper_exists = depth >= 127 || k.len() <= self.root_len || self.depths >> (depth + 1) != 0;
        if !deeper_exists {
            !0
        } else if self.by_prefix.len() <= Self::SCAN_KEYS {
            let mut below = 0;
            // A key below `key` continues it with a `/` (the step `ancestors` takes there).
            for j in self.by_prefix.keys().map(PathKey::as_bytes) {
                if j.get(k.len()) == Some(&b'/') && j.starts_with(k) {
                    below |= seg_bit(next_segment(j, k.len()));
                }
            }
            !below
        } else {
            0
        }
    }

    /// Most keys [`Self::new_key`] scans for the keys below a new one.
    const SCAN_KEYS: usize = 64;

    /// The union of the modes of every grant matching `path` (normalised,
    /// `/`-separated, no trailing `/` except a root). Stops early once
    /// `wanted` is found.
    pub fn modes(&self, path: &str, wanted: Modes) -> Modes {
        let folded;
        let path = if self.fold {
            folded = fold_str(path);
            folded.as_str()
        } else {
            path
        };
        if path.ends_with('/') {
            return self.roots.iter().filter(|(r, _)| r == path).fold(0, |m, (_, x)| m | x);
        }
        // Grants giving the wanted mode get the match budget first; the others
        // are tried after, only to tell `mode_not_granted` from `not_allowlisted`.
        let budget = Budget::new(MAX_MATCH_STEPS);
        let got = self.scan(path, wanted, wanted, &budget);
        if got & wanted != 0 {
            return got;
        }
        got | self.scan(path, !wanted, !wanted, &budget)
    }

    /// For an index that holds deny globs (mode bit [`DENY`]) beside the
    /// grants: the grant modes matching `path` (as [`Self::modes`]) and
    /// whether a deny glob matches it, in one walk over its ancestors. A
    /// match that could not be finished within the step budget while deny
    /// globs were still being tried counts as a deny (fail closed). On win32
    /// an 8.3-shaped segment can alias any long name, so a path holding one
    /// is also compared with every deny variant in `deny_globs` with that
    /// segment matching any pattern segment ([`matches_aliasing`]).
    pub fn decide(&self, path: &str, wanted: Modes, deny_globs: &[ParsedGlob]) -> (Modes, bool) {
        let folded;
        let path = if self.fold {
            folded = fold_str(path);
            folded.as_str()
        } else {
            path
        };
        if path.ends_with('/') {
            let m = self.roots.iter().filter(|(r, _)| r == path).fold(0, |m, (_, x)| m | x);
            return (m & !DENY, m & DENY != 0);
        }
        let budget = Budget::new(MAX_MATCH_STEPS);
        // One walk over every ancestor (it stops only at a deny), trying the
        // grant wildcards of every mode, so `mode_not_granted` needs no second walk.
        let got = self.scan(path, !0, DENY, &budget);
        if got & DENY != 0 || budget.ran_out() {
            return (got & !DENY, true);
        }
        if self.fold
            && path[self.root_len..].split('/').any(is_short_name_shape)
            && (deny_globs.iter().any(|g| matches_aliasing(g, path, self.root_len, &budget)) || budget.ran_out())
        {
            return (got & !DENY, true);
        }
        let _ = wanted;
        (got & !DENY, false)
    }

    /// The modes of the grants matching `path` (already folded), trying
    /// wildcard grants only when they give a mode in `filter`; stops at one.
    /// `stop`: the bits whose discovery ends the walk (a deny pass walks every
    /// ancestor until a deny glob matches, trying grant wildcards only until
    /// a grant is found).
    fn scan(&self, path: &str, filter: Modes, stop: Modes, budget: &Budget) -> Modes {
        let wanted = stop;
        let mut got: Modes = 0;
        let bytes = path.as_bytes();
        let full_depth = bytes.iter().filter(|&&b| b == b'/').count();
        if self.depths & depth_bit(full_depth) != 0 {
            if let Some(e) = self.by_prefix.get(path.as_bytes()) {
                got |= e.exact;
                if got & wanted != 0 {
                    return got;
                }
            }
        }
        let view = self.view(path);
        // Every ancestor directory: the root prefix, then each '/' boundary.
        let last_sep = view.last_sep;
        let mut at = self.root_len;
        let mut depth = 0usize;
        // The `absent_below` of the entry found at `at` (0: none found there).
        let mut absent_below = 0u64;
        loop {
            let prefix = &path[..at];
            let wanted_depth = self.depths & depth_bit(depth) != 0;
            depth += 1;
            if let Some(e) = if wanted_depth { self.by_prefix.get(prefix.as_bytes()) } else { None } {
                got = Self::entry_modes(e, &view, at, filter, got, budget);
                if got & wanted != 0 {
                    return got;
                }
                absent_below = e.absent_below;
            }
            if at >= last_sep {
                break;
            }
            let seg = next_segment(bytes, at);
            // (The segment is hashed only below a found entry that claims something.)
            if absent_below != 0 && absent_below & seg_bit(seg) != 0 {
                // No key lies below `path[..at]` through this segment.
                break;
            }
            absent_below = 0;
            at += 1 + seg.len();
        }
        got
    }

    /// What a walk along `path` (already folded) needs, found once per path.
    #[inline]
    fn view<'a>(&self, path: &'a str) -> PathView<'a> {
        // win32: the separator before the last 8.3-shaped segment, if any.
        // Below an ancestor at or before it, only literal segments may match it.
        let last_short_sep = if self.fold {
            let mut at = None;
            let mut start = self.root_len;
            for seg in path[self.root_len + 1..].split('/') {
                if is_short_name_shape(seg) {
                    at = Some(start);
                }
                start += 1 + seg.len();
            }
            at
        } else {
            None
        };
        let last_sep = path.rfind('/').unwrap_or(0);
        PathView { path, last_sep, name: &path[last_sep + 1..], last_short_sep }
    }

    /// `got` with the modes of the wildcard grants of the entry filed under
    /// the ancestor `path[..at]` that match the path, trying only grants that
    /// give a mode in `filter` not already in `got`.
    #[inline(always)]
    fn entry_modes(e: &Entry, view: &PathView<'_>, at: usize, filter: Modes, mut got: Modes, budget: &Budget) -> Modes {
        let PathView { path, last_sep, name, last_short_sep } = *view;
        let short_below = last_short_sep.is_some_and(|s| s >= at);
        if !short_below {
            got |= e.subtree;
            if at == last_sep {
                for (p, m) in &e.in_dir {
                    if *m & filter & !got != 0 && p.matches(name, budget) {
                        got |= m;
                    }
                }
            }
        }
        let d = e.deep.as_deref().unwrap_or(&NO_DEEP);
        if !short_below {
            for (g, m) in &d.below {
                if let (true, [Seg::Rec, Seg::Pat(p)]) = (*m & filter & !got != 0, &g[..]) {
                    if p.matches(name, budget) {
                        got |= m;
                    }
                }
            }
        }
        // (An empty map is not asked: hashing the name is most of a miss.)
        let by_last = if d.by_last.is_empty() { None } else { d.by_last.get(name.as_bytes()) };
        let below_short = if short_below { Some(&d.below) } else { None };
        if !d.general.is_empty() || by_last.is_some() || below_short.is_some_and(|b| !b.is_empty()) {
            let segs: Vec<&str> = path[at + 1..].split('/').collect();
            let short: Vec<bool> =
                if short_below { segs.iter().map(|s| is_short_name_shape(s)).collect() } else { Vec::new() };
            for (g, m) in d.general.iter().chain(by_last.into_iter().flatten()).chain(below_short.into_iter().flatten())
            {
                if *m & filter & !got != 0 && segs_match(g, &segs, &short, budget) {
                    got |= m;
                }
            }
        }
        got
    }

    /// The end of the deepest literal directory prefix `path[..n]` under
    /// which some glob files a grant that gives `path` a mode in `wanted`
    /// (`path.len()` for an exact grant of `path` itself; the root's length
    /// for a grant of the root): the directory everything that grant covers
    /// lies beneath. `None` when no grant gives such a mode, or when the
    /// match could not be finished within the step budget. The same entries
    /// and matching as [`Self::modes`], asked of every ancestor.
    pub fn granting_prefix(&self, path: &str, wanted: Modes) -> Option<usize> {
        let wanted = wanted & !DENY;
        let folded;
        let path = if self.fold {
            folded = fold_str(path);
            folded.as_str()
        } else {
            path
        };
        if path.ends_with('/') {
            let granted = self.roots.iter().any(|(r, m)| r == path && m & wanted != 0);
            return granted.then_some(self.root_len);
        }
        if self.by_prefix.get(path.as_bytes()).is_some_and(|e| e.exact & wanted != 0) {
            return Some(path.len());
        }
        let budget = Budget::new(MAX_MATCH_STEPS);
        let view = self.view(path);
        let mut best = None;
        let mut at = self.root_len;
        loop {
            if let Some(e) = self.by_prefix.get(&path.as_bytes()[..at]) {
                if Self::entry_modes(e, &view, at, wanted, 0, &budget) & wanted != 0 {
                    best = Some(at);
                }
            }
            if at >= view.last_sep {
                break;
            }
            at += 1 + next_segment(path.as_bytes(), at).len();
        }
        if budget.ran_out() {
            return None;
        }
        best
    }
}

/// A path as [`GlobIndex::entry_modes`] reads it: the last separator, the
/// last name, and (win32) the separator before the last 8.3-shaped segment.
#[derive(Clone, Copy)]
struct PathView<'a> {
    path: &'a str,
    last_sep: usize,
    name: &'a str,
    last_short_sep: Option<usize>,
}

impl GlobIndex {
    /// Whether some glob holding a bit of `bits` may match `dir` itself or a
    /// path below it: the question a host asks before it moves a directory
    /// (every path below it moves with it, into or out of a deny's reach).
    /// `dir` is a normalised path, already folded like the paths this index
    /// decides on (the caller applies the same fold to it as to a checked
    /// path; a fold that keeps `/` and works character by character folds
    /// `dir/rest` to `fold(dir)/fold(rest)`, so reaching below `fold(dir)`
    /// covers every spelling). Read on the compiled globs, generously (fail
    /// closed): a pattern segment past `dir` is taken to match some name, and
    /// a match that runs out of its step budget reaches.
    pub fn reaches(&self, dir: &str, bits: Modes) -> bool {
        let folded;
        let dir = if self.fold {
            folded = fold_str(dir);
            folded.as_str()
        } else {
            dir
        };
        let has = |m: Modes| m & bits != 0;
        // The root: every glob lies below it.
        if dir.len() <= self.root_len + 1 && dir.ends_with('/') {
            return self.roots.iter().any(|(_, m)| has(*m))
                || self.by_prefix.values().any(|e| {
                    let d = e.deep.as_deref().unwrap_or(&NO_DEEP);
                    has(e.exact | e.subtree)
                        || e.in_dir.into_iter().any(|(_, m)| has(*m))
                        || d.by_last.values().flatten().chain(&d.below).chain(&d.general).any(|(_, m)| has(*m))
                });
        }
        let budget = Budget::new(MAX_MATCH_STEPS);
        let below = |key: &[u8], of: &[u8]| key.len() > of.len() && key.starts_with(of) && key[of.len()] == b'/';
        for (key, e) in &self.by_prefix {
            let k = key.as_bytes();
            let d = e.deep.as_deref().unwrap_or(&NO_DEEP);
            let deep = || d.by_last.values().flatten().chain(&d.below).chain(&d.general);
            if k == dir.as_bytes() || below(k, dir.as_bytes()) {
                // Every path a glob under this key matches is `dir` or below it.
                if has(e.exact | e.subtree)
                    || e.in_dir.into_iter().any(|(_, m)| has(*m))
                    || deep().any(|(_, m)| has(*m))
                {
                    return true;
                }
            } else if below(dir.as_bytes(), k) {
                // `dir` is below the key: the glob's segments after it meet
                // `dir`'s, and reach when some of the pattern is left alive.
                if has(e.subtree) {
                    return true;
                }
                let rest: Vec<&str> = dir[k.len() + 1..].split('/').collect();
                for (p, m) in &e.in_dir {
                    if has(*m) && rest.len() == 1 && (p.matches(rest[0], &budget) || budget.ran_out()) {
                        return true;
                    }
                }
                for (g, m) in deep() {
                    if has(*m) && (alive_after(g, &rest, &budget) || budget.ran_out()) {
                        return true;
                    }
                }
            }
        }
        budget.ran_out()
    }
}

/// Whether the segment patterns `pattern`, having matched `path` so far,
/// can still match it or more below it: some position of the pattern is
/// reached after every path segment (`**` spans zero or more; a position
/// past the end is `path` itself matched).
fn alive_after(pattern: &[Seg], path: &[&str], budget: &Budget) -> bool {
    let len = pattern.len();
    let close = |set: &mut Vec<bool>| {
        for k in 0..len {
            if set[k] && pattern[k] == Seg::Rec {
                set[k + 1] = true;
            }
        }
    };
    let mut cur = vec![false; len + 1];
    cur[0] = true;
    close(&mut cur);
    for name in path {
        if !budget.spend(len + 1) {
            return true;
        }
        let mut next = vec![false; len + 1];
        for k in 0..len {
            if !cur[k] {
                continue;
            }
            match &pattern[k] {
                Seg::Rec => next[k] = true,
                Seg::Pat(p) => {
                    if p.matches(name, budget) {
                        next[k + 1] = true;
                    }
                }
            }
        }
        close(&mut next);
        if !next.contains(&true) {
            return false;
        }
        cur = next;
    }
    cur.contains(&true)
}

/// One brace variant of a glob as the parser reads it, for `lint.rs`
/// ([`variant_shapes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VariantShape {
    /// The literal segments before the first wildcard segment, the root
    /// first (`""` on posix, the drive on win32), escapes resolved, NTFS
    /// upper case when folded. A variant without wildcards is all literal.
    pub(crate) literal: Vec<String>,
    /// Each segment after those: whether it is a recursive `**`.
    pub(crate) recursive: Vec<bool>,
}

/// Read-only, for `lint.rs`: the brace variants of a normalised glob as
/// [`parse`] reads them (same dialect), so lint never re-derives glob
/// structure from text.
pub(crate) fn variant_shapes(glob: &str, syntax: Syntax) -> Result<Vec<VariantShape>, GlobError> {
    Ok(parse(glob, syntax)?
        .into_iter()
        .map(|g| VariantShape {
            literal: g.prefix.split('/').map(str::to_owned).collect(),
            recursive: g.rest.iter().map(|s| *s == Seg::Rec).collect(),
        })
        .collect())
}

#[cfg(test)]
mod tests {

    #[test]
    fn path_keys_inline_and_boxed_look_up_by_their_bytes() {
        let mut m: PathMap<usize> = PathMap::default();
        let keys = [
            "",
            "/",
            "/a",
            &"x".repeat(PathKey::INLINE),
            &"x".repeat(PathKey::INLINE + 1),
            "/é/ß/日本/𝄞",
            &"é".repeat(15),
            &"é".repeat(16),
        ];
        for (i, k) in keys.iter().enumerate() {
            let key = PathKey::from(k.to_string());
            assert_eq!(matches!(key, PathKey::Inline { .. }), k.len() <= PathKey::INLINE, "{k:?}");
            assert_eq!(key.as_bytes(), k.as_bytes());
            m.insert(key, i);
        }
        assert_eq!(m.len(), keys.len(), "no two keys collide");
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(m.get(k.as_bytes()), Some(&i), "{k:?}");
        }
        // A prefix or an extension of a key is another key.
        assert_eq!(m.get(&"x".repeat(PathKey::INLINE - 1).into_bytes()[..]), None);
        assert_eq!(m.get(&"x".repeat(PathKey::INLINE + 2).into_bytes()[..]), None);
        assert_eq!(m.get(&b"/a/"[..]), None);
        assert_eq!(format!("{:?}", PathKey::from("/é".to_string())), "\"/é\"");
    }
    use super::*;

    fn seg(p: &str) -> SegPattern {
        // A leading wildcard segment keeps a literal pattern out of the prefix.
        match &parse(&format!("/?/{p}"), Syntax::POSIX).unwrap()[0].rest[..] {
            [_, Seg::Pat(p)] => p.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn segment_patterns() {
        for (p, s, want) in [
            ("*.json", "a.json", true),
            ("*.json", ".json", true),
            ("*.json", "a.jsonx", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("?", "é", true),
            ("?", "", false),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("[!a-c]x", "dx", true),
            ("[]]", "]", true),
            ("[!]]", "a", true),
            ("\\*", "*", true),
            ("\\*", "a", false),
            ("\\**", "*abc", true),
            ("\\**", "abc", false),
            ("*", "", true),
            ("{*,x}*", "abc", true),
            ("*{*}", "abc", true),
            // The first and last characters, ASCII or not, and the last literal
            // run found by its length in characters (not bytes).
            ("é*", "éa", true),
            ("é*", "ea", false),
            ("é*", "\u{e8}a", false),
            ("*é", "aé", true),
            ("*é", "aè", false),
            ("*é", "a\u{301}", false),
            ("a*", "é", false),
            ("*a", "é", false),
            ("*ab", "b", false),
            ("*.jsoné", "x.jsoné", true),
            ("*.jsoné", "x.json", false),
            ("*?é", "é", false),
            ("*?é", "éé", true),
            ("*?é", "aé", true),
            ("x*日本", "x日本", true),
            ("x*日本", "x本", false),
            ("x*日本", "xa日本", true),
            ("?日*本?", "a日b本c", true),
            ("?日*本?", "a日b本", false),
            ("*\u{10348}", "a\u{10348}", true),
            ("*\u{10348}", "a\u{10349}", false),
            // Literal runs that share their first byte with the name, then differ.
            ("ab*", "axb", false),
            ("ab*", "abx", true),
            ("ab*cd*ef", "abXcdYeX", false),
            ("ab*cd*ef", "abXcdYef", true),
            ("éa*", "éb", false),
        ] {
            assert_eq!(seg(p).matches(s, &Budget::new(MAX_MATCH_STEPS)), want, "{p} ~ {s:?}");
        }
        for bad in ["/**a", "/a**", "/{**,x}", "/{a/**,b}", "/x/{a,**}/y", "/***", "/a\\/b", "/a[/]b", "/[.-0]"] {
            assert!(parse(bad, Syntax::POSIX).is_err(), "{bad}");
        }
    }

    #[test]
    fn brace_alternatives_are_never_recursive() {
        for g in ["/data/{*,x}*", "/data/*{*}", "/data/{*}*", "/data/*{*/x,y}"] {
            let v = parse(g, Syntax::POSIX).unwrap();
            for pg in &v {
                assert!(!pg.rest.contains(&Seg::Rec), "{g}: {pg:?}");
            }
            let mut idx = GlobIndex::new(Case::Exact, 0);
            for pg in v {
                idx.add(pg, 3);
            }
            assert_eq!(idx.modes("/data/a/b/c", 3), 0, "{g}");
        }
    }

    #[test]
    fn pathological_patterns_stay_linear() {
        let p = seg(&"*a".repeat(200));
        let s = "a".repeat(4000) + "b";
        let t = std::time::Instant::now();
        assert!(!p.matches(&s, &Budget::new(MAX_MATCH_STEPS)));
        assert!(t.elapsed().as_secs() < 2);
    }

    #[test]
    fn braces_expand_with_limits() {
        // A class inside a group may hold a literal `]` or `,`.
        let v = parse("/a/{[]],[,]x}", Syntax::POSIX).unwrap();
        assert_eq!(v.len(), 2);
        let v = parse("/a/{b,c{d,e}}/f", Syntax::POSIX).unwrap();
        assert_eq!(v.iter().map(|g| g.prefix.clone()).collect::<Vec<_>>(), ["/a/b/f", "/a/cd/f", "/a/ce/f"]);
        assert!(parse("/a/{b,c", Syntax::POSIX).is_err());
        assert!(parse("/a/b}", Syntax::POSIX).is_err());
        assert!(parse("/a/{b,}", Syntax::POSIX).is_err());
        assert!(parse("/a/{.,b}", Syntax::POSIX).is_err());
        assert!(parse(&"/{a,b}".repeat(9), Syntax::POSIX).is_err(), "512 variants");
        assert_eq!(parse("/[{]x", Syntax::POSIX).unwrap()[0].rest.len(), 1);
    }

    #[test]
    fn win32_classes_fold_per_character_never_the_bounds() {
        let class = |g: &str| {
            let mut idx = GlobIndex::new(Case::Ntfs, 2);
            for pg in parse(g, Syntax::WIN32).unwrap() {
                idx.add(pg, 1);
            }
            idx
        };
        // U+0100-U+212A (Kelvin sign): never `z` or `Z` just because a bound folds to `k`.
        let kelvin = class("C:/data/[\u{100}-\u{212A}]");
        assert_eq!(kelvin.modes("C:/data/z", 1), 0);
        assert_eq!(kelvin.modes("C:/data/\u{212A}", 1), 1);
        assert_eq!(kelvin.modes("C:/data/k", 1), 0, "NTFS does not pair k with the Kelvin sign");
        let omega = class("C:/data/[\u{3A9}-\u{2400}]");
        assert_eq!(omega.modes("C:/data/ж", 1), 1, "ж (U+0436) is inside the range");
        let greek = class("C:/data/[\u{3A9}-\u{3AA}]");
        assert_eq!(greek.modes("C:/data/ж", 1), 0);
        assert_eq!(greek.modes("C:/data/ω", 1), 1, "case partner of Ω");
        let lower = class("C:/data/[a-c]");
        assert_eq!(lower.modes("C:/data/B", 1), 1);
        assert_eq!(lower.modes("C:/data/d", 1), 0);
    }

    #[test]
    fn short_names_match_only_literal_segments() {
        assert!(is_short_name_shape("SECRET~1.TXT"));
        assert!(is_short_name_shape("progra~1"));
        assert!(is_short_name_shape("AB12~10.x"));
        assert!(!is_short_name_shape("secret.txtx"));
        assert!(!is_short_name_shape("longername~1.txt"));
        assert!(!is_short_name_shape("a~b.txt"));
        let mut idx = GlobIndex::new(Case::Ntfs, 2);
        for g in ["C:/d/*.txt", "C:/e/**", "C:/f/PROGRA~1/**", "C:/g/*/x", "C:/h/*/PROGRA~1/y"] {
            for pg in parse(g, Syntax::WIN32).unwrap() {
                idx.add(pg, 1);
            }
        }
        assert_eq!(idx.modes("C:/d/SECRET~1.TXT", 1), 0);
        assert_eq!(idx.modes("C:/d/secret.txt", 1), 1);
        assert_eq!(idx.modes("C:/e/a/SECRET~1.TXT/b", 1), 0);
        assert_eq!(idx.modes("C:/e/a/b", 1), 1);
        assert_eq!(idx.modes("C:/f/progra~1/b", 1), 1);
        assert_eq!(idx.modes("C:/g/PROGRA~1/x", 1), 0);
        assert_eq!(idx.modes("C:/h/a/progra~1/y", 1), 1);
        assert_eq!(idx.modes("C:/h/PROGRA~2/progra~1/y", 1), 0);
    }

    fn hostile(i: usize) -> serde_json::Value {
        serde_json::Value::String(format!("/a/*/{{a,b}}{{c,d}}{{e,f}}{{g,h}}{{i,j}}{{k,l}}{{m,n}}{{o,p}}{i}"))
    }

    /// SPEC §8: a manifest at the policy-wide cap compiles fast, and a check
    /// against it does a bounded amount of work (counted, not timed).
    #[test]
    fn hostile_brace_manifest_is_capped_and_checks_stay_cheap() {
        use crate::policy::{PermissionPolicy, PolicyOptions};
        use crate::FsMode;
        let per = 256;
        let at_cap = crate::fs::MAX_POLICY_GLOB_VARIANTS / per;
        let fs: Vec<_> = (0..at_cap).map(hostile).collect();
        let t = std::time::Instant::now();
        let p = PermissionPolicy::from_manifest(&serde_json::json!({ "fs": fs }), PolicyOptions::new("t")).unwrap();
        eprintln!("{} variants compiled in {:?}", at_cap * per, t.elapsed());
        for path in ["/a/x/acegikmo7", "/a/x/acegikmp", "/a/x/y/z", "/a/b", "/zzz"] {
            WORK.with(|w| w.set(0));
            let t = std::time::Instant::now();
            let d = p.check_fs(path, FsMode::Read);
            let work = WORK.with(std::cell::Cell::get);
            eprintln!("{path}: {:?}, {work} match attempts, {:?}", d.is_allowed(), t.elapsed());
            assert_eq!(d.is_allowed(), path == "/a/x/acegikmo7");
            // Only the patterns filed under the path's own last name are tried:
            // at most one segment walk of two segment matches, whatever the manifest size.
            assert!(work <= 3, "{path}: {work}");
        }
        // Past the cap: INVALID_MANIFEST naming the first glob past it.
        let fs: Vec<_> = (0..=at_cap).map(hostile).collect();
        let err =
            PermissionPolicy::from_manifest(&serde_json::json!({ "fs": fs }), PolicyOptions::new("t")).unwrap_err();
        assert_eq!(err.pointer, format!("/fs/{at_cap}"));
        // The reported manifest: 10,000 identical copies stop at the cap, they do not compile 2.56M variants.
        let fs: Vec<_> = (0..10_000).map(|_| hostile(0)).collect();
        let t = std::time::Instant::now();
        let err =
            PermissionPolicy::from_manifest(&serde_json::json!({ "fs": fs }), PolicyOptions::new("t")).unwrap_err();
        eprintln!("10,000 copies rejected in {:?}", t.elapsed());
        assert_eq!(err.pointer, format!("/fs/{at_cap}"));
    }

    /// An entry's `absent_below` names exactly the next segments no key lies
    /// below it through, whichever key came first, so a walk stops under a
    /// found prefix only where nothing deeper is indexed (the property test
    /// in tests/fs.rs checks the answers; this pins that it does stop).
    #[test]
    fn literal_text_is_ascii_reads_the_prefix_and_every_literal_character() {
        let one = |g: &str| parse(g, Syntax::POSIX).unwrap().remove(0).literal_text_is_ascii();
        for g in ["/a/b/**", "/a/*.json", "/a/[é]/x?", "/a/[!ж]*"] {
            assert!(one(g), "{g}");
        }
        for g in ["/é/b", "/a/é*", "/a/*ß", "/a/[x]ß", "/a/ßß", "/a/**/ß"] {
            assert!(!one(g), "{g}");
        }
    }

    #[test]
    fn absent_below_claims_the_segments_with_nothing_below() {
        let index = |globs: &[&str]| {
            let mut idx = GlobIndex::new(Case::Exact, 0);
            for g in globs {
                for pg in parse(g, Syntax::POSIX).unwrap() {
                    idx.add(pg, 1);
                }
            }
            idx
        };
        let absent = |idx: &GlobIndex, key: &str| idx.by_prefix[key.as_bytes()].absent_below;
        // Each order: the shallow key first (its entry learns from the deeper
        // ones as they come), the deep keys first (a scan of a small index).
        // (`/b/e` is a key of the same length as `/a`, not below it.)
        for globs in [["/a/**", "/a/b/c/**", "/a/d/*.x", "/b/e/**"], ["/b/e/**", "/a/b/c/**", "/a/d/*.x", "/a/**"]] {
            let idx = index(&globs);
            assert_eq!(absent(&idx, "/a"), !(seg_bit(b"b") | seg_bit(b"d")), "{globs:?}");
            assert_eq!(absent(&idx, "/a/b/c"), !0, "{globs:?}");
            assert_eq!(absent(&idx, "/a/d"), !0, "{globs:?}");
        }
        // Past the scan's size, a key that comes after deeper ones claims nothing.
        let mut many: Vec<String> = (0..=GlobIndex::SCAN_KEYS).map(|i| format!("/a/k{i}/**")).collect();
        many.push("/a/**".into());
        let idx = index(&many.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(absent(&idx, "/a"), 0);
        assert_eq!(idx.modes("/a/zz/f", 1), 1);
        // In a large index, a key with nothing deeper anywhere claims every segment.
        let mut flat: Vec<String> = (0..=GlobIndex::SCAN_KEYS).map(|i| format!("/k{i}/*.x")).collect();
        flat.push("/z/**".into());
        let idx = index(&flat.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(absent(&idx, "/z"), !0);
        // A key of the root's length is looked up first and scanned for.
        let idx = index(&["/b/c/**", "/*.x"]);
        assert_eq!(absent(&idx, ""), !seg_bit(b"b"));
        // Single bits, spread: ten names take at least eight of the 64.
        let names: Vec<u64> = (0..10).map(|i| seg_bit(format!("name{i}").as_bytes())).collect();
        assert!(names.iter().all(|b| b.count_ones() == 1));
        assert!(names.iter().fold(0u64, |m, b| m | b).count_ones() >= 8);
    }

    #[test]
    fn identical_variants_are_stored_once() {
        let mut idx = GlobIndex::new(Case::Exact, 0);
        for g in ["/a/*/{x,x,y}", "/a/*/{y,x}", "/a/{*,*}.j"] {
            for pg in parse(g, Syntax::POSIX).unwrap() {
                idx.add(pg, 1);
            }
        }
        let e = &idx.by_prefix[&b"/a"[..]];
        assert_eq!(e.deep.as_ref().unwrap().by_last.values().map(SmallMap::len).sum::<usize>(), 2);
        assert_eq!(e.in_dir.len(), 1);
    }

    /// A hostile manifest within every limit (grants whose middle run holds a
    /// `?`, so no substring search applies) costs at most the step budget per
    /// check, and fails closed past it.
    #[test]
    fn grants_at_every_depth_are_found() {
        // The depth filter's two words and its shared last bit (127 or more).
        for depth in [0usize, 1, 2, 62, 63, 64, 65, 100, 126, 127, 128, 129, 200, 1000] {
            let dir: String = (0..depth).map(|i| format!("/d{i}")).collect();
            for (grant, inside, outside) in [
                (format!("{dir}/f"), format!("{dir}/f"), format!("{dir}/g")),
                (format!("{dir}/**"), format!("{dir}/x/y"), format!("{dir}x/y")),
                (format!("{dir}/*.json"), format!("{dir}/a.json"), format!("{dir}/a/b.json")),
            ] {
                let mut idx = GlobIndex::new(Case::Exact, 0);
                for g in parse(&grant, Syntax::POSIX).unwrap() {
                    idx.add(g, 1);
                }
                // A grant at another depth past 127 shares the last filter bit.
                for g in parse(&format!("{}/z/**", "/e".repeat(depth.max(130))), Syntax::POSIX).unwrap() {
                    idx.add(g, 2);
                }
                assert_eq!(idx.modes(&inside, 1), 1, "{grant} ~ {inside}");
                if outside.starts_with('/') {
                    assert_eq!(idx.modes(&outside, 1), 0, "{grant} !~ {outside}");
                }
            }
        }
    }

    #[test]
    fn granting_prefix_finds_a_grant_exactly_when_modes_does_and_names_its_literal_root() {
        let globs = [
            ("/a/**", 1),
            ("/a/b/*.json", 1),
            ("/a/b/c/exact", 2),
            ("/a/{x,y}/**/z.txt", 3),
            ("/a/*/q/**", 2),
            ("/**/.env", 1),
            ("/r/[0-9]*/f", 1),
        ];
        let mut idx = GlobIndex::new(Case::Exact, 0);
        for (g, m) in globs {
            for v in parse(g, Syntax::POSIX).unwrap() {
                idx.add(v, m);
            }
        }
        let paths = [
            "/a/b/x.json",
            "/a/b/c/exact",
            "/a/x/k/z.txt",
            "/a/y/z.txt",
            "/a/m/q/n",
            "/b/.env",
            "/r/7a/f",
            "/r/a/f",
            "/c/d",
            "/a",
            "/a/b/c",
        ];
        for path in paths {
            for wanted in [1, 2, 3] {
                let got = idx.granting_prefix(path, wanted);
                assert_eq!(got.is_some(), idx.modes(path, wanted) & wanted != 0, "{path} {wanted}");
                if let Some(n) = got {
                    // A literal directory prefix of the path (or the path itself), at a separator.
                    assert!(n == path.len() || path.as_bytes()[n] == b'/', "{path} {n}");
                }
            }
        }
        // The deepest granting prefix: `/a/b` for a JSON name below it (not `/a`, whose `**` also grants it).
        assert_eq!(idx.granting_prefix("/a/b/x.json", 1), Some(4));
        assert_eq!(idx.granting_prefix("/a/b/c/exact", 2), Some("/a/b/c/exact".len()));
        assert_eq!(idx.granting_prefix("/a/x/k/z.txt", 2), Some("/a/x".len()));
        assert_eq!(idx.granting_prefix("/b/.env", 1), Some(0));
        assert_eq!(idx.granting_prefix("/r/7a/f", 1), Some(2));
        // win32: an 8.3-shaped segment is matched by a literal segment only, here as in `modes`.
        let mut win = GlobIndex::new(Case::Ntfs, 2);
        for v in parse("C:/data/**", Syntax::WIN32)
            .unwrap()
            .into_iter()
            .chain(parse("C:/data/PROGRA~1/x", Syntax::WIN32).unwrap())
        {
            win.add(v, 1);
        }
        for path in ["C:/data/PROGRA~1/x", "C:/data/PROGRA~1/y", "C:/data/a/b"] {
            assert_eq!(win.granting_prefix(path, 1).is_some(), win.modes(path, 1) & 1 != 0, "{path}");
        }
    }

    #[test]
    fn quick_rejects_spend_no_match_steps() {
        // Too short, or a first or last character the pattern fixes (ASCII or
        // not): rejected before any run is compared, so no step is spent.
        for (p, name) in [
            ("*.json", "a.txt"),
            ("*.json", "json"),
            ("a*", "ba"),
            ("*a", "ab"),
            ("é*", "e\u{301}"),
            ("*é", "eé\u{301}"),
            ("a?c", "ab"),
        ] {
            let budget = Budget::new(MAX_MATCH_STEPS);
            assert!(!seg(p).matches(name, &budget), "{p} ~ {name:?}");
            assert_eq!(MAX_MATCH_STEPS - budget.left(), 0, "{p} ~ {name:?} spent steps");
        }
        // A name that passes them is matched run by run.
        let budget = Budget::new(MAX_MATCH_STEPS);
        assert!(!seg("a*b*c").matches("aXc", &budget));
        assert!(MAX_MATCH_STEPS - budget.left() > 0);
    }

    #[test]
    fn match_steps_are_budgeted() {
        let body = format!("*?{}b*", "a".repeat(2000));
        let p = seg(&body);
        let name = "a".repeat(4000);
        let budget = Budget::new(MAX_MATCH_STEPS);
        assert!(!p.matches(&name, &budget));
        let spent = MAX_MATCH_STEPS - budget.left();
        eprintln!("one hostile segment match: {spent} steps");
        // Naively about (4000 - 2000) start places x 2000 characters each; capped at linear work.
        assert!(spent <= (MATCH_STEPS_PER_CHAR + 1 + MAX_FREE_WILD_RUN) * (4000 + 2005) + 64, "{spent}");
        // The same pattern still matches where it should.
        assert!(p.matches(&format!("x{}by", "a".repeat(2000)), &Budget::new(MAX_MATCH_STEPS)));
        let path = format!("/a/{name}");
        for (grants, write_survives) in [(5, true), (2000, false)] {
            let mut idx = GlobIndex::new(Case::Exact, 0);
            for i in 0..grants {
                for pg in parse(&format!("/a/*?{}{i}b*", "a".repeat(2000)), Syntax::POSIX).unwrap() {
                    idx.add(pg, 1);
                }
            }
            for pg in parse("/a/*", Syntax::POSIX).unwrap() {
                idx.add(pg, 2);
            }
            STEPS.with(|w| w.set(0));
            let t = std::time::Instant::now();
            // No hostile grant matches (each stops at its linear budget).
            assert_eq!(idx.modes(&path, 1) & 1, 0);
            let steps = STEPS.with(std::cell::Cell::get);
            eprintln!("{grants} hostile grants: {:?}, {steps} steps", t.elapsed());
            assert!(steps <= MAX_MATCH_STEPS as u64, "{steps}");
            // With a few, the cheap grant still matches; with thousands the check's
            // budget may run out first, and then the answer is a denial (fail closed).
            if write_survives {
                assert_eq!(idx.modes(&path, 1), 2, "read: mode_not_granted, /a/* found after the budget");
            }
            // The wanted mode's grants are tried first: the hostile read grants cannot starve it.
            assert_eq!(idx.modes(&path, 2) & 2, 2);
            assert_eq!(idx.modes("/a/x", 2) & 2, 2);
        }
    }
}
