//! Opening what was checked: the fs check and the open as one step, with no
//! window between them in which a symlink, a `..` or a magic link could send
//! the open elsewhere (SPEC §2 "A host opens exactly what was checked", §17).
//!
//! [`PermissionPolicy::open_checked`] decides exactly as
//! [`PermissionPolicy::authorize_fs`] with `resolve_symlinks` (the raw path
//! and its real path both inside the grants, deny rules included), for every
//! mode the open needs: `read`, `write` (create, truncate, append and
//! exclusive create are writes), or both. It then opens the checked real path
//! `R`, which by construction has no symlink in it:
//!
//! 1. **The root.** `P`, the deepest literal (wildcard-free) directory prefix
//!    of a grant that allows `R` (`/srv/app` for `/srv/app/**/*.json`; the
//!    parent of `R` when a grant names `R` itself).
//! 2. **Linux 5.6+.** `openat2(AT_FDCWD, P, O_PATH | O_DIRECTORY,
//!    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, then
//!    `openat2(P, R − P, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!    RESOLVE_NO_MAGICLINKS)`. The kernel follows no symlink anywhere on `R`
//!    (a component swapped for one after the check fails with `ELOOP`, the
//!    final one included, so `O_CREAT` never creates through a dangling
//!    link), no magic link (`/proc/self/fd/N`, `/proc/self/root`), and no
//!    `..` can leave `P` (`EXDEV`); the kernel also checks, as the walk
//!    completes, that what it reached is still beneath `P` (a directory
//!    renamed out of `P` mid-walk fails).
//! 3. **Without `openat2`** (`ENOSYS` on kernels before 5.6, `ENOSYS` or
//!    `EPERM` from a seccomp filter, every other unix): one component at a
//!    time from `/`, each directory opened with `O_NOFOLLOW | O_DIRECTORY`
//!    (and `O_PATH` on Linux) relative to the one before, the last with the
//!    requested flags and `O_NOFOLLOW`. Never a plain open of the path.
//! 4. **What was opened is `R`.** The device and inode `fstat` reports
//!    for the descriptor must be those `lstat(R)` reports now; after the
//!    component walk, which has no in-kernel beneath check, first the
//!    descriptor's own path (`readlink("/proc/self/fd/N")`, Linux) must be
//!    `R`. A mismatch (a directory renamed while the open walked, the file
//!    renamed away since) closes the descriptor and denies. After `openat2`
//!    the kernel has already held the open beneath `P`, so the cheaper test
//!    stands there (about 1 µs; the `/proc` readlink costs about 3).
//! 5. **Side effects last.** Truncation is done after step 4 (`ftruncate`),
//!    so an open that is refused there has truncated nothing. (`O_CREAT` is
//!    the one effect that precedes it: what it creates is at `R` beneath `P`,
//!    the path that was checked.)
//!
//! A symlink, a `..` or a magic link found at open time where the check saw
//! none means the tree changed between the two steps: the open is denied
//! `symlink_escape` (a [`PermissionDenied`], counted by a checker like any
//! denial), never retried by a path the check did not see. Every other
//! failure (`ENOENT`, `EACCES`, `EEXIST`, `EISDIR`, ...) is an
//! [`OpenError::Io`].
//!
//! Every descriptor is opened `O_CLOEXEC | O_NOCTTY`, and `O_NONBLOCK` until
//! it is verified (a FIFO in a grant cannot hang the open; the flag is
//! cleared before the descriptor is handed out).
//!
//! # What a path means
//!
//! Permissions are on paths, as the manifest writes them. A path through a
//! symlink is opened by its checked real path, so only what the real path
//! names is opened. A hard link is a path too: a second name for a file,
//! checked by that name; a hard link inside a grant to a file a deny rule
//! names opens that file's content (link creation needs write access to the
//! grant, and on Linux `fs.protected_hardlinks` limits it to files the linker
//! owns or can read and write). Mount points are part of the namespace the
//! host runs in: a path under a grant that a mount covers is in the grant.
//!
//! ```
//! # #[cfg(unix)] {
//! use std::io::Read;
//! use api_sandbox_permissions::open::{OpenError, OpenOptions};
//! use api_sandbox_permissions::serde_json::json;
//! use api_sandbox_permissions::{DenyReason, PermissionPolicy, PolicyOptions};
//!
//! let dir = std::env::temp_dir().join(format!("asp-open-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let dir = std::fs::canonicalize(&dir)?;
//! std::fs::write(dir.join("config.json"), "{}")?;
//! std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd"))?;
//! let grant = format!("{}/**", dir.display());
//! let policy = PermissionPolicy::from_manifest(&json!({ "fs": [grant] }), PolicyOptions::new("my-plugin"))?;
//!
//! let file = policy.open_checked(&format!("{}/config.json", dir.display()), OpenOptions::new())?;
//! let mut text = String::new();
//! file.into_file().read_to_string(&mut text)?;
//! assert_eq!(text, "{}");
//!
//! match policy.open_checked(&format!("{}/passwd", dir.display()), OpenOptions::new()) {
//!     Err(OpenError::Denied(e)) => assert_eq!(e.denial.reason, DenyReason::SymlinkEscape),
//!     other => panic!("{other:?}"),
//! }
//! std::fs::remove_dir_all(&dir)?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Denial, DenyReason, PermissionDenied};
use crate::fs::FsMode;
use crate::policy::PermissionPolicy;

