//! `diff`: does a new manifest grant authority the old one does not? Decided
//! on the compiled policies, per capability and mode (SPEC, CLI `diff`):
//! every request the new policy allows must be allowed by the old one.
//!
//! The answer is sound first: [`DiffReport::exit_code`] is 0 only when each
//! capability was proven to widen nothing; a widening is reported only with
//! a witness (a path and mode, a URL, a payload, a budget sample) that both
//! policies' own checkers were run on (the new allows it, the old denies it);
//! anything the engine cannot decide within its bounds is "unknown" (exit 2),
//! never "narrower".
//!
//! - **fs** (posix): the grant globs of one mode as automata over path
//!   segments, each segment pattern an automaton over characters. Inclusion
//!   of one new grant in the old grants of that mode (plus the new policy's
//!   own deny globs, as written) is a breadth-first search over pairs (new
//!   states, old state set), the subset construction done on the fly: at
//!   each step the segments are split into the classes the patterns in play
//!   tell apart (every literal segment is one class; the rest are found by a
//!   product walk over a character alphabet of the patterns' own boundaries).
//!   A state where the new side accepts and the old does not is a candidate
//!   path, then confirmed by both checkers. Deny globs of the old policy that
//!   the new one dropped are compared with every new grant over segments,
//!   reading each deny as broadly as its case and normalisation fold can
//!   make it (SPEC §10); an overlap is a widening only with a confirmed path,
//!   else unknown. win32 globs run through the same automata on NTFS
//!   upper-cased names, with the 8.3 rule (a short-name-shaped segment only
//!   matches a literal) as a component of the character product; a class
//!   (which folds per character) or a dropped win32 deny needs the same
//!   variants or a confirmed path, else unknown.
//! - **fetch**: each new pattern, per scheme, against the old patterns one by
//!   one (scheme, host exact or `*.suffix`, port, path scope); a `deny.fetch`
//!   rule the new policy dropped is a widening with a confirmed URL (for a
//!   CIDR block, a URL and a resolved address), else unknown.
//! - **secrets, topics, db**: exact (names, the topic covering relation, the
//!   database name); a destination-bound secret also needs its `hosts` and
//!   the fetch grants included.
//! - **budgets**: a larger limit, or none where there was one, widens.
//!
//! A check that reaches its step budget (`glob::MAX_MATCH_STEPS`) denies
//! what its globs would allow (fail closed). The diff compares what the globs
//! mean, so an old policy whose checks could reach that budget (bounded per
//! chain of directories, see `within_step_budget`) is unknown for fs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;

use serde_json::{json, Value};

use crate::error::BudgetKind;
use crate::fetch::{is_special_address, DenyFetch, FetchPattern, Host, HostPattern, PortRule, Scheme};
use crate::fs::{FsMode, GrantMode};
use crate::glob::{self, Atom, ClassFold, Seg, SegPattern};
use crate::platform::Platform;
use crate::policy::PermissionPolicy;
use crate::topic::{Segment, TopicPattern};
use crate::urlpath::PathSeg;

/// Most (new states, old states) pairs one fs inclusion search visits.
pub const MAX_FS_STATES: usize = 20_000;
/// Most character-level product states one segment split explores.
pub const MAX_SEGMENT_STATES: usize = 20_000;
/// Most candidate witnesses tried for one change before it is unknown.
const MAX_CANDIDATES: usize = 16;
/// Units of work one direction of a diff (the widening question, or the
/// narrowing one) may spend, about one match step, one state word stepped or
/// hashed, or one candidate compared each: the one bound that holds the
/// whole diff to about a second on any input. Past it, every part not yet
/// decided is unknown (exit 2), never "included". `lint`'s cover search
/// (`fs-grant-covered`) has a budget of its own of the same size.
pub const MAX_DIFF_WORK: u64 = 200_000_000;

/// The work budget of one diff direction (see [`MAX_DIFF_WORK`]).
#[derive(Debug)]
pub(crate) struct Work {
    left: std::cell::Cell<u64>,
    spent: std::cell::Cell<u64>,
}

impl Work {
    pub(crate) fn new(units: u64) -> Self {
        Self { left: std::cell::Cell::new(units), spent: std::cell::Cell::new(0) }
    }

    /// Spends `n` units; false (and the budget empty) when fewer are left.
    fn spend(&self, n: u64) -> bool {
        let left = self.left.get();
        self.spent.set(self.spent.get().saturating_add(n.min(left)));
        if left < n {
            self.left.set(0);
            return false;
        }
        self.left.set(left - n);
        true
    }

    fn exhausted(&self) -> bool {
        self.left.get() == 0
    }

    /// Units spent so far (for the tests that bound the work an input costs).
    #[cfg(test)]
    pub(crate) fn spent(&self) -> u64 {
        self.spent.get()
    }
}

/// Why a part is unknown when the work budget ran out.
fn past_work() -> String {
    format!("the diff reached its work bound ({MAX_DIFF_WORK} units) before deciding it")
}

/// A concrete request: what a witness asks both checkers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Witness {
    /// `checkFs(path, mode)`.
    Fs {
        /// The path.
        path: String,
        /// The mode.
        mode: FsMode,
    },
    /// `checkFetch(url)`, or with `resolved_ip` `checkFetchAddress(url, resolvedIp)`.
    Fetch {
        /// The URL.
        url: String,
        /// The address the name resolved to, for the address check.
        resolved_ip: Option<String>,
    },
    /// `checkCapability(id, payload)`.
    Capability {
        /// The capability id (`secrets.get`, `secrets.use`, `events.publish`, `events.subscribe`, `db.query`).
        id: &'static str,
        /// The payload.
        payload: Value,
    },
    /// A request that used `observed` of a budget: within the new limit, past the old one.
    Budget {
        /// Which budget.
        kind: BudgetKind,
        /// The amount used (in the budget's unit).
        observed: f64,
    },
}

impl Witness {
    /// Whether `policy`'s checker allows this request.
    #[must_use]
    pub fn allowed_by(&self, policy: &PermissionPolicy) -> bool {
        match self {
            Witness::Fs { path, mode } => policy.check_fs(path, *mode).is_allowed(),
            Witness::Fetch { url, resolved_ip: None } => policy.check_fetch(url).is_allowed(),
            Witness::Fetch { url, resolved_ip: Some(ip) } => policy.check_fetch_address(url, ip).is_ok(),
            Witness::Capability { id, payload } => policy.check_capability(id, payload).is_allowed(),
            Witness::Budget { kind, observed } => budget_limit(policy, *kind).is_none_or(|l| *observed <= l),
        }
    }

    /// `{ capability, path, mode }`, `{ capability: "fetch", url, resolvedIp? }`,
    /// `{ capability, payload }` or `{ capability: "budget", budget, observed }`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Witness::Fs { path, mode } => json!({
                "capability": mode.capability().as_str(),
                "path": path,
                "mode": if *mode == FsMode::Read { "read" } else { "write" },
            }),
            Witness::Fetch { url, resolved_ip: None } => json!({ "capability": "fetch", "url": url }),
            Witness::Fetch { url, resolved_ip: Some(ip) } => {
                json!({ "capability": "fetch", "url": url, "resolvedIp": ip })
            }
            Witness::Capability { id, payload } => json!({ "capability": id, "payload": payload }),
            Witness::Budget { kind, observed } => {
                json!({ "capability": "budget", "budget": kind.as_str(), "observed": observed })
            }
        }
    }
}

fn budget_limit(policy: &PermissionPolicy, kind: BudgetKind) -> Option<f64> {
    let b = policy.budgets();
    match kind {
        BudgetKind::CpuPercent => b.cpu_percent,
        BudgetKind::MemoryMb => b.memory_mb,
        BudgetKind::WallClockMs => b.wall_clock_ms,
    }
}

/// One change with the request that shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `fs`, `fetch`, `secrets`, `events`, `db` or `budgets`.
    pub section: &'static str,
    /// The JSON pointer of the grant or rule in the manifest that has it
    /// (the new manifest for a widening, the old one for a narrowing).
    pub pointer: String,
    /// What changed, in words.
    pub what: String,
    /// A request one policy allows and the other denies, confirmed on both.
    pub witness: Witness,
}

/// A part of the question the engine could not decide within its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// The section.
    pub section: &'static str,
    /// The JSON pointer in the new manifest (or the old one, for a dropped deny rule).
    pub pointer: String,
    /// Why.
    pub why: String,
}

/// What [`diff_policies`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiffReport {
    /// Requests the new policy allows and the old one denies, one per change.
    pub widens: Vec<Change>,
    /// Requests the old policy allowed and the new one denies, one per change.
    pub narrows: Vec<Change>,
    /// What could not be proven either way (only the widening question).
    pub unknown: Vec<Unknown>,
}

impl DiffReport {
    /// 0: nothing widens (proven); 1: something widens (with a confirmed
    /// witness); 2: not proven within the bounds and no widening found.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        if !self.widens.is_empty() {
            1
        } else if !self.unknown.is_empty() {
            2
        } else {
            0
        }
    }

    /// `{ exitCode, verdict, widens: [...], narrows: [...], unknown: [...] }`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let change = |c: &Change| json!({ "section": c.section, "pointer": c.pointer, "what": c.what, "witness": c.witness.to_json() });
        let verdict = ["no-new-authority", "widens", "unknown"][usize::from(self.exit_code())];
        json!({
            "exitCode": self.exit_code(),
            "verdict": verdict,
            "widens": self.widens.iter().map(change).collect::<Vec<_>>(),
            "narrows": self.narrows.iter().map(change).collect::<Vec<_>>(),
            "unknown": self.unknown.iter().map(|u| json!({ "section": u.section, "pointer": u.pointer, "why": u.why })).collect::<Vec<_>>(),
        })
    }
}

/// Compares two policies: what `new` allows that `old` does not (widens),
/// what `old` allowed that `new` does not (narrows), and what could not be
/// decided (unknown; only asked of the widening direction).
///
/// ```
/// use api_sandbox_permissions::diff::diff_policies;
/// use api_sandbox_permissions::{PermissionPolicy, Platform, PolicyOptions};
///
/// let opts = || PolicyOptions::new("p").platform(Platform::Posix);
/// let old = PermissionPolicy::from_json(r#"{ "fs": ["/srv/**"] }"#, opts())?;
/// let new = PermissionPolicy::from_json(r#"{ "fs": ["/srv/app/**"] }"#, opts())?;
/// let r = diff_policies(&old, &new);
/// assert_eq!(r.exit_code(), 0);
/// assert_eq!(r.narrows.len(), 1);
/// assert_eq!(diff_policies(&new, &old).exit_code(), 1);
/// # Ok::<(), api_sandbox_permissions::ManifestError>(())
/// ```
#[must_use]
pub fn diff_policies(old: &PermissionPolicy, new: &PermissionPolicy) -> DiffReport {
    let (o, n) = (step_bounds(old), step_bounds(new));
    let forward = widenings(old, new, true, &Work::new(MAX_DIFF_WORK), [&o, &n]);
    let backward = widenings(new, old, false, &Work::new(MAX_DIFF_WORK), [&n, &o]);
    DiffReport { widens: forward.found, narrows: backward.found, unknown: forward.unknown }
}

/// The widenings of `new` over `old`, each confirmed, and what stayed unknown.
#[derive(Default)]
struct Findings {
    found: Vec<Change>,
    unknown: Vec<Unknown>,
}

struct Ctx<'a> {
    old: &'a PermissionPolicy,
    new: &'a PermissionPolicy,
    /// Asked the widening question (else the narrowing one, old and new swapped).
    forward: bool,
    out: Findings,
    work: &'a Work,
    /// What one fs check of both policies may cost, in work units ([`check_cost`]).
    fs_check_cost: u64,
    /// What one capability check of both policies may cost: topic patterns
    /// and bound-secret hosts are each compared in turn.
    cap_check_cost: u64,
    /// No fs check of the old policy can stop at its step budget ([`StepBounds`]).
    old_within: bool,
}

impl Ctx<'_> {
    /// The words of a change: as a widening, or (asked backwards) as a narrowing.
    fn say(&self, widening: String, narrowing: String) -> String {
        if self.forward {
            widening
        } else {
            narrowing
        }
    }

    /// Whether `w` is a widening: the new policy allows it, the old denies it.
    /// `None` when the work budget cannot pay for the two checks.
    fn confirms(&self, w: &Witness) -> Option<bool> {
        let cost = match w {
            Witness::Fs { path, .. } => self.fs_check_cost + 2 * path.len() as u64,
            Witness::Fetch { url, .. } => 256 + 2 * url.len() as u64,
            Witness::Capability { .. } => self.cap_check_cost,
            Witness::Budget { .. } => 256,
        };
        if !self.work.spend(cost) {
            return None;
        }
        Some(w.allowed_by(self.new) && !w.allowed_by(self.old))
    }

    /// Reports the first candidate both checkers confirm; false when none does.
    fn first_confirmed(
        &mut self,
        section: &'static str,
        pointer: &str,
        what: &str,
        candidates: impl IntoIterator<Item = Witness>,
    ) -> bool {
        for w in candidates.into_iter().take(MAX_CANDIDATES * 16) {
            match self.confirms(&w) {
                Some(true) => {
                    self.out.found.push(Change {
                        section,
                        pointer: pointer.to_owned(),
                        what: what.to_owned(),
                        witness: w,
                    });
                    return true;
                }
                Some(false) => {}
                None => return false,
            }
        }
        false
    }

    fn unknown(&mut self, section: &'static str, pointer: &str, why: String) {
        self.out.unknown.push(Unknown { section, pointer: pointer.to_owned(), why });
    }
}

/// The widenings of `new` over `old`; `bounds`: the two policies' [`StepBounds`], old first.
fn widenings(
    old: &PermissionPolicy,
    new: &PermissionPolicy,
    forward: bool,
    work: &Work,
    bounds: [&StepBounds; 2],
) -> Findings {
    let fs_check_cost = bounds[0].check_cost.saturating_add(bounds[1].check_cost);
    let listed = |p: &PermissionPolicy| {
        let hosts: usize = p.secrets().iter().filter_map(|n| p.bound_secret(n)).map(|b| b.hosts().len()).sum();
        (p.publishes().len() + p.subscribes().len() + hosts) as u64
    };
    let cap_check_cost = 256 + 16 * (listed(old) + listed(new));
    let mut cx = Ctx {
        old,
        new,
        forward,
        out: Findings::default(),
        work,
        fs_check_cost,
        cap_check_cost,
        old_within: bounds[0].within,
    };
    fs_widenings(&mut cx);
    fetch_widenings(&mut cx);
    secret_widenings(&mut cx);
    topic_widenings(&mut cx);
    db_widenings(&mut cx);
    budget_widenings(&mut cx);
    cx.out
}

