//! Process tier: `lockdown()` installs a **default-deny** seccomp-bpf
//! allow-list on every thread of the process (`SECCOMP_FILTER_FLAG_TSYNC`),
//! after `PR_SET_NO_NEW_PRIVS`. Only the calls a locked Node child needs run
//! (memory, threads, futexes, signals to itself, clocks, the event loop, and
//! I/O on the descriptors it already holds); every other syscall, including
//! every number newer than this table, fails with `EPERM`, or kills the process
//! with [`OnDenied::Kill`]. The list was measured on Node 20 (x86_64) under
//! `strace -f` and a SIGSYS logger; `docs/process-tier.md` gives each call's reason.
//!
//! A few calls are allowed only with arguments seccomp can see (registers,
//! never memory): `clone` only with the exact flags of `pthread_create`,
//! `futex` only wait/wake, `madvise`, `fcntl`, `ioctl` and `prctl` only
//! a few harmless commands, `getsockopt` only `SO_TYPE`, `kill`/`tgkill`
//! only to this process, `setpriority`/`getpriority` only on itself,
//! `prlimit64` only to read its own limits. `clone3` answers `ENOSYS` (its flags live in
//! memory), so libc falls back to `clone`. A few calls Node makes and
//! tolerates failing (`openat` and friends, `readlink`, `capget`, `sysinfo`)
//! answer `EPERM` even with [`OnDenied::Kill`]. A syscall of a foreign
//! architecture kills the process; x32 numbers are never on the list.
//!
//! Landlock (the manifest's fs grants, fetch ports and scoping) cannot be
//! applied here: on Landlock ABI < 8 it binds only the calling thread and the
//! threads it starts later, and a Node process already runs threads. The
//! `asp-landlock` launcher ([`landlock`]) applies it before `exec`; its report
//! reaches this process in the environment and [`lockdown_with`] returns it.
//!
//! Limits: seccomp cannot read paths or `clone3`'s flags, and it does not stop
//! operations on descriptors opened before the lockdown.

pub mod landlock;

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// What a syscall outside the allow-list does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDenied {
    /// Fails with `EPERM` (the default): escaped code sees an error.
    #[default]
    Eperm,
    /// Kills the whole process (`SECCOMP_RET_KILL_PROCESS`), as Chromium's
    /// baseline and OpenSSH's sandbox do. The tolerated calls
    /// ([`LockdownReport::errno_always`]) still answer an errno.
    Kill,
}

/// How much of the launcher's Landlock ruleset `lockdown` requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LandlockRequirement {
    /// Report whatever the launcher enforced, or that none ran (the default).
    #[default]
    Report,
    /// Refuse (`UnsafeState`, nothing installed) unless the `asp-landlock`
    /// launcher ran and the kernel enforced every rule it asked for.
    Strict,
}

/// Whether the locked process may use the file system itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsAccess {
    /// No: `openat` and every other path call stay denied (the default); the
    /// parent performs every file operation after checking it.
    #[default]
    None,
    /// Yes, inside the launcher's Landlock ruleset: the calls Landlock
    /// mediates ([`landlock_fs_calls`]) join the allow-list, and the kernel's
    /// ruleset is the wall. Refused unless the launcher's ruleset was fully
    /// enforced. Metadata reads Node needs (`stat`, `access`, `readlink`) are
    /// allowed too, and Landlock does not wall them: a path's metadata outside
    /// the ruleset is visible, never its contents. Metadata *changes* by path,
    /// which Landlock does not see (`chmod`, `chown`, `utimensat`, xattrs),
    /// stay denied, and so does every mode change (`fchmod` too; `fs.copyFile`,
    /// which sets the copy's mode, fails with `EPERM`).
    Landlock,
}

/// Options of [`lockdown_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockdownOptions {
    /// What a call outside the allow-list does.
    pub on_denied: OnDenied,
    /// Whether a fully enforced Landlock ruleset is required.
    pub landlock: LandlockRequirement,
    /// Whether the process may open files itself (inside Landlock).
    pub fs: FsAccess,
}

