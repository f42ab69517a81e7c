//! An example Rust WASI host: wasmtime runs WASI preview1 guests, and every
//! path-taking preview1 call and every host import is checked with the
//! `api-sandbox-permissions` checker before it runs. A denial is the WASI
//! errno `EACCES` (2) for the guest and one increment of
//! `plugin.permission_denied_total`. Budgets: epoch interruption samples a
//! `BudgetTracker` (wall clock, and the guest thread's CPU time), and
//! a `ResourceLimiter` bounds the guest's memory: every linear memory and
//! table of the store summed against `memoryMb`, a growth past it a
//! `BUDGET_EXCEEDED` (memory) that ends the run. Epoch interruption fires only
//! in guest code, so the host calls that block (`poll_oneoff`, the `fetch`
//! import) are bounded by what is left of `wallClockMs` and, past it, end the
//! guest with the same breach, recorded through the same tracker.
//!
//! How the gate sits in front of wasmtime-wasi: the linker gets wasmtime-wasi's
//! preview1 functions (`add_to_linker_sync`), then the gated names are defined
//! again (shadowing) by functions that read the guest's path, check it, and
//! only then call wasmtime-wasi's own preview1 implementation
//! (`wasmtime_wasi::p1::wasi_snapshot_preview1::*`) with the same arguments.
//! Which call needs which check is data shared with the Node host
//! (`data/wasi-calls.json`): fd-level calls are checked with
//! their mode on the path recorded for the fd, sockets are refused, and an
//! import the table does not classify stops the host before it runs a guest.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use api_sandbox_permissions::budget::{
    Breach, BudgetStatus, BudgetTracker, Sample, Sampler, TrackerError, TrackerOptions,
};
use api_sandbox_permissions::error::{BudgetKind, Capability, Decision, Denial};
use api_sandbox_permissions::metrics::Instruments;
use api_sandbox_permissions::DenyReason;
use api_sandbox_permissions::{FsCheckOptions, FsMode, PermissionChecker, PermissionPolicy};
use opentelemetry::metrics::Meter;
use serde_json::json;
use unicode_normalization::UnicodeNormalization;
use wasmtime::{
    AsContextMut, Caller, Config, Engine, Extern, Linker, Module, ResourceLimiter, Store, UpdateDeadline, Val,
};
use wasmtime_wasi::p1::wasi_snapshot_preview1 as p1;
use wasmtime_wasi::p1::wasi_snapshot_preview1::WasiSnapshotPreview1;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};
use wiggle::GuestMemory;

/// WASI preview1 errno values (the `errno` enum of wasi_snapshot_preview1).
pub mod errno {
    pub const SUCCESS: i32 = 0;
    pub const ACCES: i32 = 2;
    pub const BADF: i32 = 8;
    pub const FAULT: i32 = 21;
    pub const EXIST: i32 = 20;
    pub const ILSEQ: i32 = 25;
    pub const IO: i32 = 29;
    pub const LOOP: i32 = 32;
    pub const NOTCAPABLE: i32 = 76;
}

/// The call table shared with the Node host: every wasi_snapshot_preview1
/// import and the check it needs (see its provenance string).
pub const WASI_CALLS_JSON: &str = include_str!("../../../data/wasi-calls.json");

/// When a path call's runtime follows a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Whatever the guest's lookup flag says (checked as the resolved path).
    Always,
    /// With `LOOKUP_SYMLINK_FOLLOW` only.
    Flag,
    /// Never: the call acts on the name itself.
    Never,
}

/// What one import needs from the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGate {
    /// Touches no host path.
    None,
    /// Acts on what its fd names: this mode, on the path recorded for the fd,
    /// then this right (a bit number of preview1 `rights`) of the fd.
    Fd(FsMode, u32),
    /// Checked on its path arguments; lookup flags in the mask (`refuseFlags`)
    /// are answered with the errno before any check.
    Path(Follow, Option<(i32, i32)>),
    /// Never forwarded: this errno.
    Refuse(i32),
}

/// The parsed call table ([`WASI_CALLS_JSON`]); an entry it cannot read is an error.
pub fn wasi_calls() -> Result<HashMap<String, CallGate>, String> {
    let v: serde_json::Value = serde_json::from_str(WASI_CALLS_JSON).map_err(|e| e.to_string())?;
    let calls = v.get("calls").and_then(serde_json::Value::as_object).ok_or("wasi-calls.json: no `calls` object")?;
    let mut out = HashMap::new();
    for (name, spec) in calls {
        let field = |k: &str| spec.get(k).and_then(serde_json::Value::as_str);
        let gate = match field("gate") {
            Some("none") => CallGate::None,
            Some("fd") => CallGate::Fd(
                match field("mode") {
                    Some("read") => FsMode::Read,
                    Some("write") => FsMode::Write,
                    m => return Err(format!("wasi-calls.json: {name}: mode {m:?}")),
                },
                spec.get("right")
                    .and_then(serde_json::Value::as_u64)
                    .filter(|r| *r < 64)
                    .and_then(|r| u32::try_from(r).ok())
                    .ok_or_else(|| format!("wasi-calls.json: {name}: right"))?,
            ),
            Some("path") => CallGate::Path(
                match field("follow") {
                    Some("always") => Follow::Always,
                    Some("flag") => Follow::Flag,
                    Some("never") => Follow::Never,
                    f => return Err(format!("wasi-calls.json: {name}: follow {f:?}")),
                },
                match spec.get("refuseFlags") {
                    None => None,
                    Some(r) => {
                        let int =
                            |k: &str| r.get(k).and_then(serde_json::Value::as_i64).and_then(|v| i32::try_from(v).ok());
                        Some(
                            int("mask")
                                .zip(int("errno"))
                                .ok_or_else(|| format!("wasi-calls.json: {name}: refuseFlags"))?,
                        )
                    }
                },
            ),
            Some("refuse") => CallGate::Refuse(
                spec.get("errno")
                    .and_then(serde_json::Value::as_i64)
                    .and_then(|e| i32::try_from(e).ok())
                    .ok_or_else(|| format!("wasi-calls.json: {name}: errno"))?,
            ),
            g => return Err(format!("wasi-calls.json: {name}: gate {g:?}")),
        };
        out.insert(name.clone(), gate);
    }
    Ok(out)
}

/// Whether `op` follows a final symlink with these lookup flags, per the table
/// (an op the table does not list as a path call: follows, the stricter check).
fn follows(table: &HashMap<String, CallGate>, op: &str, flags: i32) -> bool {
    match table.get(op) {
        Some(CallGate::Path(Follow::Never, _)) => false,
        Some(CallGate::Path(Follow::Flag, _)) => flags & LOOKUP_SYMLINK_FOLLOW != 0,
        _ => true,
    }
}

/// `host_path` with `.`, `..` and repeated separators removed lexically (a
/// `..` at the root stays there), a trailing separator kept: what node:wasi
/// hands the kernel for a guest path.
pub fn normalize_lexically(host_path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in host_path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    let trailing = host_path.len() > 1 && host_path.ends_with('/') && !out.is_empty();
    format!("/{}{}", out.join("/"), if trailing { "/" } else { "" })
}

/// Whether the kernel follows a final symlink of `host_path` whatever a
/// no-follow flag says: a trailing separator, or a final `.` / `..` component.
pub fn forces_follow(host_path: &str) -> bool {
    host_path.len() > 1
        && (host_path.ends_with('/')
            || host_path.ends_with("/.")
            || host_path.ends_with("/..")
            || host_path == "."
            || host_path == "..")
}

/// Where node:wasi's own following of a final symlink ends: while the path is
/// a symlink, its target joined to the link's directory (or itself, absolute)
/// and normalised lexically, at most 32 links (uvwasi's limit).
pub fn follow_lexically(host_path: &str) -> String {
    let mut p = host_path.to_owned();
    for _ in 0..32 {
        let trimmed = if p.len() > 1 { p.trim_end_matches('/') } else { p.as_str() };
        let Ok(target) = std::fs::read_link(trimmed) else { return p };
        let Some(target) = target.to_str() else { return p };
        let dir = match trimmed.rfind('/') {
            Some(0) | None => "/",
            Some(i) => &trimmed[..i],
        };
        p = if target.starts_with('/') {
            normalize_lexically(target)
        } else {
            normalize_lexically(&format!("{dir}/{target}"))
        };
    }
    p
}

/// What a no-follow open of `host_path` gets from open(2) with O_NOFOLLOW when
/// its final component is a symlink: ELOOP, EEXIST for O_CREAT|O_EXCL; SUCCESS
/// when it is not a symlink or does not exist. The parent is resolved as written.
pub fn final_symlink_errno(host_path: &str, exclusive: bool) -> i32 {
    let raw = host_path.trim_end_matches('/');
    let (parent, base) = match raw.rfind('/') {
        Some(i) => (if i == 0 { "/" } else { &raw[..i] }, &raw[i + 1..]),
        None => return errno::SUCCESS,
    };
    if base.is_empty() || base == "." || base == ".." {
        return errno::SUCCESS;
    }
    let Ok(real) = std::fs::canonicalize(parent) else { return errno::SUCCESS };
    match std::fs::symlink_metadata(real.join(base)) {
        Ok(m) if m.file_type().is_symlink() => {
            if exclusive {
                errno::EXIST
            } else {
                errno::LOOP
            }
        }
        _ => errno::SUCCESS,
    }
}

/// Whether `c` is a Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties).
fn default_ignorable(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// The conservative fold a deny segment and a path segment are compared in
/// (broader than any volume's): NFKC, upper- then lower-case, without
/// Default_Ignorable code points (the Node host's `foldSeg`).
pub fn fold_segment(s: &str) -> String {
    let nfkc: String = s.nfkc().collect();
    nfkc.to_uppercase().to_lowercase().chars().filter(|c| !default_ignorable(*c)).collect()
}

/// A glob segment with a glob metacharacter.
fn is_wild(seg: &str) -> bool {
    seg.contains(['*', '?', '[', '{', '\\'])
}

/// A path's or glob's segments, without the empty one before a leading `/`.
fn segments(p: &str) -> Vec<&str> {
    let mut segs: Vec<&str> = p.split('/').collect();
    if segs.first() == Some(&"") {
        segs.remove(0);
    }
    segs
}

/// Whether `deny.fs` glob `glob` may match a path below directory `dir` (or
/// `dir` itself): its segments agree with `dir`'s (folded) until a wild one.
pub fn may_match_below(glob: &str, dir: &str) -> bool {
    let (g, d) = (segments(glob), segments(dir));
    for (i, seg) in d.iter().enumerate() {
        let Some(gs) = g.get(i) else { return false };
        if is_wild(gs) {
            return true;
        }
        if fold_segment(gs) != fold_segment(seg) {
            return false;
        }
    }
    true
}

/// One concrete path below `dir` that `glob` is meant to match: its segments
/// past `dir`, each with its wildcards replaced by a plain member (`dir/x`
/// when the glob has none past `dir`).
pub fn below_candidate(glob: &str, dir: &str) -> String {
    let rest: Vec<String> = segments(glob).into_iter().skip(segments(dir).len()).map(plain_segment).collect();
    let dir = if dir == "/" { "" } else { dir };
    if rest.is_empty() {
        format!("{dir}/x")
    } else {
        format!("{dir}/{}", rest.join("/"))
    }
}

/// A glob segment as one name it matches: `**` is `x`; `*` dropped, `?` an
/// `x`, `\c` a `c`, `[...]` its first member, `{a,b}` its first alternative;
/// an empty result `x`.
pub fn plain_segment(seg: &str) -> String {
    if seg == "**" {
        return "x".into();
    }
    let c: Vec<char> = seg.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '*' => {}
            '?' => out.push('x'),
            '\\' if i + 1 < c.len() => {
                i += 1;
                out.push(c[i]);
            }
            '[' => {
                let mut j = i + 1;
                if matches!(c.get(j), Some('!' | '^')) {
                    j += 1;
                }
                out.push(c.get(j).copied().unwrap_or('x'));
                // Past the closing `]` (searched after the first member), or the end.
                i = c.iter().skip(j + 1).position(|&x| x == ']').map_or(c.len(), |k| j + 1 + k);
            }
            '{' => {
                let (mut depth, mut j, mut first, mut in_first) = (1, i + 1, String::new(), true);
                while j < c.len() && depth > 0 {
                    match c[j] {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 1 => in_first = false,
                        _ => {}
                    }
                    if depth > 0 && in_first {
                        first.push(c[j]);
                    }
                    j += 1;
                }
                out.push_str(&plain_segment(&first));
                i = j - 1;
            }
            x => out.push(x),
        }
        i += 1;
    }
    if out.is_empty() {
        "x".into()
    } else {
        out
    }
}