// ---------------------------------------------------------------- fs

/// One segment of a flattened glob variant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum El {
    Lit(String),
    Pat(SegPattern),
    Rec,
}

/// A glob variant as a list of segment elements (its literal prefix split
/// into literal segments; on win32 the drive, `C:`, first). `None` for a
/// class that folds (win32 classes, posix deny folding): those are not
/// modelled here.
fn flatten(g: &glob::ParsedGlob, win32: bool) -> Option<Vec<El>> {
    let root_len = if win32 { 2 } else { 0 };
    let mut els: Vec<El> = Vec::new();
    if win32 {
        els.push(El::Lit(g.prefix.get(..2)?.to_owned()));
    }
    els.extend(g.prefix.get(root_len..)?.split('/').skip(1).map(|l| El::Lit(l.to_owned())));
    for s in &g.rest {
        match s {
            Seg::Rec => els.push(El::Rec),
            Seg::Pat(p) => {
                if p.atoms().iter().any(|a| matches!(a, Atom::Class { fold, .. } if *fold != ClassFold::Exact)) {
                    return None;
                }
                if p.is_literal() {
                    els.push(El::Lit(p.literal()));
                } else {
                    els.push(El::Pat(p.clone()));
                }
            }
        }
    }
    Some(els)
}

fn parse_variants(globs: &str, platform: Platform) -> Vec<glob::ParsedGlob> {
    let syntax = if platform == Platform::Win32 { glob::Syntax::WIN32 } else { glob::Syntax::POSIX };
    // Every glob of a compiled policy parsed when the policy was built.
    glob::parse(globs, syntax).unwrap_or_default()
}

/// A state: variant index (high 32 bits) and position (low 32 bits).
type St = u64;

fn st(v: usize, i: usize) -> St {
    ((v as u64) << 32) | i as u64
}

fn st_parts(s: St) -> (usize, usize) {
    ((s >> 32) as usize, (s & 0xffff_ffff) as usize)
}

/// What one segment edge accepts.
#[derive(Clone, Copy)]
enum M<'a> {
    Lit(&'a str),
    Pat(&'a [Atom]),
    Any,
}

/// The segment automaton of a list of variants.
struct Nfa<'a> {
    vars: &'a [&'a [El]],
}

impl<'a> Nfa<'a> {
    /// Adds what a non-final `**` reaches without a segment; sorts and dedups.
    fn close(&self, set: &mut Vec<St>) {
        let mut i = 0;
        while i < set.len() {
            let (v, p) = st_parts(set[i]);
            let els = &self.vars[v];
            if p + 1 < els.len() && matches!(els[p], El::Rec) {
                set.push(st(v, p + 1));
            }
            i += 1;
        }
        set.sort_unstable();
        set.dedup();
    }

    fn start(&self) -> Vec<St> {
        let mut s: Vec<St> = (0..self.vars.len()).map(|v| st(v, 0)).collect();
        self.close(&mut s);
        s
    }

    fn accepts(&self, s: St) -> bool {
        let (v, p) = st_parts(s);
        p == self.vars[v].len()
    }

    /// The edge out of `s`, if any: what it reads and where it goes.
    fn edge(&self, s: St) -> Option<(M<'a>, St)> {
        let (v, p) = st_parts(s);
        let els = &self.vars[v];
        match els.get(p) {
            Some(El::Lit(l)) => Some((M::Lit(l), st(v, p + 1))),
            Some(El::Pat(q)) => Some((M::Pat(q.atoms()), st(v, p + 1))),
            Some(El::Rec) if p + 1 < els.len() => Some((M::Any, s)),
            Some(El::Rec) => Some((M::Any, st(v, p + 1))),
            None if p > 0 && matches!(els[p - 1], El::Rec) => Some((M::Any, s)),
            None => None,
        }
    }
}

fn class_hit(a: &Atom, c: char) -> bool {
    match a {
        Atom::Char(x) => *x == c,
        Atom::Any => true,
        Atom::Star => false,
        Atom::Class { negated, ranges, .. } => ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated,
    }
}

/// The positions set in `bits`, in increasing order.
fn set_bits(bits: &[u64]) -> impl Iterator<Item = usize> + '_ {
    bits.iter().enumerate().flat_map(|(w, &word)| {
        let mut word = word;
        std::iter::from_fn(move || {
            if word == 0 {
                return None;
            }
            let b = word.trailing_zeros() as usize;
            word &= word - 1;
            Some(w * 64 + b)
        })
    })
}

fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// Position sets of a segment pattern (bit `i`: `i` atoms matched): adds
/// what a `*` reaches without a character. Consecutive stars are one in a
/// parsed pattern, so one pass over the positions already set is enough.
fn pat_close(atoms: &[Atom], bits: &mut [u64]) {
    let stars: Vec<usize> = set_bits(bits).filter(|&i| atoms.get(i) == Some(&Atom::Star)).collect();
    for i in stars {
        set_bit(bits, i + 1);
    }
}

fn pat_words(atoms: &[Atom]) -> usize {
    atoms.len() / 64 + 1
}

fn pat_start(atoms: &[Atom]) -> Vec<u64> {
    let mut b = vec![0u64; pat_words(atoms)];
    b[0] = 1;
    pat_close(atoms, &mut b);
    b
}

/// One character: the positions `c` moves `bits` to. Costs the positions
/// set, not the pattern's length (most of a long literal pattern is dead).
fn pat_step(atoms: &[Atom], bits: &[u64], c: char, out: &mut [u64]) {
    out.iter_mut().for_each(|w| *w = 0);
    for i in set_bits(bits) {
        match atoms.get(i) {
            Some(Atom::Star) => set_bit(out, i),
            Some(a) if class_hit(a, c) => set_bit(out, i + 1),
            _ => {}
        }
    }
    pat_close(atoms, out);
}

fn pat_accepts(atoms: &[Atom], bits: &[u64]) -> bool {
    let n = atoms.len();
    bits[n / 64] >> (n % 64) & 1 == 1
}

/// Whether a segment pattern matches `s` (a simulation of its automaton).
fn pat_matches(atoms: &[Atom], s: &str) -> bool {
    let mut cur = pat_start(atoms);
    let mut next = cur.clone();
    for c in s.chars() {
        pat_step(atoms, &cur, c, &mut next);
        std::mem::swap(&mut cur, &mut next);
        if cur.iter().all(|w| *w == 0) {
            return false;
        }
    }
    pat_accepts(atoms, &cur)
}

fn m_matches(m: M<'_>, s: &str) -> bool {
    match m {
        M::Lit(l) => l == s,
        M::Pat(a) => pat_matches(a, s),
        M::Any => true,
    }
}

/// A path segment: non-empty, not `.` or `..`, no `/` or NUL.
fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\0'])
}

/// The interval bounds every segment alphabet has: NUL, `.`, `/`, the
/// digits' start and the surrogates (never a representative: `/`, NUL, a surrogate).
const BASE_BOUNDS: [u32; 8] = [0, 1, 0x2E, 0x2F, 0x30, 0xD800, 0xE000, 0x11_0000];

/// Adds the bounds an atom tells apart: a literal character is an interval
/// of its own, a class's ranges are intervals.
fn atom_bounds(a: &Atom, b: &mut Vec<u32>) {
    match a {
        Atom::Char(c) => {
            b.push(*c as u32);
            b.push(*c as u32 + 1);
        }
        Atom::Class { ranges, .. } => {
            for &(lo, hi) in ranges {
                b.push(lo as u32);
                b.push(hi as u32 + 1);
            }
        }
        _ => {}
    }
}

const NICE: &str = "xwyzvabcdefghijklmnopqrstuXWYZ0123456789-_";

/// One representative character per interval between consecutive `bounds`
/// (sorted and deduplicated here; [`BASE_BOUNDS`] included by the caller):
/// never `/`, NUL or a surrogate; readable ones first.
fn representatives(bounds: &mut Vec<u32>, win32: bool) -> Vec<char> {
    bounds.sort_unstable();
    bounds.dedup();
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        if lo == 0 || lo == 0x2F || (0xD800..0xE000).contains(&lo) {
            continue;
        }
        // win32 paths are compared upper-cased: prefer a character NTFS keeps as it is.
        let fixed = |c: &char| !win32 || crate::ntfs_upcase::upcase(*c) == *c;
        let pick = NICE
            .chars()
            .find(|c| (lo..hi).contains(&(*c as u32)) && fixed(c))
            .or_else(|| (lo..hi.min(lo + 64)).filter_map(char::from_u32).find(fixed))
            .or_else(|| char::from_u32(lo));
        if let Some(c) = pick {
            out.push(c);
        }
    }
    // Readable witnesses first: the walk is breadth-first in this order.
    out.sort_by_key(|c| NICE.find(*c).unwrap_or(usize::MAX));
    out
}

/// Characters the 8.3 shape test tells apart (`~`, the ASCII digits, `.`).
const SHORT_BOUNDS: [Atom; 4] = [Atom::Char('~'), Atom::Char('0'), Atom::Char('9'), Atom::Char('.')];

/// The 8.3 shape of a name read so far ([`glob::is_short_name_shape`]), in
/// one word: base length (bits 0-3, 9 = too long), after the first `.`
/// (bit 4), extension length (bits 5-7, 4 = too long), a `~` and a digit
/// seen in the base (bit 8), the last base character a `~` (bit 9).
fn short_step(state: u64, c: char) -> u64 {
    let (mut base, mut ext_on, mut ext, mut seen, mut tilde) =
        (state & 15, state >> 4 & 1, state >> 5 & 7, state >> 8 & 1, state >> 9 & 1);
    if ext_on == 0 {
        if c == '.' {
            ext_on = 1;
            tilde = 0;
        } else {
            base = (base + 1).min(9);
            if tilde == 1 && c.is_ascii_digit() {
                seen = 1;
            }
            tilde = u64::from(c == '~');
        }
    } else {
        ext = (ext + 1).min(4);
    }
    base | ext_on << 4 | ext << 5 | seen << 8 | tilde << 9
}

fn short_accepts(state: u64) -> bool {
    let (base, ext, seen) = (state & 15, state >> 5 & 7, state >> 8 & 1);
    base <= 8 && ext <= 3 && seen == 1
}

/// The segment classes a step must tell apart: per class, which edges
/// match its segments, with one segment of it.
struct Split {
    /// (segment, indices of matching edges)
    classes: Vec<(String, Vec<usize>)>,
}

/// Whether two segment patterns can match no name in common because the
/// characters both fix at the start (or both fix at the end) differ.
fn disjoint_ends(a: &[Atom], b: &[Atom]) -> bool {
    let fixed = |x: &Atom| if let Atom::Char(c) = x { Some(*c) } else { None };
    let differ = |i: &mut dyn Iterator<Item = (&Atom, &Atom)>| {
        i.map_while(|(x, y)| Some((fixed(x)?, fixed(y)?))).any(|(x, y)| x != y)
    };
    differ(&mut a.iter().zip(b)) || differ(&mut a.iter().rev().zip(b.iter().rev()))
}