/// What an open asks for. Starts read-only; every flag defaults to `false`.
///
/// `create`, `truncate`, `append` and `exclusive` change the file, so they
/// need `write` (and the open then needs a write grant); `exclusive` needs
/// `create`; `directory` opens a directory for reading only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    create: bool,
    truncate: bool,
    exclusive: bool,
    directory: bool,
    permissions: u32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Most permission bits a created file may ask for: `rwxrwxrwx`, never
/// setuid, setgid or sticky.
pub const MAX_CREATE_PERMISSIONS: u32 = 0o777;

impl OpenOptions {
    /// Read-only, nothing created or changed; permissions of a created file `0o666` (before the umask).
    #[must_use]
    pub const fn new() -> Self {
        Self {
            read: true,
            write: false,
            append: false,
            create: false,
            truncate: false,
            exclusive: false,
            directory: false,
            permissions: 0o666,
        }
    }
    /// Read access (needs a read grant). Default: `true`.
    #[must_use]
    pub const fn read(mut self, on: bool) -> Self {
        self.read = on;
        self
    }
    /// Write access (needs a write grant). Default: `false`.
    #[must_use]
    pub const fn write(mut self, on: bool) -> Self {
        self.write = on;
        self
    }
    /// Every write goes to the end (`O_APPEND`); needs `write`. Default: `false`.
    #[must_use]
    pub const fn append(mut self, on: bool) -> Self {
        self.append = on;
        self
    }
    /// Create the file when it does not exist (`O_CREAT`); needs `write`. Default: `false`.
    #[must_use]
    pub const fn create(mut self, on: bool) -> Self {
        self.create = on;
        self
    }
    /// Truncate to length 0, once what was opened is verified; needs `write`. Default: `false`.
    #[must_use]
    pub const fn truncate(mut self, on: bool) -> Self {
        self.truncate = on;
        self
    }
    /// Fail with `EEXIST` when the file exists (`O_EXCL`); needs `create`. Default: `false`.
    #[must_use]
    pub const fn exclusive(mut self, on: bool) -> Self {
        self.exclusive = on;
        self
    }
    /// Only a directory (`O_DIRECTORY`), read-only. Default: `false`.
    #[must_use]
    pub const fn directory(mut self, on: bool) -> Self {
        self.directory = on;
        self
    }
    /// Permission bits of a file `create` makes, at most [`MAX_CREATE_PERMISSIONS`]
    /// (the umask applies). Default: `0o666`.
    #[must_use]
    pub const fn permissions(mut self, bits: u32) -> Self {
        self.permissions = bits;
        self
    }