const OFLAGS_CREAT: i32 = 1;
const OFLAGS_EXCL: i32 = 4;
const OFLAGS_TRUNC: i32 = 8;
/// Linear memories and tables one guest may declare (multi-memory guests included).
pub const MAX_MEMORIES: usize = 32;
/// See [`MAX_MEMORIES`].
pub const MAX_TABLES: usize = 32;
/// Bytes a table element holds in wasmtime (a pointer), counted against `memoryMb`.
const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();
const FDFLAGS_APPEND: i32 = 1;
const LOOKUP_SYMLINK_FOLLOW: i32 = 1;
/// `rights_base` bits that let an fd change its file: fd_datasync, fd_sync, fd_write,
/// fd_allocate, path_filestat_set_size, path_filestat_set_times, fd_filestat_set_size,
/// fd_filestat_set_times.
pub const WRITE_RIGHTS: u64 = (1 << 0) | (1 << 4) | (1 << 6) | (1 << 8) | (1 << 19) | (1 << 20) | (1 << 22) | (1 << 23);

/// The mode a `path_open` needs: create, truncate, append or any write right is a write.
pub fn open_mode(oflags: i32, rights_base: u64, fdflags: i32) -> FsMode {
    if oflags & (OFLAGS_CREAT | OFLAGS_TRUNC) != 0 || fdflags & FDFLAGS_APPEND != 0 || rights_base & WRITE_RIGHTS != 0 {
        FsMode::Write
    } else {
        FsMode::Read
    }
}

/// One gated call as the host saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub op: String,
    pub what: String,
    pub capability: String,
    pub allowed: bool,
    pub reason: Option<String>,
}

/// Entries the trace keeps (the newest; older ones are dropped and counted).
pub const MAX_TRACE: usize = 10_000;
/// UTF-8 bytes of one trace entry's `what`, the `…` marker included.
pub const MAX_WHAT: usize = 256;