/// Splits the segments into classes by which of `edges` match them. Every
/// class with at least one edge flagged in `wanted` is listed (the classes
/// no wanted edge matches are left out); an error past
/// [`MAX_SEGMENT_STATES`] or the work budget.
fn split(edges: &[(M<'_>, St)], wanted: &[bool], win32: bool, work: &Work) -> Result<Split, String> {
    let mut classes: Vec<(String, Vec<usize>)> = Vec::new();
    // Literal edges by their text; the others (patterns, `**`) are tried on each literal.
    let mut lit_edges: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut wild_edges: Vec<usize> = Vec::new();
    for (i, (m, _)) in edges.iter().enumerate() {
        match m {
            M::Lit(l) => lit_edges.entry(*l).or_default().push(i),
            _ => wild_edges.push(i),
        }
    }
    if !work.spend(edges.len() as u64 + 1) {
        return Err(past_work());
    }
    let wanted_wild = wild_edges.iter().any(|&i| wanted[i]);
    // One literal against every wildcard edge: about this many steps per character.
    let wild_cost: u64 = wild_edges
        .iter()
        .map(|&i| match edges[i].0 {
            M::Pat(a) => a.len() as u64 + 1,
            _ => 1,
        })
        .sum();
    // Literal segments: one class each (those no wanted edge can match are
    // skipped). Sorted: the search, and so every witness, is deterministic.
    let mut lit_list: Vec<&str> =
        lit_edges.iter().filter(|(_, es)| wanted_wild || es.iter().any(|&i| wanted[i])).map(|(l, _)| *l).collect();
    lit_list.sort_unstable();
    for l in lit_list {
        if !valid_segment(l) {
            continue;
        }
        let mut hit: Vec<usize> = lit_edges[l].clone();
        // win32: a name shaped like an 8.3 short name is matched by literal segments only.
        if !(win32 && glob::is_short_name_shape(l)) {
            if !work.spend(wild_cost.saturating_mul(l.len() as u64 + 1)) {
                return Err(past_work());
            }
            hit.extend(wild_edges.iter().copied().filter(|&i| m_matches(edges[i].0, l)));
            hit.sort_unstable();
        }
        if hit.iter().any(|&i| wanted[i]) {
            classes.push((l.to_owned(), hit));
        }
    }
    if !wanted_wild {
        return Ok(Split { classes });
    }
    // The other segments: a product walk over the distinct wildcard
    // patterns, a trie of the literals (a class of non-literal segments
    // never ends on one) and the segment's validity.
    //
    // A wanted `**` matches every segment: then every class matters. Else a
    // state where every wanted pattern is dead (no position set) leads to
    // no class a wanted edge matches, and is not walked on; and a pattern
    // whose fixed first or last characters differ from every wanted
    // pattern's matches no segment a wanted one does, so it is left out of
    // the walk (it matches none of the classes listed).
    let wanted_any = wild_edges.iter().any(|&i| wanted[i] && matches!(edges[i].0, M::Any));
    let wanted_atoms: Vec<&[Atom]> = edges
        .iter()
        .zip(wanted)
        .filter_map(|((m, _), w)| if let (M::Pat(a), true) = (m, *w) { Some(*a) } else { None })
        .collect();
    let outside = |a: &[Atom]| !wanted_any && wanted_atoms.iter().all(|w| disjoint_ends(a, w));
    const NEVER: usize = usize::MAX;
    let mut pats: Vec<&[Atom]> = Vec::new();
    let mut pat_of: Vec<Option<usize>> = Vec::with_capacity(edges.len());
    for ((m, _), w) in edges.iter().zip(wanted) {
        pat_of.push(match m {
            M::Pat(a) if !*w && outside(a) => Some(NEVER),
            M::Pat(a) => Some(match pats.iter().position(|p| p == a) {
                Some(i) => i,
                None => {
                    pats.push(a);
                    pats.len() - 1
                }
            }),
            _ => None,
        });
    }
    let mut wanted_pat = vec![false; pats.len()];
    for (e, p) in pat_of.iter().enumerate() {
        if let (Some(p), true) = (p, wanted[e]) {
            wanted_pat[*p] = true;
        }
    }
    let mut trie: Vec<(HashMap<char, usize>, bool)> = vec![(HashMap::new(), false)];
    for l in lit_edges.keys() {
        let mut at = 0;
        for c in l.chars() {
            at = match trie[at].0.get(&c) {
                Some(&n) => n,
                None => {
                    trie.push((HashMap::new(), false));
                    let n = trie.len() - 1;
                    trie[at].0.insert(c, n);
                    n
                }
            };
        }
        trie[at].1 = true;
    }
    let offsets: Vec<usize> = pats
        .iter()
        .scan(0, |o, p| {
            let at = *o;
            *o += pat_words(p);
            Some(at)
        })
        .collect();
    const DEAD: u64 = u64::MAX;
    // Layout: the patterns' position sets, then the 8.3 shape (see `short_step`),
    // validity (0 empty, 1 ".", 2 "..", 3 a name), then the trie node.
    let width: usize = pats.iter().map(|p| pat_words(p)).sum::<usize>() + 3;
    let mut start = Vec::with_capacity(width);
    for p in &pats {
        start.extend(pat_start(p));
    }
    start.push(0);
    start.push(0);
    start.push(0);
    let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut states: Vec<Vec<u64>> = vec![start.clone()];
    let mut parent: Vec<(usize, char)> = vec![(usize::MAX, '\0')];
    index.insert(start, 0);
    let mut queue = VecDeque::from([0usize]);
    // signature (which patterns accept) -> a state reaching it
    let mut sigs: HashMap<Vec<bool>, usize> = HashMap::new();
    let text = |mut i: usize, parent: &Vec<(usize, char)>| {
        let mut cs = Vec::new();
        while parent[i].0 != usize::MAX {
            cs.push(parent[i].1);
            i = parent[i].0;
        }
        cs.into_iter().rev().collect::<String>()
    };
    let alive_in = |cur: &[u64], p: usize| cur[offsets[p]..offsets[p] + pat_words(pats[p])].iter().any(|w| *w != 0);
    let mut bounds: Vec<u32> = Vec::new();
    while let Some(i) = queue.pop_front() {
        let cur = states[i].clone();
        let alive: Vec<usize> = (0..pats.len()).filter(|&p| alive_in(&cur, p)).collect();
        if !wanted_any && !alive.iter().any(|&p| wanted_pat[p]) {
            continue;
        }
        let node = cur[width - 1];
        let short = win32 && short_accepts(cur[width - 3]);
        if cur[width - 2] == 3 && (node == DEAD || !trie[node as usize].1) && !short {
            let sig: Vec<bool> =
                pats.iter().zip(&offsets).map(|(p, &o)| pat_accepts(p, &cur[o..o + pat_words(p)])).collect();
            sigs.entry(sig).or_insert(i);
        }
        // The characters this state tells apart: the atoms at the positions
        // set, the trie node's children, `.`, and (win32) the 8.3 shape's.
        bounds.clear();
        bounds.extend(BASE_BOUNDS);
        if win32 {
            SHORT_BOUNDS.iter().for_each(|a| atom_bounds(a, &mut bounds));
        }
        let mut live_bits = 0u64;
        for &p in &alive {
            let o = offsets[p];
            for pos in set_bits(&cur[o..o + pat_words(pats[p])]) {
                live_bits += 1;
                if let Some(a) = pats[p].get(pos) {
                    atom_bounds(a, &mut bounds);
                }
            }
        }
        if node != DEAD {
            for c in trie[node as usize].0.keys() {
                bounds.push(*c as u32);
                bounds.push(*c as u32 + 1);
            }
        }
        let sigma = representatives(&mut bounds, win32);
        if !work.spend((sigma.len() as u64 + 1) * (width as u64 + live_bits + bounds.len() as u64)) {
            return Err(past_work());
        }
        for &c in &sigma {
            let mut next = vec![0u64; width];
            for &p in &alive {
                let (o, w) = (offsets[p], pat_words(pats[p]));
                pat_step(pats[p], &cur[o..o + w], c, &mut next[o..o + w]);
            }
            let v = cur[width - 2];
            next[width - 2] = if c == '.' { [1, 2, 3, 3][v as usize] } else { 3 };
            next[width - 3] = if win32 { short_step(cur[width - 3], c) } else { 0 };
            next[width - 1] =
                if node == DEAD { DEAD } else { trie[node as usize].0.get(&c).map_or(DEAD, |&n| n as u64) };
            if !index.contains_key(&next) {
                if states.len() >= MAX_SEGMENT_STATES {
                    return Err(format!("a segment split past {MAX_SEGMENT_STATES} states"));
                }
                index.insert(next.clone(), states.len());
                states.push(next);
                parent.push((i, c));
                queue.push_back(states.len() - 1);
            }
        }
    }
    let mut sigs: Vec<(Vec<bool>, usize)> = sigs.into_iter().collect();
    if !work.spend((sigs.len() as u64).saturating_mul(edges.len() as u64)) {
        return Err(past_work());
    }
    sigs.sort_unstable_by_key(|(_, i)| *i);
    for (sig, i) in sigs {
        let hit: Vec<usize> = (0..edges.len())
            .filter(|&e| match edges[e].0 {
                M::Any => true,
                M::Pat(_) => pat_of[e].is_some_and(|p| p != NEVER && sig[p]),
                M::Lit(_) => false,
            })
            .collect();
        if hit.iter().any(|&e| wanted[e]) {
            classes.push((text(i, &parent), hit));
        }
    }
    Ok(Split { classes })
}

/// The outcome of one inclusion search.
enum Inclusion {
    /// Every path the new variants match, some old variant matches.
    Included,
    /// Paths the new variants match and no old variant does (candidates, shortest first).
    Outside(Vec<String>),
    /// Past a bound.
    Unknown(String),
}

/// The path of a list of segments (on win32 the first is the drive).
fn path_of(segs: &[String], win32: bool) -> String {
    match (win32, segs) {
        (true, [drive]) => format!("{drive}/"),
        (true, _) => segs.join("/"),
        (false, _) => format!("/{}", segs.join("/")),
    }
}

/// A search node: (new states, old states), its parent and the segment read from it.
type Node = ((Vec<St>, Vec<St>), usize, String);

/// Whether every path the `new` variants match is matched by an `old` one;
/// else up to [`MAX_CANDIDATES`] paths outside.
fn included(new: &[&[El]], old: &[&[El]], win32: bool, work: &Work) -> Inclusion {
    let (nn, on) = (Nfa { vars: new }, Nfa { vars: old });
    let start = (nn.start(), on.start());
    if !work.spend((start.0.len() + start.1.len()) as u64 + 1) {
        return Inclusion::Unknown(past_work());
    }
    let mut index: HashMap<(Vec<St>, Vec<St>), usize> = HashMap::new();
    let mut nodes: Vec<Node> = vec![(start.clone(), usize::MAX, String::new())];
    index.insert(start, 0);
    let mut queue = VecDeque::from([0usize]);
    let mut outside = Vec::new();
    let segs_of = |mut i: usize, nodes: &Vec<Node>| {
        let mut segs = Vec::new();
        while nodes[i].1 != usize::MAX {
            segs.push(nodes[i].2.clone());
            i = nodes[i].1;
        }
        segs.reverse();
        segs
    };
    while let Some(i) = queue.pop_front() {
        let (ns, os) = nodes[i].0.clone();
        if ns.iter().any(|&s| nn.accepts(s)) && !os.iter().any(|&s| on.accepts(s)) {
            outside.push(path_of(&segs_of(i, &nodes), win32));
            if outside.len() >= MAX_CANDIDATES {
                break;
            }
        }
        let mut edges: Vec<(M<'_>, St)> = Vec::new();
        let mut wanted = Vec::new();
        for &s in &ns {
            if let Some(e) = nn.edge(s) {
                edges.push(e);
                wanted.push(true);
            }
        }
        let n_new = edges.len();
        for &s in &os {
            if let Some(e) = on.edge(s) {
                edges.push(e);
                wanted.push(false);
            }
        }
        let sp = match split(&edges, &wanted, win32, work) {
            Ok(sp) => sp,
            Err(why) => return Inclusion::Unknown(why),
        };
        for (seg, hit) in sp.classes {
            let mut n2: Vec<St> = hit.iter().filter(|&&e| e < n_new).map(|&e| edges[e].1).collect();
            let mut o2: Vec<St> = hit.iter().filter(|&&e| e >= n_new).map(|&e| edges[e].1).collect();
            nn.close(&mut n2);
            on.close(&mut o2);
            if !work.spend((n2.len() + o2.len() + seg.len()) as u64 + 1) {
                return Inclusion::Unknown(past_work());
            }
            let key = (n2, o2);
            if !index.contains_key(&key) {
                if nodes.len() >= MAX_FS_STATES {
                    return Inclusion::Unknown(format!("more than {MAX_FS_STATES} states"));
                }
                index.insert(key.clone(), nodes.len());
                nodes.push((key, i, seg));
                queue.push_back(nodes.len() - 1);
            }
        }
    }
    if outside.is_empty() {
        Inclusion::Included
    } else {
        Inclusion::Outside(outside)
    }
}

/// Whether a new grant's segment `p` and an old deny's segment `d` may
/// name one path segment, reading the deny as broadly as its fold can
/// (case, Unicode normalisation, HFS+ ignorables): an over-approximation,
/// exact only for ASCII literals.
fn may_meet(p: M<'_>, d: M<'_>) -> bool {
    let ascii_pat = |a: &[Atom]| a.iter().all(|x| !matches!(x, Atom::Char(c) if !c.is_ascii()));
    match (p, d) {
        (M::Lit(a), M::Lit(b)) => !(a.is_ascii() && b.is_ascii()) || a.eq_ignore_ascii_case(b),
        (M::Lit(a), M::Pat(q)) if a.is_ascii() && ascii_pat(q) => {
            // The deny's literals in lower case, its classes read as `?`.
            let lowered: Vec<Atom> = q
                .iter()
                .map(|x| match x {
                    Atom::Char(c) => Atom::Char(c.to_ascii_lowercase()),
                    Atom::Class { .. } => Atom::Any,
                    other => other.clone(),
                })
                .collect();
            pat_matches(&lowered, &a.to_ascii_lowercase())
        }
        _ => true,
    }
}

/// A segment both `p` and `d` match exactly, if one is found.
fn meeting(p: M<'_>, d: M<'_>, work: &Work) -> Option<String> {
    match (p, d) {
        (M::Lit(a), _) => Some(a.to_owned()),
        (_, M::Lit(b)) => Some(b.to_owned()),
        (M::Any, M::Any) => Some("x".to_owned()),
        _ => {
            let edges = [(p, 0), (d, 0)];
            let sp = split(&edges, &[true, true], false, work).ok()?;
            sp.classes.into_iter().find(|(_, hit)| hit.len() == 2).map(|(s, _)| s)
        }
    }
}

/// Paths a new grant variant and an old deny variant may both name, over
/// segments, with [`may_meet`] per segment: `None` when they cannot meet;
/// else candidate paths (maybe none, when no segment was found exactly, or
/// when the work budget ran out: they may meet).
fn deny_overlap(grant: &[&[El]], deny: &[&[El]], work: &Work) -> Option<Vec<String>> {
    let (gn, dn) = (Nfa { vars: grant }, Nfa { vars: deny });
    let mut met = false;
    let mut found = Vec::new();
    for gs in gn.start() {
        for ds in dn.start() {
            // Depth-first over (grant state, deny state), each pair once.
            let mut seen: HashSet<(St, St)> = HashSet::new();
            type Item = (St, St, Vec<Option<String>>);
            let mut stack: Vec<Item> = Vec::new();
            let mut push = |a: St, b: St, segs: Vec<Option<String>>, stack: &mut Vec<Item>, truncated: &mut bool| {
                let mut sa = vec![a];
                gn.close(&mut sa);
                let mut sb = vec![b];
                dn.close(&mut sb);
                for &x in &sa {
                    for &y in &sb {
                        if seen.len() >= MAX_FS_STATES || !work.spend(segs.len() as u64 + 1) {
                            // Past the bound: they may meet (never "they cannot").
                            *truncated = true;
                        } else if seen.insert((x, y)) {
                            stack.push((x, y, segs.clone()));
                        }
                    }
                }
            };
            let mut truncated = false;
            push(gs, ds, Vec::new(), &mut stack, &mut truncated);
            while let Some((a, b, segs)) = stack.pop() {
                if gn.accepts(a) && dn.accepts(b) {
                    met = true;
                    if let Some(s) = segs.iter().cloned().collect::<Option<Vec<String>>>() {
                        found.push(path_of(&s, false));
                        if found.len() >= MAX_CANDIDATES {
                            return Some(found);
                        }
                    }
                }
                if let (Some((pm, pa)), Some((dm, db))) = (gn.edge(a), dn.edge(b)) {
                    if may_meet(pm, dm) {
                        let mut s2 = segs.clone();
                        s2.push(meeting(pm, dm, work));
                        push(pa, db, s2, &mut stack, &mut truncated);
                    }
                }
            }
            if truncated {
                return Some(found);
            }
        }
    }
    met.then_some(found)
}

fn grant_modes(m: GrantMode) -> &'static [FsMode] {
    match m {
        GrantMode::Read => &[FsMode::Read],
        GrantMode::Write => &[FsMode::Write],
        GrantMode::ReadWrite => &[FsMode::Read, FsMode::Write],
    }
}

fn mode_name(m: FsMode) -> &'static str {
    if m == FsMode::Read {
        "read"
    } else {
        "write"
    }
}

/// Most path segments a checked path has (a 4096-byte path of one-byte names).
const MAX_PATH_SEGMENTS: u64 = (crate::fs::MAX_PATH_BYTES as u64).div_ceil(2) + 1;

/// How many times longer in UTF-8 bytes a path may get in the spellings a
/// posix check matches deny globs in ([`crate::posix_fold::fold`] and
/// [`crate::posix_fold::OTHER_FORMS`]): 3 (`\u{1D160}`, 4 bytes, is 12
/// folded; `ΐ`, 2 bytes, is 6 decomposed). Pinned for every character by a
/// test below.
const FOLD_EXPANSION: u64 = 3;

/// The same on win32, in halves: NTFS upper case maps a character to one
/// character, at most one byte longer than a two-byte one (`ɐ` to `Ɐ`).
const NTFS_EXPANSION_HALVES: u64 = 3;

/// The bytes a literal character costs the matcher: its UTF-8 bytes, or
/// with `fold` the most its folded spellings take ([`FOLD_EXPANSION`] times
/// for a non-ASCII character; ASCII folds to one byte).
fn char_bytes(c: char, fold: bool) -> u64 {
    if fold && !c.is_ascii() {
        FOLD_EXPANSION * c.len_utf8() as u64
    } else {
        c.len_utf8() as u64
    }
}

/// The steps a run of atoms costs the matcher: a literal run is compared
/// and searched for by bytes, one step per byte; any other run one step per
/// atom (with `fold`, per atom of its longest folded spelling).
fn chunk_steps(c: &[Atom], fold: bool) -> u64 {
    c.iter().map(|a| if let Atom::Char(ch) = a { char_bytes(*ch, fold) } else { 1 }).sum()
}

/// Atoms a run may have once folded: a character folds to at most its
/// folded bytes in characters (`ᾂ`, 3 bytes, is 4 characters decomposed).
fn chunk_atoms(c: &[Atom], fold: bool) -> u64 {
    c.iter()
        .map(|a| {
            if let Atom::Char(ch) = a {
                if fold {
                    char_bytes(*ch, true)
                } else {
                    1
                }
            } else {
                1
            }
        })
        .sum()
}

/// Match steps one segment pattern may spend on one name of `l` bytes: a
/// fixed part and a part per byte of the name (`matches` in the glob
/// module: the first run at the start, the last at the end, the runs
/// between found left to right, each name position scanned once by one of
/// them). Counted in the matcher's unit: bytes for literal runs, atoms for
/// the others; with `fold`, as the pattern's folded spellings may count.
/// `None`: a wildcard run between stars longer than
/// [`glob::MAX_FREE_WILD_RUN`] atoms, which may exhaust its own budget and
/// then not match (fail closed).
fn pattern_steps(p: &SegPattern, fold: bool) -> Option<(u64, u64)> {
    let atoms = p.atoms();
    if atoms == [Atom::Star] {
        return Some((0, 0));
    }
    let chunks: Vec<&[Atom]> = atoms.split(|a| *a == Atom::Star).collect();
    if chunks.len() == 1 {
        return Some((1 + chunk_steps(chunks[0], fold), 0));
    }
    let middle = &chunks[1..chunks.len() - 1];
    let mut per = 0u64;
    for c in middle {
        let literal = c.iter().all(|a| matches!(a, Atom::Char(_)));
        let n = chunk_atoms(c, fold);
        if !literal && n > glob::MAX_FREE_WILD_RUN as u64 {
            return None;
        }
        per = per.max(if literal { 1 } else { n + 1 });
    }
    let last = chunks[chunks.len() - 1];
    let fixed = 2
        + chunk_steps(chunks[0], fold)
        + chunk_atoms(last, fold)
        + chunk_steps(last, fold)
        + middle.iter().map(|c| chunk_steps(c, fold)).sum::<u64>();
    Some((fixed, per))
}

/// Match steps one variant may spend in one check of a path of at most `l`
/// bytes (its segment walk included).
fn variant_steps(g: &glob::ParsedGlob, l: u64, fold: bool) -> Option<u64> {
    let n = MAX_PATH_SEGMENTS;
    if g.rest.len() <= 1 && g.rest.iter().all(|s| *s == Seg::Rec) {
        return Some(0);
    }
    let recursive = g.rest.contains(&Seg::Rec);
    let mut steps = if recursive { g.rest.len() as u64 * (n + 1) } else { 0 };
    for s in &g.rest {
        if let Seg::Pat(p) = s {
            let (fixed, per) = pattern_steps(p, fold)?;
            steps += if recursive { n * fixed + per * (l + n) } else { fixed + per * l };
        }
    }
    Some(steps)
}

/// An upper bound on the match steps checking one glob (every brace
/// variant, as a grant or, with `deny`, as a deny rule in each spelling a
/// check walks) against one path of `path_bytes` bytes costs; `u64::MAX`
/// for a glob that does not parse or may give up on its own. For `explain`,
/// which matches grants one by one.
pub(crate) fn glob_check_steps(glob: &str, platform: Platform, path_bytes: usize, deny: bool) -> u64 {
    let l = (path_bytes as u64).saturating_mul(if deny || platform == Platform::Win32 { FOLD_EXPANSION } else { 1 });
    let walks = if deny { 2 + 2 * (1 + crate::posix_fold::OTHER_FORMS.len() as u64) } else { 2 };
    let mut total = 0u64;
    for v in parse_variants(glob, platform) {
        let variants = if deny { glob::deny_variants(v) } else { vec![v] };
        for v in variants {
            let Some(steps) = variant_steps(&v, l, deny) else { return u64::MAX };
            total = total.saturating_add(steps.saturating_add(64).saturating_mul(walks));
        }
    }
    total
}

/// One index a check walks with a step budget of its own
/// ([`glob::MAX_MATCH_STEPS`] per walk): the variants it holds (each with
/// the prefix it is filed under in that index, and how many times a walk
/// may try it), the longest path it is walked with, and whether its
/// variants are the folded spellings of the ones listed.
struct IndexWalk {
    variants: Vec<(String, glob::ParsedGlob, u64)>,
    path_bytes: u64,
    fold: bool,
    /// win32: the 8.3 alias walk over the deny variants, on the same budget.
    aliasing: Vec<glob::ParsedGlob>,
    /// How many walks of this index one check may make.
    walks: u64,
}

/// The index walks of one fs check of `policy` (see `FsMatcher::match_str`):
/// the grants and deny globs as written (grants tried in up to two passes;
/// on posix walked again with the characters HFS+ ignores dropped), and on
/// posix with deny globs the folded deny index (walked with the folded path
/// and its other spellings) and each other spelling's index. The folded
/// variants are not built: each is bounded from the one as written (its
/// literal characters at their longest fold), filed under its prefix in
/// that spelling.
fn index_walks(policy: &PermissionPolicy) -> Vec<IndexWalk> {
    let platform = policy.platform();
    let win32 = platform == Platform::Win32;
    let max = crate::fs::MAX_PATH_BYTES as u64;
    let deny: Vec<glob::ParsedGlob> =
        policy.deny_fs().iter().flat_map(|d| parse_variants(d, platform)).flat_map(glob::deny_variants).collect();
    let grants = policy.fs_grants().iter().flat_map(|g| parse_variants(g.glob(), platform)).map(|g| (g, 2));
    let main = IndexWalk {
        variants: grants.chain(deny.iter().cloned().map(|d| (d, 1))).map(|(g, w)| (g.prefix.clone(), g, w)).collect(),
        path_bytes: if win32 { (max * NTFS_EXPANSION_HALVES).div_ceil(2) } else { max },
        fold: false,
        aliasing: if win32 { deny.clone() } else { Vec::new() },
        walks: if win32 { 1 } else { 2 },
    };
    let mut out = vec![main];
    if win32 || deny.is_empty() {
        return out;
    }
    let long = max * FOLD_EXPANSION;
    let folded = deny.iter().map(|d| (crate::posix_fold::fold(&d.prefix), d.clone(), 1)).collect();
    let walks = 1 + crate::posix_fold::OTHER_FORMS.len() as u64;
    out.push(IndexWalk { variants: folded, path_bytes: long, fold: true, aliasing: Vec::new(), walks });
    // Only a variant with non-ASCII literal text is spelled apart in the other forms.
    let other: Vec<&glob::ParsedGlob> = deny.iter().filter(|d| !d.literal_text_is_ascii()).collect();
    if !other.is_empty() {
        for form in crate::posix_fold::OTHER_FORMS {
            let variants = other.iter().map(|d| (form(&d.prefix), (*d).clone(), 1)).collect();
            out.push(IndexWalk { variants, path_bytes: long, fold: true, aliasing: Vec::new(), walks: 1 });
        }
    }
    out
}

/// The most match steps one walk of `w` may spend: the steps of every
/// variant filed under a path's ancestors (and the win32 alias walk), at
/// the longest path the walk sees. `None`: a pattern that may give up on
/// its own (see [`pattern_steps`]).
fn walk_steps(w: &IndexWalk) -> Option<u64> {
    let (l, n) = (w.path_bytes, MAX_PATH_SEGMENTS);
    let mut by_prefix: HashMap<&str, u64> = HashMap::new();
    for (prefix, g, weight) in &w.variants {
        let e = by_prefix.entry(prefix.as_str()).or_default();
        *e = e.saturating_add(weight * variant_steps(g, l, w.fold)?);
    }
    // win32: a path with an 8.3-shaped name is also walked against every
    // deny variant (literal prefix segments included), whatever its prefix.
    let mut aliasing = 0u64;
    for d in &w.aliasing {
        let lits: Vec<&str> = d.prefix.get(2..).unwrap_or("").split('/').skip(1).collect();
        let mut steps = (lits.len() + d.rest.len()) as u64 * (n + 1);
        steps += lits.iter().map(|x| n * (1 + x.len() as u64)).sum::<u64>();
        for seg in &d.rest {
            if let Seg::Pat(p) = seg {
                let (fixed, per) = pattern_steps(p, false)?;
                steps += n * fixed + per * (l + n);
            }
        }
        aliasing = aliasing.saturating_add(steps);
    }
    let mut worst = aliasing;
    for key in by_prefix.keys() {
        let mut total = aliasing;
        let mut at = *key;
        loop {
            total = total.saturating_add(by_prefix.get(at).copied().unwrap_or(0));
            match at.rfind('/') {
                Some(i) => at = &at[..i],
                None => break,
            }
        }
        worst = worst.max(total);
    }
    Some(worst)
}

/// What the diff knows of one policy's fs checks: whether none can stop
/// at its step budget ([`glob::MAX_MATCH_STEPS`] per index walk, where a
/// check fails closed and denies what its globs would allow: in each walk,
/// the steps of the variants under a path's ancestors stay within it), and
/// what one check may cost in work units (every walk it makes, each at
/// most the step budget). Steps are counted in the matcher's own units
/// (bytes of literal runs and of names, atoms of the other runs), at the
/// longest path each walk sees (the folded spellings are longer).
struct StepBounds {
    within: bool,
    check_cost: u64,
}

fn step_bounds(policy: &PermissionPolicy) -> StepBounds {
    let cap = glob::MAX_MATCH_STEPS as u64;
    let walks = index_walks(policy);
    let steps: Vec<Option<u64>> = walks.iter().map(walk_steps).collect();
    StepBounds {
        within: steps.iter().all(|s| s.is_some_and(|s| s <= cap)),
        check_cost: walks
            .iter()
            .zip(&steps)
            .map(|(w, s)| w.walks.saturating_mul(s.map_or(cap, |s| s.min(cap))))
            .fold(64u64, u64::saturating_add),
    }
}

fn hostile_policy() -> String {
    format!(
        "the old policy's checks may stop at their step budget ({} steps, where a check fails closed); not modelled",
        glob::MAX_MATCH_STEPS
    )
}

/// The leading literal segments of a flattened variant (its literal prefix,
/// the drive first on win32).
fn lead_lits(v: &[El]) -> impl Iterator<Item = &str> {
    v.iter().map_while(|e| if let El::Lit(l) = e { Some(l.as_str()) } else { None })
}

/// Items filed by the leading literal segments of their variants, so a
/// search compares a variant only with those whose literal prefix agrees
/// with its own as far as both go (the others match no common path). With
/// a `key` folding segments, a segment the key cannot tell (`None`) is
/// filed apart and met by every query segment, and a `None` query segment
/// meets every child.
/// A [`PrefixTrie`] node: children by key, and the items whose literal prefix ends here.
type PrefixNode = (HashMap<Option<String>, usize>, Vec<usize>);

struct PrefixTrie {
    nodes: Vec<PrefixNode>,
    key: fn(&str) -> Option<String>,
}

impl PrefixTrie {
    fn new(key: fn(&str) -> Option<String>) -> Self {
        Self { nodes: vec![(HashMap::new(), Vec::new())], key }
    }

    fn insert<'a>(&mut self, lits: impl Iterator<Item = &'a str>, item: usize) {
        let mut at = 0;
        for l in lits {
            let k = (self.key)(l);
            at = match self.nodes[at].0.get(&k) {
                Some(&n) => n,
                None => {
                    self.nodes.push((HashMap::new(), Vec::new()));
                    let n = self.nodes.len() - 1;
                    self.nodes[at].0.insert(k, n);
                    n
                }
            };
        }
        self.nodes[at].1.push(item);
    }

    /// The items whose literal prefix agrees with `lits` as far as both go
    /// (into `out`, maybe repeated); false when the work budget ran out.
    fn related<'a>(&self, lits: impl Iterator<Item = &'a str>, work: &Work, out: &mut Vec<usize>) -> bool {
        let mut at: Vec<usize> = vec![0];
        for l in lits {
            let k = (self.key)(l);
            let mut next = Vec::new();
            for &n in &at {
                if !work.spend(self.nodes[n].1.len() as u64 + 1) {
                    return false;
                }
                out.extend(&self.nodes[n].1);
                let children = &self.nodes[n].0;
                match &k {
                    None => next.extend(children.values().copied()),
                    Some(_) => {
                        next.extend(children.get(&k).copied());
                        next.extend(children.get(&None).copied());
                    }
                }
            }
            at = next;
            if at.is_empty() {
                return true;
            }
        }
        // Every item at or below where the query ends.
        let mut stack = at;
        while let Some(n) = stack.pop() {
            if !work.spend(self.nodes[n].1.len() as u64 + 1) {
                return false;
            }
            out.extend(&self.nodes[n].1);
            stack.extend(self.nodes[n].0.values().copied());
        }
        true
    }
}