    /// The modes the open is checked in: read, write, or both, in that order.
    pub(crate) fn modes(&self) -> &'static [FsMode] {
        match (self.read, self.write) {
            (true, true) => &[FsMode::Read, FsMode::Write],
            (false, true) => &[FsMode::Write],
            _ => &[FsMode::Read],
        }
    }

    /// A combination no open can mean, or `None`.
    pub(crate) fn invalid(&self) -> Option<&'static str> {
        if !self.read && !self.write {
            return Some("an open needs read or write access");
        }
        if !self.write && (self.create || self.truncate || self.append || self.exclusive) {
            return Some("create, truncate, append and exclusive change the file: they need write access");
        }
        if self.exclusive && !self.create {
            return Some("exclusive needs create");
        }
        if self.directory && self.write {
            return Some("a directory opens for reading only");
        }
        if self.permissions > MAX_CREATE_PERMISSIONS {
            return Some("permissions of a created file are at most 0o777 (no setuid, setgid or sticky bit)");
        }
        None
    }

    /// The open(2) flags, truncation left out (it follows the verification).
    fn oflags(&self) -> OFlags {
        let mut f = match (self.read, self.write) {
            (true, true) => OFlags::RDWR,
            (false, true) => OFlags::WRONLY,
            _ => OFlags::RDONLY,
        };
        f |= OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::NOFOLLOW;
        if self.append {
            f |= OFlags::APPEND;
        }
        if self.create {
            f |= OFlags::CREATE;
        }
        if self.exclusive {
            f |= OFlags::EXCL;
        }
        if self.directory {
            f |= OFlags::DIRECTORY;
        }
        f
    }
}

/// An open descriptor of the file that was checked, and its checked real path.
#[derive(Debug)]
pub struct CheckedFile {
    fd: OwnedFd,
    path: String,
}

impl CheckedFile {
    /// The real path that was checked and opened.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }
    /// The descriptor and the path.
    #[must_use]
    pub fn into_parts(self) -> (OwnedFd, String) {
        (self.fd, self.path)
    }
    /// The descriptor as a [`std::fs::File`].
    #[must_use]
    pub fn into_file(self) -> std::fs::File {
        std::fs::File::from(self.fd)
    }
}