/// What was installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockdownReport {
    /// The architecture the filter was built for (`x86_64`, `aarch64`).
    pub arch: &'static str,
    /// What any other syscall does.
    pub on_denied: OnDenied,
    /// Whether the process may open files itself (inside Landlock).
    pub fs: FsAccess,
    /// Syscalls allowed whatever their arguments.
    pub allowed: Vec<&'static str>,
    /// Syscalls allowed only with these arguments (name, condition); any other
    /// argument is denied like an unlisted call.
    pub conditional: Vec<(&'static str, &'static str)>,
    /// Syscalls that always answer this errno (name, errno name), even with
    /// [`OnDenied::Kill`]: `clone3` (`ENOSYS`) and the calls Node tolerates failing.
    pub errno_always: Vec<(&'static str, &'static str)>,
    /// File descriptors open at lockdown (they stay usable), with what they point at.
    pub open_fds: Vec<(i32, String)>,
    /// What the `asp-landlock` launcher reported the kernel enforced, as JSON
    /// (see [`landlock::LandlockReport::to_json`]); `None` when the process was
    /// not started through it.
    pub landlock: Option<String>,
}

/// Why `lockdown()` refused or failed. It never leaves the process half-locked
/// silently: a refusal happens before anything is installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockdownError {
    /// The platform has no filter (`LOCKDOWN_REFUSED`, or `ERR_UNSUPPORTED_PLATFORM` in JS).
    #[error("lockdown is not supported on {0}")]
    Unsupported(&'static str),
    /// The process is in a state a filter would not make safe, e.g. an open
    /// io_uring, or a strict Landlock requirement the launcher did not meet
    /// (`LOCKDOWN_REFUSED`); nothing was installed.
    #[error("refusing to lock down: {0}")]
    UnsafeState(String),
    /// The kernel refused the filter (`LOCKDOWN_FAILED`).
    #[error("seccomp filter could not be installed: {0}")]
    Install(String),
}