/// Segments compared exactly (the inclusion search's literal edges).
fn exact_key(s: &str) -> Option<String> {
    Some(s.to_owned())
}

/// Segments compared as [`may_meet`] compares two literals: ASCII ones
/// without case, any other may meet anything.
fn fold_key(s: &str) -> Option<String> {
    s.is_ascii().then(|| s.to_ascii_lowercase())
}

/// The old grants of one mode with the new deny globs as written: their
/// variants, flattened (posix, and win32 without classes), each flattened
/// variant as a set (a new variant equal to one is covered), and indexed
/// by literal prefix.
struct Cover {
    globs: HashSet<glob::ParsedGlob>,
    flat: Option<Vec<Vec<El>>>,
    same: HashSet<Vec<El>>,
    trie: PrefixTrie,
}

fn fs_widenings(cx: &mut Ctx<'_>) {
    let (old, new) = (cx.old, cx.new);
    if new.fs_grants().is_empty() {
        return;
    }
    if old.platform() != new.platform() {
        cx.unknown("fs", "/fs", "the two policies are for different platforms".into());
        return;
    }
    let platform = new.platform();
    if !cx.old_within {
        cx.unknown("fs", "/fs", hostile_policy());
        return;
    }
    let win32 = platform == Platform::Win32;
    let variants = |g: &str| parse_variants(g, platform);
    let flat = |gs: &[glob::ParsedGlob]| gs.iter().map(|g| flatten(g, win32)).collect::<Option<Vec<_>>>();
    let old_deny: Vec<&String> = old.deny_fs().iter().collect();
    let new_deny: HashSet<&String> = new.deny_fs().iter().collect();
    let new_deny_variants: Vec<glob::ParsedGlob> =
        new.deny_fs().iter().flat_map(|d| variants(d)).flat_map(glob::deny_variants).collect();

    // (a) Each new grant, per mode, within the old grants of that mode (and the new deny globs as written).
    let covers: Vec<Cover> = [FsMode::Read, FsMode::Write]
        .into_iter()
        .map(|mode| {
            let cover: Vec<glob::ParsedGlob> = old
                .fs_grants()
                .iter()
                .filter(|o| o.mode().allows(mode))
                .flat_map(|o| variants(o.glob()))
                .chain(new_deny_variants.iter().cloned())
                .collect();
            let flat = flat(&cover);
            let mut trie = PrefixTrie::new(exact_key);
            let mut same = HashSet::new();
            for (i, v) in flat.iter().flatten().enumerate() {
                trie.insert(lead_lits(v), i);
                same.insert(v.clone());
            }
            Cover { globs: cover.into_iter().collect(), flat, same, trie }
        })
        .collect();
    for (i, g) in new.fs_grants().iter().enumerate() {
        let pointer = format!("/fs/{i}");
        let nv = variants(g.glob());
        for &mode in grant_modes(g.mode()) {
            let what = cx.say(
                format!("{} granted on {}", mode_name(mode), g.glob()),
                format!("{} no longer granted on all of {}", mode_name(mode), g.glob()),
            );
            let cover = &covers[usize::from(mode == FsMode::Write)];
            // win32: the same variants (NTFS-folded at parse) are the same paths.
            if win32 && nv.iter().all(|v| cover.globs.contains(v)) {
                continue;
            }
            let (Some(n), Some(o)) = (flat(&nv), cover.flat.as_ref()) else {
                let cands = nv.iter().map(instantiate).map(|path| Witness::Fs { path, mode });
                if !cx.first_confirmed("fs", &pointer, &what, cands.collect::<Vec<_>>()) {
                    cx.unknown("fs", &pointer, format!("{what}: a folding class is not modelled"));
                }
                continue;
            };
            // A variant equal to an old one is covered; the others are
            // searched against the old variants their literal prefix meets.
            let rest: Vec<&[El]> = n.iter().filter(|v| !cover.same.contains(*v)).map(Vec::as_slice).collect();
            if rest.is_empty() {
                continue;
            }
            let mut ids = Vec::new();
            if !rest.iter().all(|v| cover.trie.related(lead_lits(v), cx.work, &mut ids)) {
                cx.unknown("fs", &pointer, format!("{what}: {}", past_work()));
                continue;
            }
            ids.sort_unstable();
            ids.dedup();
            let near: Vec<&[El]> = ids.iter().map(|&k| o[k].as_slice()).collect();
            match included(&rest, &near, win32, cx.work) {
                Inclusion::Included => {}
                Inclusion::Outside(paths) => {
                    let cands: Vec<Witness> = paths.into_iter().map(|path| Witness::Fs { path, mode }).collect();
                    if !cx.first_confirmed("fs", &pointer, &what, cands) {
                        cx.unknown(
                            "fs",
                            &pointer,
                            format!("{what}: paths outside the old grants were found, none confirmed by both checkers"),
                        );
                    }
                }
                Inclusion::Unknown(why) => cx.unknown("fs", &pointer, format!("{what}: {why}")),
            }
        }
    }

    // (b) Old deny globs the new policy dropped: widening where a new grant meets one.
    let dropped: Vec<(usize, &String)> =
        old_deny.iter().enumerate().filter(|(_, d)| !new_deny.contains(*d)).map(|(j, d)| (j, *d)).collect();
    if dropped.is_empty() {
        return;
    }
    let grant_flat: Vec<Option<Vec<Vec<El>>>> =
        if win32 { Vec::new() } else { new.fs_grants().iter().map(|g| flat(&variants(g.glob()))).collect() };
    // The new grants by literal prefix, read as a deny reads them (ASCII
    // case-insensitive; a non-ASCII segment may meet anything).
    let mut grant_trie = PrefixTrie::new(fold_key);
    let mut unflat: Vec<usize> = Vec::new();
    for (k, f) in grant_flat.iter().enumerate() {
        match f {
            Some(vs) => vs.iter().for_each(|v| grant_trie.insert(lead_lits(v), k)),
            None => unflat.push(k),
        }
    }
    for (j, d) in dropped {
        let pointer = format!("/deny/fs/{j}");
        let what = cx.say(format!("deny.fs rule removed: {d}"), format!("deny.fs rule added: {d}"));
        let dv: Vec<glob::ParsedGlob> = variants(d).into_iter().flat_map(glob::deny_variants).collect();
        if platform == Platform::Win32 {
            // NTFS folding and 8.3 aliases: any grant may meet any dropped deny.
            let cands = new
                .fs_grants()
                .iter()
                .flat_map(|g| grant_modes(g.mode()).iter())
                .flat_map(|&m| dv.iter().map(move |v| Witness::Fs { path: instantiate(v), mode: m }));
            if !cx.first_confirmed("fs", &pointer, &what, cands) {
                cx.unknown("fs", &pointer, format!("{what}: win32 deny globs are compared by their variants only"));
            }
            continue;
        }
        let Some(dflat) = flat(&dv) else {
            cx.unknown("fs", &pointer, format!("{what}: a folding class is not modelled"));
            continue;
        };
        let dref: Vec<&[El]> = dflat.iter().map(Vec::as_slice).collect();
        let mut near = unflat.clone();
        if !dref.iter().all(|v| grant_trie.related(lead_lits(v), cx.work, &mut near)) {
            cx.unknown("fs", &pointer, format!("{what}: {}", past_work()));
            continue;
        }
        near.sort_unstable();
        near.dedup();
        let mut met = false;
        let mut cands = Vec::new();
        for k in near {
            let g = &new.fs_grants()[k];
            let Some(gflat) = &grant_flat[k] else {
                met = true;
                continue;
            };
            let gref: Vec<&[El]> = gflat.iter().map(Vec::as_slice).collect();
            if let Some(paths) = deny_overlap(&gref, &dref, cx.work) {
                met = true;
                for p in paths {
                    for &m in grant_modes(g.mode()) {
                        cands.push(Witness::Fs { path: p.clone(), mode: m });
                    }
                }
            }
            if cands.len() >= MAX_CANDIDATES * 16 {
                break;
            }
        }
        if met && !cx.first_confirmed("fs", &pointer, &what, cands) {
            cx.unknown("fs", &pointer, format!("{what}: it may meet a new grant and no path was confirmed"));
        }
    }
}