impl AsFd for CheckedFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Why a checked open did not return a descriptor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The check denied, or the tree changed between the check and the open
    /// (`symlink_escape`). A checker counts it once.
    #[error(transparent)]
    Denied(#[from] PermissionDenied),
    /// Options no open can mean (see [`OpenOptions`]); nothing was checked.
    #[error("invalid open options: {0}")]
    InvalidOptions(&'static str),
    /// The check allowed and the open failed (`ENOENT`, `EACCES`, `EEXIST`, ...).
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What the open itself found.
enum Failure {
    /// A symlink, `..` or magic link where the check saw none, or a
    /// descriptor that is not the checked path: the tree changed.
    Changed,
    Io(io::Error),
}

impl From<Errno> for Failure {
    fn from(e: Errno) -> Self {
        match e {
            // ELOOP: a symlink on the way (nothing on a real path is one);
            // EXDEV: a step out of the root.
            Errno::LOOP | Errno::XDEV => Failure::Changed,
            e => Failure::Io(e.into()),
        }
    }
}

impl PermissionPolicy {
    /// Checks `path` for every mode `options` needs, exactly as
    /// [`Self::authorize_fs`] with `resolve_symlinks`, then opens the checked
    /// real path beneath its grant's literal root without following any
    /// symlink, `..` or magic link, and verifies that what was opened is that
    /// path (see [`crate::open`]). Unix only.
    ///
    /// Denied: [`OpenError::Denied`] with the reason the check gave (for
    /// read and write, the first mode denied), or `symlink_escape` when the
    /// tree changed between the check and the open.
    pub fn open_checked(&self, path: &str, options: OpenOptions) -> Result<CheckedFile, OpenError> {
        open_with(self, path, options, Strategy::Best)
    }
}

/// How the open walks the checked path (tests hold both to the same oracle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// `openat2` where the kernel has it, else the component walk.
    Best,
    /// The component walk, as on a kernel without `openat2`.
    #[cfg_attr(not(any(test, feature = "test-hooks")), allow(dead_code))]
    Walk,
}

#[cfg(feature = "test-hooks")]
/// The test-hooks addon's switch: every open takes the component walk.
pub(crate) static FORCE_WALK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn open_with(
    policy: &PermissionPolicy,
    path: &str,
    options: OpenOptions,
    strategy: Strategy,
) -> Result<CheckedFile, OpenError> {
    if let Some(why) = options.invalid() {
        return Err(OpenError::InvalidOptions(why));
    }
    let modes = options.modes();
    let deny = |mode: FsMode, reason| {
        OpenError::Denied(PermissionDenied {
            plugin: policy.plugin().to_owned(),
            denial: Denial { capability: mode.capability(), reason },
            target: None,
        })
    };
    let mut real: Option<String> = None;
    for &mode in modes {
        let r = policy.authorize_fs(path, mode, true).map_err(|reason| deny(mode, reason))?;
        // Two modes resolve twice: a tree that answered differently changed in between.
        if real.as_ref().is_some_and(|first| *first != r) {
            return Err(deny(mode, DenyReason::SymlinkEscape));
        }
        real = Some(r);
    }
    // The mode a failure at open time is reported in: write when writing.
    let last = modes[modes.len() - 1];
    let (Some(real), Some(prefix)) =
        (real.as_deref(), real.as_deref().and_then(|r| policy.fs_matcher().granting_prefix(r, modes)))
    else {
        return Err(deny(last, DenyReason::SymlinkEscape));
    };
    // An exact grant of `real` (or the root itself) starts from its parent directory.
    let at = if prefix >= real.len() { real.rfind('/').unwrap_or(0) } else { prefix };
    let root = if at == 0 { "/" } else { &real[..at] };
    let rel = if real.len() <= at + 1 { "." } else { &real[at + 1..] };
    #[cfg(feature = "test-hooks")]
    let strategy = if FORCE_WALK.load(std::sync::atomic::Ordering::Relaxed) { Strategy::Walk } else { strategy };
    match open_verified(real, root, rel, &options, strategy) {
        Ok(fd) => Ok(CheckedFile { fd, path: real.to_owned() }),
        Err(Failure::Changed) => Err(deny(last, DenyReason::SymlinkEscape)),
        Err(Failure::Io(e)) => Err(OpenError::Io(e)),
    }
}

/// Opens `real` (`root` + `/` + `rel`), verifies it, then applies what
/// waited for the verification.
fn open_verified(real: &str, root: &str, rel: &str, o: &OpenOptions, strategy: Strategy) -> Result<OwnedFd, Failure> {
    let flags = o.oflags();
    // openat2 refuses a mode without O_CREAT (EINVAL).
    let mode = if o.create { Mode::from_bits_truncate(o.permissions as _) } else { Mode::empty() };
    let (fd, walked) = match strategy {
        Strategy::Best => match beneath(root, rel, flags, mode) {
            Some(r) => (r?, false),
            None => (walk(real, flags, mode)?, true),
        },
        Strategy::Walk => (walk(real, flags, mode)?, true),
    };
    verify(&fd, real, walked)?;
    // F_SETFL changes only the status flags (O_APPEND, O_NONBLOCK, ...): keep O_APPEND, drop O_NONBLOCK.
    rustix::fs::fcntl_setfl(&fd, if o.append { OFlags::APPEND } else { OFlags::empty() })?;
    if o.truncate {
        rustix::fs::ftruncate(&fd, 0)?;
    }
    Ok(fd)
}

/// The `openat2` open beneath the root; `None` when the kernel has no
/// `openat2` (or a filter refuses it), so the caller walks instead.
#[cfg(target_os = "linux")]
fn beneath(root: &str, rel: &str, flags: OFlags, mode: Mode) -> Option<Result<OwnedFd, Failure>> {
    use rustix::fs::{openat2, ResolveFlags, CWD};
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Set once the kernel answered `ENOSYS`: it will not grow `openat2`.
    static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let no_links = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let dir = match openat2(CWD, root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty(), no_links) {
        Ok(fd) => fd,
        Err(Errno::NOSYS) => {
            NO_OPENAT2.store(true, Ordering::Relaxed);
            return None;
        }
        // A seccomp filter that refuses the call (a container runtime's default).
        Err(Errno::PERM) => return None,
        Err(e) => return Some(Err(e.into())),
    };
    // EAGAIN: a rename or mount raced a scoped lookup; the kernel asks for a retry.
    let mut tries = 0;
    Some(loop {
        match openat2(&dir, rel, flags, mode, no_links | ResolveFlags::BENEATH) {
            Err(Errno::AGAIN) if tries < 8 => tries += 1,
            r => break r.map_err(Failure::from),
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn beneath(_root: &str, _rel: &str, _flags: OFlags, _mode: Mode) -> Option<Result<OwnedFd, Failure>> {
    None
}

/// What a directory on the way is opened with: only to name the next step.
#[cfg(target_os = "linux")]
const DIR_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
#[cfg(not(target_os = "linux"))]
const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

/// The open one component at a time from `/`, never following a symlink:
/// each directory is opened `O_NOFOLLOW | O_DIRECTORY` relative to the one
/// before, the last name with the requested flags and `O_NOFOLLOW`. `real`
/// is a real path: absolute, no `.`, `..` or empty segment.
fn walk(real: &str, flags: OFlags, mode: Mode) -> Result<OwnedFd, Failure> {
    let mut dir = rustix::fs::openat(rustix::fs::CWD, "/", DIR_FLAGS, Mode::empty())?;
    let names: Vec<&str> = real.split('/').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = names.split_last() else {
        // The root itself.
        return Ok(rustix::fs::openat(&dir, ".", flags, mode)?);
    };
    for name in parents {
        if matches!(*name, "." | "..") {
            return Err(Failure::Changed);
        }
        dir = rustix::fs::openat(&dir, *name, DIR_FLAGS, Mode::empty()).map_err(|e| walk_failure(&dir, name, e))?;
    }
    if matches!(*last, "." | "..") {
        return Err(Failure::Changed);
    }
    rustix::fs::openat(&dir, *last, flags, mode).map_err(|e| walk_failure(&dir, last, e))
}

/// A step of the walk that failed: a symlink there (whatever errno the
/// platform gave for `O_NOFOLLOW` on it) is a change of the tree.
fn walk_failure(dir: &OwnedFd, name: &str, e: Errno) -> Failure {
    if matches!(e, Errno::LOOP | Errno::NOTDIR | Errno::MLINK) {
        let link = rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode as _) == rustix::fs::FileType::Symlink);
        if link || e == Errno::LOOP {
            return Failure::Changed;
        }
    }
    e.into()
}

/// Whether the descriptor is the file at `real` now: the device and inode
/// `fstat` reports must be those of `lstat(real)`. After the component walk
/// (`by_path`), which has no in-kernel beneath check, first the stricter
/// test where the platform has it: the descriptor's own path
/// (`/proc/self/fd/N`) must be `real`.
fn verify(fd: &OwnedFd, real: &str, by_path: bool) -> Result<(), Failure> {
    #[cfg(target_os = "linux")]
    if by_path {
        use std::os::fd::AsRawFd;
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        if let Ok(path) = rustix::fs::readlinkat(rustix::fs::CWD, link.as_str(), Vec::new()) {
            return if path.as_bytes() == real.as_bytes() { Ok(()) } else { Err(Failure::Changed) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = by_path;
    let opened = rustix::fs::fstat(fd)?;
    match rustix::fs::statat(rustix::fs::CWD, real, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(at) if at.st_dev == opened.st_dev && at.st_ino == opened.st_ino => Ok(()),
        _ => Err(Failure::Changed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Platform, PolicyOptions};
    use serde_json::json;
    use std::io::Read;
    use std::os::unix::fs::{symlink, MetadataExt};
    use std::path::{Path, PathBuf};

    struct TempDir(PathBuf);
    impl TempDir {
        fn new(tag: &str) -> Self {
            let base = std::fs::canonicalize(std::env::temp_dir()).unwrap();
            let p = base.join(format!("asp-open-{tag}-{}-{:?}", std::process::id(), std::thread::current().id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Self(p)
        }
        fn s(&self, rel: &str) -> String {
            format!("{}/{rel}", self.0.display())
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn policy(m: serde_json::Value) -> PermissionPolicy {
        PermissionPolicy::from_manifest(&m, PolicyOptions::new("p").platform(Platform::Posix)).unwrap()
    }

    fn read_all(f: CheckedFile) -> String {
        let mut s = String::new();
        f.into_file().read_to_string(&mut s).unwrap();
        s
    }

    fn reason(r: Result<CheckedFile, OpenError>) -> Option<DenyReason> {
        match r {
            Err(OpenError::Denied(d)) => Some(d.denial.reason),
            _ => None,
        }
    }

    const BOTH: [Strategy; 2] = [Strategy::Best, Strategy::Walk];

    #[test]
    fn the_root_is_the_deepest_literal_prefix_of_a_granting_glob() {
        let p = policy(
            json!({ "fs": ["/srv/**", "/srv/app/*.json", "/srv/app/x/exact", { "path": "/w/**", "mode": "write" }] }),
        );
        let m = p.fs_matcher();
        assert_eq!(m.granting_prefix("/srv/app/a.json", &[FsMode::Read]), Some("/srv/app".len()));
        assert_eq!(m.granting_prefix("/srv/app/a.txt", &[FsMode::Read]), Some("/srv".len()));
        assert_eq!(m.granting_prefix("/srv/app/x/exact", &[FsMode::Read]), Some("/srv/app/x/exact".len()));
        assert_eq!(m.granting_prefix("/w/a", &[FsMode::Read]), None);
        assert_eq!(m.granting_prefix("/w/a", &[FsMode::Write]), Some(2));
        assert_eq!(m.granting_prefix("/other", &[FsMode::Read]), None);
        let root = policy(json!({ "fs": ["/**"] }));
        assert_eq!(root.fs_matcher().granting_prefix("/etc/hosts", &[FsMode::Read]), Some(0));
    }

    #[test]
    fn opens_the_checked_file_and_denies_as_authorize_fs_does() {
        let t = TempDir::new("basic");
        std::fs::write(t.s("a.txt"), "A").unwrap();
        std::fs::create_dir(t.s("sub")).unwrap();
        std::fs::write(t.s("sub/secret.key"), "S").unwrap();
        symlink(t.s("a.txt"), t.s("link")).unwrap();
        symlink("/etc/passwd", t.s("out")).unwrap();
        let p = policy(json!({ "fs": [format!("{}/**", t.0.display())], "deny": { "fs": [t.s("sub/secret.key")] } }));
        for s in BOTH {
            let f = open_with(&p, &t.s("a.txt"), OpenOptions::new(), s).unwrap();
            assert_eq!(f.path(), t.s("a.txt"));
            assert_eq!(read_all(f), "A");
            // A link inside the grant opens its checked real path.
            let f = open_with(&p, &t.s("link"), OpenOptions::new(), s).unwrap();
            assert_eq!(f.path(), t.s("a.txt"));
            assert_eq!(reason(open_with(&p, &t.s("out"), OpenOptions::new(), s)), Some(DenyReason::SymlinkEscape));
            assert_eq!(
                reason(open_with(&p, &t.s("sub/secret.key"), OpenOptions::new(), s)),
                Some(DenyReason::ExplicitlyDenied)
            );
            assert_eq!(
                reason(open_with(&p, &t.s("sub/../../x"), OpenOptions::new(), s)),
                Some(DenyReason::PathTraversal)
            );
            assert_eq!(
                reason(open_with(&p, &t.s("a.txt"), OpenOptions::new().write(true), s)),
                Some(DenyReason::ModeNotGranted)
            );
            assert!(matches!(
                open_with(&p, &t.s("missing"), OpenOptions::new(), s),
                Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound
            ));
        }
    }

    #[test]
    fn writes_need_write_grants_and_truncate_waits_for_the_verification() {
        let t = TempDir::new("write");
        std::fs::write(t.s("r.txt"), "keep").unwrap();
        std::fs::create_dir(t.s("w")).unwrap();
        std::fs::write(t.s("w/f.txt"), "old").unwrap();
        let p =
            policy(json!({ "fs": [t.s("r.txt"), { "path": format!("{}/w/**", t.0.display()), "mode": "readwrite" }] }));
        for s in BOTH {
            for o in [
                OpenOptions::new().write(true),
                OpenOptions::new().read(false).write(true).create(true),
                OpenOptions::new().read(false).write(true).truncate(true),
            ] {
                assert_eq!(reason(open_with(&p, &t.s("r.txt"), o, s)), Some(DenyReason::ModeNotGranted), "{o:?}");
            }
            assert_eq!(std::fs::read_to_string(t.s("r.txt")).unwrap(), "keep");
            let f =
                open_with(&p, &t.s("w/f.txt"), OpenOptions::new().read(false).write(true).truncate(true), s).unwrap();
            assert_eq!(std::fs::metadata(t.s("w/f.txt")).unwrap().len(), 0);
            std::io::Write::write_all(&mut f.into_file(), b"new").unwrap();
            assert_eq!(std::fs::read_to_string(t.s("w/f.txt")).unwrap(), "new");
            let created = t.s(&format!("w/created-{s:?}"));
            let o = OpenOptions::new().read(false).write(true).create(true).exclusive(true).permissions(0o600);
            open_with(&p, &created, o, s).unwrap();
            assert_eq!(std::fs::metadata(&created).unwrap().mode() & 0o777, 0o600);
            assert!(
                matches!(open_with(&p, &created, o, s), Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::AlreadyExists)
            );
        }
    }

    #[test]
    fn create_never_goes_through_a_dangling_link() {
        let t = TempDir::new("dangling");
        let outside = TempDir::new("dangling-outside");
        std::fs::create_dir(t.s("w")).unwrap();
        symlink(outside.s("planted"), t.s("w/out")).unwrap();
        symlink(t.s("w/target"), t.s("w/in")).unwrap();
        let p = policy(json!({ "fs": [{ "path": format!("{}/w/**", t.0.display()), "mode": "readwrite" }] }));
        let create = OpenOptions::new().read(false).write(true).create(true);
        for s in BOTH {
            assert_eq!(reason(open_with(&p, &t.s("w/out"), create, s)), Some(DenyReason::SymlinkEscape));
            assert!(!Path::new(&outside.s("planted")).exists());
        }
        // A dangling link inside the grant creates its checked target, never through the link.
        let f = open_with(&p, &t.s("w/in"), create, Strategy::Best).unwrap();
        assert_eq!(f.path(), t.s("w/target"));
        assert!(Path::new(&t.s("w/target")).is_file());
    }

    #[test]
    fn a_component_swapped_after_the_check_is_never_followed() {
        // Drive the open below the check directly: the checked real path now
        // has a link where the check saw a directory or a file.
        let t = TempDir::new("swap");
        let outside = TempDir::new("swap-outside");
        std::fs::write(outside.s("secret"), "S").unwrap();
        std::fs::create_dir(t.s("d")).unwrap();
        symlink(outside.s("secret"), t.s("f")).unwrap();
        symlink(&outside.0, t.s("d2")).unwrap();
        symlink("/proc/self/root", t.s("magic")).unwrap();
        let o = OpenOptions::new();
        for s in BOTH {
            for (real, rel) in
                [(t.s("f"), "f"), (t.s("d2/secret"), "d2/secret"), (t.s(&format!("magic{}", outside.s("secret"))), "")]
            {
                let rel = if rel.is_empty() { &real[t.0.as_os_str().len() + 1..] } else { rel };
                let r = open_verified(&real, t.0.to_str().unwrap(), rel, &o, s);
                assert!(matches!(r, Err(Failure::Changed)), "{real} {s:?}");
            }
            // `..` beneath the root is refused (EXDEV, or the walk's own refusal).
            let r = open_verified(&t.s("../x"), t.0.to_str().unwrap(), "../x", &o, s);
            assert!(r.is_err());
        }
    }

    #[test]
    fn a_descriptor_that_is_not_the_checked_path_is_refused() {
        let t = TempDir::new("verify");
        std::fs::write(t.s("a"), "A").unwrap();
        std::fs::write(t.s("b"), "B").unwrap();
        let fd = rustix::fs::open(t.s("a").as_str(), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        for by_path in [false, true] {
            assert!(verify(&fd, &t.s("a"), by_path).is_ok());
            assert!(matches!(verify(&fd, &t.s("b"), by_path), Err(Failure::Changed)));
        }
        // Renamed away after the open: the path no longer names it.
        std::fs::rename(t.s("a"), t.s("c")).unwrap();
        for by_path in [false, true] {
            assert!(matches!(verify(&fd, &t.s("a"), by_path), Err(Failure::Changed)));
        }
        std::fs::remove_file(t.s("c")).unwrap();
        assert!(matches!(verify(&fd, &t.s("c"), true), Err(Failure::Changed)));
    }

    #[test]
    fn invalid_options_are_refused_before_any_check() {
        let p = policy(json!({}));
        for o in [
            OpenOptions::new().read(false),
            OpenOptions::new().create(true),
            OpenOptions::new().truncate(true),
            OpenOptions::new().append(true),
            OpenOptions::new().write(true).exclusive(true),
            OpenOptions::new().write(true).directory(true),
            OpenOptions::new().write(true).create(true).permissions(0o4755),
        ] {
            assert!(matches!(p.open_checked("/x", o), Err(OpenError::InvalidOptions(_))), "{o:?}");
        }
    }

    /// The kernel as the oracle: a thread swaps a file for a symlink to a
    /// secret outside the grant, and a directory for a symlink to the
    /// secret's directory, in a tight loop; no open may yield the secret's
    /// inode.
    #[test]
    fn racing_symlink_swaps_never_open_the_secret() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let t = TempDir::new("race");
        let outside = TempDir::new("race-outside");
        std::fs::write(outside.s("f"), "SECRET").unwrap();
        let secret = std::fs::metadata(outside.s("f")).unwrap();
        std::fs::create_dir(t.s("d")).unwrap();
        std::fs::write(t.s("d/f"), "ok").unwrap();
        std::fs::write(t.s("f"), "ok").unwrap();
        let p = policy(json!({ "fs": [format!("{}/**", t.0.display())] }));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, t, o) = (stop.clone(), t.0.clone(), outside.0.clone());
            std::thread::spawn(move || {
                let (f, d) = (t.join("f"), t.join("d"));
                let (f_tmp, d_away) = (t.join("f.tmp"), t.join("d.away"));
                while !stop.load(Ordering::Relaxed) {
                    // The file: a link out, then a file again, each renamed in place atomically.
                    let _ = symlink(o.join("f"), &f_tmp);
                    let _ = std::fs::rename(&f_tmp, &f);
                    let _ = std::fs::write(&f_tmp, "ok");
                    let _ = std::fs::rename(&f_tmp, &f);
                    // The directory: moved away, a link out in its place, then back.
                    let _ = std::fs::rename(&d, &d_away);
                    let _ = symlink(&o, &d);
                    let _ = std::fs::remove_file(&d);
                    let _ = std::fs::rename(&d_away, &d);
                }
            })
        };
        let (mut opened, mut races) = (0u32, 0u32);
        for i in 0..20_000 {
            let s = BOTH[i % 2];
            for path in [t.s("f"), t.s("d/f")] {
                races += 1;
                if let Ok(f) = open_with(&p, &path, OpenOptions::new(), s) {
                    let st = f.into_file().metadata().unwrap();
                    assert!(!(st.dev() == secret.dev() && st.ino() == secret.ino()), "opened the secret via {path}");
                    opened += 1;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(opened > 0 && opened < races, "the race ran both ways: {opened} of {races} opened");
    }
}