/// How one allowed call's arguments are checked. Every comparison is on the
/// width the kernel reads (`Dword` for C `int`s, `Qword` for `unsigned long`).
#[derive(Debug, Clone, Copy)]
enum Check {
    /// Any arguments.
    Any,
    /// Argument `arg` (64-bit) is one of these values.
    Qword { arg: u8, any_of: &'static [u64] },
    /// Argument `arg` (32-bit) is one of these values.
    Dword { arg: u8, any_of: &'static [u32] },
    /// `(arg & mask)` (32-bit) is one of these values.
    Masked { arg: u8, mask: u32, any_of: &'static [u32] },
    /// Argument `arg` (a pid, 32-bit) is this process's pid.
    Pid { arg: u8 },
    /// Two 32-bit arguments with these exact values.
    Both { a: (u8, u32), b: (u8, u32) },
    /// `(which, who)`: `which == PRIO_PROCESS` and `who` is this process or `0`.
    PrioSelf,
    /// `prlimit64(pid, resource, new, old)`: `pid` is this process or `0`, and `new` is NULL.
    PrlimitRead,
}

/// One allowed syscall: its name, number, argument check and why it is there
/// (the reason is the docs' table; keep them in step).
type Allowed = (&'static str, i64, Check, &'static str);

/// A call answering a fixed errno: name, number, errno, errno name.
type Fixed = (&'static str, i64, i32, &'static str);

// glibc's pthread_create: CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID.
const CLONE_PTHREAD_GLIBC: u64 = 0x003d_0f00;
// musl's adds CLONE_DETACHED.
const CLONE_PTHREAD_MUSL: u64 = 0x007d_0f00;

macro_rules! nr {
    ($name:ident) => {
        libc::$name as i64
    };
}

/// The allow-list for this architecture.
fn allow_list() -> &'static [Allowed] {
    use Check::*;
    static LIST: std::sync::OnceLock<Vec<Allowed>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // x86_64 adds its legacy calls
        let mut v: Vec<Allowed> = vec![
            // Memory: the allocator, V8's heap and GC, JIT and WebAssembly code space.
            ("brk", nr!(SYS_brk), Any, "glibc malloc's main arena"),
            ("mmap", nr!(SYS_mmap), Any, "V8 heap pages, malloc arenas, thread stacks"),
            ("munmap", nr!(SYS_munmap), Any, "GC releases pages"),
            ("mremap", nr!(SYS_mremap), Any, "glibc realloc of large blocks"),
            ("mprotect", nr!(SYS_mprotect), Any, "V8 JIT and wasm code (RX and RWX), guard pages"),
            ("pkey_mprotect", nr!(SYS_pkey_mprotect), Any, "V8 write-protects JIT code with a protection key (PKU)"),
            (
                "madvise",
                nr!(SYS_madvise),
                Dword { arg: 2, any_of: &[0, 3, 4, 8, 10, 16] },
                "GC and malloc give pages back: NORMAL, WILLNEED, DONTNEED, FREE, DONTFORK, DONTDUMP",
            ),
            // Threads: the libuv pool, V8 platform workers, Workers.
            (
                "clone",
                nr!(SYS_clone),
                Qword { arg: 0, any_of: &[CLONE_PTHREAD_GLIBC, CLONE_PTHREAD_MUSL] },
                "pthread_create's exact flags (a thread, never a process)",
            ),
            (
                "futex",
                nr!(SYS_futex),
                // Without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256): WAIT, WAKE, WAIT_BITSET, WAKE_BITSET.
                Masked { arg: 1, mask: !0x180, any_of: &[0, 1, 9, 10] },
                "locks and condition variables: wait and wake only (no requeue, no PI)",
            ),
            ("set_robust_list", nr!(SYS_set_robust_list), Any, "a new thread registers its robust futex list"),
            ("rseq", nr!(SYS_rseq), Any, "glibc registers restartable sequences in a new thread"),
            ("gettid", nr!(SYS_gettid), Any, "thread ids (V8, libuv)"),
            ("sched_yield", nr!(SYS_sched_yield), Any, "V8 spin locks (never seen under strace; a SIGSYS logger saw it)"),
            ("exit", nr!(SYS_exit), Any, "a thread ends"),
            ("exit_group", nr!(SYS_exit_group), Any, "the process ends"),
            ("membarrier", nr!(SYS_membarrier), Any, "V8 flushes instruction caches across threads after patching code"),
            // Signals, to itself only.
            ("rt_sigprocmask", nr!(SYS_rt_sigprocmask), Any, "threads block signals"),
            ("rt_sigaction", nr!(SYS_rt_sigaction), Any, "handlers (process.on('SIGTERM'), V8's trap handler)"),
            ("rt_sigreturn", nr!(SYS_rt_sigreturn), Any, "return from a handler (the wasm out-of-bounds trap)"),
            ("sigaltstack", nr!(SYS_sigaltstack), Any, "a thread's signal stack"),
            ("restart_syscall", nr!(SYS_restart_syscall), Any, "the kernel restarts an interrupted sleep"),
            ("kill", nr!(SYS_kill), Pid { arg: 0 }, "process.kill(process.pid, sig): this process only"),
            ("tgkill", nr!(SYS_tgkill), Pid { arg: 0 }, "signals to a thread of this process only"),
            // Clocks and sleeping (usually the vDSO).
            ("clock_gettime", nr!(SYS_clock_gettime), Any, "Date.now, performance.now, timers (without a vDSO)"),
            ("clock_getres", nr!(SYS_clock_getres), Any, "timer resolution"),
            ("gettimeofday", nr!(SYS_gettimeofday), Any, "the clock (without a vDSO)"),
            ("nanosleep", nr!(SYS_nanosleep), Any, "sleeps"),
            ("clock_nanosleep", nr!(SYS_clock_nanosleep), Any, "sleeps"),
            ("getrandom", nr!(SYS_getrandom), Any, "OpenSSL reseeds, crypto.randomUUID, Math.random's seed"),
            // The event loop and I/O on the descriptors the process already holds.
            ("epoll_create1", nr!(SYS_epoll_create1), Any, "a Worker's event loop"),
            ("epoll_ctl", nr!(SYS_epoll_ctl), Any, "watch a descriptor"),
            ("epoll_pwait", nr!(SYS_epoll_pwait), Any, "the event loop waits"),
            ("epoll_pwait2", nr!(SYS_epoll_pwait2), Any, "the event loop waits (newer libuv)"),
            ("eventfd2", nr!(SYS_eventfd2), Any, "a Worker's loop wake-up"),
            ("pipe2", nr!(SYS_pipe2), Any, "a Worker's loop signal pipe"),
            ("read", nr!(SYS_read), Any, "IPC and held descriptors"),
            ("write", nr!(SYS_write), Any, "IPC, stdout/stderr"),
            ("readv", nr!(SYS_readv), Any, "IPC"),
            ("writev", nr!(SYS_writev), Any, "IPC (libuv writes a message in pieces)"),
            ("recvmsg", nr!(SYS_recvmsg), Any, "Node's IPC channel reads with recvmsg"),
            (
                "getsockname",
                nr!(SYS_getsockname),
                Any,
                "libuv's uv_guess_handle on a socket it holds (process.stderr when fork's stdio is a socketpair)",
            ),
            (
                "getsockopt",
                nr!(SYS_getsockopt),
                Both { a: (1, 1), b: (2, 3) },
                "SOL_SOCKET/SO_TYPE only (uv_guess_handle); never SO_PEERCRED or SO_PEERPIDFD",
            ),
            ("close", nr!(SYS_close), Any, "descriptors it holds"),
            ("fstat", nr!(SYS_fstat), Any, "a held descriptor (exit path)"),
            (
                "fcntl",
                nr!(SYS_fcntl),
                Dword { arg: 1, any_of: &[1, 2, 3, 4] },
                "F_GETFD, F_SETFD, F_GETFL, F_SETFL: close-on-exec and non-blocking flags only",
            ),
            (
                "ioctl",
                nr!(SYS_ioctl),
                Dword { arg: 1, any_of: &[0x5421, 0x5451, 0x5450, 0x541B, 0x5401] },
                "FIONBIO, FIOCLEX, FIONCLEX, FIONREAD, TCGETS (isatty): no owner, terminal input or group",
            ),
            ("prctl", nr!(SYS_prctl), Dword { arg: 0, any_of: &[15, 16] }, "PR_SET_NAME, PR_GET_NAME: thread names"),
            // Its own identity and state.
            ("getpid", nr!(SYS_getpid), Any, "process.pid"),
            ("getppid", nr!(SYS_getppid), Any, "process.ppid"),
            ("getuid", nr!(SYS_getuid), Any, "ids (a Worker's start-up)"),
            ("geteuid", nr!(SYS_geteuid), Any, "ids"),
            ("getgid", nr!(SYS_getgid), Any, "ids"),
            ("getegid", nr!(SYS_getegid), Any, "ids"),
            ("getcwd", nr!(SYS_getcwd), Any, "a Worker's start-up dies on uv_cwd EPERM"),
            ("uname", nr!(SYS_uname), Any, "os.release, V8's CPU feature probe"),
            ("getrusage", nr!(SYS_getrusage), Dword { arg: 0, any_of: &[0, 1] }, "process.resourceUsage: RUSAGE_SELF, RUSAGE_THREAD"),
            ("getpriority", nr!(SYS_getpriority), PrioSelf, "os.getPriority() of itself"),
            ("setpriority", nr!(SYS_setpriority), PrioSelf, "os.setPriority() of itself"),
            (
                "sched_getaffinity",
                nr!(SYS_sched_getaffinity),
                Any,
                "pthread_getattr_np reads a thread's CPU mask by tid (V8 and Rust find their stacks so); os.availableParallelism. Information only",
            ),
            ("prlimit64", nr!(SYS_prlimit64), PrlimitRead, "reading its own limits (stack size)"),
        ];
        #[cfg(target_arch = "x86_64")]
        v.extend_from_slice(&[
            ("epoll_wait", nr!(SYS_epoll_wait), Any, "the event loop waits (older libuv)"),
            ("time", nr!(SYS_time), Any, "the clock (without a vDSO)"),
        ]);
        v
    })
}