/// Most fs grants [`covered_fs_grants`] compares (each against all the others).
pub(crate) const MAX_LINT_COVER_GRANTS: usize = 256;

/// For `lint` (`fs-grant-covered`): the posix fs grants every path of which,
/// in each mode they give, the other grants of that mode already allow. In
/// manifest order, each against the grants not reported before it, so all
/// the grants reported can be removed together; of identical grants the
/// first is kept. Decided by the same inclusion search as the diff, on a
/// work budget of [`MAX_DIFF_WORK`] (a search past its bound, or past the
/// budget, reports nothing); skipped past [`MAX_LINT_COVER_GRANTS`] grants.
pub(crate) fn covered_fs_grants(policy: &PermissionPolicy) -> Vec<usize> {
    let grants = policy.fs_grants();
    if policy.platform() != Platform::Posix || grants.len() > MAX_LINT_COVER_GRANTS {
        return Vec::new();
    }
    let work = Work::new(MAX_DIFF_WORK);
    let flat_of = |g: &str| -> Option<Vec<Vec<El>>> {
        parse_variants(g, Platform::Posix).iter().map(|v| flatten(v, false)).collect()
    };
    let all: Vec<Option<Vec<Vec<El>>>> = grants.iter().map(|g| flat_of(g.glob())).collect();
    let mut out = Vec::new();
    for (i, g) in grants.iter().enumerate() {
        let Some(mine) = &all[i] else { continue };
        let mine: Vec<&[El]> = mine.iter().map(Vec::as_slice).collect();
        let covered = grant_modes(g.mode()).iter().all(|&mode| {
            let mut cover: Vec<&[El]> = Vec::new();
            for (j, o) in grants.iter().enumerate() {
                let same_later = j > i && o.glob() == g.glob() && o.mode() == g.mode();
                if j == i || same_later || out.contains(&j) || !o.mode().allows(mode) {
                    continue;
                }
                match &all[j] {
                    Some(f) => cover.extend(f.iter().map(Vec::as_slice)),
                    None => return false,
                }
            }
            matches!(included(&mine, &cover, false, &work), Inclusion::Included)
        });
        if covered {
            out.push(i);
        }
        if work.exhausted() {
            break;
        }
    }
    out
}

/// One path a glob variant matches: each wildcard segment as `x` (`?` and
/// classes as their first character), `**` as one segment.
fn instantiate(g: &glob::ParsedGlob) -> String {
    let mut p = g.prefix.clone();
    for s in &g.rest {
        p.push('/');
        match s {
            Seg::Rec => p.push('x'),
            Seg::Pat(q) => {
                for a in q.atoms() {
                    match a {
                        Atom::Char(c) => p.push(*c),
                        Atom::Any => p.push('x'),
                        Atom::Star => {}
                        Atom::Class { negated: false, ranges, .. } => p.push(ranges[0].0),
                        Atom::Class { negated: true, ranges, .. } => {
                            let c = ['x', 'y', 'z', '0', '_']
                                .into_iter()
                                .find(|c| !ranges.iter().any(|&(lo, hi)| lo <= *c && *c <= hi));
                            p.push(c.unwrap_or('~'));
                        }
                    }
                }
                if q.atoms().iter().all(|a| *a == Atom::Star) {
                    p.push('x');
                }
            }
        }
    }
    if !p.contains('/') {
        p.push('/');
    }
    p
}

// ---------------------------------------------------------------- fetch

fn schemes_of(p: &FetchPattern) -> Vec<Scheme> {
    p.scheme().map_or_else(|| vec![Scheme::Http, Scheme::Https], |s| vec![s])
}

fn host_covers(o: &HostPattern, n: &HostPattern) -> bool {
    match (o, n) {
        (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
        (HostPattern::Suffix(t), HostPattern::Exact(Host::Domain(d))) => {
            d.len() > t.len() + 1 && d.ends_with(t.as_str()) && d.as_bytes()[d.len() - t.len() - 1] == b'.'
        }
        (HostPattern::Suffix(t), HostPattern::Suffix(u)) => {
            u == t || (u.len() > t.len() + 1 && u.ends_with(t.as_str()) && u.as_bytes()[u.len() - t.len() - 1] == b'.')
        }
        _ => false,
    }
}

/// Whether path scope `o` covers every path `n` does (`None`: every path).
fn path_covers(o: Option<&crate::urlpath::PathPattern>, n: Option<&crate::urlpath::PathPattern>) -> bool {
    let (Some(o), Some(n)) = (o, n) else { return o.is_none() };
    let (d, r) = (&o.segs, &n.segs);
    for (i, ds) in d.iter().enumerate() {
        match ds {
            PathSeg::Rest => return i < r.len(),
            // `*` is exactly one non-empty segment: a literal empty one (a
            // trailing `/`, or `//`) is not under it.
            PathSeg::One => match r.get(i) {
                Some(PathSeg::Lit(b)) if !b.is_empty() => {}
                Some(PathSeg::One) => {}
                _ => return false,
            },
            PathSeg::Lit(a) => match r.get(i) {
                Some(PathSeg::Lit(b)) if a == b => {}
                _ => return false,
            },
        }
    }
    d.len() == r.len()
}

fn port_covers(o: &FetchPattern, n: &FetchPattern, s: Scheme) -> bool {
    match n.port() {
        PortRule::Default => o.port_ok(s, s.default_port()),
        PortRule::Exact(p) => o.port_ok(s, p),
        PortRule::Any => o.port() == PortRule::Any,
    }
}

/// One label of a [`FetchIndex`] trie.
#[derive(Default)]
struct LabelNode<'a> {
    children: HashMap<&'a str, usize>,
    /// Patterns of an exact name ending at this label.
    names: Vec<usize>,
    /// `*.suffix` patterns whose suffix ends at this label.
    suffixes: Vec<usize>,
}

/// Fetch patterns indexed by host, so a pattern is compared only with the
/// patterns whose host may cover it or meet it: exact hosts in a map, and
/// every name (exact names and `*.suffix` patterns) in a trie of labels read
/// right to left.
struct FetchIndex<'a> {
    pats: &'a [FetchPattern],
    exact: HashMap<&'a Host, Vec<usize>>,
    nodes: Vec<LabelNode<'a>>,
    /// The exact ports the patterns name (the witness search avoids them for `:*`).
    ports: HashSet<u16>,
}

