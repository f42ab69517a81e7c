//! Process tier: `lockdown()` installs a default-allow, deny-listed seccomp-bpf
//! filter on every thread of the process (`SECCOMP_FILTER_FLAG_TSYNC`), after
//! `PR_SET_NO_NEW_PRIVS`, so code that escapes the `vm.Context` still cannot
//! open files, create sockets, start processes, trace, mount, load BPF, use
//! io_uring or enter namespaces, nor reach another process or the file tree
//! (signals, scheduling, priorities, limits, pages of another pid; file times,
//! extended attributes, watches; System V and POSIX IPC objects; the clock,
//! host name and kernel log). Already-open file descriptors (the IPC channel)
//! keep working: reads, writes, `sendmsg`/`recvmsg` are allowed.
//!
//! Calls that take a target pid and that a locked Node may still make on
//! itself (`kill`, `tgkill`, `setpriority`, `sched_setaffinity`,
//! `prlimit64`, ...) are allowed only when the target is this process: the pid
//! captured at lockdown, or `0` where the kernel reads `0` as the caller
//! itself. Every other target, a process group and `-1` (every process) is
//! `EPERM`.
//!
//! Denied calls fail with `EPERM` (`clone3` with `ENOSYS`, so glibc falls back
//! to `clone`, whose flags the filter *can* inspect: `clone` without
//! `CLONE_THREAD` is denied, thread creation is not). A syscall from a foreign
//! architecture kills the process; x32 syscall numbers are denied.
//!
//! Limits: seccomp sees syscall numbers and register arguments, never memory
//! (it cannot read `clone3`'s flags or a path), and it does not stop
//! operations on descriptors opened before the lockdown.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// What was installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockdownReport {
    /// The architecture the filter was built for (`x86_64`, `aarch64`).
    pub arch: &'static str,
    /// Names of the denied syscalls (native numbering).
    pub denied: Vec<&'static str>,
    /// Names of the syscalls allowed only with this process as their target
    /// (its pid, or `0` where the kernel reads `0` as the caller); `EPERM`
    /// for any other pid, a process group or every process.
    pub self_only: Vec<&'static str>,
    /// `fcntl` and `ioctl` commands denied whatever their descriptor
    /// (`F_SETOWN`, `TIOCSTI`, ...): the ones that make the kernel signal, block
    /// or feed input to another process (an fd's owner, leases, dnotify, a
    /// terminal's foreground group and input queue).
    pub denied_commands: Vec<&'static str>,
    /// File descriptors open at lockdown (they stay usable), with what they point at.
    pub open_fds: Vec<(i32, String)>,
}

/// Why `lockdown()` refused or failed. It never leaves the process half-locked
/// silently: a refusal happens before anything is installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockdownError {
    /// The platform has no filter (`LOCKDOWN_REFUSED`, or `ERR_UNSUPPORTED_PLATFORM` in JS).
    #[error("lockdown is not supported on {0}")]
    Unsupported(&'static str),
    /// The process is in a state a filter would not make safe, e.g. other
    /// threads it cannot synchronise (`LOCKDOWN_REFUSED`); nothing was installed.
    #[error("refusing to lock down: {0}")]
    UnsafeState(String),
    /// The kernel refused the filter (`LOCKDOWN_FAILED`).
    #[error("seccomp filter could not be installed: {0}")]
    Install(String),
}

macro_rules! syscalls {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), libc::$name as i64)),*]
    };
}