/// `text` cut to at most [`MAX_WHAT`] bytes at a char boundary, ending in `…`
/// when cut (as the Node host's `clip`): a guest path may be megabytes.
pub fn clip(text: &str) -> String {
    if text.len() <= MAX_WHAT {
        return text.to_owned();
    }
    let mut end = MAX_WHAT - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Entries a directory rename's walk for the symlinks it moves visits at most
/// ([`Gate::rename_moves`]); past it the rename is refused (fail closed).
pub const MAX_RENAME_WALK: usize = 10_000;
/// Directory levels below the renamed directory that walk descends at most.
pub const MAX_RENAME_DEPTH: usize = 64;

/// What a relative symlink target `target`, found in the directory `rel`
/// (`""` or `"x/y/"`) below `old`, means once `old` is renamed to `new`, as a
/// path of the filesystem as it is now, before the rename (the new directory
/// does not exist yet, and a `..` after a missing directory cannot be
/// resolved). `rel`'s components are real directories (the walk does not
/// follow links) and so is `new`'s parent (`new` is the checked path: real
/// parent plus name), so the target's leading `..` steps climb lexically: up
/// `rel`, then out of `new`. Where they stop inside the moved directory, the
/// rest names what it names now below `old`; where they climb out of it, the
/// rest is read from that ancestor of `new`. `None` (refuse: fail closed)
/// when a `..` follows a name in the target, as a link there would decide
/// where it climbs from.
pub fn moved_meaning(old: &str, new: &str, rel: &str, target: &str) -> Option<String> {
    let mut inside: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    let mut out_of_new = 0usize;
    let mut rest: Vec<&str> = Vec::new();
    for step in target.split('/') {
        match step {
            "" | "." => {}
            ".." if !rest.is_empty() => return None,
            ".." => {
                if inside.pop().is_none() {
                    out_of_new += 1;
                }
            }
            name => rest.push(name),
        }
    }
    let base = if out_of_new == 0 {
        let mut base = old.trim_end_matches('/').to_owned();
        for c in inside {
            base.push('/');
            base.push_str(c);
        }
        base
    } else {
        let mut comps: Vec<&str> = new.split('/').filter(|c| !c.is_empty()).collect();
        // `..` at `/` stays at `/`.
        comps.truncate(comps.len().saturating_sub(out_of_new));
        comps.iter().map(|c| format!("/{c}")).collect()
    };
    let mut meant = base;
    for c in rest {
        meant.push('/');
        meant.push_str(c);
    }
    if meant.is_empty() {
        meant.push('/');
    }
    // A trailing `/` (or `/.`) in the target makes the kernel want a directory: kept.
    if (target.ends_with('/') || target.ends_with("/.") || target == ".") && !meant.ends_with('/') {
        meant.push('/');
    }
    Some(meant)
}

/// The gate: the checker plus the trace of gated calls (bounded: see [`Gate::record`]).
pub struct Gate {
    pub checker: PermissionChecker,
    /// The newest [`MAX_TRACE`] gated calls, oldest first.
    pub calls: VecDeque<Call>,
    /// Trace entries dropped past [`MAX_TRACE`] (the oldest first).
    pub dropped_calls: u64,
}

impl Gate {
    pub fn new(checker: PermissionChecker) -> Self {
        Self { checker, calls: VecDeque::new(), dropped_calls: 0 }
    }

    /// Appends one trace entry, its `what` cut by [`clip`]; the trace keeps the
    /// newest [`MAX_TRACE`] entries, counting the ones it drops.
    pub fn record(&mut self, mut call: Call) {
        if call.what.len() > MAX_WHAT {
            call.what = clip(&call.what);
        }
        while self.calls.len() >= MAX_TRACE {
            self.calls.pop_front();
            self.dropped_calls += 1;
        }
        self.calls.push_back(call);
    }

    /// Records a denied call (its `what` cut as every trace entry is) and
    /// answers the guest's `EACCES`.
    fn deny(&mut self, op: &str, what: &str, d: &Denial) -> i32 {
        self.record(Call {
            op: op.into(),
            what: clip(what),
            capability: d.capability.as_str().into(),
            allowed: false,
            reason: Some(d.reason.as_str().into()),
        });
        errno::ACCES
    }

    /// One path check. `follow`: the operation follows a final symlink, so the
    /// real path is checked (`authorize_fs` with `resolve_symlinks`). Otherwise
    /// it acts on the final name itself: the raw path lexically, then the real
    /// parent directory plus the name. Returns the path that was checked.
    pub fn fs(&self, host_path: &str, mode: FsMode, follow: bool) -> Result<String, Denial> {
        // A trailing separator, or a final `.` / `..`, makes the kernel follow a
        // final symlink whatever the call's no-follow flag: checked as followed.
        let follow = follow || forces_follow(host_path);
        let first = self.fs_as(host_path, mode, follow)?;
        // The same two readings as the Node host's gate, whose runtime normalises
        // the path lexically before the kernel resolves it (`link/../x` is the x
        // beside the link there): both must be inside the grants, so both hosts
        // give the same verdict. wasmtime opens the path as written (cap-std
        // resolves it like the kernel), so that is the path handed back.
        let norm = normalize_lexically(host_path);
        if norm != host_path {
            self.fs_as(&norm, mode, follow)?;
        }
        // And where node:wasi's own following of a final symlink ends (the
        // link's target read lexically), for the same verdicts.
        if follow {
            let chain = follow_lexically(&norm);
            if chain != norm {
                self.fs_as(&chain, mode, follow)?;
            }
        }
        Ok(first)
    }

    /// One reading of a path (see [`Gate::fs`]).
    fn fs_as(&self, host_path: &str, mode: FsMode, follow: bool) -> Result<String, Denial> {
        let resolve = FsCheckOptions { resolve_symlinks: true };
        if follow {
            return self.checker.authorize_fs(host_path, mode, resolve).map_err(|e| e.denial);
        }
        if let Decision::Denied(d) = self.checker.check_fs(host_path, mode, FsCheckOptions::default()) {
            return Err(d);
        }
        let trimmed = host_path.trim_end_matches('/');
        let (parent, base) = match trimmed.rfind('/') {
            Some(i) => (if i == 0 { "/" } else { &trimmed[..i] }, &trimmed[i + 1..]),
            None => {
                return Err(Denial {
                    capability: mode.capability(),
                    reason: api_sandbox_permissions::DenyReason::InvalidPath,
                })
            }
        };
        let real = match std::fs::canonicalize(parent) {
            Ok(p) => p,
            // No such parent: the call fails with ENOENT; check what exists, resolved.
            Err(_) => return self.checker.authorize_fs(host_path, mode, resolve).map_err(|e| e.denial),
        };
        let Some(real) = real.to_str() else {
            return Err(Denial {
                capability: mode.capability(),
                reason: api_sandbox_permissions::DenyReason::InvalidPath,
            });
        };
        let joined = if real == "/" { format!("/{base}") } else { format!("{real}/{base}") };
        match self.checker.check_fs(&joined, mode, FsCheckOptions::default()) {
            Decision::Allowed => Ok(joined),
            Decision::Denied(d) => Err(d),
        }
    }

    /// A WASI path operation: checks `(path, mode, follow, what)` in order; the
    /// first denial stops, so one hostile call counts once. `Err(EACCES)` on denial.
    pub fn op(&mut self, op: &str, checks: &[(String, FsMode, bool, String)]) -> Result<Vec<String>, i32> {
        self.op_then(op, checks, |_, _| None)
    }

    /// [`Gate::op`], then `more` on the checked paths once every check passed
    /// (what a rename moves beyond its two names: [`Gate::rename_moves`]); its
    /// denial (already counted, or not, by `more`) is the call's.
    pub fn op_then(
        &mut self,
        op: &str,
        checks: &[(String, FsMode, bool, String)],
        more: impl FnOnce(&Gate, &[String]) -> Option<Denial>,
    ) -> Result<Vec<String>, i32> {
        let mut paths = Vec::new();
        for (p, mode, follow, what) in checks {
            match self.fs(p, *mode, *follow) {
                Ok(checked) => paths.push(checked),
                Err(d) => return Err(self.deny(op, what, &d)),
            }
        }
        let what = clip(&checks.iter().map(|c| clip(&c.3)).collect::<Vec<_>>().join(" -> "));
        if let Some(d) = more(self, &paths) {
            return Err(self.deny(op, &what, &d));
        }
        let write = checks.iter().any(|c| c.1 == FsMode::Write);
        let capability = if write { "fs.write" } else { "fs.read" };
        self.record(Call { op: op.into(), what, capability: capability.into(), allowed: true, reason: None });
        Ok(paths)
    }

    /// What `path_rename` moves, under each reading of its two names that a
    /// runtime may act on: `checked` (the paths [`Gate::fs`] handed back, as
    /// written: wasmtime's) and, when either name normalises differently, the
    /// two names normalised lexically (node:wasi's), so both hosts give one
    /// verdict (SPEC §16). `checks` are the call's two checks.
    pub fn rename_moves_all(&self, checks: &[(String, FsMode, bool, String)], checked: &[String]) -> Option<Denial> {
        if let Some(d) = self.rename_moves(&checked[0], &checked[1]) {
            return Some(d);
        }
        if checks.iter().all(|c| normalize_lexically(&c.0) == c.0) {
            return None;
        }
        let mut normalised = Vec::with_capacity(2);
        for (raw, mode, follow, _) in checks {
            let follow = *follow || forces_follow(raw);
            match self.fs_as(&normalize_lexically(raw), *mode, follow) {
                Ok(p) => normalised.push(p),
                Err(d) => return Some(d),
            }
        }
        self.rename_moves(&normalised[0], &normalised[1])
    }

    /// What `path_rename(old, new)` moves beyond its two names, both already
    /// checked (`old`, `new`: the host paths as checked). A symlink keeps its
    /// target text, so from its new directory it may name a path outside the
    /// grants: that meaning is checked as `path_symlink` checks a target (R2).
    /// A directory carries every path below it into or out of a `deny.fs`
    /// glob's reach: each glob that may match below either name is tried on a
    /// concrete path below it (R1); and the relative symlinks below it, carried
    /// with it, are checked for what they mean from their new directories
    /// ([`Gate::moved_links`], R2). `Some(denial)` refuses the rename.
    pub fn rename_moves(&self, old: &str, new: &str) -> Option<Denial> {
        // No such name: the runtime fails the rename (ENOENT).
        let meta = std::fs::symlink_metadata(old).ok()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(old).ok()?;
            let Some(target) = target.to_str() else {
                // A target that is not UTF-8 cannot be checked: refused (fail
                // closed), not counted (no path was checked).
                return Some(Denial { capability: Capability::FsRead, reason: DenyReason::InvalidPath });
            };
            let meant = if target.starts_with('/') {
                target.to_owned()
            } else {
                let dir = match new.rfind('/') {
                    Some(0) | None => "",
                    Some(i) => &new[..i],
                };
                format!("{dir}/{target}")
            };
            return self.fs(&meant, FsMode::Read, true).err();
        }
        if !meta.is_dir() {
            return None;
        }
        let policy = self.checker.policy();
        let mut may_match = false;
        for dir in [old, new] {
            for glob in policy.deny_fs() {
                if !may_match_below(glob, dir) {
                    continue;
                }
                may_match = true;
                let candidate = below_candidate(glob, dir);
                if let Decision::Denied(d) = policy.check_fs(&candidate, FsMode::Write) {
                    if d.reason == DenyReason::ExplicitlyDenied {
                        // The counting check: one increment for this rename.
                        if let Decision::Denied(d) =
                            self.checker.check_fs(&candidate, FsMode::Write, FsCheckOptions::default())
                        {
                            return Some(d);
                        }
                    }
                }
            }
        }
        // A glob may match below a name but no concrete path of it was found:
        // refused all the same (fail closed). Not counted: no path was denied.
        if may_match {
            return Some(Denial { capability: Capability::FsWrite, reason: DenyReason::ExplicitlyDenied });
        }
        self.moved_links(old, new)
    }

    /// The symlinks below a directory renamed from `old` to `new` (R2): each
    /// keeps its target text, so a relative one now means that text read from
    /// its new directory (`new` + its directory below `old`: see
    /// [`moved_meaning`]), checked as `path_symlink` checks a target; an
    /// absolute one means what it meant, and is checked the same way. The walk does not follow symlinks and is bounded
    /// ([`MAX_RENAME_WALK`] entries, [`MAX_RENAME_DEPTH`] levels): past the bound,
    /// or on a name or target that is not UTF-8, or a directory that cannot be
    /// read, the rename is refused (fail closed), uncounted (no path was
    /// checked). The first denied target refuses it, counted once by its check.
    fn moved_links(&self, old: &str, new: &str) -> Option<Denial> {
        let unverifiable = |reason| Some(Denial { capability: Capability::FsRead, reason });
        let new = new.trim_end_matches('/');
        // (directory below `old`, relative to it: "" or "x/y/"; its depth)
        let mut pending: Vec<(String, usize)> = vec![(String::new(), 0)];
        let mut seen = 0usize;
        while let Some((rel, depth)) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(format!("{old}/{rel}")) else {
                return unverifiable(DenyReason::SymlinkEscape);
            };
            for entry in entries {
                seen += 1;
                if seen > MAX_RENAME_WALK {
                    return unverifiable(DenyReason::SymlinkEscape);
                }
                let Ok(entry) = entry else { return unverifiable(DenyReason::SymlinkEscape) };
                let Ok(name) = entry.file_name().into_string() else {
                    return unverifiable(DenyReason::InvalidPath);
                };
                // Not followed: the entry's own type (lstat).
                let Ok(kind) = entry.file_type() else { return unverifiable(DenyReason::SymlinkEscape) };
                if kind.is_dir() {
                    if depth + 1 > MAX_RENAME_DEPTH {
                        return unverifiable(DenyReason::SymlinkEscape);
                    }
                    pending.push((format!("{rel}{name}/"), depth + 1));
                } else if kind.is_symlink() {
                    let Ok(target) = std::fs::read_link(entry.path()) else {
                        return unverifiable(DenyReason::SymlinkEscape);
                    };
                    let Some(target) = target.to_str() else { return unverifiable(DenyReason::InvalidPath) };
                    let meant = if target.starts_with('/') {
                        target.to_owned()
                    } else {
                        match moved_meaning(old, new, &rel, target) {
                            Some(m) => m,
                            None => return unverifiable(DenyReason::SymlinkEscape),
                        }
                    };
                    if let Err(d) = self.fs(&meant, FsMode::Read, true) {
                        return Some(d);
                    }
                }
            }
        }
        None
    }

    /// An fd-level call: `mode` on the path recorded for the fd (already
    /// resolved when recorded, so checked lexically). `Err(EACCES)` on a
    /// denial (counted); `Err(ENOTCAPABLE)` when the fd was opened without the
    /// call's right (`capable` false), as preview1 says and node:wasi does.
    pub fn fd(&mut self, op: &str, path: &str, mode: FsMode, capable: bool, what: &str) -> Result<(), i32> {
        if let Decision::Denied(d) = self.checker.check_fs(path, mode, FsCheckOptions::default()) {
            return Err(self.deny(op, what, &d));
        }
        if !capable {
            return Err(errno::NOTCAPABLE);
        }
        Ok(())
    }

    /// A host import: `checkCapability`; `Err(EACCES)` on denial.
    pub fn capability(&mut self, id: &str, payload: serde_json::Value, what: &str) -> Result<(), i32> {
        match self.capability_decision(id, &payload, what) {
            Decision::Allowed => Ok(()),
            Decision::Denied(_) => Err(errno::ACCES),
        }
    }

    /// The decision behind [`Gate::capability`], recorded in the trace.
    pub fn capability_decision(&mut self, id: &str, payload: &serde_json::Value, what: &str) -> Decision {
        let d = self.checker.check_capability(id, payload);
        let (allowed, reason) = match d {
            Decision::Allowed => (true, None),
            Decision::Denied(x) => (false, Some(x.reason.as_str().to_owned())),
        };
        self.record(Call { op: id.into(), what: clip(what), capability: id.into(), allowed, reason });
        d
    }

    /// The lexical check alone (what the conformance cases specify; the path
    /// operations add the symlink-resolving checks of [`Gate::fs`]).
    pub fn check_lexical(&self, path: &str, mode: FsMode) -> Decision {
        self.checker.check_fs(path, mode, FsCheckOptions::default())
    }

    /// The re-check of a fetch's resolved address before connecting.
    pub fn fetch_address(&self, url: &str, ip: &str) -> Decision {
        self.checker.check_fetch_address(url, ip)
    }
}

/// What one run needs.
pub struct HostConfig {
    pub policy: PermissionPolicy,
    pub meter: Meter,
    /// (guest path, host dir), numbered from fd 3 in this order.
    pub preopens: Vec<(String, PathBuf)>,
    pub args: Vec<String>,
    pub secrets: HashMap<String, String>,
}

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    Exited(i32),
    BudgetExceeded(Breach),
    Trap(String),
}

/// The result of one run.
#[derive(Debug)]
pub struct RunResult {
    pub outcome: Outcome,
    /// `(tag, value)` the guest reported through `host.report`.
    pub reports: Vec<(String, i32)>,
    /// The newest [`MAX_TRACE`] gated calls.
    pub calls: Vec<Call>,
    /// Gated calls dropped from `calls` past [`MAX_TRACE`].
    pub dropped_calls: u64,
    pub events: Vec<(String, String)>,
}

/// The clock of the host's budget tracker.
pub type Clock = Box<dyn FnMut() -> f64 + Send>;

/// The host's budget tracker: the crate's `BudgetTracker` counting breaches on
/// `meter`. The host passes its wall clock and the guest thread's CPU clock;
/// the conformance adapter the harness's hooks.
pub fn budget_tracker(
    policy: &PermissionPolicy,
    meter: &Meter,
    clock: Clock,
    cpu_time_ms: Option<Sampler>,
    rss_mb: Option<Sampler>,
    cpu_grace_ms: Option<f64>,
    unmeasured: &[BudgetKind],
) -> Result<BudgetTracker<Clock>, TrackerError> {
    let mut options = TrackerOptions {
        cpu_time_ms,
        rss_mb,
        instruments: Some(Instruments::new(meter)),
        unmeasured: unmeasured.to_vec(),
        ..TrackerOptions::default()
    };
    if let Some(g) = cpu_grace_ms {
        options.cpu_grace_ms = g;
    }
    BudgetTracker::new(policy, clock, options)
}

/// What the host recorded for an fd: its real path (`None`: stdio, passed
/// through) and the rights it was opened with (`None`: a preopen, every right;
/// its mode is the grant's, re-checked per call).
#[derive(Debug, Clone)]
struct FdEntry {
    path: Option<String>,
    rights: Option<u64>,
}

struct State {
    wasi: WasiP1Ctx,
    gate: Gate,
    calls_table: HashMap<String, CallGate>,
    fds: HashMap<u32, FdEntry>,
    /// `memoryMb` in bytes, over every memory and table of the store together.
    memory_cap: Option<usize>,
    guest_bytes: usize,
    last_grow: usize,
    started: Instant,
    /// When `wallClockMs` runs out (a hair past it): what bounds a guest blocked
    /// in a host call, where epoch interruption does not fire.
    wall_deadline: Option<Instant>,
    tracker: BudgetTracker<Clock>,
    breach: Option<Breach>,
    secrets: HashMap<String, String>,
    reports: Vec<(String, i32)>,
    events: Vec<(String, String)>,
}