impl<'a> FetchIndex<'a> {
    fn new(pats: &'a [FetchPattern]) -> Self {
        let mut idx =
            FetchIndex { pats, exact: HashMap::new(), nodes: vec![LabelNode::default()], ports: HashSet::new() };
        for (i, p) in pats.iter().enumerate() {
            if let PortRule::Exact(n) = p.port() {
                idx.ports.insert(n);
            }
            let (name, suffix) = match p.host() {
                HostPattern::Exact(h) => {
                    idx.exact.entry(h).or_default().push(i);
                    match h {
                        Host::Domain(d) => (d.as_str(), false),
                        _ => continue,
                    }
                }
                HostPattern::Suffix(t) => (t.as_str(), true),
            };
            let mut at = 0;
            for label in name.rsplit('.') {
                at = match idx.nodes[at].children.get(label) {
                    Some(&n) => n,
                    None => {
                        idx.nodes.push(LabelNode::default());
                        let n = idx.nodes.len() - 1;
                        idx.nodes[at].children.insert(label, n);
                        n
                    }
                };
            }
            if suffix {
                idx.nodes[at].suffixes.push(i);
            } else {
                idx.nodes[at].names.push(i);
            }
        }
        idx
    }

    /// The patterns whose host may cover `h` (`*.t` over a name under `t`,
    /// over `*.t` and `*.x.t`; an exact host over itself), maybe repeated.
    fn covering(&self, h: &HostPattern, out: &mut Vec<usize>) {
        let (name, strict) = match h {
            HostPattern::Exact(host) => {
                out.extend(self.exact.get(host).into_iter().flatten());
                match host {
                    Host::Domain(d) => (d.as_str(), true),
                    _ => return,
                }
            }
            HostPattern::Suffix(t) => (t.as_str(), false),
        };
        let labels: Vec<&str> = name.rsplit('.').collect();
        let mut at = 0;
        for (k, label) in labels.iter().enumerate() {
            let Some(&n) = self.nodes[at].children.get(label) else { return };
            at = n;
            if !strict || k + 1 < labels.len() {
                out.extend(&self.nodes[at].suffixes);
            }
        }
    }

    /// The patterns whose host `h` may cover (the converse of
    /// [`Self::covering`]), maybe repeated; false when the work budget ran out.
    fn covered_by(&self, h: &HostPattern, work: &Work, out: &mut Vec<usize>) -> bool {
        let t = match h {
            HostPattern::Exact(host) => {
                out.extend(self.exact.get(host).into_iter().flatten());
                return true;
            }
            HostPattern::Suffix(t) => t,
        };
        let mut at = 0;
        for label in t.rsplit('.') {
            let Some(&n) = self.nodes[at].children.get(label) else { return true };
            at = n;
        }
        out.extend(&self.nodes[at].suffixes);
        let mut stack: Vec<usize> = self.nodes[at].children.values().copied().collect();
        while let Some(n) = stack.pop() {
            let node = &self.nodes[n];
            if !work.spend((node.names.len() + node.suffixes.len()) as u64 + 1) {
                return false;
            }
            out.extend(&node.names);
            out.extend(&node.suffixes);
            stack.extend(node.children.values().copied());
        }
        true
    }

    /// Whether one pattern covers scheme `s` of `n` entirely; `None` when the
    /// work budget ran out first.
    fn covers(&self, n: &FetchPattern, s: Scheme, work: &Work) -> Option<bool> {
        let mut ids = Vec::new();
        self.covering(n.host(), &mut ids);
        let per = n.path().map_or(0, |p| p.segs.len()) as u64 + 1;
        for i in ids {
            if !work.spend(per) {
                return None;
            }
            let o = &self.pats[i];
            if o.scheme_ok(s)
                && host_covers(o.host(), n.host())
                && port_covers(o, n, s)
                && path_covers(o.path(), n.path())
            {
                return Some(true);
            }
        }
        Some(false)
    }

    /// The patterns that may grant a URL `h` grants ([`fetch_may_meet`]), in
    /// pattern order; `None` when the work budget ran out first.
    fn meeting(&self, h: &FetchPattern, work: &Work) -> Option<Vec<usize>> {
        let mut ids = Vec::new();
        self.covering(h.host(), &mut ids);
        if !self.covered_by(h.host(), work, &mut ids) || !work.spend(ids.len() as u64) {
            return None;
        }
        ids.sort_unstable();
        ids.dedup();
        ids.retain(|&i| fetch_may_meet(&self.pats[i], h));
        Some(ids)
    }
}

/// Whether two fetch patterns may grant one URL (scheme, host and port;
/// paths are not compared: an over-approximation).
fn fetch_may_meet(a: &FetchPattern, b: &FetchPattern) -> bool {
    let schemes = schemes_of(a).into_iter().any(|s| b.scheme_ok(s));
    let hosts = host_covers(a.host(), b.host()) || host_covers(b.host(), a.host());
    let ports = schemes_of(a).into_iter().filter(|s| b.scheme_ok(*s)).any(|s| {
        let of = |p: &FetchPattern| match p.port() {
            PortRule::Default => Some(s.default_port()),
            PortRule::Exact(n) => Some(n),
            PortRule::Any => None,
        };
        match (of(a), of(b)) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
    });
    schemes && hosts && ports
}

