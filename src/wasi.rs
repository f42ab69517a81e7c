//! The compound filesystem operations of a WASI preview1 host (SPEC §14,
//! §16, §17): one home for the rules a host needs beyond `checkFs`, read
//! through the compiled policy and its own fold, so every host decides a
//! guest's call alike.
//!
//! A WASI call is more than one path check. An open's flags, rights and
//! fdflags decide its mode; a runtime may follow a final symlink whatever
//! flag the guest passed, and a trailing `/` or a final `.` / `..` makes the
//! kernel follow it anyway; node:wasi normalises a path lexically before the
//! kernel resolves it, so `link/../x` has two readings; a rename moves every
//! path below a directory into or out of a deny rule's reach and carries the
//! symlinks below it, whose relative targets mean something else from their
//! new directories; a symlink's target is read from the link's directory.
//! These rules live here, once:
//!
//! - [`open_mode`]: the mode a `path_open` needs;
//! - [`calls`]: every preview1 import and the check it needs (`data/wasi-calls.json`),
//!   [`follows`]: whether a call's runtime follows a final symlink;
//! - [`FsOps`]: the decisions, uncounted, on a [`PermissionPolicy`]:
//!   [`FsOps::check_path`] (every reading of a path), [`FsOps::path_call`]
//!   (one preview1 path call, what a rename moves included), [`FsOps::fd_call`];
//! - [`WasiGate`]: the same over a [`PermissionChecker`], each refused call
//!   counted once (and a shadow policy evaluated): what a host calls.
//!
//! Every operation runs under a host's budget: it calls `go_on` before each
//! step that touches the filesystem (a rename's walk calls it per entry), and
//! stops with [`Outcome::OutOfBudget`] when it answers `false`; the host then
//! ends the guest with its budget breach. [`Deadline`] is such a budget.
//!
//! ```
//! use api_sandbox_permissions::serde_json::json;
//! use api_sandbox_permissions::wasi::{self, Deadline, FsOps, Outcome, PathCall};
//! use api_sandbox_permissions::{Capability, DenyReason, FsMode, PermissionPolicy, Platform, PolicyOptions};
//!
//! let root = std::env::temp_dir().join(format!("asp-wasi-doc-{}", std::process::id()));
//! std::fs::create_dir_all(root.join("out/a/private"))?;
//! let root = std::fs::canonicalize(&root)?;
//! let r = root.to_str().unwrap();
//! let policy = PermissionPolicy::from_manifest(
//!     &json!({ "fs": [{ "path": format!("{r}/out/**"), "mode": "readwrite" }], "deny": { "fs": [format!("{r}/out/*/PRIVATE/**")] } }),
//!     PolicyOptions::new("guest").platform(Platform::Posix),
//! )?;
//! // An open that creates is a write.
//! assert_eq!(wasi::open_mode(wasi::OFLAGS_CREAT, 0, 0), FsMode::Write);
//! // Renaming a directory that may hold a deny-listed path below it is refused:
//! // decided on the compiled deny globs, under the deny check's own fold.
//! let ops = FsOps::new(&policy);
//! let rename = PathCall::Rename { old: format!("{r}/out/a"), new: format!("{r}/out/b") };
//! assert_eq!(
//!     ops.path_call(&rename, &mut Deadline(None)).errno(),
//!     wasi::errno::ACCES
//! );
//! assert!(policy.fs_deny_reaches(&format!("{r}/out/a")));
//! assert!(!policy.fs_deny_reaches(&format!("{r}/out/a/public")));
//! std::fs::remove_dir_all(&root)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Instant;

use crate::checker::PermissionChecker;
use crate::error::{Capability, Decision, Denial, DenyReason};
use crate::fs::FsMode;
use crate::policy::PermissionPolicy;

/// WASI preview1 errno values a gate answers with (the `errno` enum of
/// `wasi_snapshot_preview1`).
pub mod errno {
    /// No error.
    pub const SUCCESS: u16 = 0;
    /// `EACCES`: the answer to a denied call.
    pub const ACCES: u16 = 2;
    /// `EBADF`: an fd the host did not open.
    pub const BADF: u16 = 8;
    /// `EEXIST`: an exclusive create on a final symlink (what `O_NOFOLLOW` gives).
    pub const EXIST: u16 = 20;
    /// `EFAULT`: guest memory out of bounds.
    pub const FAULT: u16 = 21;
    /// `EILSEQ`: a guest string that is not UTF-8.
    pub const ILSEQ: u16 = 25;
    /// `EINVAL`: flags a host refuses (`path_link` following a symlink).
    pub const INVAL: u16 = 28;
    /// `EIO`: a host failure.
    pub const IO: u16 = 29;
    /// `ELOOP`: a no-follow open of a final symlink.
    pub const LOOP: u16 = 32;
    /// `ENOENT`.
    pub const NOENT: u16 = 44;
    /// `ENOTSUP`: an import that is never forwarded (sockets, `proc_raise`).
    pub const NOTSUP: u16 = 58;
    /// `EPERM`: `path_readlink` of an absolute target (a host path is never revealed).
    pub const PERM: u16 = 63;
    /// `ENOTCAPABLE`: an fd opened without the right the call needs.
    pub const NOTCAPABLE: u16 = 76;
}