/// The denied syscalls present on this architecture: the ones both
/// architectures have, plus the legacy x86_64 ones aarch64 never had.
fn denied() -> &'static [(&'static str, i64)] {
    static DENIED: std::sync::OnceLock<Vec<(&'static str, i64)>> = std::sync::OnceLock::new();
    DENIED.get_or_init(|| {
        let common: &[(&'static str, i64)] = syscalls![
            SYS_openat,
            SYS_openat2,
            SYS_open_by_handle_at,
            SYS_name_to_handle_at,
            SYS_mknodat,
            SYS_linkat,
            SYS_symlinkat,
            SYS_unlinkat,
            SYS_renameat,
            SYS_renameat2,
            SYS_mkdirat,
            SYS_truncate,
            SYS_fchmodat,
            SYS_fchownat,
            SYS_execve,
            SYS_execveat,
            SYS_socket,
            SYS_socketpair,
            SYS_connect,
            SYS_bind,
            SYS_listen,
            SYS_accept,
            SYS_accept4,
            SYS_ptrace,
            SYS_process_vm_readv,
            SYS_process_vm_writev,
            SYS_mount,
            SYS_umount2,
            SYS_pivot_root,
            SYS_chroot,
            SYS_unshare,
            SYS_setns,
            SYS_bpf,
            SYS_io_uring_setup,
            SYS_io_uring_enter,
            SYS_io_uring_register,
            SYS_perf_event_open,
            SYS_keyctl,
            SYS_add_key,
            SYS_request_key,
            SYS_init_module,
            SYS_finit_module,
            SYS_delete_module,
            SYS_kexec_load,
            SYS_kexec_file_load,
            SYS_reboot,
            SYS_swapon,
            SYS_swapoff,
            SYS_acct,
            SYS_userfaultfd,
            SYS_fsopen,
            SYS_fsmount,
            SYS_move_mount,
            SYS_open_tree,
            SYS_pidfd_open,
            SYS_pidfd_getfd,
            // Reaching another process: a pidfd's signal, its memory advice,
            // comparing its kernel objects, its robust futex list.
            SYS_pidfd_send_signal,
            SYS_process_madvise,
            SYS_process_mrelease,
            SYS_kcmp,
            SYS_get_robust_list,
            // Reaching the tree: file times, extended attributes, watches,
            // quotas, and the mount API's remaining entry points.
            SYS_utimensat,
            SYS_setxattr,
            SYS_lsetxattr,
            SYS_removexattr,
            SYS_lremovexattr,
            SYS_fsetxattr,
            SYS_fremovexattr,
            SYS_inotify_init1,
            SYS_inotify_add_watch,
            SYS_fanotify_init,
            SYS_fanotify_mark,
            SYS_quotactl,
            SYS_quotactl_fd,
            SYS_fsconfig,
            SYS_fspick,
            SYS_mount_setattr,
            // System V and POSIX IPC objects are shared with other processes.
            SYS_shmget,
            SYS_shmat,
            SYS_shmctl,
            SYS_msgget,
            SYS_msgsnd,
            SYS_msgrcv,
            SYS_msgctl,
            SYS_semget,
            SYS_semop,
            SYS_semtimedop,
            SYS_semctl,
            SYS_mq_open,
            SYS_mq_unlink,
            SYS_mq_timedsend,
            SYS_mq_timedreceive,
            SYS_mq_notify,
            SYS_mq_getsetattr,
            // Machine-wide state (as root, the host's).
            SYS_settimeofday,
            SYS_clock_settime,
            SYS_clock_adjtime,
            SYS_adjtimex,
            SYS_sethostname,
            SYS_setdomainname,
            SYS_syslog,
            SYS_vhangup,
            SYS_lookup_dcookie
        ];
        // Newer than the libc crate's tables; the same number on x86_64 and
        // aarch64 (the generic table from 424 on).
        let recent: &[(&'static str, i64)] =
            &[("SYS_fchmodat2", 452), ("SYS_setxattrat", 463), ("SYS_removexattrat", 466), ("SYS_open_tree_attr", 467)];
        #[cfg(target_arch = "x86_64")]
        let legacy: &[(&'static str, i64)] = syscalls![
            SYS_open,
            SYS_creat,
            SYS_mknod,
            SYS_link,
            SYS_symlink,
            SYS_unlink,
            SYS_rename,
            SYS_mkdir,
            SYS_rmdir,
            SYS_chmod,
            SYS_chown,
            SYS_lchown,
            SYS_fork,
            SYS_vfork,
            SYS_utime,
            SYS_utimes,
            SYS_futimesat,
            SYS_inotify_init,
            SYS_uselib,
            SYS_iopl,
            SYS_ioperm
        ];
        #[cfg(target_arch = "aarch64")]
        let legacy: &[(&'static str, i64)] = &[];
        common.iter().chain(recent).chain(legacy).copied().collect()
    })
}

/// How a call that names a target process is limited to this process.
#[derive(Debug, Clone, Copy)]
enum SelfOnly {
    /// Argument `arg` is a pid that must be this process's pid (`kill`,
    /// `tgkill`, `rt_sigqueueinfo`, `rt_tgsigqueueinfo`, `tkill`): `0` and
    /// negative values name process groups or every process.
    Pid { arg: u8 },
    /// Argument `arg` is a pid (or tid) where `0` means the caller (`sched_*`,
    /// `prlimit64`, `migrate_pages`, `move_pages`).
    PidOrZero { arg: u8 },
    /// `(which, who)` of `setpriority` / `ioprio_set`: `which` must be the
    /// per-process kind and `who` this process or `0`.
    WhichWho { process: u32 },
}

/// The calls allowed only on this process, by how their target is read.
fn self_only() -> &'static [(&'static str, i64, SelfOnly)] {
    use SelfOnly::*;
    const PRIO_PROCESS: u32 = 0;
    const IOPRIO_WHO_PROCESS: u32 = 1;
    &[
        ("kill", libc::SYS_kill, Pid { arg: 0 }),
        ("tkill", libc::SYS_tkill, Pid { arg: 0 }),
        ("tgkill", libc::SYS_tgkill, Pid { arg: 0 }),
        ("rt_sigqueueinfo", libc::SYS_rt_sigqueueinfo, Pid { arg: 0 }),
        ("rt_tgsigqueueinfo", libc::SYS_rt_tgsigqueueinfo, Pid { arg: 0 }),
        ("setpriority", libc::SYS_setpriority, WhichWho { process: PRIO_PROCESS }),
        ("ioprio_set", libc::SYS_ioprio_set, WhichWho { process: IOPRIO_WHO_PROCESS }),
        ("sched_setattr", libc::SYS_sched_setattr, PidOrZero { arg: 0 }),
        ("sched_setscheduler", libc::SYS_sched_setscheduler, PidOrZero { arg: 0 }),
        ("sched_setparam", libc::SYS_sched_setparam, PidOrZero { arg: 0 }),
        ("sched_setaffinity", libc::SYS_sched_setaffinity, PidOrZero { arg: 0 }),
        ("prlimit64", libc::SYS_prlimit64, PidOrZero { arg: 0 }),
        ("migrate_pages", libc::SYS_migrate_pages, PidOrZero { arg: 0 }),
        ("move_pages", libc::SYS_move_pages, PidOrZero { arg: 0 }),
    ]
}

/// Named command values of one call (its second argument).
type Commands = &'static [(&'static str, u32)];

/// `fcntl` / `ioctl` commands that reach another process through a
/// descriptor: an owner (`F_SETOWN`, `F_SETOWN_EX`, `FIOSETOWN`,
/// `SIOCSPGRP`) makes the kernel send SIGIO/SIGURG (or, after `F_SETSIG`,
/// any signal) to that pid or group when the peer writes; a lease
/// (`F_SETLEASE`) blocks another process's `open` for the lease-break time;
/// dnotify (`F_NOTIFY`) watches the tree as inotify does; the terminal ones
/// set a foreground group (`TIOCSPGRP`), take a controlling terminal
/// (`TIOCSCTTY`, `TIOCCONS`) or push input into another process's terminal
/// (`TIOCSTI`, `TIOCLINUX`). A command is an `unsigned int` to the kernel:
/// compared on its low 32 bits, so high bits cannot hide it.
fn denied_commands() -> &'static [(&'static str, i64, Commands)] {
    &[
        (
            "fcntl",
            libc::SYS_fcntl,
            &[("F_SETOWN", 8), ("F_SETSIG", 10), ("F_SETOWN_EX", 15), ("F_SETLEASE", 1024), ("F_NOTIFY", 1026)],
        ),
        (
            "ioctl",
            libc::SYS_ioctl,
            &[
                ("FIOSETOWN", 0x8901),
                ("SIOCSPGRP", 0x8902),
                ("TIOCSPGRP", 0x5410),
                ("TIOCSCTTY", 0x540E),
                ("TIOCSTI", 0x5412),
                ("TIOCLINUX", 0x541C),
                ("TIOCCONS", 0x541D),
            ],
        ),
    ]
}

/// One rule per denied command of a call: any of them matches (and so denies).
fn command_rules(commands: &[(&'static str, u32)]) -> Result<Vec<SeccompRule>, LockdownError> {
    commands
        .iter()
        .map(|&(_, cmd)| {
            let eq = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, u64::from(cmd))
                .map_err(|e| LockdownError::Install(e.to_string()))?;
            SeccompRule::new(vec![eq]).map_err(|e| LockdownError::Install(e.to_string()))
        })
        .collect()
}

/// The rules that match (and so deny) a self-only call aimed anywhere but at
/// `pid`. Pids are C `int`s: compared as 32-bit values, as the kernel reads them.
fn self_only_rules(how: SelfOnly, pid: u32) -> Result<Vec<SeccompRule>, LockdownError> {
    let ne = |arg: u8, v: u32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, u64::from(v))
            .map_err(|e| LockdownError::Install(e.to_string()))
    };
    let rule = |c: Vec<SeccompCondition>| SeccompRule::new(c).map_err(|e| LockdownError::Install(e.to_string()));
    Ok(match how {
        SelfOnly::Pid { arg } => vec![rule(vec![ne(arg, pid)?])?],
        SelfOnly::PidOrZero { arg } => vec![rule(vec![ne(arg, pid)?, ne(arg, 0)?])?],
        SelfOnly::WhichWho { process } => vec![rule(vec![ne(0, process)?])?, rule(vec![ne(1, pid)?, ne(1, 0)?])?],
    })
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

/// Builds the BPF programs for this architecture: the deny list, and the
/// `clone3` filter.
/// `pid` is this process's id: the only target the self-only calls accept.
pub(crate) fn filters(pid: u32) -> Result<(BpfProgram, BpfProgram), LockdownError> {
    #[cfg(target_arch = "x86_64")]
    let arch = TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = TargetArch::aarch64;
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &(_, nr) in denied() {
        rules.insert(nr, vec![]);
        #[cfg(target_arch = "x86_64")]
        rules.insert(nr | 0x4000_0000, vec![]);
    }
    // The x32 ABI's own numbers (512-547), whatever they are.
    #[cfg(target_arch = "x86_64")]
    for nr in 512..=547i64 {
        rules.insert(nr | 0x4000_0000, vec![]);
    }
    for &(_, nr, how) in self_only() {
        rules.insert(nr, self_only_rules(how, pid)?);
        #[cfg(target_arch = "x86_64")]
        rules.insert(nr | 0x4000_0000, vec![]);
    }
    for &(_, nr, commands) in denied_commands() {
        rules.insert(nr, command_rules(commands)?);
        #[cfg(target_arch = "x86_64")]
        rules.insert(nr | 0x4000_0000, vec![]);
    }
    // clone without CLONE_THREAD creates a process.
    let not_thread =
        SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64), 0)
            .map_err(|e| LockdownError::Install(e.to_string()))?;
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![not_thread]).map_err(|e| LockdownError::Install(e.to_string()))?],
    );
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch)
        .map_err(|e| LockdownError::Install(e.to_string()))?;
    let prog: BpfProgram =
        filter.try_into().map_err(|e: seccompiler::BackendError| LockdownError::Install(e.to_string()))?;
    // clone3: flags live in memory, out of seccomp's reach. ENOSYS makes libc fall back to clone.
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, vec![])]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| LockdownError::Install(e.to_string()))?;
    let clone3: BpfProgram =
        clone3.try_into().map_err(|e: seccompiler::BackendError| LockdownError::Install(e.to_string()))?;
    // Both programs are installed (seccomp runs every filter, the strictest result wins).
    Ok((prog, clone3))
}

