//! Process tier: `lockdown()` installs a default-allow, deny-listed seccomp-bpf
//! filter on every thread of the process (`SECCOMP_FILTER_FLAG_TSYNC`), after
//! `PR_SET_NO_NEW_PRIVS`, so code that escapes the `vm.Context` still cannot
//! open files, create sockets, start processes, trace, mount, load BPF, use
//! io_uring or enter namespaces. Already-open file descriptors (the IPC
//! channel) keep working: reads, writes, `sendmsg`/`recvmsg` are allowed.
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
            SYS_pidfd_getfd
        ];
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
            SYS_vfork
        ];
        #[cfg(target_arch = "aarch64")]
        let legacy: &[(&'static str, i64)] = &[];
        common.iter().chain(legacy).copied().collect()
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
pub(crate) fn filters() -> Result<(BpfProgram, BpfProgram), LockdownError> {
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
    let (prog, clone3) = filters()?;
    seccompiler::apply_filter_all_threads(&clone3).map_err(|e| LockdownError::Install(e.to_string()))?;
    seccompiler::apply_filter_all_threads(&prog).map_err(|e| LockdownError::Install(e.to_string()))?;
    Ok(LockdownReport {
        arch: if cfg!(target_arch = "x86_64") { "x86_64" } else { "aarch64" },
        denied: denied().iter().map(|(n, _)| n.trim_start_matches("SYS_")).collect(),
        open_fds: fds,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn filters_compile_for_this_arch() {
        let (deny, clone3) = super::filters().unwrap();
        assert!(deny.len() > 100 && deny.len() < 4096, "{}", deny.len());
        assert!(!clone3.is_empty());
    }
}