/// `oflags`: create.
pub const OFLAGS_CREAT: u32 = 1;
/// `oflags`: must be a directory.
pub const OFLAGS_DIRECTORY: u32 = 2;
/// `oflags`: fail if it exists.
pub const OFLAGS_EXCL: u32 = 4;
/// `oflags`: truncate.
pub const OFLAGS_TRUNC: u32 = 8;
/// `fdflags`: append.
pub const FDFLAGS_APPEND: u32 = 1;
/// `lookupflags`: follow a final symlink.
pub const LOOKUP_SYMLINK_FOLLOW: u32 = 1;
/// `rights_base` bits that let an fd change its file: `fd_datasync`,
/// `fd_sync`, `fd_write`, `fd_allocate`, `path_filestat_set_size`,
/// `path_filestat_set_times`, `fd_filestat_set_size`, `fd_filestat_set_times`.
pub const WRITE_RIGHTS: u64 = (1 << 0) | (1 << 4) | (1 << 6) | (1 << 8) | (1 << 19) | (1 << 20) | (1 << 22) | (1 << 23);

/// The mode a `path_open` needs (SPEC §14): create, truncate, append or any
/// write right is a write; anything else a read.
#[must_use]
pub fn open_mode(oflags: u32, rights_base: u64, fdflags: u32) -> FsMode {
    if oflags & (OFLAGS_CREAT | OFLAGS_TRUNC) != 0 || fdflags & FDFLAGS_APPEND != 0 || rights_base & WRITE_RIGHTS != 0 {
        FsMode::Write
    } else {
        FsMode::Read
    }
}

/// When a path call's runtime follows a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Follow {
    /// Whatever the guest's lookup flag says (node:wasi's `path_open`).
    Always,
    /// With [`LOOKUP_SYMLINK_FOLLOW`] only.
    Flag,
    /// Never: the call acts on the name itself.
    Never,
}

/// What one preview1 import needs from a gate (an entry of [`calls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallGate {
    /// Touches no host path the guest could not already see.
    None,
    /// Acts on what its fd names: `mode` on the path recorded for the fd,
    /// then `right` (a bit number of preview1 `rights`) of the fd.
    Fd {
        /// The mode checked on the fd's path.
        mode: FsMode,
        /// The right the fd must have been opened with (else `ENOTCAPABLE`).
        right: u32,
    },
    /// Checked on its path arguments ([`FsOps::path_call`]).
    Path {
        /// Whether its runtime follows a final symlink.
        follow: Follow,
        /// Lookup flags refused with this errno before any check.
        refuse_flags: Option<(u32, u16)>,
    },
    /// Never forwarded: this errno.
    Refuse(u16),
}

/// The call table's text: every `wasi_snapshot_preview1` import, classified
/// (see its provenance string). Hosts link only what it lists.
pub const CALLS_JSON: &str = include_str!("../data/wasi-calls.json");

/// [`CALLS_JSON`], parsed once. Unreadable (never, for the table compiled in:
/// a test reads it) it is empty, so every import is unclassified and a host
/// links none of them (fail closed).
pub fn calls() -> &'static BTreeMap<String, CallGate> {
    static TABLE: OnceLock<BTreeMap<String, CallGate>> = OnceLock::new();
    TABLE.get_or_init(|| parse_calls(CALLS_JSON).unwrap_or_default())
}

/// Parses a call table; any entry it cannot read is an error.
fn parse_calls(text: &str) -> Result<BTreeMap<String, CallGate>, String> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let calls = v.get("calls").and_then(Value::as_object).ok_or("no `calls` object")?;
    let int = |v: Option<&Value>| v.and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    let errno = |v: Option<&Value>| v.and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok());
    let mut out = BTreeMap::new();
    for (name, spec) in calls {
        let field = |k: &str| spec.get(k).and_then(Value::as_str);
        let gate = match field("gate") {
            Some("none") => CallGate::None,
            Some("fd") => CallGate::Fd {
                mode: field("mode").and_then(FsMode::parse).ok_or_else(|| format!("{name}: mode"))?,
                right: int(spec.get("right")).filter(|r| *r < 64).ok_or_else(|| format!("{name}: right"))?,
            },
            Some("path") => CallGate::Path {
                follow: match field("follow") {
                    Some("always") => Follow::Always,
                    Some("flag") => Follow::Flag,
                    Some("never") => Follow::Never,
                    f => return Err(format!("{name}: follow {f:?}")),
                },
                refuse_flags: match spec.get("refuseFlags") {
                    None => None,
                    Some(r) => Some(
                        int(r.get("mask")).zip(errno(r.get("errno"))).ok_or_else(|| format!("{name}: refuseFlags"))?,
                    ),
                },
            },
            Some("refuse") => CallGate::Refuse(errno(spec.get("errno")).ok_or_else(|| format!("{name}: errno"))?),
            g => return Err(format!("{name}: gate {g:?}")),
        };
        out.insert(name.clone(), gate);
    }
    Ok(out)
}