impl State {
    /// The wall-clock budget ran out while the guest was blocked in a host call:
    /// the breach recorded (and counted, once) by the tracker as the epoch
    /// callback records it, and the trap that ends the guest.
    fn wall_breach(&mut self) -> wasmtime::Error {
        // The deadline is a hair past the budget; the tracker's clock may still
        // read just under it, so give it a few ms.
        for _ in 0..1000 {
            match self.tracker.sample() {
                Ok(BudgetStatus::Exceeded(b)) => {
                    self.breach = Some(b);
                    return wasmtime::format_err!("BUDGET_EXCEEDED {}", b.budget.as_str());
                }
                Ok(BudgetStatus::Ok { .. }) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => return wasmtime::format_err!("INVALID_SAMPLE: {e}"),
            }
        }
        wasmtime::format_err!("BUDGET_EXCEEDED wallClockMs: the tracker did not see the breach")
    }

    /// One growth of a memory or table by `delta` bytes, against the total.
    fn grow(&mut self, delta: usize) -> wasmtime::Result<bool> {
        let total = self.guest_bytes.saturating_add(delta);
        if let Some(cap) = self.memory_cap {
            if total > cap {
                let observed = total as f64 / (1024.0 * 1024.0);
                let now_ms = self.started.elapsed().as_secs_f64() * 1000.0;
                // The tracker decides and counts the breach once; a growth past the cap
                // ends the guest whatever it says (fail closed).
                match self.tracker.record(Sample { now_ms, cpu_time_ms: None, rss_mb: Some(observed) }) {
                    Ok(BudgetStatus::Exceeded(b)) => {
                        self.breach.get_or_insert(b);
                    }
                    Ok(BudgetStatus::Ok { .. }) => {}
                    Err(e) => wasmtime::bail!("INVALID_SAMPLE: {e}"),
                }
                wasmtime::bail!(
                    "BUDGET_EXCEEDED memoryMb: the guest's memories and tables would hold {observed:.2} MB"
                );
            }
        }
        self.guest_bytes = total;
        self.last_grow = delta;
        Ok(true)
    }
}

/// `memoryMb` bounds the guest: every linear memory (multi-memory included) and
/// table of the store, summed; wasmtime calls this for initial sizes too.
impl ResourceLimiter for State {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.grow(desired.saturating_sub(current))
    }
    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.guest_bytes -= std::mem::take(&mut self.last_grow);
        Ok(())
    }
    fn table_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.grow(desired.saturating_sub(current).saturating_mul(TABLE_ELEMENT_BYTES))
    }
    fn table_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.guest_bytes -= std::mem::take(&mut self.last_grow);
        Ok(())
    }
    // Counts too: each linear memory reserves its own address space whatever its
    // size, so a guest may not declare thousands of empty ones; one instance.
    fn instances(&self) -> usize {
        1
    }
    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

/// The calling thread's CPU time in ms (the epoch callback runs on the guest's thread).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux and macOS.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN; // INVALID_SAMPLE, never "within budget"
    }
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

fn memory(caller: &mut Caller<'_, State>) -> Result<wasmtime::Memory, i32> {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => Ok(m),
        _ => Err(errno::FAULT),
    }
}

fn guest_bytes(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> Result<Vec<u8>, i32> {
    let m = memory(caller)?;
    let data = m.data(&*caller);
    let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
    data.get(ptr..ptr.checked_add(len).ok_or(errno::FAULT)?).map(<[u8]>::to_vec).ok_or(errno::FAULT)
}

fn guest_str(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> Result<String, i32> {
    String::from_utf8(guest_bytes(caller, ptr, len)?).map_err(|_| errno::ILSEQ)
}

fn put(caller: &mut Caller<'_, State>, ptr: i32, cap: i32, bytes: &[u8]) -> Result<u32, i32> {
    let m = memory(caller)?;
    let n = bytes.len().min(cap as u32 as usize);
    m.write(&mut *caller, ptr as u32 as usize, &bytes[..n]).map_err(|_| errno::FAULT)?;
    Ok(n as u32)
}

fn put_u32(caller: &mut Caller<'_, State>, ptr: i32, v: u32) -> Result<(), i32> {
    let m = memory(caller)?;
    m.write(&mut *caller, ptr as u32 as usize, &v.to_le_bytes()).map_err(|_| errno::FAULT)
}

fn host_path(caller: &Caller<'_, State>, fd: i32, guest: &str) -> Result<String, i32> {
    // An absolute guest path is checked as the host path it names (wasmtime-wasi
    // refuses it anyway); a relative one is joined raw, `..` and all.
    if guest.starts_with('/') {
        return Ok(guest.to_owned());
    }
    let dir = caller.data().fds.get(&(fd as u32)).and_then(|e| e.path.as_deref()).ok_or(errno::BADF)?;
    Ok(format!("{dir}/{guest}"))
}

/// Calls wasmtime-wasi's own preview1 implementation, as its linker glue does.
fn delegate<R>(
    caller: &mut Caller<'_, State>,
    f: impl FnOnce(&mut WasiP1Ctx, &mut GuestMemory<'_>) -> wasmtime::Result<R>,
) -> wasmtime::Result<R> {
    let fuel = caller.as_context_mut().hostcall_fuel();
    let Some(Extern::Memory(m)) = caller.get_export("memory") else {
        wasmtime::bail!("missing required memory export")
    };
    let (mem, state) = m.data_and_store_mut(&mut *caller);
    state.wasi.set_hostcall_fuel(fuel);
    f(&mut state.wasi, &mut GuestMemory::Unshared(mem))
}

/// `f` bounded by the wall-clock deadline: `None` when it ran out first (`f`
/// is dropped, cancelling what it waits on).
async fn within<F: std::future::Future>(deadline: Option<Instant>, f: F) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(tokio::time::Instant::from_std(d), f).await.ok(),
        None => Some(f.await),
    }
}

/// What is left of the wall-clock budget (`None`: no budget); `Err` when none is.
fn wall_left(deadline: Option<Instant>) -> Result<Option<Duration>, ()> {
    match deadline {
        None => Ok(None),
        Some(d) => match d.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(()),
        },
    }
}

/// `poll_oneoff` blocks in the host (a clock subscription of any length), where
/// epoch interruption cannot end the guest: it is wasmtime-wasi's own, bounded
/// by the wall-clock budget (as the Node host waits clock polls out in slices
/// its watchdog can end). The ctx must not `allow_blocking_current_thread`:
/// wasmtime-wasi would then `thread::sleep` a lone relative clock, unbounded.
fn add_poll_oneoff(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        M,
        "poll_oneoff",
        |mut c: Caller<'_, State>, subs: i32, events: i32, n: i32, nevents: i32| -> wasmtime::Result<i32> {
            let deadline = c.data().wall_deadline;
            let r = delegate(&mut c, |ctx, mem| {
                Ok(in_tokio(within(deadline, p1::poll_oneoff(ctx, mem, subs, events, n, nevents))))
            })?;
            match r {
                Some(r) => r,
                None => Err(c.data_mut().wall_breach()),
            }
        },
    )?;
    Ok(())
}

/// Gate then delegate: `Ok(errno)` for the guest.
macro_rules! gated {
    ($caller:ident, $op:expr, $checks:expr, $call:expr) => {{
        let checks: Result<Vec<(String, FsMode, bool, String)>, i32> = $checks;
        let checks = match checks {
            Ok(c) => c,
            Err(e) => return Ok(e),
        };
        if let Err(e) = $caller.data_mut().gate.op($op, &checks) {
            return Ok(e);
        }
        delegate(&mut $caller, $call)
    }};
}

const M: &str = "wasi_snapshot_preview1";