/// The file-system calls allowed with [`FsAccess::Landlock`]: the ones
/// Landlock mediates (opening, making, removing, renaming, linking), the ones
/// on descriptors it let the process open (reading, writing, listing,
/// copying), and the metadata reads Node needs (`stat`, `access`, `readlink`).
/// No mode change at all (`fchmod` included: Landlock has no right for it, so
/// a descriptor opened to read would change a read-only file's mode), and no
/// setuid, setgid or sticky bit on what it creates.
fn landlock_fs_list() -> &'static [Allowed] {
    use Check::{Any, Masked};
    static LIST: std::sync::OnceLock<Vec<Allowed>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // x86_64 adds its legacy calls
        let mut v: Vec<Allowed> = vec![
            (
                "openat",
                nr!(SYS_openat),
                Masked { arg: 3, mask: 0o7000, any_of: &[0] },
                "open (Landlock: read_file, write_file, read_dir, truncate, make_reg); a created file's mode without setuid, setgid or sticky bits",
            ),
            ("getdents64", nr!(SYS_getdents64), Any, "list an opened directory"),
            ("lseek", nr!(SYS_lseek), Any, "seek in an opened file"),
            ("pread64", nr!(SYS_pread64), Any, "read an opened file at an offset"),
            ("pwrite64", nr!(SYS_pwrite64), Any, "write an opened file at an offset"),
            ("fsync", nr!(SYS_fsync), Any, "flush an opened file"),
            ("fdatasync", nr!(SYS_fdatasync), Any, "flush an opened file"),
            ("copy_file_range", nr!(SYS_copy_file_range), Any, "copy between files it opened"),
            ("sendfile", nr!(SYS_sendfile), Any, "copy between files it opened (the fallback)"),
            ("ftruncate", nr!(SYS_ftruncate), Any, "truncate an opened file (Landlock: truncate, ABI 3)"),
            ("mkdirat", nr!(SYS_mkdirat), Masked { arg: 2, mask: 0o7000, any_of: &[0] }, "Landlock: make_dir; the mode without setuid, setgid or sticky bits"),
            ("unlinkat", nr!(SYS_unlinkat), Any, "Landlock: remove_file, remove_dir"),
            ("renameat", nr!(SYS_renameat), Any, "Landlock: refer, make_*, remove_*"),
            ("renameat2", nr!(SYS_renameat2), Any, "Landlock: refer, make_*, remove_*"),
            ("symlinkat", nr!(SYS_symlinkat), Any, "Landlock: make_sym"),
            ("linkat", nr!(SYS_linkat), Any, "Landlock: refer, make_*"),
            // Metadata: not Landlock's (ABI <= 7). Node needs them to list a
            // directory (glibc's opendir fstat's via newfstatat), stat, exists and
            // realpath; they show a path's metadata and a link's target, never contents.
            (
                "newfstatat",
                nr!(SYS_newfstatat),
                Any,
                "stat, and glibc's fstat of an opened directory (metadata, not walled)",
            ),
            ("statx", nr!(SYS_statx), Any, "libuv's stat (metadata, not walled)"),
            ("readlinkat", nr!(SYS_readlinkat), Any, "fs.realpath (a link's target, not walled)"),
            ("faccessat", nr!(SYS_faccessat), Any, "fs.existsSync, fs.access (not walled)"),
            ("faccessat2", nr!(SYS_faccessat2), Any, "fs.access (not walled)"),
        ];
        #[cfg(target_arch = "x86_64")]
        v.extend_from_slice(&[
            ("open", nr!(SYS_open), Masked { arg: 2, mask: 0o7000, any_of: &[0] }, "open (legacy x86_64 number); the mode as openat's"),
            ("mkdir", nr!(SYS_mkdir), Masked { arg: 1, mask: 0o7000, any_of: &[0] }, "glibc's mkdir on x86_64; the mode as mkdirat's"),
            ("rmdir", nr!(SYS_rmdir), Any, "glibc's rmdir on x86_64"),
            ("unlink", nr!(SYS_unlink), Any, "glibc's unlink on x86_64"),
            ("rename", nr!(SYS_rename), Any, "glibc's rename on x86_64"),
            ("symlink", nr!(SYS_symlink), Any, "glibc's symlink on x86_64"),
            ("link", nr!(SYS_link), Any, "glibc's link on x86_64"),
            ("stat", nr!(SYS_stat), Any, "glibc's stat on x86_64 (metadata, not walled)"),
            ("lstat", nr!(SYS_lstat), Any, "glibc's lstat on x86_64 (metadata, not walled)"),
            ("readlink", nr!(SYS_readlink), Any, "glibc's readlink on x86_64 (not walled)"),
            ("access", nr!(SYS_access), Any, "glibc's access on x86_64 (not walled)"),
        ]);
        v
    })
}