/// Whether `op`'s runtime follows a final symlink with these lookup flags,
/// per [`calls`] (an op the table does not list as a path call: it follows,
/// the stricter check).
#[must_use]
pub fn follows(op: &str, lookup_flags: u32) -> bool {
    match calls().get(op) {
        Some(CallGate::Path { follow: Follow::Never, .. }) => false,
        Some(CallGate::Path { follow: Follow::Flag, .. }) => lookup_flags & LOOKUP_SYMLINK_FOLLOW != 0,
        _ => true,
    }
}

/// `path` with `.`, `..` and repeated separators removed lexically (a `..`
/// at the root stays there), a trailing separator kept: what node:wasi
/// (uvwasi) hands the kernel for a guest path.
#[must_use]
pub fn normalize_lexically(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    let trailing = path.len() > 1 && path.ends_with('/') && !out.is_empty();
    format!("/{}{}", out.join("/"), if trailing { "/" } else { "" })
}

/// Whether the kernel follows a final symlink of `path` whatever a
/// no-follow flag says: a trailing separator, or a final `.` / `..`.
#[must_use]
pub fn forces_follow(path: &str) -> bool {
    path.len() > 1
        && (path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..") || path == "." || path == "..")
}

/// `path` without trailing separators (the root stays `/`).
fn trim_slashes(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    if t.is_empty() && path.starts_with('/') {
        "/"
    } else {
        t
    }
}

/// `path` split into its directory and final name, as written (`/a/b/` is
/// `/a` and `b`; `/x` is `/` and `x`; `/` is `/` and the empty name).
fn split_final(path: &str) -> (&str, &str) {
    let raw = trim_slashes(path);
    match raw.rfind('/') {
        Some(0) => ("/", &raw[1..]),
        Some(i) => (&raw[..i], &raw[i + 1..]),
        None => ("/", raw),
    }
}

/// `a/b` with one separator between them.
fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// What a symlink at `link` with text `target` points at: an absolute target
/// as written, a relative one from the link's directory (trailing
/// separators and final `.` components of `link` are not names): what
/// `path_symlink` creates, and what a renamed link means from its new place.
#[must_use]
pub fn link_meaning(link: &str, target: &str) -> String {
    if target.starts_with('/') {
        return target.to_owned();
    }
    let mut p = link;
    loop {
        let t = p.trim_end_matches('/');
        let t = t.strip_suffix("/.").unwrap_or(t);
        if t == p || t.is_empty() {
            break;
        }
        p = t;
    }
    let dir = match p.rfind('/') {
        Some(0) | None => "",
        Some(i) => &p[..i],
    };
    format!("{dir}/{target}")
}

/// How many links uvwasi follows in a chain before `ELOOP` (`UVWASI__MAX_SYMLINK_FOLLOWS`).
const MAX_LEXICAL_FOLLOWS: usize = 32;

/// Where node:wasi's own following of a final symlink ends: while the path
/// is a symlink, its target joined to the link's directory (or itself,
/// absolute) and normalised lexically, at most 32 links. Intermediate
/// components are left to the kernel.
#[must_use]
pub fn follow_lexically(path: &str) -> String {
    let mut p = path.to_owned();
    for _ in 0..MAX_LEXICAL_FOLLOWS {
        let trimmed = trim_slashes(&p);
        let Ok(target) = std::fs::read_link(trimmed) else { return p };
        let Some(target) = target.to_str() else { return p };
        let (dir, _) = split_final(trimmed);
        p = if target.starts_with('/') { normalize_lexically(target) } else { normalize_lexically(&join(dir, target)) };
    }
    p
}

/// What a no-follow open of `path` gets from `open(2)` with `O_NOFOLLOW`
/// when its final component is a symlink: `ELOOP`, `EEXIST` for an exclusive
/// create; [`errno::SUCCESS`] when it is not a symlink or does not exist.
/// The directory is resolved as written.
#[must_use]
pub fn final_symlink_errno(path: &str, exclusive: bool) -> u16 {
    let (dir, base) = split_final(path);
    if base.is_empty() || base == "." || base == ".." {
        return errno::SUCCESS;
    }
    let Ok(real) = crate::fs::real_path(std::path::Path::new(dir)) else { return errno::SUCCESS };
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

/// Whether the symlink `checked` (a path as checked: real directory plus
/// name) holds an absolute target.
fn absolute_link_target(checked: &str) -> bool {
    std::fs::read_link(checked).is_ok_and(|t| t.to_str().is_some_and(|t| t.starts_with('/')))
}

/// What a relative symlink target `target`, found in the directory `rel`
/// (`""` or `"x/y/"`) below `old`, means once `old` is renamed to `new`, as
/// a path of the tree as it is before the rename (the new directory does not
/// exist yet). `rel`'s components are real directories (the walk does not
/// follow links) and so is `new`'s parent (`new` is a checked path: real
/// parent plus name), so the target's leading `..` steps climb lexically: up
/// `rel`, then out of `new`. Where they stop inside the moved directory the
/// rest names what it names now below `old`; where they climb out of it,
/// the rest is read from that ancestor of `new`. `None` (refuse) when a `..`
/// follows a name in the target, as a link there would decide where it
/// climbs from.
#[must_use]
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
    let mut meant = if out_of_new == 0 {
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

/// Entries a directory rename's walk for the symlinks it moves visits at
/// most; past it the rename is refused (fail closed).
pub const MAX_RENAME_WALK: usize = 10_000;
/// Directory levels below a renamed directory that walk descends at most.
pub const MAX_RENAME_DEPTH: usize = 64;

/// A host's budget for one operation: asked before each step that touches
/// the filesystem; `false` stops the operation ([`Outcome::OutOfBudget`]).
/// Any `FnMut() -> bool` is one (a Rust host samples its `BudgetTracker`
/// there); [`Deadline`] is the wall-clock one.
pub trait Budget {
    /// Whether the operation may take another step.
    fn go_on(&mut self) -> bool;
}

impl<F: FnMut() -> bool> Budget for F {
    fn go_on(&mut self) -> bool {
        self()
    }
}

/// A wall-clock budget: steps go on until the instant (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(pub Option<Instant>);

impl Budget for Deadline {
    fn go_on(&mut self) -> bool {
        self.0.is_none_or(|d| Instant::now() < d)
    }
}

/// Why a compound decision did not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Denied(Denial),
    OutOfBudget,
}

impl From<Denial> for Stop {
    fn from(d: Denial) -> Self {
        Stop::Denied(d)
    }
}

/// A path as checked under the two readings a runtime may act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The reading as written, as the kernel (and wasmtime, through cap-std)
    /// resolves it: the real path when following, else the real directory
    /// plus the name.
    pub kernel: String,
    /// The reading node:wasi acts on (its path normalised lexically first), checked the same way.
    pub lexical: String,
}

/// One `wasi_snapshot_preview1` path call, its paths already joined to the
/// host directories of their fds (an absolute guest path as written: it is
/// checked as the host path it names).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathCall {
    /// `path_open`.
    Open {
        /// The path.
        path: String,
        /// `dirflags` (lookup flags).
        dirflags: u32,
        /// `oflags`.
        oflags: u32,
        /// `fs_rights_base`.
        rights_base: u64,
        /// `fdflags`.
        fdflags: u32,
    },
    /// `path_filestat_get`.
    FilestatGet {
        /// The path.
        path: String,
        /// Lookup flags.
        flags: u32,
    },
    /// `path_filestat_set_times`.
    FilestatSetTimes {
        /// The path.
        path: String,
        /// Lookup flags.
        flags: u32,
    },
    /// `path_readlink`.
    Readlink {
        /// The path.
        path: String,
    },
    /// `path_create_directory`.
    CreateDirectory {
        /// The path.
        path: String,
    },
    /// `path_remove_directory`.
    RemoveDirectory {
        /// The path.
        path: String,
    },
    /// `path_unlink_file`.
    UnlinkFile {
        /// The path.
        path: String,
    },
    /// `path_rename`.
    Rename {
        /// The old name.
        old: String,
        /// The new name.
        new: String,
    },
    /// `path_link`.
    Link {
        /// The existing name.
        old: String,
        /// `old_flags` (lookup flags).
        old_flags: u32,
        /// The new name.
        new: String,
    },
    /// `path_symlink`.
    Symlink {
        /// The link's text, as the guest wrote it.
        target: String,
        /// Where the link is created.
        new: String,
    },
}