fn add_gated(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap(
        M,
        "path_open",
        |mut c: Caller<'_, State>,
         fd: i32,
         dirflags: i32,
         p: i32,
         l: i32,
         oflags: i32,
         base: i64,
         inh: i64,
         fdflags: i32,
         out: i32|
         -> wasmtime::Result<i32> {
            let checks = (|| {
                let g = guest_str(&mut c, p, l)?;
                // Checked as what the runtime would open if it followed the final
                // symlink (wasi-calls.json: follow "always", so both hosts agree).
                Ok(vec![(
                    host_path(&c, fd, &g)?,
                    open_mode(oflags, base as u64, fdflags),
                    follows(&c.data().calls_table, "path_open", dirflags),
                    g,
                )])
            })();
            let checks = match checks {
                Ok(c) => c,
                Err(e) => return Ok(e),
            };
            // The path that was checked (the real path when following symlinks).
            let checked = match c.data_mut().gate.op("path_open", &checks) {
                Ok(mut paths) => paths.remove(0),
                Err(e) => return Ok(e),
            };
            if dirflags & LOOKUP_SYMLINK_FOLLOW == 0 {
                // Not following a final symlink: the O_NOFOLLOW errno, decided here as in
                // the Node host (whose runtime would follow it).
                let exclusive = oflags & (OFLAGS_CREAT | OFLAGS_EXCL) == OFLAGS_CREAT | OFLAGS_EXCL;
                // Its final component as written or as node:wasi normalises the path.
                for p in [checks[0].0.clone(), normalize_lexically(&checks[0].0)] {
                    let e = final_symlink_errno(&p, exclusive);
                    if e != errno::SUCCESS {
                        return Ok(e);
                    }
                }
            }
            let r = delegate(&mut c, |ctx, mem| {
                in_tokio(p1::path_open(ctx, mem, fd, dirflags, p, l, oflags, base, inh, fdflags, out))
            })?;
            if r == errno::SUCCESS {
                // The new fd can be a directory base: remember the host path that was checked.
                let bytes = guest_bytes(&mut c, out, 4).map_err(|e| wasmtime::format_err!("fd out of bounds: {e}"))?;
                let new_fd = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                c.data_mut().fds.insert(new_fd, FdEntry { path: Some(checked), rights: Some(base as u64) });
            }
            Ok(r)
        },
    )?;
    linker.func_wrap(M, "fd_close", |mut c: Caller<'_, State>, fd: i32| -> wasmtime::Result<i32> {
        let r = delegate(&mut c, |ctx, mem| in_tokio(p1::fd_close(ctx, mem, fd)))?;
        if r == errno::SUCCESS {
            c.data_mut().fds.remove(&(fd as u32));
        }
        Ok(r)
    })?;
    linker.func_wrap(M, "fd_renumber", |mut c: Caller<'_, State>, from: i32, to: i32| -> wasmtime::Result<i32> {
        let r = delegate(&mut c, |ctx, mem| in_tokio(p1::fd_renumber(ctx, mem, from, to)))?;
        if r == errno::SUCCESS && from != to {
            let fds = &mut c.data_mut().fds;
            match fds.remove(&(from as u32)) {
                Some(e) => fds.insert(to as u32, e),
                None => fds.remove(&(to as u32)),
            };
        }
        Ok(r)
    })?;
    linker.func_wrap(
        M,
        "path_filestat_get",
        |mut c: Caller<'_, State>, fd: i32, flags: i32, p: i32, l: i32, buf: i32| -> wasmtime::Result<i32> {
            let checks = (|| {
                let g = guest_str(&mut c, p, l)?;
                let follow = follows(&c.data().calls_table, "path_filestat_get", flags);
                Ok(vec![(host_path(&c, fd, &g)?, FsMode::Read, follow, g)])
            })();
            gated!(c, "path_filestat_get", checks, |ctx, mem| in_tokio(p1::path_filestat_get(
                ctx, mem, fd, flags, p, l, buf
            )))
        },
    )?;
    linker.func_wrap(
        M,
        "path_filestat_set_times",
        |mut c: Caller<'_, State>,
         fd: i32,
         flags: i32,
         p: i32,
         l: i32,
         atim: i64,
         mtim: i64,
         fst: i32|
         -> wasmtime::Result<i32> {
            let checks = (|| {
                let g = guest_str(&mut c, p, l)?;
                let follow = follows(&c.data().calls_table, "path_filestat_set_times", flags);
                Ok(vec![(host_path(&c, fd, &g)?, FsMode::Write, follow, g)])
            })();
            gated!(c, "path_filestat_set_times", checks, |ctx, mem| in_tokio(p1::path_filestat_set_times(
                ctx, mem, fd, flags, p, l, atim, mtim, fst
            )))
        },
    )?;
    for (name, mode) in [
        ("path_create_directory", FsMode::Write),
        ("path_remove_directory", FsMode::Write),
        ("path_unlink_file", FsMode::Write),
    ] {
        linker.func_wrap(
            M,
            name,
            move |mut c: Caller<'_, State>, fd: i32, p: i32, l: i32| -> wasmtime::Result<i32> {
                let checks = (|| {
                    let g = guest_str(&mut c, p, l)?;
                    let follow = follows(&c.data().calls_table, name, 0);
                    Ok(vec![(host_path(&c, fd, &g)?, mode, follow, g)])
                })();
                gated!(c, name, checks, |ctx, mem| match name {
                    "path_create_directory" => in_tokio(p1::path_create_directory(ctx, mem, fd, p, l)),
                    "path_remove_directory" => in_tokio(p1::path_remove_directory(ctx, mem, fd, p, l)),
                    _ => in_tokio(p1::path_unlink_file(ctx, mem, fd, p, l)),
                })
            },
        )?;
    }
    linker.func_wrap(
        M,
        "path_readlink",
        |mut c: Caller<'_, State>, fd: i32, p: i32, l: i32, buf: i32, len: i32, used: i32| -> wasmtime::Result<i32> {
            let checks = (|| {
                let g = guest_str(&mut c, p, l)?;
                let follow = follows(&c.data().calls_table, "path_readlink", 0);
                Ok(vec![(host_path(&c, fd, &g)?, FsMode::Read, follow, g)])
            })();
            gated!(c, "path_readlink", checks, |ctx, mem| in_tokio(p1::path_readlink(
                ctx, mem, fd, p, l, buf, len, used
            )))
        },
    )?;
    linker.func_wrap(
        M,
        "path_rename",
        |mut c: Caller<'_, State>, fd: i32, op: i32, ol: i32, nfd: i32, np: i32, nl: i32| -> wasmtime::Result<i32> {
            let checks = (|| {
                let from = guest_str(&mut c, op, ol)?;
                let to = guest_str(&mut c, np, nl)?;
                let follow = follows(&c.data().calls_table, "path_rename", 0);
                Ok(vec![
                    (host_path(&c, fd, &from)?, FsMode::Write, follow, from),
                    (host_path(&c, nfd, &to)?, FsMode::Write, follow, to),
                ])
            })();
            let checks = match checks {
                Ok(c) => c,
                Err(e) => return Ok(e),
            };
            // Then what the rename moves: a directory's contents, a symlink's meaning.
            if let Err(e) = c.data_mut().gate.op_then("path_rename", &checks, |g, p| g.rename_moves_all(&checks, p)) {
                return Ok(e);
            }
            delegate(&mut c, |ctx, mem| in_tokio(p1::path_rename(ctx, mem, fd, op, ol, nfd, np, nl)))
        },
    )?;
    linker.func_wrap(
        M,
        "path_link",
        |mut c: Caller<'_, State>,
         fd: i32,
         oflags: i32,
         op: i32,
         ol: i32,
         nfd: i32,
         np: i32,
         nl: i32|
         -> wasmtime::Result<i32> {
            // Lookup flags the table refuses (LOOKUP_SYMLINK_FOLLOW), before any check.
            if let Some(CallGate::Path(_, Some((mask, e)))) = c.data().calls_table.get("path_link").copied() {
                if oflags & mask != 0 {
                    return Ok(e);
                }
            }
            // A hard link shares the inode: the source needs write too.
            let checks = (|| {
                let from = guest_str(&mut c, op, ol)?;
                let to = guest_str(&mut c, np, nl)?;
                Ok(vec![
                    (
                        host_path(&c, fd, &from)?,
                        FsMode::Write,
                        follows(&c.data().calls_table, "path_link", oflags),
                        from,
                    ),
                    (host_path(&c, nfd, &to)?, FsMode::Write, follows(&c.data().calls_table, "path_link", 0), to),
                ])
            })();
            gated!(c, "path_link", checks, |ctx, mem| in_tokio(p1::path_link(
                ctx, mem, fd, oflags, op, ol, nfd, np, nl
            )))
        },
    )?;
    linker.func_wrap(
        M,
        "path_symlink",
        |mut c: Caller<'_, State>, tp: i32, tl: i32, fd: i32, np: i32, nl: i32| -> wasmtime::Result<i32> {
            // Where the link is created is a write; its target, resolved from the
            // link's directory as the kernel will, must be inside the grants (read).
            let checks = (|| {
                let target = guest_str(&mut c, tp, tl)?;
                let link = guest_str(&mut c, np, nl)?;
                let link_host = host_path(&c, fd, &link)?;
                let target_host = if target.starts_with('/') {
                    target.clone()
                } else {
                    let dir = Path::new(&link_host).parent().and_then(Path::to_str).unwrap_or("/");
                    format!("{dir}/{target}")
                };
                let follow = follows(&c.data().calls_table, "path_symlink", 0);
                Ok(vec![(link_host, FsMode::Write, follow, link), (target_host, FsMode::Read, true, target)])
            })();
            gated!(c, "path_symlink", checks, |ctx, mem| in_tokio(p1::path_symlink(ctx, mem, tp, tl, fd, np, nl)))
        },
    )?;
    Ok(())
}

/// The fd-level check of `op` (its table mode on the fd's recorded path).
fn fd_check(c: &mut Caller<'_, State>, op: &str, fd: i32) -> Result<(), i32> {
    let s = c.data_mut();
    let Some(CallGate::Fd(mode, right)) = s.calls_table.get(op).copied() else { return Ok(()) };
    match s.fds.get(&(fd as u32)).cloned() {
        None => Err(errno::BADF),
        Some(FdEntry { path: None, .. }) => Ok(()),
        Some(FdEntry { path: Some(p), rights }) => {
            let capable = rights.is_none_or(|r| r & (1u64 << right) != 0);
            s.gate.fd(op, &p, mode, capable, &format!("fd {}", fd as u32))
        }
    }
}

/// Check then delegate an fd-level call: `Ok(errno)` for the guest.
macro_rules! fd_gated {
    ($linker:ident, $name:literal, $f:path, ($($a:ident : $t:ty),*)) => {
        $linker.func_wrap(M, $name, |mut c: Caller<'_, State>, fd: i32, $($a: $t),*| -> wasmtime::Result<i32> {
            if let Err(e) = fd_check(&mut c, $name, fd) {
                return Ok(e);
            }
            delegate(&mut c, |ctx, mem| in_tokio($f(ctx, mem, fd, $($a),*)))
        })?;
    };
    (sync $linker:ident, $name:literal, $f:path, ($($a:ident : $t:ty),*)) => {
        $linker.func_wrap(M, $name, |mut c: Caller<'_, State>, fd: i32, $($a: $t),*| -> wasmtime::Result<i32> {
            if let Err(e) = fd_check(&mut c, $name, fd) {
                return Ok(e);
            }
            delegate(&mut c, |ctx, mem| $f(ctx, mem, fd, $($a),*))
        })?;
    };
}

/// The fd-level calls with a typed wrapper (each is `gate: "fd"` in the table).
const FD_GATED: [&str; 11] = [
    "fd_read",
    "fd_pread",
    "fd_readdir",
    "fd_filestat_get",
    "fd_write",
    "fd_pwrite",
    "fd_allocate",
    "fd_filestat_set_size",
    "fd_filestat_set_times",
    "fd_sync",
    "fd_datasync",
];

fn add_fd_gated(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    fd_gated!(linker, "fd_read", p1::fd_read, (iovs: i32, len: i32, out: i32));
    fd_gated!(linker, "fd_pread", p1::fd_pread, (iovs: i32, len: i32, off: i64, out: i32));
    fd_gated!(linker, "fd_readdir", p1::fd_readdir, (buf: i32, len: i32, cookie: i64, out: i32));
    fd_gated!(linker, "fd_filestat_get", p1::fd_filestat_get, (buf: i32));
    fd_gated!(linker, "fd_write", p1::fd_write, (iovs: i32, len: i32, out: i32));
    fd_gated!(linker, "fd_pwrite", p1::fd_pwrite, (iovs: i32, len: i32, off: i64, out: i32));
    fd_gated!(sync linker, "fd_allocate", p1::fd_allocate, (off: i64, len: i64));
    fd_gated!(linker, "fd_filestat_set_size", p1::fd_filestat_set_size, (size: i64));
    fd_gated!(linker, "fd_filestat_set_times", p1::fd_filestat_set_times, (atim: i64, mtim: i64, fst: i32));
    fd_gated!(linker, "fd_sync", p1::fd_sync, ());
    fd_gated!(linker, "fd_datasync", p1::fd_datasync, ());
    Ok(())
}