/// The names of the calls [`FsAccess::Landlock`] adds, with why.
pub fn landlock_fs_calls() -> Vec<(&'static str, &'static str)> {
    landlock_fs_list().iter().map(|a| (a.0, a.3)).collect()
}

/// The allow-list in force for `fs`, and the fixed-errno calls left.
fn lists(fs: FsAccess) -> (Vec<Allowed>, Vec<Fixed>) {
    let mut allow = allow_list().to_vec();
    if fs == FsAccess::Landlock {
        allow.extend_from_slice(landlock_fs_list());
    }
    let errno = errno_always().iter().filter(|e| !allow.iter().any(|a| a.1 == e.1)).copied().collect();
    (allow, errno)
}

/// Calls that always answer an errno (name, number, errno, errno name): on the
/// allow-list's pass-through so an earlier filter answers them even when the
/// default kills. Node makes them and tolerates a failure.
fn errno_always() -> &'static [Fixed] {
    static LIST: std::sync::OnceLock<Vec<Fixed>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // x86_64 adds its legacy calls
        let mut v = vec![
            ("clone3", nr!(SYS_clone3), libc::ENOSYS, "ENOSYS"),
            ("openat", nr!(SYS_openat), libc::EPERM, "EPERM"),
            ("readlinkat", nr!(SYS_readlinkat), libc::EPERM, "EPERM"),
            ("newfstatat", nr!(SYS_newfstatat), libc::EPERM, "EPERM"),
            ("statx", nr!(SYS_statx), libc::EPERM, "EPERM"),
            ("capget", nr!(SYS_capget), libc::EPERM, "EPERM"),
            ("sysinfo", nr!(SYS_sysinfo), libc::EPERM, "EPERM"),
        ];
        #[cfg(target_arch = "x86_64")]
        v.extend_from_slice(&[
            ("open", nr!(SYS_open), libc::EPERM, "EPERM"),
            ("readlink", nr!(SYS_readlink), libc::EPERM, "EPERM"),
            ("stat", nr!(SYS_stat), libc::EPERM, "EPERM"),
            ("lstat", nr!(SYS_lstat), libc::EPERM, "EPERM"),
        ]);
        v
    })
}