impl PathCall {
    /// The import's name (`path_open`, ...).
    #[must_use]
    pub fn op(&self) -> &'static str {
        match self {
            PathCall::Open { .. } => "path_open",
            PathCall::FilestatGet { .. } => "path_filestat_get",
            PathCall::FilestatSetTimes { .. } => "path_filestat_set_times",
            PathCall::Readlink { .. } => "path_readlink",
            PathCall::CreateDirectory { .. } => "path_create_directory",
            PathCall::RemoveDirectory { .. } => "path_remove_directory",
            PathCall::UnlinkFile { .. } => "path_unlink_file",
            PathCall::Rename { .. } => "path_rename",
            PathCall::Link { .. } => "path_link",
            PathCall::Symlink { .. } => "path_symlink",
        }
    }

    /// The mode the call needs: a write unless it only reads (an open
    /// without create, truncate, append or a write right; a stat; a readlink).
    #[must_use]
    pub fn mode(&self) -> FsMode {
        match self {
            PathCall::Open { oflags, rights_base, fdflags, .. } => open_mode(*oflags, *rights_base, *fdflags),
            PathCall::FilestatGet { .. } | PathCall::Readlink { .. } => FsMode::Read,
            _ => FsMode::Write,
        }
    }

    /// The checks it needs, in order: `(path, mode, follow)`. A hard link
    /// shares the inode, so whoever can write the new name can write the
    /// source: both are writes. A symlink's target must be inside the grants
    /// (read), read from the link's directory as the kernel will.
    fn checks(&self) -> Vec<(String, FsMode, bool)> {
        let op = self.op();
        match self {
            PathCall::Open { path, dirflags, .. } => vec![(path.clone(), self.mode(), follows(op, *dirflags))],
            PathCall::FilestatGet { path, flags } | PathCall::FilestatSetTimes { path, flags } => {
                vec![(path.clone(), self.mode(), follows(op, *flags))]
            }
            PathCall::Readlink { path }
            | PathCall::CreateDirectory { path }
            | PathCall::RemoveDirectory { path }
            | PathCall::UnlinkFile { path } => vec![(path.clone(), self.mode(), follows(op, 0))],
            PathCall::Rename { old, new } => {
                vec![(old.clone(), FsMode::Write, follows(op, 0)), (new.clone(), FsMode::Write, follows(op, 0))]
            }
            PathCall::Link { old, old_flags, new } => {
                vec![
                    (old.clone(), FsMode::Write, follows(op, *old_flags)),
                    (new.clone(), FsMode::Write, follows(op, 0)),
                ]
            }
            PathCall::Symlink { target, new } => {
                vec![(new.clone(), FsMode::Write, follows(op, 0)), (link_meaning(new, target), FsMode::Read, true)]
            }
        }
    }
}