/// Checks the linker against the table: every import of the module is
/// classified (an unclassified one stops the host: fail closed on a runtime
/// upgrade), every `fd` entry has its wrapper, and `refuse` entries are
/// shadowed by a function that answers their errno.
fn add_table_gates(linker: &mut Linker<State>, store: &mut Store<State>) -> wasmtime::Result<()> {
    let table = store.data().calls_table.clone();
    let names: Vec<String> =
        linker.iter(&mut *store).filter(|(m, _, _)| *m == M).map(|(_, n, _)| n.to_owned()).collect();
    for name in names {
        match table.get(&name).copied() {
            None => {
                wasmtime::bail!("{M}::{name} is not classified in wasi-calls.json: the host will not link it unchecked")
            }
            Some(CallGate::Fd(..)) if !FD_GATED.contains(&name.as_str()) => {
                wasmtime::bail!("{M}::{name} is an fd call in wasi-calls.json without a gated wrapper")
            }
            Some(CallGate::Refuse(e)) => {
                let Extern::Func(orig) = linker.get(&mut *store, M, &name)? else {
                    wasmtime::bail!("{M}::{name} is not a function")
                };
                let ty = orig.ty(&*store);
                linker.func_new(M, &name, ty, move |_, _, results| {
                    if let Some(r) = results.first_mut() {
                        *r = Val::I32(e);
                    }
                    Ok(())
                })?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Why a fetch failed: an errno for the guest, or the wall-clock budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchError {
    Errno(i32),
    OutOfTime,
}

impl From<i32> for FetchError {
    fn from(e: i32) -> Self {
        FetchError::Errno(e)
    }
}

/// The longest any one connect, write or read may wait, whatever the budget.
const FETCH_IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The time one blocking step may take: at most [`FETCH_IO_TIMEOUT`], and never
/// past the wall-clock deadline (the whole fetch is bounded by it, however the
/// server dribbles its bytes).
fn fetch_step(deadline: Option<Instant>) -> Result<Duration, FetchError> {
    match wall_left(deadline) {
        Ok(None) => Ok(FETCH_IO_TIMEOUT),
        Ok(Some(left)) => Ok(left.min(FETCH_IO_TIMEOUT)),
        Err(()) => Err(FetchError::OutOfTime),
    }
}

/// An I/O error of one step: out of time if the deadline has passed meanwhile.
fn fetch_io(deadline: Option<Instant>) -> FetchError {
    match wall_left(deadline) {
        Err(()) => FetchError::OutOfTime,
        _ => FetchError::Errno(errno::IO),
    }
}

/// A minimal HTTP/1.0 GET for `http:` URLs (this example has no TLS client),
/// bounded as a whole by the wall-clock `deadline`.
fn http_get(checker: &PermissionChecker, url: &str, deadline: Option<Instant>) -> Result<(u32, Vec<u8>), FetchError> {
    const MAX_RESPONSE: usize = 1 << 20;
    let url = checker.assert_fetch(url).map_err(|_| errno::ACCES)?;
    if url.scheme() != "http" {
        return Err(errno::IO.into());
    }
    let addrs = url.socket_addrs(|| None).map_err(|_| errno::IO)?;
    let addr = *addrs.first().ok_or(errno::IO)?;
    // Re-check the resolved address (DNS rebinding), then connect to exactly it.
    checker.assert_fetch_address(url.as_str(), &addr.ip().to_string()).map_err(|_| errno::ACCES)?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, fetch_step(deadline)?).map_err(|_| fetch_io(deadline))?;
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(80);
    let req = format!(
        "GET {} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n",
        &url[url::Position::BeforePath..]
    );
    s.set_write_timeout(Some(fetch_step(deadline)?)).map_err(|_| errno::IO)?;
    s.write_all(req.as_bytes()).map_err(|_| fetch_io(deadline))?;
    let mut resp = Vec::new();
    let mut buf = [0u8; 8192];
    while resp.len() < MAX_RESPONSE {
        // Each read waits at most what is left of the budget.
        s.set_read_timeout(Some(fetch_step(deadline)?)).map_err(|_| errno::IO)?;
        let want = buf.len().min(MAX_RESPONSE - resp.len());
        match s.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(fetch_io(deadline)),
        }
    }
    let head_end = resp.windows(4).position(|w| w == b"\r\n\r\n").ok_or(errno::IO)?;
    let status = std::str::from_utf8(&resp[..head_end])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or(errno::IO)?;
    Ok((status, resp[head_end + 4..].to_vec()))
}

fn add_host(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "host",
        "fetch",
        |mut c: Caller<'_, State>,
         up: i32,
         ul: i32,
         out: i32,
         cap: i32,
         status_out: i32,
         len_out: i32|
         -> wasmtime::Result<i32> {
            let r = (|| {
                let url = guest_str(&mut c, up, ul)?;
                c.data_mut().gate.capability("fetch", json!({ "url": url }), &url)?;
                let deadline = c.data().wall_deadline;
                let (status, body) = http_get(&c.data().gate.checker, &url, deadline)?;
                put_u32(&mut c, status_out, status)?;
                let n = put(&mut c, out, cap, &body)?;
                Ok(put_u32(&mut c, len_out, n)?)
            })();
            match r {
                Ok(()) => Ok(errno::SUCCESS),
                Err(FetchError::Errno(e)) => Ok(e),
                // Blocked on the network past the budget: ended as a spinning guest is.
                Err(FetchError::OutOfTime) => Err(c.data_mut().wall_breach()),
            }
        },
    )?;
    linker.func_wrap(
        "host",
        "secret",
        |mut c: Caller<'_, State>, np: i32, nl: i32, out: i32, cap: i32, len_out: i32| -> i32 {
            let r = (|| {
                let name = guest_str(&mut c, np, nl)?;
                c.data_mut().gate.capability("secrets.get", json!({ "name": name }), &name)?;
                let value = c.data().secrets.get(&name).cloned().ok_or(errno::IO)?;
                let n = put(&mut c, out, cap, value.as_bytes())?;
                put_u32(&mut c, len_out, n)
            })();
            r.err().unwrap_or(errno::SUCCESS)
        },
    )?;
    linker.func_wrap("host", "publish", |mut c: Caller<'_, State>, tp: i32, tl: i32, dp: i32, dl: i32| -> i32 {
        let r = (|| {
            let topic = guest_str(&mut c, tp, tl)?;
            let data = guest_str(&mut c, dp, dl)?;
            c.data_mut().gate.capability("events.publish", json!({ "topic": topic }), &topic)?;
            c.data_mut().events.push((topic, data));
            Ok::<(), i32>(())
        })();
        r.err().unwrap_or(errno::SUCCESS)
    })?;
    linker.func_wrap("host", "report", |mut c: Caller<'_, State>, tp: i32, tl: i32, value: i32| {
        if let Ok(tag) = guest_str(&mut c, tp, tl) {
            c.data_mut().reports.push((tag, value));
        }
    })?;
    Ok(())
}