/// Checks the process state, then installs the filter on every thread.
///
/// Refuses (before installing anything) when an io_uring instance is open
/// (io_uring operations bypass seccomp) or when `UV_USE_IO_URING` is not `0`
/// (libuv could create one later). Fails closed when seccomp, TSYNC or
/// no-new-privs is unavailable.
pub fn lockdown() -> Result<LockdownReport, LockdownError> {
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
    // This process, as its pid namespace (the one its syscalls read pids in) numbers it.
    let (prog, clone3) = filters(std::process::id())?;
    seccompiler::apply_filter_all_threads(&clone3).map_err(|e| LockdownError::Install(e.to_string()))?;
    seccompiler::apply_filter_all_threads(&prog).map_err(|e| LockdownError::Install(e.to_string()))?;
    Ok(LockdownReport {
        arch: if cfg!(target_arch = "x86_64") { "x86_64" } else { "aarch64" },
        denied: denied().iter().map(|(n, _)| n.trim_start_matches("SYS_")).collect(),
        self_only: self_only().iter().map(|(n, _, _)| *n).collect(),
        denied_commands: denied_commands().iter().flat_map(|(_, _, c)| c.iter().map(|(n, _)| *n)).collect(),
        open_fds: fds,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn filters_compile_for_this_arch() {
        let (deny, clone3) = super::filters(std::process::id()).unwrap();
        assert!(deny.len() > 100 && deny.len() < 4096, "{}", deny.len());
        assert!(!clone3.is_empty());
    }
}