/// How one path call was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Perform it.
    Allowed {
        /// Each path argument as checked, in the call's order (a symlink's
        /// target after its name).
        paths: Vec<Checked>,
        /// `path_open`: the path string node:wasi keeps for the new fd (the
        /// path normalised lexically and, unless the guest asked not to
        /// follow, its final link followed lexically): later calls through a
        /// directory fd are joined to it.
        base: Option<String>,
    },
    /// Refused: answer `EACCES`.
    Denied(Denial),
    /// Not performed, with this errno, and not a denial: what the runtime
    /// itself answers (`ELOOP` / `EEXIST` for a no-follow open of a final
    /// symlink, `EPERM` for an absolute link target, refused lookup flags).
    Errno(u16),
    /// The host's budget ran out before the decision was made: not
    /// performed; the host ends the guest with its budget breach.
    OutOfBudget,
}

impl Outcome {
    /// The errno to give the guest when the call is not performed
    /// (`EACCES` for a denial, [`errno::IO`] when out of budget).
    #[must_use]
    pub fn errno(&self) -> u16 {
        match self {
            Outcome::Allowed { .. } => errno::SUCCESS,
            Outcome::Denied(_) => errno::ACCES,
            Outcome::Errno(e) => *e,
            Outcome::OutOfBudget => errno::IO,
        }
    }
}

impl From<Stop> for Outcome {
    fn from(s: Stop) -> Self {
        match s {
            Stop::Denied(d) => Outcome::Denied(d),
            Stop::OutOfBudget => Outcome::OutOfBudget,
        }
    }
}

/// The decisions of compound fs operations on one policy, uncounted (a
/// host counts through [`WasiGate`], or its own checker).
#[derive(Debug, Clone, Copy)]
pub struct FsOps<'p> {
    policy: &'p PermissionPolicy,
}

impl<'p> FsOps<'p> {
    /// The operations of `policy`.
    #[must_use]
    pub fn new(policy: &'p PermissionPolicy) -> Self {
        Self { policy }
    }

    /// One path check, under every reading a runtime may act on (SPEC §16):
    /// `follow`: the call follows a final symlink, so the real path is
    /// checked (symlinks resolved); otherwise it acts on the final name: the
    /// path lexically, then its real directory plus the name. A trailing
    /// separator or a final `.` / `..` makes the kernel follow anyway. The
    /// path as written (the kernel's reading), normalised lexically
    /// (node:wasi's), and, when following, with its final link followed
    /// lexically (node:wasi's own following) must each be inside the grants.
    pub fn check_path(
        &self,
        path: &str,
        mode: FsMode,
        follow: bool,
        budget: &mut dyn Budget,
    ) -> Result<Checked, Outcome> {
        self.check(path, mode, follow, budget).map_err(Outcome::from)
    }