/// Runs a guest (WebAssembly text or binary) to completion, a trap, or a budget breach.
pub fn run_guest(guest: &[u8], cfg: HostConfig) -> wasmtime::Result<RunResult> {
    let mut config = Config::new();
    config.epoch_interruption(true);
    let engine = Engine::new(&config)?;
    let module = Module::new(&engine, guest)?;

    let mut linker: Linker<State> = Linker::new(&engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut State| &mut s.wasi)?;
    add_gated(&mut linker)?;
    add_fd_gated(&mut linker)?;
    add_poll_oneoff(&mut linker)?;
    add_host(&mut linker)?;

    let calls_table = wasi_calls().map_err(|e| wasmtime::format_err!(e))?;
    let mut builder = WasiCtxBuilder::new();
    builder.args(&cfg.args);
    let mut fds: HashMap<u32, FdEntry> = (0..3).map(|fd| (fd, FdEntry { path: None, rights: None })).collect();
    for (i, (guest_dir, host_dir)) in cfg.preopens.iter().enumerate() {
        // Full perms: the gate, not wasmtime-wasi's coarse per-preopen perms, is
        // what decides here (a host may narrow these too, as defence in depth).
        builder.preopened_dir(host_dir, guest_dir, FsPerms::ReadWrite)?;
        // Recorded as its real directory, as the Node host does.
        let real = std::fs::canonicalize(host_dir).unwrap_or_else(|_| host_dir.clone());
        let host = real.to_str().ok_or_else(|| wasmtime::format_err!("non-UTF-8 preopen"))?.to_owned();
        fds.insert(3 + i as u32, FdEntry { path: Some(host), rights: None });
    }

    let budgets = cfg.policy.budgets();
    let memory_cap = budgets.memory_mb.map(|mb| (mb * 1024.0 * 1024.0) as usize);
    let start = Instant::now();
    let clock: Clock = Box::new(move || start.elapsed().as_secs_f64() * 1000.0);
    let cpu: Sampler = Box::new(thread_cpu_ms);
    // Memory is measured by the ResourceLimiter (every memory and table summed) and
    // pushed to the tracker on a growth past the cap.
    let tracker = budget_tracker(&cfg.policy, &cfg.meter, clock, Some(cpu), None, None, &[BudgetKind::MemoryMb])
        .map_err(|e| wasmtime::format_err!("budget tracker: {e}"))?;

    let state = State {
        wasi: builder.build_p1(),
        gate: Gate::new(PermissionChecker::new(cfg.policy.clone(), &cfg.meter)),
        calls_table,
        fds,
        memory_cap,
        guest_bytes: 0,
        last_grow: 0,
        started: start,
        // 1 ms past the budget: the tracker's breach is `elapsed > wallClockMs`.
        wall_deadline: budgets
            .wall_clock_ms
            .and_then(|ms| Duration::try_from_secs_f64(ms.max(0.0) / 1000.0 + 0.001).ok())
            .and_then(|d| start.checked_add(d)),
        tracker,
        breach: None,
        secrets: cfg.secrets,
        reports: Vec::new(),
        events: Vec::new(),
    };
    let mut store = Store::new(&engine, state);
    store.limiter(|s| s as &mut dyn ResourceLimiter);
    add_table_gates(&mut linker, &mut store)?;
    // Budgets run from instantiation: the deadline and its callback are in place
    // (and the ticker running) before `instantiate` runs a `start` function.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut ctx| {
        let s = ctx.data_mut();
        match s.tracker.sample() {
            Ok(BudgetStatus::Ok { .. }) => Ok(UpdateDeadline::Continue(1)),
            Ok(BudgetStatus::Exceeded(b)) => {
                s.breach = Some(b);
                wasmtime::bail!("BUDGET_EXCEEDED {}", b.budget.as_str())
            }
            Err(e) => wasmtime::bail!("INVALID_SAMPLE: {e}"),
        }
    });

    // The ticker: one epoch every 5 ms while the guest runs.
    let stop = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                engine.increment_epoch();
            }
        })
    };
    let run = (|| {
        let instance = linker.instantiate(&mut store, &module)?;
        instance.get_typed_func::<(), ()>(&mut store, "_start")?.call(&mut store, ())
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = ticker.join();

    let outcome = match run {
        Ok(()) => Outcome::Exited(0),
        Err(e) => match (store.data().breach, e.downcast_ref::<I32Exit>()) {
            (Some(b), _) => Outcome::BudgetExceeded(b),
            (None, Some(exit)) => Outcome::Exited(exit.0),
            (None, None) => Outcome::Trap(format!("{e:#}")),
        },
    };
    let s = store.into_data();
    Ok(RunResult {
        outcome,
        reports: s.reports,
        calls: s.gate.calls.into(),
        dropped_calls: s.gate.dropped_calls,
        events: s.events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mode_is_write_for_create_truncate_append_and_every_write_right() {
        for bit in 0..30u32 {
            let rights = 1u64 << bit;
            let want = if WRITE_RIGHTS & rights != 0 { FsMode::Write } else { FsMode::Read };
            assert_eq!(open_mode(0, rights, 0), want, "right bit {bit}");
        }
        for bit in [0, 4, 6, 8, 19, 20, 22, 23] {
            assert_eq!(open_mode(0, 1 << bit, 0), FsMode::Write, "right bit {bit}");
        }
        assert_eq!(open_mode(OFLAGS_CREAT, 2, 0), FsMode::Write);
        assert_eq!(open_mode(OFLAGS_TRUNC, 2, 0), FsMode::Write);
        assert_eq!(open_mode(2, 2, 0), FsMode::Read, "O_DIRECTORY");
        assert_eq!(open_mode(0, 2, FDFLAGS_APPEND), FsMode::Write);
    }

    #[test]
    fn the_call_table_is_complete_and_consistent() {
        let table = wasi_calls().unwrap();
        for (name, gate) in &table {
            if let CallGate::Fd(mode, right) = gate {
                assert!(FD_GATED.contains(&name.as_str()), "{name}: an fd call without a gated wrapper");
                assert!(*right < 64, "{name}");
                // A call needing a right that counts as a write in open_mode is a write call.
                if WRITE_RIGHTS & (1u64 << right) != 0 {
                    assert_eq!(*mode, FsMode::Write, "{name}");
                }
            }
        }
        for name in FD_GATED {
            assert!(matches!(table.get(name), Some(CallGate::Fd(..))), "{name}");
        }
        assert_eq!(table.get("path_open"), Some(&CallGate::Path(Follow::Always, None)));
        assert_eq!(table.get("path_link"), Some(&CallGate::Path(Follow::Never, Some((LOOKUP_SYMLINK_FOLLOW, 28)))));
        assert!(follows(&table, "path_open", 0) && !follows(&table, "path_unlink_file", 1));
        assert!(follows(&table, "path_filestat_get", 1) && !follows(&table, "path_filestat_get", 0));
        assert!(follows(&table, "not_in_the_table", 0), "unknown: the stricter check");
    }

    #[test]
    fn normalize_lexically_is_what_node_wasi_hands_the_kernel() {
        for (raw, want) in [
            ("/a/b/../c", "/a/c"),
            ("/a//b/./c/../", "/a/b/"),
            ("/a/b/", "/a/b/"),
            ("/../a", "/a"),
            ("/", "/"),
            ("//", "/"),
            ("/a/..", "/"),
            ("/a/../", "/"),
            ("/x", "/x"),
        ] {
            assert_eq!(normalize_lexically(raw), want, "{raw}");
        }
    }

    #[test]
    fn follow_lexically_reads_link_targets_as_node_wasi_does() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let r = root.to_str().unwrap();
        std::fs::create_dir_all(root.join("d1/d2")).unwrap();
        symlink(root.join("d1/d2"), root.join("lk")).unwrap();
        symlink("lk/../t", root.join("x")).unwrap();
        symlink("x", root.join("chain")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        std::fs::write(root.join("f"), "").unwrap();
        // The kernel would read lk/../t as d1/t; node:wasi reads it lexically.
        assert_eq!(follow_lexically(&format!("{r}/x")), format!("{r}/t"));
        assert_eq!(follow_lexically(&format!("{r}/chain")), format!("{r}/t"));
        assert_eq!(follow_lexically(&format!("{r}/chain/")), format!("{r}/t"));
        assert_eq!(follow_lexically(&format!("{r}/lk")), format!("{r}/d1/d2"));
        assert_eq!(follow_lexically(&format!("{r}/f")), format!("{r}/f"));
        assert_eq!(follow_lexically(&format!("{r}/loop")), format!("{r}/loop"));
        assert_eq!(follow_lexically("/"), "/");
    }

    #[test]
    fn a_trailing_separator_or_final_dot_is_checked_as_followed() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let r = root.to_str().unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        // out/away -> the root, outside the readwrite grant.
        symlink(&root, root.join("out/away")).unwrap();
        let manifest = serde_json::json!({ "fs": [{ "path": format!("{r}/out/**"), "mode": "readwrite" }] });
        let policy =
            PermissionPolicy::from_manifest(&manifest, api_sandbox_permissions::PolicyOptions::new("gate")).unwrap();
        let gate = Gate::new(PermissionChecker::new(policy, &opentelemetry::global::meter("gate-test")));
        assert!(gate.fs(&format!("{r}/out/away"), FsMode::Write, false).is_ok(), "the link itself");
        for tail in ["/", "//", "/.", "/./"] {
            assert!(gate.fs(&format!("{r}/out/away{tail}"), FsMode::Write, false).is_err(), "out/away{tail}");
        }
        assert!(forces_follow("/a/") && forces_follow("/a/.") && forces_follow("/a/..") && !forces_follow("/a/.x"));
        assert!(!forces_follow("/") && !forces_follow("/a"));
    }

    #[test]
    fn final_symlink_errno_is_what_o_nofollow_gives() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let r = root.to_str().unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        symlink("d", root.join("l")).unwrap();
        assert_eq!(final_symlink_errno(&format!("{r}/l"), false), errno::LOOP);
        assert_eq!(final_symlink_errno(&format!("{r}/l/"), false), errno::LOOP);
        assert_eq!(final_symlink_errno(&format!("{r}/l"), true), errno::EXIST);
        assert_eq!(final_symlink_errno(&format!("{r}/d"), false), errno::SUCCESS);
        assert_eq!(final_symlink_errno(&format!("{r}/none"), false), errno::SUCCESS);
        // `.`, `..` and an empty name are never a symlink, whatever precedes them.
        assert_eq!(final_symlink_errno(&format!("{r}/l/."), false), errno::SUCCESS);
        assert_eq!(final_symlink_errno(&format!("{r}/l/.."), false), errno::SUCCESS);
        assert_eq!(final_symlink_errno("l", false), errno::SUCCESS);
    }
    /// A gate over `<root>/out/**` (readwrite) with these `deny.fs` globs, and its
    /// denials counted on an in-memory SDK meter.
    struct RenameWorld {
        _tmp: tempfile::TempDir,
        root: String,
        gate: Gate,
        provider: opentelemetry_sdk::metrics::SdkMeterProvider,
        exporter: opentelemetry_sdk::metrics::InMemoryMetricExporter,
    }

    impl RenameWorld {
        fn new(deny: &[&str]) -> Self {
            use opentelemetry::metrics::MeterProvider as _;
            let tmp = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(tmp.path()).unwrap().to_str().unwrap().to_owned();
            std::fs::create_dir_all(format!("{root}/out/a/private")).unwrap();
            std::fs::write(format!("{root}/out/a/private/key.txt"), "KEY").unwrap();
            std::fs::create_dir_all(format!("{root}/out/c")).unwrap();
            std::fs::write(format!("{root}/out/c/f.txt"), "").unwrap();
            std::fs::write(format!("{root}/out/own.txt"), "").unwrap();
            std::fs::write(format!("{root}/secret.txt"), "SECRET").unwrap();
            let deny: Vec<String> = deny.iter().map(|g| g.replace("<root>", &root)).collect();
            let manifest = serde_json::json!({
                "fs": [{ "path": format!("{root}/out/**"), "mode": "readwrite" }],
                "deny": { "fs": deny },
            });
            let policy =
                PermissionPolicy::from_manifest(&manifest, api_sandbox_permissions::PolicyOptions::new("rename"))
                    .unwrap();
            let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
            let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
                .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(exporter.clone()).build())
                .build();
            let gate = Gate::new(PermissionChecker::new(policy, &provider.meter("rename-test")));
            Self { _tmp: tmp, root, gate, provider, exporter }
        }

        /// What the `path_rename` wrapper does: the two names, then what the rename moves.
        fn rename(&mut self, from: &str, to: &str) -> Result<(), i32> {
            let follow = follows(&wasi_calls().unwrap(), "path_rename", 0);
            let r = &self.root;
            let checks = [
                (format!("{r}/out/{from}"), FsMode::Write, follow, from.to_owned()),
                (format!("{r}/out/{to}"), FsMode::Write, follow, to.to_owned()),
            ];
            self.gate.op_then("path_rename", &checks, |g, p| g.rename_moves_all(&checks, p)).map(|_| ())
        }

        /// [`RenameWorld::rename`], then the rename itself when allowed (as the runtime would).
        fn rename_done(&mut self, from: &str, to: &str) -> Result<(), i32> {
            self.rename(from, to)?;
            let r = &self.root;
            std::fs::rename(format!("{r}/out/{from}"), format!("{r}/out/{to}")).unwrap();
            Ok(())
        }

        /// Denials counted: (capability, reason) -> n.
        fn denied(&self) -> HashMap<(String, String), u64> {
            api_sandbox_permissions::testing::counter_totals(&self.provider, &self.exporter)
                .into_iter()
                .filter(|((name, _, _, _), _)| name == "plugin.permission_denied_total")
                .map(|((_, _, capability, reason), n)| ((capability, reason), n))
                .collect()
        }

        fn last(&self) -> &Call {
            self.gate.calls.back().unwrap()
        }
    }

    fn explicitly_denied(n: u64) -> HashMap<(String, String), u64> {
        HashMap::from([(("fs.write".to_owned(), "explicitly_denied".to_owned()), n)])
    }

    #[test]
    fn renaming_a_directory_is_checked_against_the_denies_below_it() {
        let mut w = RenameWorld::new(&["<root>/out/a/private/**"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES), "out/a/private/key.txt would leave the deny");
        assert_eq!(w.denied(), explicitly_denied(1), "counted once");
        assert_eq!((w.last().allowed, w.last().reason.as_deref()), (false, Some("explicitly_denied")));
        assert_eq!(w.last().what, "a -> b");
        // Moving a directory onto the denied name moves paths into the deny's reach.
        assert_eq!(w.rename("c", "a"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(2));
        // No deny related to either name: allowed, and nothing counted.
        assert_eq!(w.rename("c", "d"), Ok(()));
        assert!(w.last().allowed);
        // A file is not a directory: only its two names are checked.
        assert_eq!(w.rename("own.txt", "a2.txt"), Ok(()));
        assert_eq!(w.rename("a/private", "p"), Err(errno::ACCES), "the name itself is denied");
        assert_eq!(w.denied(), explicitly_denied(3));
        // The directory renamed out of the deny's reach is still where it was.
        assert!(Path::new(&format!("{}/out/a/private/key.txt", w.root)).exists());
    }

    #[test]
    fn a_wild_or_case_folded_deny_blocks_a_directory_rename() {
        let mut w = RenameWorld::new(&["<root>/out/*/private/**"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(1));
        // Folding: NFKC, case, and Default_Ignorable code points.
        let mut w = RenameWorld::new(&["<root>/out/A/private/**"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(1));
        assert_eq!(w.rename("c", "d"), Ok(()));
        assert_eq!(fold_segment("Ａ\u{200B}"), "a");
        assert_eq!(fold_segment("ß"), "ss");
        assert!(may_match_below("/r/out/A/private/**", "/r/out/a"));
        assert!(may_match_below("/r/out/*/private/**", "/r/out/a"));
        assert!(may_match_below("/r/out/a", "/r/out/a"), "names the directory itself");
        assert!(!may_match_below("/r/out/a", "/r/out/a/b"), "ends above it");
        assert!(!may_match_below("/r/out/b/**", "/r/out/a"));
        assert_eq!(below_candidate("/r/out/*/private/**", "/r/out/a"), "/r/out/a/private/x");
        assert_eq!(below_candidate("/r/out/a", "/r/out/a"), "/r/out/a/x");
        assert_eq!(below_candidate("/**", "/"), "/x");
        for (seg, plain) in [
            ("*.key", ".key"),
            ("*", "x"),
            ("k?y", "kxy"),
            ("\\*a", "*a"),
            ("[!a-z]b", "ab"),
            ("[^q]", "q"),
            ("[a-z]x", "ax"),
            ("{pri,pub}vate", "private"),
            ("{a{b,c},d}e", "abe"),
            ("{,x}", "x"),
            ("x\\", "x\\"),
        ] {
            assert_eq!(plain_segment(seg), plain, "{seg}");
        }
    }

    #[test]
    fn a_deny_that_may_match_but_has_no_concrete_path_fails_closed_uncounted() {
        // `**` may match below out/a, but the candidate out/a/x is not a `z`: refused all the same.
        let mut w = RenameWorld::new(&["<root>/**/z"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES));
        assert!(w.denied().is_empty(), "{:?}", w.denied());
        assert_eq!((w.last().capability.as_str(), w.last().reason.as_deref()), ("fs.write", Some("explicitly_denied")));
        assert!(!w.last().allowed);
        // A file carries nothing below it.
        assert_eq!(w.rename("own.txt", "own2.txt"), Ok(()));
        // A deny elsewhere does not: allowed.
        let mut w = RenameWorld::new(&["/elsewhere/**"]);
        assert_eq!(w.rename("a", "b"), Ok(()));
    }

    #[test]
    fn a_renamed_symlink_is_checked_for_what_it_means_from_its_new_directory() {
        use std::os::unix::fs::symlink;
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        // From out/a, ../secret.txt is out/secret.txt (inside); from out/, the root's secret.
        symlink("../secret.txt", format!("{r}/out/a/l")).unwrap();
        assert_eq!(w.rename("a/l", "l"), Err(errno::ACCES));
        let denied = w.denied();
        assert_eq!(denied.values().sum::<u64>(), 1, "counted once: {denied:?}");
        assert!(denied.keys().all(|(cap, _)| cap == "fs.read"), "{denied:?}");
        assert!(!w.last().allowed);
        // A target that stays inside the grant from the new directory: allowed.
        symlink("../own.txt", format!("{r}/out/a/m")).unwrap();
        assert_eq!(w.rename("a/m", "a/n"), Ok(()));
        symlink(format!("{r}/out/own.txt"), format!("{r}/out/a/abs")).unwrap();
        assert_eq!(w.rename("a/abs", "abs"), Ok(()));
        symlink(format!("{r}/secret.txt"), format!("{r}/out/c/abs-out")).unwrap();
        assert_eq!(w.rename("c/abs-out", "c/abs-out2"), Err(errno::ACCES), "an absolute target outside");
        assert_eq!(w.denied().values().sum::<u64>(), 2);
    }

    #[test]
    fn a_renamed_directory_is_checked_for_what_its_inner_links_mean_from_their_new_directories() {
        use std::os::unix::fs::symlink;
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        // The red team's shape: from out/s/a/b/c/y, ../../../.. is out/s (inside);
        // moved to out/z/x/y, it is the root (outside the grant).
        std::fs::create_dir_all(format!("{r}/out/s/a/b/c/y")).unwrap();
        std::fs::create_dir_all(format!("{r}/out/z/x")).unwrap();
        symlink("../../../..", format!("{r}/out/s/a/b/c/y/l")).unwrap();
        assert_eq!(w.rename_done("s/a/b/c/y", "z/x/y"), Err(errno::ACCES));
        let denied = w.denied();
        assert_eq!(denied.values().sum::<u64>(), 1, "counted once: {denied:?}");
        assert!(denied.keys().all(|(cap, _)| cap == "fs.read"), "{denied:?}");
        assert!(!w.last().allowed);
        assert_eq!(w.last().what, "s/a/b/c/y -> z/x/y");
        assert!(Path::new(&format!("{r}/out/s/a/b/c/y/l")).is_symlink(), "not moved");
        // Moved to the same depth, the link means out/t: allowed.
        std::fs::create_dir_all(format!("{r}/out/t/a/b/c")).unwrap();
        assert_eq!(w.rename_done("s/a/b/c/y", "t/a/b/c/y"), Ok(()), "{:?}", w.gate.calls);
        assert!(w.last().allowed);
        // Inner relative links, at several levels, that stay inside after the move: allowed.
        std::fs::create_dir_all(format!("{r}/out/d/e/f")).unwrap();
        symlink("../own.txt", format!("{r}/out/d/up")).unwrap();
        symlink("../../c/f.txt", format!("{r}/out/d/e/f2")).unwrap();
        symlink("../../../own.txt", format!("{r}/out/d/e/f/deep")).unwrap();
        symlink("f", format!("{r}/out/d/e/sib")).unwrap();
        symlink("./e/../e/f/", format!("{r}/out/d/dots")).unwrap();
        assert_eq!(w.rename_done("d", "d2"), Err(errno::ACCES), "a `..` after a name: fail closed");
        assert_eq!(w.denied().values().sum::<u64>(), 1, "uncounted");
        std::fs::remove_file(format!("{r}/out/d/dots")).unwrap();
        assert_eq!(w.rename_done("d", "d2"), Ok(()), "{:?}", w.gate.calls);
        assert_eq!(w.rename_done("d2", "g"), Ok(()));
        // Moved one level up, a link that climbed to out/ climbs to the root.
        std::fs::create_dir_all(format!("{r}/out/m/n/e")).unwrap();
        symlink("../../../secret.txt", format!("{r}/out/m/n/e/x")).unwrap();
        assert_eq!(w.rename_done("m/n", "n"), Err(errno::ACCES));
        assert_eq!(w.denied().values().sum::<u64>(), 2, "counted once more");
        assert_eq!(w.rename_done("m", "m2"), Ok(()), "the same depth: out/secret.txt");
        // An absolute inner link outside the grant: denied wherever it moves.
        std::fs::create_dir_all(format!("{r}/out/h/i")).unwrap();
        symlink(format!("{r}/secret.txt"), format!("{r}/out/h/i/abs")).unwrap();
        assert_eq!(w.rename_done("h", "h2"), Err(errno::ACCES), "an absolute inner target outside");
        assert_eq!(w.denied().values().sum::<u64>(), 3);
        // An absolute inner link inside the grant: allowed.
        std::fs::remove_file(format!("{r}/out/h/i/abs")).unwrap();
        symlink(format!("{r}/out/own.txt"), format!("{r}/out/h/i/abs")).unwrap();
        assert_eq!(w.rename_done("h", "h2"), Ok(()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "../x"), Some("/n/x".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "e/f/", "../g"), Some("/o/a/e/g".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "e/", "../../../../../x"), Some("/x".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "../.."), Some("/".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "f/"), Some("/o/a/f/".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "f/../x"), None);
    }

    #[test]
    fn a_rename_is_checked_for_what_it_moves_under_both_readings_of_its_names() {
        use std::os::unix::fs::symlink;
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        // `s2/../o`: the kernel (and wasmtime) climbs from s2's target, out/c/e,
        // to out/c/o (no such name); node:wasi normalises it to out/o, a link
        // to a file outside the grants. Refused in both hosts, counted once.
        std::fs::create_dir_all(format!("{r}/out/c/e")).unwrap();
        symlink(format!("{r}/out/c/e"), format!("{r}/out/s2")).unwrap();
        symlink(format!("{r}/secret.txt"), format!("{r}/out/o")).unwrap();
        assert_eq!(w.rename("s2/../o", "o2"), Err(errno::ACCES));
        assert_eq!(w.denied().values().sum::<u64>(), 1, "{:?}", w.denied());
        // The kernel's reading is checked too: out/c/o, a directory holding a
        // link out of the grants, while out/o is now a plain file.
        std::fs::remove_file(format!("{r}/out/o")).unwrap();
        std::fs::write(format!("{r}/out/o"), "").unwrap();
        std::fs::create_dir_all(format!("{r}/out/c/o")).unwrap();
        symlink(format!("{r}/secret.txt"), format!("{r}/out/c/o/abs")).unwrap();
        assert_eq!(w.rename("s2/../o", "o2"), Err(errno::ACCES));
        assert_eq!(w.denied().values().sum::<u64>(), 2, "{:?}", w.denied());
        std::fs::remove_file(format!("{r}/out/c/o/abs")).unwrap();
        assert_eq!(w.rename("s2/../o", "o2"), Ok(()));
    }

    #[test]
    fn a_directory_rename_past_the_walk_bounds_fails_closed_uncounted() {
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        let mut deep = format!("{r}/out/deep");
        for _ in 0..MAX_RENAME_DEPTH {
            deep.push_str("/d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(w.rename_done("deep", "deep2"), Ok(()), "exactly the depth bound");
        std::fs::create_dir(format!("{deep}/d").replace("/out/deep/", "/out/deep2/")).unwrap();
        assert_eq!(w.rename_done("deep2", "deep3"), Err(errno::ACCES), "one level past it");
        assert!(w.denied().is_empty(), "{:?}", w.denied());
        assert!(!w.last().allowed);
        std::fs::create_dir(format!("{r}/out/wide")).unwrap();
        for i in 0..MAX_RENAME_WALK {
            std::fs::write(format!("{r}/out/wide/{i}"), "").unwrap();
        }
        assert_eq!(w.rename_done("wide", "wide2"), Ok(()), "exactly the entry bound");
        std::fs::write(format!("{r}/out/wide2/one-more"), "").unwrap();
        assert_eq!(w.rename_done("wide2", "wide3"), Err(errno::ACCES));
        assert!(w.denied().is_empty(), "{:?}", w.denied());
        assert_eq!(w.last().reason.as_deref(), Some("symlink_escape"));
    }

    #[test]
    fn the_trace_cuts_what_and_keeps_the_newest_entries() {
        let mut w = RenameWorld::new(&[]);
        let call =
            |what: String| Call { op: "t".into(), what, capability: "fs.read".into(), allowed: true, reason: None };
        w.gate.record(call("a".repeat(4 << 20)));
        let what = &w.last().what;
        assert!(what.len() <= MAX_WHAT && what.ends_with('…'), "{}", what.len());
        assert_eq!(what.len(), MAX_WHAT);
        // At a char boundary: 2-byte chars, cut short of a split one.
        w.gate.record(call("é".repeat(200)));
        let what = &w.last().what;
        assert!(what.len() <= MAX_WHAT && what.ends_with('…'));
        assert_eq!(what.trim_end_matches('…'), "é".repeat(126));
        assert_eq!(clip("short"), "short");
        assert_eq!(clip(&"b".repeat(MAX_WHAT)), "b".repeat(MAX_WHAT), "not cut at exactly the limit");
        // Through a path check (denied: over the path length limit) and an allowed one.
        let long = format!("{}/out/{}", w.root, "x".repeat(300));
        assert!(w.gate.op("path_filestat_get", &[(long.clone(), FsMode::Read, false, long.clone())]).is_ok());
        assert!(w.last().what.len() <= MAX_WHAT);
        let huge = "y".repeat(4 << 20);
        assert!(w.gate.op("path_filestat_get", &[(huge.clone(), FsMode::Read, false, huge)]).is_err());
        assert!(w.last().what.len() <= MAX_WHAT);
        // At most MAX_TRACE entries, the oldest dropped and counted.
        let before = w.gate.calls.len() as u64;
        for i in 0..MAX_TRACE + 5 {
            w.gate.record(call(format!("n{i}")));
        }
        assert_eq!(w.gate.calls.len(), MAX_TRACE);
        assert_eq!(w.gate.dropped_calls, before + 5);
        assert_eq!(w.gate.calls.front().unwrap().what, "n5");
        assert_eq!(w.last().what, format!("n{}", MAX_TRACE + 4));
    }
}