/// URL path candidates for a path scope: its wildcards as `w` (and `w/w`).
fn path_candidates(p: Option<&crate::urlpath::PathPattern>) -> Vec<String> {
    match p {
        None => vec!["/".into(), "/zz-witness".into()],
        Some(p) => {
            let shown = p.to_string();
            let one =
                shown.split('/').map(|s| if s == "*" || s == "**" { "w" } else { s }).collect::<Vec<_>>().join("/");
            let two = shown
                .split('/')
                .map(|s| {
                    if s == "**" {
                        "w/w"
                    } else if s == "*" {
                        "w"
                    } else {
                        s
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            vec![one, two]
        }
    }
}

fn host_candidates(h: &HostPattern) -> Vec<String> {
    match h {
        HostPattern::Exact(h) => vec![h.to_string()],
        HostPattern::Suffix(s) => vec![format!("zz-witness.{s}"), format!("w.{s}"), format!("a.b.{s}")],
    }
}

fn port_candidates(p: PortRule, s: Scheme, taken: &HashSet<u16>) -> Vec<Option<u16>> {
    match p {
        PortRule::Default => vec![None],
        PortRule::Exact(n) => vec![Some(n)],
        _ => [8443u16, 8080, 9, 65535, 1, s.default_port()]
            .into_iter()
            .filter(|n| !taken.contains(n))
            .map(Some)
            .collect(),
    }
}

fn url(s: Scheme, host: &str, port: Option<u16>, path: &str) -> String {
    match port {
        Some(p) => format!("{}://{host}:{p}{path}", s.as_str()),
        None => format!("{}://{host}{path}", s.as_str()),
    }
}

/// URLs a pattern grants, for scheme `s` (a few, varied where it has
/// wildcards; a `:*` port as one of none of `taken`).
fn fetch_urls(n: &FetchPattern, s: Scheme, taken: &HashSet<u16>) -> Vec<String> {
    let mut out = Vec::new();
    for h in host_candidates(n.host()) {
        for port in port_candidates(n.port(), s, taken) {
            for path in path_candidates(n.path()) {
                out.push(url(s, &h, port, &path));
            }
        }
    }
    out
}

fn fetch_widenings(cx: &mut Ctx<'_>) {
    let (old, new) = (cx.old, cx.new);
    let old_idx = FetchIndex::new(old.fetch_patterns());
    for (i, n) in new.fetch_patterns().iter().enumerate() {
        let pointer = format!("/fetch/{i}");
        for s in schemes_of(n) {
            let what = cx.say(
                format!("fetch grant {n} ({} URLs) not within one old pattern", s.as_str()),
                format!("fetch grant {n} ({} URLs) removed or narrowed", s.as_str()),
            );
            match old_idx.covers(n, s, cx.work) {
                Some(true) => continue,
                Some(false) => {}
                None => {
                    cx.unknown("fetch", &pointer, format!("{what}: {}", past_work()));
                    continue;
                }
            }
            let cands: Vec<Witness> = fetch_urls(n, s, &old_idx.ports)
                .into_iter()
                .map(|url| Witness::Fetch { url, resolved_ip: None })
                .collect();
            if !cx.first_confirmed("fetch", &pointer, &what, cands) {
                cx.unknown("fetch", &pointer, format!("{what}; no URL was confirmed"));
            }
        }
    }
    if new.fetch_patterns().is_empty() {
        return;
    }
    let new_idx = FetchIndex::new(new.fetch_patterns());
    // Compared as parsed rules, never as printed text: two rules that print
    // alike may decide differently.
    let kept: HashSet<&DenyFetch> = new.deny_fetch().iter().collect();
    for (j, d) in old.deny_fetch().iter().enumerate() {
        if kept.contains(d) {
            continue;
        }
        let pointer = format!("/deny/fetch/{j}");
        let what = cx.say(format!("deny.fetch rule removed: {d}"), format!("deny.fetch rule added: {d}"));
        if !cx.work.spend(64) {
            cx.unknown("fetch", &pointer, format!("{what}: {}", past_work()));
            continue;
        }
        let cands = deny_fetch_candidates(d, &new_idx, cx.work);
        if !cx.first_confirmed("fetch", &pointer, &what, cands) {
            cx.unknown("fetch", &pointer, format!("{what}; no request it denied was found that the new policy allows"));
        }
    }
}

/// Requests a dropped deny rule denied that a new grant may allow: first
/// from the grants whose host may meet the rule's, then from the others (an
/// IP rule also denies the addresses that embed it, `localhost` the
/// loopback ones). Lazy: the caller takes a bounded number.
fn deny_fetch_candidates<'a>(
    d: &'a DenyFetch,
    grants: &'a FetchIndex<'a>,
    work: &'a Work,
) -> impl Iterator<Item = Witness> + 'a {
    let all = grants.pats;
    let near: Vec<usize> = match d {
        DenyFetch::Pattern(r) => grants.meeting(r, work).unwrap_or_default(),
        DenyFetch::Cidr { .. } => Vec::new(),
    };
    let first: HashSet<usize> = near.iter().copied().collect();
    let order = near.into_iter().chain((0..all.len()).filter(move |i| !first.contains(i)));
    let none = HashSet::new();
    order.take_while(move |_| work.spend(1)).flat_map(move |k| {
        let n = &all[k];
        let mut out = Vec::new();
        match d {
            DenyFetch::Pattern(r) => {
                for s in schemes_of(n) {
                    if r.scheme().is_some_and(|x| x != s) {
                        continue;
                    }
                    let hosts: Vec<String> = match (n.host(), r.host()) {
                        (HostPattern::Exact(h), _) => vec![h.to_string()],
                        (HostPattern::Suffix(_), HostPattern::Exact(h)) => vec![h.to_string()],
                        (HostPattern::Suffix(a), HostPattern::Suffix(b)) => {
                            let longer = if a.len() >= b.len() { a } else { b };
                            vec![format!("w.{longer}")]
                        }
                    };
                    let mut ports = port_candidates(n.port(), s, &none);
                    if let (PortRule::Any, PortRule::Exact(p)) = (n.port(), r.port()) {
                        ports.insert(0, Some(p));
                    }
                    let paths = if r.path().is_some() { path_candidates(r.path()) } else { path_candidates(n.path()) };
                    for h in &hosts {
                        for &p in &ports {
                            for path in &paths {
                                out.push(Witness::Fetch { url: url(s, h, p, path), resolved_ip: None });
                            }
                        }
                    }
                }
            }
            DenyFetch::Cidr { net, len } => {
                for s in schemes_of(n) {
                    match n.host() {
                        HostPattern::Exact(Host::Ipv4(_) | Host::Ipv6(_)) => {
                            for u in fetch_urls(n, s, &none) {
                                out.push(Witness::Fetch { url: u, resolved_ip: None });
                            }
                        }
                        _ => {
                            let addrs = block_samples(*net, *len);
                            for u in fetch_urls(n, s, &none).into_iter().take(2) {
                                for a in addrs.iter().filter(|a| !is_special_address(**a)).take(16) {
                                    out.push(Witness::Fetch { url: u.clone(), resolved_ip: Some(a.to_string()) });
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    })
}

/// Up to 64 addresses spread over a CIDR block, coarse to fine (the van der
/// Corput order: the bottom, the middle, the quarters, ...), so a few of them
/// already land outside any smaller block cut from it.
fn block_samples(net: IpAddr, len: u8) -> Vec<IpAddr> {
    let (bits, base): (u32, u128) = match net {
        IpAddr::V4(a) => (32, u128::from(u32::from(a))),
        IpAddr::V6(a) => (128, u128::from(a)),
    };
    let host_bits = bits - u32::from(len);
    let mut out = Vec::new();
    for k in 0..64u32 {
        // The 6-bit reversal of k, as the top bits of the host part.
        let r = u128::from(k.reverse_bits() >> 26);
        let off = if host_bits >= 6 { r << (host_bits - 6) } else { r >> (6 - host_bits) };
        let x = base | off;
        let ip = match net {
            IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::from(x as u32)),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::from(x)),
        };
        if !out.contains(&ip) {
            out.push(ip);
        }
    }
    out
}

// ---------------------------------------------------------------- secrets, events, db, budgets

fn secret_widenings(cx: &mut Ctx<'_>) {
    let (old, new) = (cx.old, cx.new);
    if !new.secrets().iter().any(|n| new.bound_secret(n).is_some()) {
        for (i, name) in new.secrets().iter().enumerate() {
            readable_widening(cx, i, name);
        }
        return;
    }
    let fetch_included = {
        let mut probe = Ctx {
            old,
            new,
            forward: true,
            out: Findings::default(),
            work: cx.work,
            fs_check_cost: cx.fs_check_cost,
            cap_check_cost: cx.cap_check_cost,
            old_within: cx.old_within,
        };
        fetch_widenings(&mut probe);
        probe.out.found.is_empty() && probe.out.unknown.is_empty()
    };
    let (old_idx, new_idx) = (FetchIndex::new(old.fetch_patterns()), FetchIndex::new(new.fetch_patterns()));
    let denies_kept = {
        let kept: HashSet<&DenyFetch> = new.deny_fetch().iter().collect();
        old.deny_fetch().iter().all(|d| kept.contains(d))
    };
    for (i, name) in new.secrets().iter().enumerate() {
        let pointer = format!("/secrets/{i}");
        let Some(b) = new.bound_secret(name) else {
            readable_widening(cx, i, name);
            continue;
        };
        let what = cx.say(format!("secret {name} may be sent"), format!("secret {name} may no longer be sent"));
        // Each hosts pattern the new fetch grants may reach must stay
        // within one old hosts pattern, and within the old fetch grants
        // (all of them proven included, or one old pattern covering it,
        // with every old deny.fetch rule kept). A question past the work
        // budget is not "within".
        let ob_hosts: &[FetchPattern] = old.bound_secret(name).map_or(&[], |o| o.hosts());
        let ob_idx = FetchIndex::new(ob_hosts);
        let work = cx.work;
        let within = b.hosts().iter().all(|h| {
            let Some(meeting) = new_idx.meeting(h, work) else { return false };
            // The new fetch grants that may reach `h`, each within one old pattern.
            let reach_kept = || {
                meeting.iter().all(|&f| {
                    let f = &new.fetch_patterns()[f];
                    schemes_of(f).into_iter().all(|s| old_idx.covers(f, s, work) == Some(true))
                })
            };
            meeting.is_empty()
                || schemes_of(h).into_iter().all(|s| {
                    ob_idx.covers(h, s, work) == Some(true)
                        && (fetch_included
                            || (denies_kept && (reach_kept() || old_idx.covers(h, s, work) == Some(true))))
                })
        });
        if within {
            continue;
        }
        let (ob_ports, old_ports) = (&ob_idx.ports, &old_idx.ports);
        let cands = b
            .hosts()
            .iter()
            .flat_map(|h| schemes_of(h).into_iter().flat_map(move |s| fetch_urls(h, s, ob_ports)))
            .chain(
                new.fetch_patterns()
                    .iter()
                    .flat_map(|n| schemes_of(n).into_iter().flat_map(move |s| fetch_urls(n, s, old_ports))),
            )
            .map(|u| Witness::Capability { id: "secrets.use", payload: json!({ "name": name, "url": u }) });
        if !cx.first_confirmed("secrets", &pointer, &what, cands) {
            cx.unknown(
                "secrets",
                &pointer,
                format!("{what}: its hosts or the fetch grants changed and no URL was confirmed"),
            );
        }
    }
}

/// A readable secret: `secrets.get` allows exactly the readable names.
fn readable_widening(cx: &mut Ctx<'_>, i: usize, name: &str) {
    let pointer = format!("/secrets/{i}");
    let w = Witness::Capability { id: "secrets.get", payload: json!({ "name": name }) };
    let what = cx.say(format!("secret {name} readable"), format!("secret {name} no longer readable"));
    cx.first_confirmed("secrets", &pointer, &what, [w]);
}

fn topic_text(p: &TopicPattern, rest: &str) -> String {
    p.segments()
        .iter()
        .map(|s| match s {
            Segment::Literal(l) => l.as_str(),
            Segment::One => "w",
            Segment::Rest => rest,
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Topic patterns in a segment trie, so whether one of them covers a
/// pattern is one walk along the pattern's segments (each node at most
/// once), not a pass over every pattern.
/// A [`TopicTrie`] node: literal children, the `*` child, whether a
/// pattern ends here, whether a pattern ends here with a final `**` after it.
type TopicNode<'a> = (HashMap<&'a str, usize>, Option<usize>, bool, bool);

#[derive(Default)]
struct TopicTrie<'a> {
    nodes: Vec<TopicNode<'a>>,
}

impl<'a> TopicTrie<'a> {
    fn new(pats: &'a [TopicPattern]) -> Self {
        let mut t = TopicTrie { nodes: vec![(HashMap::new(), None, false, false)] };
        for p in pats {
            let mut at = 0;
            for seg in p.segments() {
                let next = match seg {
                    Segment::Rest => {
                        t.nodes[at].3 = true;
                        break;
                    }
                    Segment::One => t.nodes[at].1,
                    Segment::Literal(l) => t.nodes[at].0.get(l.as_str()).copied(),
                };
                at = match next {
                    Some(n) => n,
                    None => {
                        t.nodes.push((HashMap::new(), None, false, false));
                        let n = t.nodes.len() - 1;
                        match seg {
                            Segment::One => t.nodes[at].1 = Some(n),
                            Segment::Literal(l) => {
                                t.nodes[at].0.insert(l.as_str(), n);
                            }
                            Segment::Rest => unreachable!("`**` ends the walk above"),
                        }
                        n
                    }
                };
            }
            if !matches!(p.segments().last(), Some(Segment::Rest)) {
                t.nodes[at].2 = true;
            }
        }
        t
    }

    /// Whether some pattern covers `r` ([`TopicPattern::covers`]); `None`
    /// when the work budget ran out first.
    fn covers(&self, r: &TopicPattern, work: &Work) -> Option<bool> {
        let segs = r.segments();
        let mut stack = vec![(0usize, 0usize)];
        while let Some((n, i)) = stack.pop() {
            if !work.spend(1) {
                return None;
            }
            let (lits, one, end, rest) = &self.nodes[n];
            // `**` is last and matches one or more: covers any non-empty rest.
            if *rest && i < segs.len() {
                return Some(true);
            }
            match segs.get(i) {
                None if *end => return Some(true),
                None | Some(Segment::Rest) => {}
                Some(Segment::One) => stack.extend(one.map(|c| (c, i + 1))),
                Some(Segment::Literal(b)) => {
                    stack.extend(one.map(|c| (c, i + 1)));
                    stack.extend(lits.get(b.as_str()).map(|&c| (c, i + 1)));
                }
            }
        }
        Some(false)
    }
}

fn topic_widenings(cx: &mut Ctx<'_>) {
    let (old, new) = (cx.old, cx.new);
    let publishes = TopicTrie::new(old.publishes());
    for (i, p) in new.publishes().iter().enumerate() {
        let pointer = format!("/events/publishes/{i}");
        let what = cx.say(format!("publishes {p}"), format!("no longer publishes all of {p}"));
        match publishes.covers(p, cx.work) {
            Some(true) => continue,
            Some(false) => {}
            None => {
                cx.unknown("events", &pointer, format!("{what}: {}", past_work()));
                continue;
            }
        }
        let cands = ["w", "w.w", "zz-witness"]
            .into_iter()
            .map(|r| Witness::Capability { id: "events.publish", payload: json!({ "topic": topic_text(p, r) }) });
        if !cx.first_confirmed("events", &pointer, &what, cands.collect::<Vec<_>>()) {
            cx.unknown(
                "events",
                &pointer,
                format!("{what}: no single old pattern covers it and no topic was confirmed"),
            );
        }
    }
    let subscribes = TopicTrie::new(old.subscribes());
    for (i, p) in new.subscribes().iter().enumerate() {
        let pointer = format!("/events/subscribes/{i}");
        let what = cx.say(format!("subscribes {p}"), format!("no longer subscribes {p}"));
        match subscribes.covers(p, cx.work) {
            Some(true) => continue,
            Some(false) => {}
            None => {
                cx.unknown("events", &pointer, format!("{what}: {}", past_work()));
                continue;
            }
        }
        let w = Witness::Capability { id: "events.subscribe", payload: json!({ "topic": p.to_string() }) };
        if !cx.first_confirmed("events", &pointer, &what, [w]) {
            cx.unknown("events", &pointer, format!("{what}: not confirmed"));
        }
    }
}

fn db_widenings(cx: &mut Ctx<'_>) {
    if let Some(d) = cx.new.database() {
        if cx.old.database() != Some(d) {
            let w = Witness::Capability { id: "db.query", payload: json!({ "database": d }) };
            let what = cx.say(format!("database {d} granted"), format!("database {d} no longer granted"));
            if !cx.first_confirmed("db", "/db/database", &what, [w]) {
                cx.unknown("db", "/db/database", format!("{what}: not confirmed"));
            }
        }
    }
}

fn budget_widenings(cx: &mut Ctx<'_>) {
    for kind in [BudgetKind::CpuPercent, BudgetKind::MemoryMb, BudgetKind::WallClockMs] {
        let (o, n) = (budget_limit(cx.old, kind), budget_limit(cx.new, kind));
        let observed = match (o, n) {
            (Some(o), None) => o * 2.0 + 1.0,
            (Some(o), Some(n)) if n > o => n,
            _ => continue,
        };
        let what = match (o, n) {
            (Some(o), None) => cx.say(
                format!("{} budget removed (was {o})", kind.as_str()),
                format!("{} budget added ({o})", kind.as_str()),
            ),
            (Some(o), Some(n)) => cx.say(
                format!("{} budget raised {o} -> {n}", kind.as_str()),
                format!("{} budget lowered {n} -> {o}", kind.as_str()),
            ),
            (None, _) => continue,
        };
        let pointer = format!("/budgets/{}", kind.as_str());
        if !cx.first_confirmed("budgets", &pointer, &what, [Witness::Budget { kind, observed }]) {
            cx.unknown("budgets", &pointer, format!("{what}: not confirmed"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyOptions;

    fn pol(j: &str) -> PermissionPolicy {
        PermissionPolicy::from_json(j, PolicyOptions::new("t").platform(Platform::Posix)).unwrap()
    }

    fn code(a: &str, b: &str) -> (u8, DiffReport) {
        let (a, b) = (pol(a), pol(b));
        let r = diff_policies(&a, &b);
        for c in r.widens.iter() {
            assert!(c.witness.allowed_by(&b) && !c.witness.allowed_by(&a), "{c:?}");
        }
        for c in r.narrows.iter() {
            assert!(!c.witness.allowed_by(&b) && c.witness.allowed_by(&a), "{c:?}");
        }
        (r.exit_code(), r)
    }

    /// `*` in a path scope is one non-empty segment: a trailing `/` (an empty
    /// last segment) or `//` is not under it, in grants and in bound secrets'
    /// hosts alike (red team: `/v1/*` -> `/v1/` answered 0).
    #[test]
    fn an_empty_path_segment_is_not_under_a_star() {
        for (old, new) in [
            (r#"{"fetch":["https://api.example.com/*"]}"#, r#"{"fetch":["https://api.example.com/"]}"#),
            (r#"{"fetch":["https://api.example.com/v1/*"]}"#, r#"{"fetch":["https://api.example.com/v1/"]}"#),
            (r#"{"fetch":["https://api.example.com/v1/*/*"]}"#, r#"{"fetch":["https://api.example.com/v1/*/"]}"#),
            (r#"{"fetch":["api.example.com/*"]}"#, r#"{"fetch":["api.example.com/"]}"#),
            (
                r#"{"fetch":["https://api.example.com"],"secrets":[{"name":"T","hosts":["https://api.example.com/*"]}]}"#,
                r#"{"fetch":["https://api.example.com"],"secrets":[{"name":"T","hosts":["https://api.example.com/"]}]}"#,
            ),
        ] {
            let (c, r) = code(old, new);
            assert_ne!(c, 0, "{old} -> {new}: {r:?}");
        }
        // `**` is one or more segments, an empty one included: still covered.
        assert_eq!(code(r#"{"fetch":["https://a.com/v1/**"]}"#, r#"{"fetch":["https://a.com/v1/"]}"#).0, 0);
        assert_eq!(code(r#"{"fetch":["https://a.com/v1/*"]}"#, r#"{"fetch":["https://a.com/v1/x"]}"#).0, 0);
    }

    #[test]
    fn fs_narrowing_and_widening() {
        let (c, r) = code(r#"{"fs":["/srv/**"]}"#, r#"{"fs":["/srv/app/**"]}"#);
        assert_eq!(c, 0, "{r:?}");
        assert_eq!(r.narrows.len(), 1, "{r:?}");
        let (c, r) = code(r#"{"fs":["/srv/app/**"]}"#, r#"{"fs":["/srv/**"]}"#);
        assert_eq!(c, 1, "{r:?}");
        eprintln!("{:?}", r.widens[0].witness);
        assert_eq!(code(r#"{"fs":["/a/*.json"]}"#, r#"{"fs":["/a/x*.json"]}"#).0, 0);
        assert_eq!(code(r#"{"fs":["/a/x*.json"]}"#, r#"{"fs":["/a/*.json"]}"#).0, 1);
        assert_eq!(code(r#"{"fs":["/a/{b,c}/**"]}"#, r#"{"fs":["/a/b/**","/a/c/x"]}"#).0, 0);
        assert_eq!(code(r#"{"fs":["/a/[a-m]*","/a/[n-z]*"]}"#, r#"{"fs":["/a/[c-q]x"]}"#).0, 0);
        assert_eq!(code(r#"{"fs":["/a/[a-m]*","/a/[n-y]*"]}"#, r#"{"fs":["/a/[c-z]x"]}"#).0, 1);
        assert_eq!(code(r#"{"fs":["/**"]}"#, r#"{"fs":["/"]}"#).0, 1);
        assert_eq!(code(r#"{"fs":["/a/**"]}"#, r#"{"fs":["/a/**/b"]}"#).0, 0);
        assert_eq!(code(r#"{"fs":["/a/**/b"]}"#, r#"{"fs":["/a/**"]}"#).0, 1);
        assert_eq!(code(r#"{"fs":["/a/**"]}"#, r#"{"fs":[{"path":"/a/**","mode":"readwrite"}]}"#).0, 1);
        assert_eq!(code(r#"{"fs":["/a/**"]}"#, r#"{"fs":["/a/**"],"deny":{"fs":["/a/b/**"]}}"#).0, 0);
        let (c, r) = code(r#"{"fs":["/a/**"],"deny":{"fs":["/a/b/**"]}}"#, r#"{"fs":["/a/**"]}"#);
        assert_eq!(c, 1, "{r:?}");
        assert_eq!(code(r#"{"fs":["/a/**"],"deny":{"fs":["/z/**"]}}"#, r#"{"fs":["/a/**"]}"#).0, 0);
        assert_eq!(code(r#"{"fs":["/a/b/**"]}"#, r#"{"fs":["/a/**"],"deny":{"fs":["/a/c/**"]}}"#).0, 1);
        let (c, r) = code(r#"{"fs":["/a/b/**"]}"#, r#"{"fs":["/a/*/**"],"deny":{"fs":["/a/[!b]*/**", "/a/b?*/**"]}}"#);
        assert_eq!(c, 0, "{r:?}");
    }

    #[test]
    fn hostile_old_policies_are_unknown() {
        // A wildcard run past the free length may exhaust its own budget and not match.
        let long = format!(r#"{{"fs":["/a/*{}*"]}}"#, "?".repeat(glob::MAX_FREE_WILD_RUN + 1));
        assert_eq!(code(&long, r#"{"fs":["/a/b"]}"#).0, 2);
        // Thousands of segment walks under one directory: a check may stop at the step budget.
        let many: Vec<String> = (0..400).map(|i| format!("/a/**/x{i}*y*")).collect();
        let many = serde_json::json!({ "fs": many }).to_string();
        let (c, r) = code(&many, r#"{"fs":["/a/b/x1yy"]}"#);
        assert_eq!(c, 2, "{r:?}");
        // The same count spread over directories is fine.
        let spread: Vec<String> = (0..400).map(|i| format!("/a{i}/**/x*y*")).collect();
        let spread = serde_json::json!({ "fs": spread }).to_string();
        assert_eq!(code(&spread, r#"{"fs":["/a1/b/xy"]}"#).0, 0);
    }

    #[test]
    fn win32_by_variants() {
        let w = |j: &str| PermissionPolicy::from_json(j, PolicyOptions::new("t").platform(Platform::Win32)).unwrap();
        let d = |a: &str, b: &str| diff_policies(&w(a), &w(b));
        assert_eq!(d(r#"{"fs":["C:/x/**"]}"#, r#"{"fs":["C:\\X\\**"]}"#).exit_code(), 0);
        let r = d(r#"{"fs":["C:/x/**"]}"#, r#"{"fs":["D:/x/**"]}"#);
        assert_eq!(r.exit_code(), 1, "{r:?}");
        assert!(r.widens[0].witness.allowed_by(&w(r#"{"fs":["D:/x/**"]}"#)));
        // Narrowed, by the segment automata on the NTFS-upper-cased names.
        assert_eq!(d(r#"{"fs":["C:/x/**"]}"#, r#"{"fs":["c:/X/y/*.txt"]}"#).exit_code(), 0);
        assert_eq!(d(r#"{"fs":["C:/x/*.txt"]}"#, r#"{"fs":["C:/x/**"]}"#).exit_code(), 1);
        // An 8.3-shaped name: only a literal segment matches it, never `*` or `**`.
        let r = d(r#"{"fs":["C:/x/*"]}"#, r#"{"fs":["C:/x/PROGRA~1"]}"#);
        assert_eq!(r.exit_code(), 1, "{r:?}");
        assert!(matches!(&r.widens[0].witness, Witness::Fs { path, .. } if path == "C:/X/PROGRA~1"));
        let r = d(r#"{"fs":["C:/x/**"]}"#, r#"{"fs":["C:/x/*/y"]}"#);
        assert_eq!(r.exit_code(), 0, "{r:?}");
        // Classes fold per character on win32: compared by variants only.
        assert_eq!(d(r#"{"fs":["C:/x/**"]}"#, r#"{"fs":["C:/x/[a-c]"]}"#).exit_code(), 2);
        assert_eq!(d(r#"{"fs":["C:/x/**"],"deny":{"fs":["C:/x/s/**"]}}"#, r#"{"fs":["C:/x/**"]}"#).exit_code(), 1);
    }

    #[test]
    fn fetch_and_capabilities() {
        assert_eq!(code(r#"{"fetch":["*.example.com"]}"#, r#"{"fetch":["api.example.com"]}"#).0, 0);
        assert_eq!(code(r#"{"fetch":["api.example.com"]}"#, r#"{"fetch":["*.example.com"]}"#).0, 1);
        assert_eq!(code(r#"{"fetch":["api.example.com"]}"#, r#"{"fetch":["api.example.com:8443"]}"#).0, 1);
        assert_eq!(code(r#"{"fetch":["api.example.com/v1/**"]}"#, r#"{"fetch":["api.example.com/v1/x"]}"#).0, 0);
        assert_eq!(code(r#"{"fetch":["api.example.com/v1/x"]}"#, r#"{"fetch":["api.example.com/v1/**"]}"#).0, 1);
        assert_eq!(code(r#"{"fetch":["a.com"],"deny":{"fetch":["a.com/admin/**"]}}"#, r#"{"fetch":["a.com"]}"#).0, 1);
        assert_eq!(code(r#"{"fetch":["a.com"],"deny":{"fetch":["8.8.8.0/24"]}}"#, r#"{"fetch":["a.com"]}"#).0, 1);
        assert_eq!(code(r#"{"secrets":["A"]}"#, r#"{"secrets":["A","B"]}"#).0, 1);
        assert_eq!(code(r#"{"secrets":["A","B"]}"#, r#"{"secrets":["A"]}"#).0, 0);
        assert_eq!(code(r#"{"events":{"publishes":["a.*"]}}"#, r#"{"events":{"publishes":["a.b"]}}"#).0, 0);
        assert_eq!(code(r#"{"events":{"subscribes":["a.*"]}}"#, r#"{"events":{"subscribes":["a.**"]}}"#).0, 1);
        assert_eq!(code(r#"{"db":{"database":"x"}}"#, r#"{"db":{"database":"y"}}"#).0, 1);
        assert_eq!(code(r#"{"budgets":{"wallClockMs":100}}"#, r#"{"budgets":{"wallClockMs":50}}"#).0, 0);
        assert_eq!(code(r#"{"budgets":{"wallClockMs":100}}"#, r#"{"budgets":{"wallClockMs":500}}"#).0, 1);
        assert_eq!(code(r#"{"budgets":{"wallClockMs":100}}"#, r#"{}"#).0, 1);
        assert_eq!(code(r#"{}"#, r#"{}"#).0, 0);
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;
    use crate::policy::PolicyOptions;

    fn posix(m: &serde_json::Value) -> PermissionPolicy {
        PermissionPolicy::from_manifest(m, PolicyOptions::new("t").platform(Platform::Posix)).unwrap()
    }

    /// The matcher spends a literal run's bytes, not its characters: an old
    /// policy whose checks give up (and deny) on a path its globs allow is
    /// never "proven" to cover the new one.
    #[test]
    fn the_step_budget_is_counted_in_the_matchers_unit() {
        let note = '\u{1D160}';
        let mut fs: Vec<serde_json::Value> = (0..1040u32)
            .map(|i| {
                let last = char::from_u32(0x1_0000 + i).unwrap();
                json!(format!("/a/*/{}{last}*", note.to_string().repeat(999)))
            })
            .collect();
        // Tried after every pattern filed under `/a` (the walk goes root first).
        fs.push(json!("/a/b/*z"));
        let old = posix(&json!({ "fs": fs }));
        let new = posix(&json!({ "fs": ["/a/b/*z"] }));
        let path = format!("/a/b/{}z", note.to_string().repeat(1000));
        // The old policy's globs allow it (`/a/*z`), its check gives up first and denies.
        assert!(!old.check_fs(&path, FsMode::Read).is_allowed());
        assert!(new.check_fs(&path, FsMode::Read).is_allowed());
        let r = diff_policies(&old, &new);
        assert_ne!(r.exit_code(), 0, "{} narrowings, unknown {:?}", r.narrows.len(), r.unknown);
    }

    /// The expansion factors the step bound assumes: no spelling a check
    /// matches a path in is more than FOLD_EXPANSION times longer in bytes
    /// (every character alone, and strings mixing the characters that fold
    /// or decompose longest with combining marks and ignorables), and NTFS
    /// upper case no more than NTFS_EXPANSION_HALVES / 2.
    #[test]
    fn fold_expansion_bounds_hold() {
        let check = |s: &str| {
            let full = crate::posix_fold::fold(s);
            let bound = FOLD_EXPANSION as usize * s.len();
            assert!(full.len() <= bound, "{s:?}");
            for other in crate::posix_fold::other_spellings(s, &full) {
                assert!(other.len() <= bound, "{s:?}");
            }
            let up: String = s.chars().map(crate::ntfs_upcase::upcase).collect();
            assert!(2 * up.len() <= NTFS_EXPANSION_HALVES as usize * s.len(), "{s:?}");
        };
        let mut longest = Vec::new();
        for c in (0..=0x10_FFFFu32).filter_map(char::from_u32) {
            let s = c.to_string();
            check(&s);
            if crate::posix_fold::fold(&s).len() > s.len() {
                longest.push(c);
            }
        }
        let marks = ['\u{301}', '\u{308}', '\u{345}', '\u{200C}', '\u{FEFF}', 'a', 'I'];
        let mut x = 0x2545_F491u32;
        for _ in 0..20_000 {
            let s: String = (0..12)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    if x.is_multiple_of(3) {
                        marks[x as usize % marks.len()]
                    } else {
                        longest[x as usize % longest.len()]
                    }
                })
                .collect();
            check(&s);
        }
    }

    /// The widening question, with the work it cost.
    fn forward(old: &PermissionPolicy, new: &PermissionPolicy) -> (Findings, u64) {
        let work = Work::new(MAX_DIFF_WORK);
        let f = widenings(old, new, true, &work, [&step_bounds(old), &step_bounds(new)]);
        (f, work.spent())
    }

    fn exit(f: &Findings) -> u8 {
        DiffReport { widens: f.found.clone(), narrows: Vec::new(), unknown: f.unknown.clone() }.exit_code()
    }

    /// A manifest against itself with long literal-plus-wildcard globs: each
    /// grant is its own cover, decided without a search.
    #[test]
    fn equal_grants_are_covered_without_a_search() {
        let fs: Vec<String> = (0..100).map(|i| format!("/a/{i:04}{}*", "q".repeat(196))).collect();
        let p = posix(&json!({ "fs": fs }));
        let (f, spent) = forward(&p, &p);
        assert_eq!(exit(&f), 0, "{:?}", f.unknown);
        assert!(spent < 100_000, "{spent} units");
        // Narrowed by one character each: one short search per grant, among the grants its literal meets.
        let narrower: Vec<String> = (0..100).map(|i| format!("/a/{i:04}{}*x", "q".repeat(196))).collect();
        let (f, spent) = forward(&p, &posix(&json!({ "fs": narrower })));
        assert_eq!(exit(&f), 0, "{:?}", f.unknown);
        assert!(spent < MAX_DIFF_WORK / 4, "{spent} units");
    }

    /// A wildcard against many long literal patterns: the exact search may
    /// not finish within the bound; then the answer is unknown, never 0.
    #[test]
    fn a_search_past_the_bound_is_unknown() {
        let old: Vec<String> = (0..100).map(|i| format!("/a/{i:04}{}*", "q".repeat(196))).collect();
        let old = posix(&json!({ "fs": old }));
        let (f, spent) = forward(&old, &posix(&json!({ "fs": ["/a/*"] })));
        assert_ne!(exit(&f), 0);
        assert!(spent <= MAX_DIFF_WORK);
    }

    /// 10,000 fetch patterns and topics each side: one index lookup per
    /// pattern, not a pass over the other side.
    #[test]
    fn large_fetch_and_topic_lists_are_indexed() {
        let n = 10_000;
        let a = posix(&json!({
            "fetch": (0..n).map(|i| format!("https://h{i}.example.com/v1/**")).collect::<Vec<_>>(),
            "events": {
                "publishes": (0..n).map(|i| format!("t{i}.a.*")).collect::<Vec<_>>(),
                "subscribes": (0..n).map(|i| format!("t{i}.**")).collect::<Vec<_>>(),
            },
        }));
        let b = posix(&json!({
            "fetch": (0..n).map(|i| format!("https://h{i}.example.com/v1/x")).collect::<Vec<_>>(),
            "events": {
                "publishes": (0..n).map(|i| format!("t{i}.a.b")).collect::<Vec<_>>(),
                "subscribes": (0..n).map(|i| format!("t{i}.x.**")).collect::<Vec<_>>(),
            },
        }));
        let (f, spent) = forward(&a, &b);
        assert_eq!(exit(&f), 0, "{:?}", f.unknown.first());
        assert!(spent < 2_000_000, "{spent} units");
        // Every change is a confirmed widening or, once the witness checks
        // (topic checks compare every pattern) have spent the bound, unknown.
        let (f, _) = forward(&b, &a);
        assert_eq!(exit(&f), 1);
        assert_eq!(f.found.len() + f.unknown.len(), 3 * n);
        assert!(f.found.len() >= n, "{}", f.found.len());
        // Suffix patterns: each covered by the one above it.
        let wide = posix(&json!({ "fetch": (0..n).map(|i| format!("*.s{i}.example.com")).collect::<Vec<_>>() }));
        let deep = posix(&json!({ "fetch": (0..n).map(|i| format!("*.x.s{i}.example.com")).collect::<Vec<_>>() }));
        let (f, spent) = forward(&wide, &deep);
        assert_eq!(exit(&f), 0);
        assert!(spent < 1_000_000, "{spent} units");
    }

    /// 8,000 fs grants each side: the literal-prefix index keeps each
    /// inclusion search to the grants under its own directory.
    #[test]
    fn large_fs_lists_are_indexed() {
        let n = 8_000;
        let a = posix(&json!({ "fs": (0..n).map(|i| format!("/srv/d{i}/**")).collect::<Vec<_>>() }));
        let b = posix(&json!({ "fs": (0..n).map(|i| format!("/srv/d{i}/*.json")).collect::<Vec<_>>() }));
        let (f, spent) = forward(&a, &b);
        assert_eq!(exit(&f), 0, "{:?}", f.unknown.first());
        assert!(spent < 20_000_000, "{spent} units");
        let (f, _) = forward(&b, &a);
        assert_eq!(exit(&f), 1);
        // 8,000 dropped deny rules, none under a grant.
        let denied = posix(&json!({
            "fs": (0..n).map(|i| format!("/srv/g{i}/**")).collect::<Vec<_>>(),
            "deny": { "fs": (0..n).map(|i| format!("/other/d{i}/**")).collect::<Vec<_>>() },
        }));
        let open = posix(&json!({ "fs": (0..n).map(|i| format!("/srv/g{i}/**")).collect::<Vec<_>>() }));
        let (f, spent) = forward(&denied, &open);
        assert_eq!(exit(&f), 0, "{:?}", f.unknown.first());
        assert!(spent < 20_000_000, "{spent} units");
    }
}