    fn check(&self, path: &str, mode: FsMode, follow: bool, budget: &mut dyn Budget) -> Result<Checked, Stop> {
        let follow = follow || forces_follow(path);
        if !budget.go_on() {
            return Err(Stop::OutOfBudget);
        }
        let kernel = self.reading(path, mode, follow)?;
        let norm = normalize_lexically(path);
        let lexical = if norm == path { kernel.clone() } else { self.reading(&norm, mode, follow)? };
        if follow {
            let chain = follow_lexically(&norm);
            if chain != norm {
                self.reading(&chain, mode, follow)?;
            }
        }
        Ok(Checked { kernel, lexical })
    }

    /// One reading of a path (see [`Self::check_path`]): the path checked.
    fn reading(&self, path: &str, mode: FsMode, follow: bool) -> Result<String, Denial> {
        let deny = |reason| Denial { capability: mode.capability(), reason };
        if follow {
            return self.policy.authorize_fs(path, mode, true).map_err(deny);
        }
        if let Decision::Denied(d) = self.policy.check_fs(path, mode) {
            return Err(d);
        }
        // Split the raw path, never a normalised one: `link/..` is the parent
        // of the link's target for the kernel, so the directory is resolved as written.
        let (dir, base) = split_final(path);
        // The real directory (a missing part appended as written: the call
        // then fails with ENOENT, and what exists of the path is resolved).
        let real = crate::fs::real_path(std::path::Path::new(dir)).map_err(|_| deny(DenyReason::SymlinkEscape))?;
        let real = real.to_str().ok_or(deny(DenyReason::SymlinkEscape))?;
        let joined = join(real, base);
        match self.policy.check_fs(&joined, mode) {
            Decision::Allowed => Ok(joined),
            Decision::Denied(d) => Err(d),
        }
    }

    /// An fd-level call on the path recorded for the fd: `mode` on it.
    /// `reread`: the runtime reaches the fd's file again through that path
    /// string (node:wasi's directory fds), so it is checked as a followed
    /// path, every reading; else lexically (it was resolved when recorded).
    /// `capable`: the fd was opened with the call's right; without it the
    /// answer is `ENOTCAPABLE` (after the check, as preview1 says).
    pub fn fd_call(&self, path: &str, mode: FsMode, capable: bool, reread: bool, budget: &mut dyn Budget) -> Outcome {
        if reread {
            if let Err(s) = self.check(path, mode, true, budget) {
                return s.into();
            }
        } else if let Decision::Denied(d) = self.policy.check_fs(path, mode) {
            return Outcome::Denied(d);
        }
        if capable {
            Outcome::Allowed { paths: Vec::new(), base: None }
        } else {
            Outcome::Errno(errno::NOTCAPABLE)
        }
    }

    /// One preview1 path call (SPEC §14, §16, §17): its checks in order (the
    /// first denial decides), then what the call does beyond its names: a
    /// no-follow open of a final symlink gets `ELOOP` / `EEXIST` (a runtime
    /// that follows it anyway must not open it), a readlink of an absolute
    /// target `EPERM` (a host path is never revealed), a rename what it
    /// moves ([`Self::rename_moves`]), `path_link` following a symlink `EINVAL`.
    pub fn path_call(&self, call: &PathCall, budget: &mut dyn Budget) -> Outcome {
        if let PathCall::Link { old_flags, .. } = call {
            if let Some(CallGate::Path { refuse_flags: Some((mask, e)), .. }) = calls().get("path_link") {
                if old_flags & mask != 0 {
                    return Outcome::Errno(*e);
                }
            }
        }
        let mut paths = Vec::new();
        for (path, mode, follow) in call.checks() {
            match self.check(&path, mode, follow, budget) {
                Ok(c) => paths.push(c),
                Err(s) => return s.into(),
            }
        }
        match call {
            PathCall::Readlink { .. }
                if absolute_link_target(&paths[0].kernel) || absolute_link_target(&paths[0].lexical) =>
            {
                return Outcome::Errno(errno::PERM);
            }
            PathCall::Open { path, dirflags, oflags, .. } if dirflags & LOOKUP_SYMLINK_FOLLOW == 0 => {
                let exclusive = oflags & (OFLAGS_CREAT | OFLAGS_EXCL) == OFLAGS_CREAT | OFLAGS_EXCL;
                // Its final component as written, or as node:wasi normalises the path.
                for p in [path.clone(), normalize_lexically(path)] {
                    let e = final_symlink_errno(&p, exclusive);
                    if e != errno::SUCCESS {
                        return Outcome::Errno(e);
                    }
                }
            }
            PathCall::Rename { old, new } => {
                if let Err(s) = self.rename_moves_all([old, new], [&paths[0], &paths[1]], budget) {
                    return s.into();
                }
            }
            _ => {}
        }
        let base = match call {
            PathCall::Open { path, dirflags, .. } => {
                let norm = normalize_lexically(path);
                Some(if dirflags & LOOKUP_SYMLINK_FOLLOW == 0 { norm } else { follow_lexically(&norm) })
            }
            _ => None,
        };
        Outcome::Allowed { paths, base }
    }