fn install_err(e: impl std::fmt::Display) -> LockdownError {
    LockdownError::Install(e.to_string())
}

fn cond(arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, v: u64) -> Result<SeccompCondition, LockdownError> {
    SeccompCondition::new(arg, len, op, v).map_err(install_err)
}

fn rule(c: Vec<SeccompCondition>) -> Result<SeccompRule, LockdownError> {
    SeccompRule::new(c).map_err(install_err)
}

/// The rules under which an allowed call matches (any rule: allowed). An empty
/// vector allows every argument. Pids are C `int`s, compared as 32-bit values.
fn allow_rules(check: Check, pid: u32) -> Result<Vec<SeccompRule>, LockdownError> {
    use SeccompCmpArgLen::{Dword as D, Qword as Q};
    use SeccompCmpOp::{Eq, MaskedEq};
    Ok(match check {
        Check::Any => vec![],
        Check::Qword { arg, any_of } => {
            any_of.iter().map(|&v| rule(vec![cond(arg, Q, Eq, v)?])).collect::<Result<_, _>>()?
        }
        Check::Dword { arg, any_of } => {
            any_of.iter().map(|&v| rule(vec![cond(arg, D, Eq, u64::from(v))?])).collect::<Result<_, _>>()?
        }
        Check::Masked { arg, mask, any_of } => any_of
            .iter()
            .map(|&v| rule(vec![cond(arg, D, MaskedEq(u64::from(mask)), u64::from(v))?]))
            .collect::<Result<_, _>>()?,
        Check::Pid { arg } => vec![rule(vec![cond(arg, D, Eq, u64::from(pid))?])?],
        Check::Both { a, b } => {
            vec![rule(vec![cond(a.0, D, Eq, u64::from(a.1))?, cond(b.0, D, Eq, u64::from(b.1))?])?]
        }
        Check::PrioSelf => vec![
            rule(vec![cond(0, D, Eq, 0)?, cond(1, D, Eq, u64::from(pid))?])?,
            rule(vec![cond(0, D, Eq, 0)?, cond(1, D, Eq, 0)?])?,
        ],
        Check::PrlimitRead => vec![
            rule(vec![cond(0, D, Eq, u64::from(pid))?, cond(2, Q, Eq, 0)?])?,
            rule(vec![cond(0, D, Eq, 0)?, cond(2, Q, Eq, 0)?])?,
        ],
    })
}

fn describe(check: Check) -> &'static str {
    match check {
        Check::Any => "any",
        Check::Qword { .. } | Check::Dword { .. } | Check::Masked { .. } => "listed values only",
        Check::Pid { .. } => "this process's pid only",
        Check::Both { .. } => "listed values only",
        Check::PrioSelf => "PRIO_PROCESS of this process only",
        Check::PrlimitRead => "read this process's limits only (new limit NULL)",
    }
}

fn open_fds() -> Vec<(i32, String)> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for e in dir.flatten() {
            if let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) {
                let target = std::fs::read_link(e.path()).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
                out.push((fd, target));
            }
        }
    }
    out.sort();
    out
}