    /// What a rename moves, under each reading of its two names a runtime may
    /// act on (as written: the kernel's; normalised: node:wasi's).
    fn rename_moves_all(&self, raw: [&str; 2], checked: [&Checked; 2], budget: &mut dyn Budget) -> Result<(), Stop> {
        self.moves(&checked[0].kernel, &checked[1].kernel, budget)?;
        if raw.iter().any(|r| normalize_lexically(r) != *r) {
            self.moves(&checked[0].lexical, &checked[1].lexical, budget)?;
        }
        Ok(())
    }

    /// What `rename(old, new)` moves beyond its two names (both already
    /// checked; `old`, `new`: the paths as checked). Refuses (`Some`) when:
    /// a symlink's target, read from its new directory, leaves the grants
    /// (checked as `path_symlink` checks a target); a directory may hold,
    /// or would land, a path a `deny.fs` rule matches below either name
    /// ([`PermissionPolicy::fs_deny_reaches`], decided on the compiled deny
    /// globs and the checker's fold, whatever is on disk now); or a symlink
    /// below a moved directory means, from its new place, something outside
    /// the grants (a bounded walk that asks the budget before every entry).
    pub fn rename_moves(&self, old: &str, new: &str, budget: &mut dyn Budget) -> Option<Outcome> {
        self.moves(old, new, budget).err().map(Outcome::from)
    }

    fn moves(&self, old: &str, new: &str, budget: &mut dyn Budget) -> Result<(), Stop> {
        if !budget.go_on() {
            return Err(Stop::OutOfBudget);
        }
        // No such name: the runtime fails the rename (ENOENT).
        let Ok(meta) = std::fs::symlink_metadata(old) else { return Ok(()) };
        if meta.file_type().is_symlink() {
            let Ok(target) = std::fs::read_link(old) else { return Ok(()) };
            let Some(target) = target.to_str() else {
                // A target that is not UTF-8 cannot be checked: refused.
                return Err(Denial { capability: Capability::FsRead, reason: DenyReason::InvalidPath }.into());
            };
            return self.check(&link_meaning(new, target), FsMode::Read, true, budget).map(|_| ());
        }
        if !meta.is_dir() {
            return Ok(());
        }
        if self.policy.fs_deny_reaches(old) || self.policy.fs_deny_reaches(new) {
            return Err(Denial { capability: Capability::FsWrite, reason: DenyReason::ExplicitlyDenied }.into());
        }
        self.moved_links(old, new, budget)
    }

    /// The symlinks below a directory renamed from `old` to `new`: each keeps
    /// its target text, so a relative one means that text read from its new
    /// directory ([`moved_meaning`]) and an absolute one what it meant; each
    /// is checked as `path_symlink` checks a target. The walk does not
    /// follow links, asks the budget before every entry, and is bounded
    /// ([`MAX_RENAME_WALK`] entries, [`MAX_RENAME_DEPTH`] levels): past the
    /// bound, on a name or target that is not UTF-8, or a directory that
    /// cannot be read, the rename is refused (fail closed).
    fn moved_links(&self, old: &str, new: &str, budget: &mut dyn Budget) -> Result<(), Stop> {
        let unverifiable = |reason| Err(Stop::Denied(Denial { capability: Capability::FsRead, reason }));
        let old = trim_slashes(old);
        let new = trim_slashes(new);
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
                if !budget.go_on() {
                    return Err(Stop::OutOfBudget);
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
                    self.check(&meant, FsMode::Read, true, budget)?;
                }
            }
        }
        Ok(())
    }
}

/// The gate a WASI host calls: [`FsOps`] over a [`PermissionChecker`], each
/// refused call counted once in `plugin.permission_denied_total` (its first
/// denial), and the checker's shadow policy, if any, evaluated on the same
/// call (SPEC §12). A call stopped by the budget is not a denial: the host
/// counts its breach through its `BudgetTracker`.
#[derive(Debug, Clone)]
pub struct WasiGate {
    checker: PermissionChecker,
}

impl WasiGate {
    /// A gate over `checker`.
    #[must_use]
    pub fn new(checker: PermissionChecker) -> Self {
        Self { checker }
    }

    /// The checker (for the host's other checks: capabilities, fetch).
    #[must_use]
    pub fn checker(&self) -> &PermissionChecker {
        &self.checker
    }

    /// Counts `outcome`'s denial once, and the shadow's on the same call.
    fn counted(&self, outcome: Outcome, shadow: impl FnOnce(FsOps<'_>) -> Outcome) -> Outcome {
        let denial = if let Outcome::Denied(d) = outcome { Some(d) } else { None };
        let _ = self.checker.count_compound(denial, |p| match shadow(FsOps::new(p)) {
            Outcome::Denied(d) => Some(d),
            _ => None,
        });
        outcome
    }

    /// [`FsOps::path_call`], counted.
    pub fn path_call(&self, call: &PathCall, budget: &mut dyn Budget) -> Outcome {
        let outcome = FsOps::new(self.checker.policy()).path_call(call, budget);
        if outcome == Outcome::OutOfBudget {
            return outcome;
        }
        self.counted(outcome, |ops| ops.path_call(call, budget))
    }

    /// [`FsOps::fd_call`], counted.
    pub fn fd_call(&self, path: &str, mode: FsMode, capable: bool, reread: bool, budget: &mut dyn Budget) -> Outcome {
        let outcome = FsOps::new(self.checker.policy()).fd_call(path, mode, capable, reread, budget);
        if outcome == Outcome::OutOfBudget {
            return outcome;
        }
        self.counted(outcome, |ops| ops.fd_call(path, mode, capable, reread, budget))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_table_compiled_in_parses_and_classifies_every_path_call() {
        let table = parse_calls(CALLS_JSON).unwrap();
        assert_eq!(calls().len(), table.len());
        for op in [
            "path_open",
            "path_filestat_get",
            "path_filestat_set_times",
            "path_readlink",
            "path_create_directory",
            "path_remove_directory",
            "path_unlink_file",
            "path_rename",
            "path_link",
            "path_symlink",
        ] {
            assert!(matches!(table.get(op), Some(CallGate::Path { .. })), "{op}");
        }
        for (name, gate) in &table {
            if let CallGate::Fd { mode, right } = gate {
                // A call needing a right that counts as a write in open_mode is a write call.
                if WRITE_RIGHTS & (1u64 << right) != 0 {
                    assert_eq!(*mode, FsMode::Write, "{name}");
                }
            }
        }
        assert!(follows("path_open", 0) && !follows("path_unlink_file", 1));
        assert!(follows("path_filestat_get", 1) && !follows("path_filestat_get", 0));
        assert!(follows("not_in_the_table", 0), "unknown: the stricter check");
        assert!(parse_calls(r#"{"calls":{"x":{"gate":"fd","mode":"read","right":64}}}"#).is_err());
        assert!(parse_calls(r#"{"calls":{"x":{"gate":"path","follow":"sometimes"}}}"#).is_err());
    }

    #[test]
    fn open_mode_is_write_for_create_truncate_append_and_every_write_right() {
        for bit in 0..64u32 {
            let rights = 1u64 << bit;
            let want = if WRITE_RIGHTS & rights != 0 { FsMode::Write } else { FsMode::Read };
            assert_eq!(open_mode(0, rights, 0), want, "right bit {bit}");
        }
        assert_eq!(open_mode(OFLAGS_CREAT, 2, 0), FsMode::Write);
        assert_eq!(open_mode(OFLAGS_TRUNC, 2, 0), FsMode::Write);
        assert_eq!(open_mode(OFLAGS_DIRECTORY | OFLAGS_EXCL, 2, 0), FsMode::Read);
        assert_eq!(open_mode(0, 2, FDFLAGS_APPEND), FsMode::Write);
    }

    #[test]
    fn lexical_rules() {
        for (raw, want) in [
            ("/a/b/../c", "/a/c"),
            ("/a//b/./c/../", "/a/b/"),
            ("/../a", "/a"),
            ("/", "/"),
            ("//", "/"),
            ("/a/..", "/"),
            ("/a/../", "/"),
        ] {
            assert_eq!(normalize_lexically(raw), want, "{raw}");
        }
        assert!(forces_follow("/a/") && forces_follow("/a/.") && forces_follow("/a/..") && !forces_follow("/a/.x"));
        assert!(!forces_follow("/") && !forces_follow("/a"));
        assert_eq!(link_meaning("/o/l", "t"), "/o/t");
        assert_eq!(link_meaning("/o/l/", "t"), "/o/t");
        assert_eq!(link_meaning("/o/l/.", "t"), "/o/t");
        assert_eq!(link_meaning("/l", "t"), "/t");
        assert_eq!(link_meaning("/o/l", "/abs"), "/abs");
        assert_eq!(split_final("/a/b/"), ("/a", "b"));
        assert_eq!(split_final("/x"), ("/", "x"));
        assert_eq!(split_final("/"), ("/", ""));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "../x"), Some("/n/x".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "e/f/", "../g"), Some("/o/a/e/g".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "e/", "../../../../../x"), Some("/x".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "../.."), Some("/".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "f/"), Some("/o/a/f/".into()));
        assert_eq!(moved_meaning("/o/a", "/n/b", "", "f/../x"), None);
    }
}