fn compile(filter: SeccompFilter) -> Result<BpfProgram, LockdownError> {
    filter.try_into().map_err(|e: seccompiler::BackendError| install_err(e))
}

/// Builds the BPF programs for this architecture, in installation order: the
/// fixed-errno filter (`clone3` → `ENOSYS`, the tolerated calls → `EPERM`),
/// then the allow-list. `pid` is this process's id: the only target the
/// self-only calls accept. The allow-list must be installed last: it denies
/// `seccomp` and `prctl(PR_SET_SECCOMP)` themselves.
pub(crate) fn filters(pid: u32, on_denied: OnDenied, fs: FsAccess) -> Result<Vec<BpfProgram>, LockdownError> {
    let (allow_list, errno_always) = lists(fs);
    #[cfg(target_arch = "x86_64")]
    let arch = TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = TargetArch::aarch64;
    let mut allow: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &(_, nr, check, _) in &allow_list {
        allow.insert(nr, allow_rules(check, pid)?);
    }
    // Allowed here so the earlier errno filter answers them: the kernel runs
    // every filter and the strictest action wins (ERRNO over ALLOW), while the
    // default here would win over it with the kill action.
    for &(_, nr, _, _) in &errno_always {
        allow.insert(nr, vec![]);
    }
    let default = match on_denied {
        OnDenied::Eperm => SeccompAction::Errno(libc::EPERM as u32),
        OnDenied::Kill => SeccompAction::KillProcess,
    };
    let allow = compile(SeccompFilter::new(allow, default, SeccompAction::Allow, arch).map_err(install_err)?)?;
    // One filter per errno value (seccompiler gives a filter one match action);
    // no call is in two of them.
    let mut fixed: BTreeMap<i32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
    for &(_, nr, errno, _) in &errno_always {
        fixed.entry(errno).or_default().insert(nr, vec![]);
    }
    let mut progs = fixed
        .into_iter()
        .map(|(errno, rules)| {
            compile(
                SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch)
                    .map_err(install_err)?,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    progs.push(allow);
    Ok(progs)
}

/// The Landlock report the `asp-landlock` launcher left in the environment,
/// checked against `requirement` before anything is installed.
fn landlock_report(requirement: LandlockRequirement) -> Result<Option<String>, LockdownError> {
    let report = std::env::var(landlock::REPORT_ENV).ok();
    if requirement == LandlockRequirement::Strict {
        let full = report.as_deref().is_some_and(landlock::report_fully_enforced);
        if !full {
            return Err(LockdownError::UnsafeState(match &report {
                None => "strict Landlock asked for, but the process was not started through asp-landlock".into(),
                Some(r) => format!("strict Landlock asked for, but the kernel did not enforce every rule: {r}"),
            }));
        }
    }
    // A report the kernel does not bear out is no report (an environment
    // variable anyone starting the process could set): refused under strict,
    // `landlock` null otherwise. Asked once: the check signals and opens.
    match report.as_deref().and_then(kernel_disagrees) {
        Some(why) if requirement == LandlockRequirement::Strict => Err(LockdownError::UnsafeState(format!(
            "strict Landlock asked for and the report says enforced, but {why}: this process is not in that Landlock domain"
        ))),
        Some(_) => Ok(None),
        None => Ok(report),
    }
}

/// Why the kernel disagrees with a report that says the ruleset is in force
/// (`None`: it agrees). The report is an environment variable; two things
/// only a Landlock domain like the launcher's does are checked: a domain
/// with the signal scope (ABI 6) cannot signal its parent, which the
/// launcher left outside it (signal 0 only checks permission); and, unless a
/// rule is at `/` itself, the root directory cannot be listed (a parent of
/// another uid refuses signals too, and a domain with scopes but no fs
/// rules lists `/`).
fn kernel_disagrees(report: &str) -> Option<&'static str> {
    if !landlock::report_fully_enforced(report) {
        return None;
    }
    // SAFETY: kill with signal 0 sends nothing; getppid takes no argument.
    let rc = unsafe { libc::kill(libc::getppid(), 0) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    if rc == 0 || errno != Some(libc::EPERM) {
        return Some("this process can signal its parent");
    }
    if !landlock::report_has_root_rule(report) {
        // SAFETY: a NUL-terminated literal; the descriptor, if any, is closed at once.
        let fd = unsafe { libc::open(c"/".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd >= 0 {
            // SAFETY: `fd` was just opened by this function.
            unsafe { libc::close(fd) };
            return Some("this process can list `/`, which no rule grants");
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EACCES) {
            return Some("listing `/` did not fail with EACCES");
        }
    }
    None
}

/// [`lockdown_with`] with the default options (`EPERM`, Landlock reported).
pub fn lockdown() -> Result<LockdownReport, LockdownError> {
    lockdown_with(LockdownOptions::default())
}

/// Checks the process state, then installs the filters on every thread.
///
/// Refuses (before installing anything) when an io_uring instance is open
/// (io_uring operations bypass seccomp), when `UV_USE_IO_URING` is not `0`
/// (libuv could create one later), or when `options.landlock` is strict (or
/// `options.fs` is [`FsAccess::Landlock`]) and the launcher's ruleset is
/// missing or was not fully enforced. Fails closed
/// when seccomp, TSYNC or no-new-privs is unavailable.
pub fn lockdown_with(options: LockdownOptions) -> Result<LockdownReport, LockdownError> {
    let fds = open_fds();
    if fds.iter().any(|(_, t)| t.contains("io_uring")) {
        return Err(LockdownError::UnsafeState(
            "an io_uring instance is open; start the process with UV_USE_IO_URING=0".into(),
        ));
    }
    if std::env::var("UV_USE_IO_URING").as_deref() != Ok("0") {
        return Err(LockdownError::UnsafeState(
            "UV_USE_IO_URING is not 0: libuv may use io_uring, which seccomp cannot filter; start the process with UV_USE_IO_URING=0".into(),
        ));
    }
    let strict = if options.fs == FsAccess::Landlock { LandlockRequirement::Strict } else { options.landlock };
    let landlock = landlock_report(strict)?;
    // This process, as its pid namespace (the one its syscalls read pids in) numbers it.
    let progs = filters(std::process::id(), options.on_denied, options.fs)?;
    let (allow_list, errno_always) = lists(options.fs);
    // In order: the allow-list last (it denies `seccomp` itself).
    for prog in &progs {
        seccompiler::apply_filter_all_threads(prog).map_err(install_err)?;
    }
    Ok(LockdownReport {
        arch: if cfg!(target_arch = "x86_64") { "x86_64" } else { "aarch64" },
        on_denied: options.on_denied,
        fs: options.fs,
        allowed: allow_list.iter().filter(|a| matches!(a.2, Check::Any)).map(|a| a.0).collect(),
        conditional: allow_list.iter().filter(|a| !matches!(a.2, Check::Any)).map(|a| (a.0, describe(a.2))).collect(),
        errno_always: errno_always.iter().map(|e| (e.0, e.3)).collect(),
        open_fds: fds,
        landlock,
    })
}

/// The allow-list's names and reasons (for the docs' table and tests).
pub fn allow_list_reasons() -> Vec<(&'static str, &'static str)> {
    allow_list().iter().map(|a| (a.0, a.3)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_this_arch() {
        for mode in [OnDenied::Eperm, OnDenied::Kill] {
            let progs = filters(std::process::id(), mode, FsAccess::None).unwrap();
            assert_eq!(progs.len(), 3);
            // With fs, openat leaves the EPERM filter (clone3's ENOSYS stays).
            assert_eq!(filters(std::process::id(), mode, FsAccess::Landlock).unwrap().len(), 3);
            let allow = progs.last().unwrap();
            assert!(allow.len() > 60 && allow.len() < 1024, "{}", allow.len());
        }
    }

    #[test]
    fn no_call_is_both_allowed_and_errno() {
        let allowed: std::collections::BTreeSet<i64> = allow_list().iter().map(|a| a.1).collect();
        assert_eq!(allowed.len(), allow_list().len(), "a call listed twice");
        for e in errno_always() {
            assert!(!allowed.contains(&e.1), "{}", e.0);
        }
        let (with_fs, errno) = lists(FsAccess::Landlock);
        let nrs: std::collections::BTreeSet<i64> = with_fs.iter().map(|a| a.1).collect();
        assert_eq!(nrs.len(), with_fs.len(), "a call listed twice with fs");
        assert!(errno.iter().all(|e| !nrs.contains(&e.1)));
        assert!(errno.iter().any(|e| e.0 == "clone3") && !errno.iter().any(|e| e.0 == "openat"));
    }
}
