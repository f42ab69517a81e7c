//! `lockdown()` from Rust: the test re-executes itself as a child that locks
//! down and then tries raw syscalls: `openat`, `socket`, `execve`, calls that
//! reach other processes or the tree, and every syscall number of x86_64
//! against an allow-list written out here by number (from the kernel's
//! `syscall_64.tbl`, not from the filter's code).
#![cfg(all(target_os = "linux", feature = "lockdown", any(target_arch = "x86_64", target_arch = "aarch64")))]

use std::process::Command;

const CHILD: &str = "ASP_LOCKDOWN_CHILD";

fn child() {
    let report = api_sandbox_permissions::lockdown::lockdown().expect("lockdown");
    assert!(!report.allowed.contains(&"openat") && !report.allowed.contains(&"execve"));
    assert!(report.errno_always.contains(&("openat", "EPERM")) && report.errno_always.contains(&("clone3", "ENOSYS")));
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    unsafe {
        let fd = libc::openat(libc::AT_FDCWD, c"/etc/hostname".as_ptr(), libc::O_RDONLY);
        let open = if fd < 0 { errno() } else { 0 };
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        let sock = if s < 0 { errno() } else { 0 };
        let argv = [c"true".as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null()];
        let rc = libc::execve(c"/bin/true".as_ptr(), argv.as_ptr(), envp.as_ptr());
        let exec = if rc < 0 { errno() } else { 0 };
        // A new thread still works (clone with CLONE_THREAD is allowed).
        let thread_ok = std::thread::spawn(|| 41 + 1).join().unwrap() == 42;
        // std::fs goes through openat too.
        let fs = std::fs::read("/etc/hostname").map_err(|e| e.raw_os_error()).err().flatten().unwrap_or(0);
        println!("RESULT openat={open} socket={sock} execve={exec} fs={fs} thread={thread_ok}");
    }
}

#[test]
fn lockdown_denies_open_socket_and_exec() {
    if std::env::var(CHILD).is_ok() {
        child();
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lockdown_denies_open_socket_and_exec", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("UV_USE_IO_URING", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let eperm = libc::EPERM;
    assert!(
        stdout.contains(&format!("RESULT openat={eperm} socket={eperm} execve={eperm} fs={eperm} thread=true")),
        "{stdout}"
    );
}

#[test]
fn lockdown_refuses_without_uv_use_io_uring_0() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "refusal_child", "--nocapture", "--test-threads=1"])
        .env("ASP_REFUSAL_CHILD", "1")
        .env_remove("UV_USE_IO_URING")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("REFUSED"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn refusal_child() {
    if std::env::var("ASP_REFUSAL_CHILD").is_err() {
        return;
    }
    match api_sandbox_permissions::lockdown::lockdown() {
        Err(api_sandbox_permissions::lockdown::LockdownError::UnsafeState(_)) => println!("REFUSED"),
        other => println!("UNEXPECTED {other:?}"),
    }
}

const REACH_CHILD: &str = "ASP_LOCKDOWN_REACH_CHILD";

/// In the locked child: every call aimed at another live process (`SIBLING`,
/// a sleeping process the parent started), a process group, every process,
/// or the file `FILE`, and the same calls aimed at itself. Prints one
/// `name=errno` line per call (0: it succeeded).
fn reach_child() {
    let sibling: libc::pid_t = std::env::var("SIBLING").unwrap().parse().unwrap();
    let file = std::ffi::CString::new(std::env::var("FILE").unwrap()).unwrap();
    // Made before lockdown (pidfd_open and inotify_init1 are denied after it).
    // SAFETY: raw syscalls with integer arguments; results are checked.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, sibling, 0) } as i32;
    assert!(pidfd >= 0, "pidfd_open before lockdown");
    // SAFETY: plain syscall, no pointers.
    let inotify = unsafe { libc::inotify_init1(0) };
    assert!(inotify >= 0, "inotify_init1 before lockdown");
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `mask` is a live cpu_set_t of the size passed.
    assert_eq!(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) }, 0);
    // A pipe with a byte in it: read(2) must keep working after lockdown.
    let mut pipe = [0i32; 2];
    // SAFETY: `pipe` is a live [c_int; 2]; the write is one byte from a static.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    assert_eq!(unsafe { libc::write(pipe[1], b"x".as_ptr().cast(), 1) }, 1);
    // A socket pair: an fd whose owner would get SIGIO when the peer writes.
    let mut pair = [0i32; 2];
    // SAFETY: `pair` is a live [c_int; 2].
    assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr()) }, 0);
    let dirfd = std::fs::File::open(std::path::Path::new(&std::env::var("FILE").unwrap()).parent().unwrap()).unwrap();
    let me = std::process::id() as libc::pid_t;
    let parent = unsafe { libc::getppid() };
    let report = api_sandbox_permissions::lockdown::lockdown().expect("lockdown");
    assert!(report.conditional.iter().any(|(n, c)| *n == "kill" && c.contains("this process")));
    assert!(!report.allowed.contains(&"utimensat") && !report.allowed.contains(&"inotify_add_watch"));
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(-1);
    let mut out = Vec::new();
    let mut r = |name: &str, rc: libc::c_long| out.push(format!("{name}={}", if rc < 0 { errno() } else { 0 }));
    // SAFETY: every call below is a raw syscall with integer arguments or
    // pointers to live, correctly sized locals; a failure is recorded, not trusted.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let infop = &mut info as *mut libc::siginfo_t;
        let mut attr = [0u32; 14];
        attr[0] = 56; // sched_attr.size
        let param = libc::sched_param { sched_priority: 0 };
        let mut old = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let mut robust_head: usize = 0;
        let mut robust_len: usize = 0;
        let mut buf = [0u8; 8];
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: 8 };
        let remote = libc::iovec { iov_base: 0x1000 as *mut libc::c_void, iov_len: 8 };
        // Other processes: the sibling, the parent (as root: the host), groups, everyone.
        r("other:kill", libc::syscall(libc::SYS_kill, sibling, libc::SIGTERM));
        r("other:kill0", libc::syscall(libc::SYS_kill, sibling, 0));
        r("other:kill_parent", libc::syscall(libc::SYS_kill, parent, 0));
        r("other:kill_group", libc::syscall(libc::SYS_kill, 0, 0));
        r("other:kill_all", libc::syscall(libc::SYS_kill, -1, 0));
        r("other:kill_pgrp", libc::syscall(libc::SYS_kill, -sibling, 0));
        r("other:tkill", libc::syscall(libc::SYS_tkill, sibling, libc::SIGTERM));
        r("other:tgkill", libc::syscall(libc::SYS_tgkill, sibling, sibling, libc::SIGTERM));
        r("other:rt_sigqueueinfo", libc::syscall(libc::SYS_rt_sigqueueinfo, sibling, libc::SIGTERM, infop));
        r(
            "other:rt_tgsigqueueinfo",
            libc::syscall(libc::SYS_rt_tgsigqueueinfo, sibling, sibling, libc::SIGTERM, infop),
        );
        r("other:pidfd_send_signal", libc::syscall(libc::SYS_pidfd_send_signal, pidfd, libc::SIGTERM, 0, 0));
        r("other:setpriority", libc::syscall(libc::SYS_setpriority, libc::PRIO_PROCESS, sibling, 10));
        r("other:setpriority_pgrp", libc::syscall(libc::SYS_setpriority, libc::PRIO_PGRP, 0, 10));
        r("other:setpriority_user", libc::syscall(libc::SYS_setpriority, libc::PRIO_USER, 0, 10));
        r("other:sched_setattr", libc::syscall(libc::SYS_sched_setattr, sibling, attr.as_mut_ptr(), 0));
        r("other:sched_setscheduler", libc::syscall(libc::SYS_sched_setscheduler, sibling, libc::SCHED_OTHER, &param));
        r("other:sched_setparam", libc::syscall(libc::SYS_sched_setparam, sibling, &param));
        r(
            "other:sched_setaffinity",
            libc::syscall(libc::SYS_sched_setaffinity, sibling, std::mem::size_of::<libc::cpu_set_t>(), &mask),
        );
        r("other:ioprio_set", libc::syscall(libc::SYS_ioprio_set, 1, sibling, 0));
        r("other:ioprio_set_pgrp", libc::syscall(libc::SYS_ioprio_set, 2, 0, 0));
        r("other:prlimit64", libc::syscall(libc::SYS_prlimit64, sibling, libc::RLIMIT_NOFILE, 0, &mut old));
        r("other:migrate_pages", libc::syscall(libc::SYS_migrate_pages, sibling, 0, 0, 0));
        r("other:move_pages", libc::syscall(libc::SYS_move_pages, sibling, 0, 0, 0, 0, 0));
        r("other:process_vm_readv", libc::syscall(libc::SYS_process_vm_readv, sibling, &local, 1, &remote, 1, 0));
        r("other:process_vm_writev", libc::syscall(libc::SYS_process_vm_writev, sibling, &local, 1, &remote, 1, 0));
        r("other:ptrace", libc::syscall(libc::SYS_ptrace, libc::PTRACE_ATTACH, sibling, 0, 0));
        r("other:kcmp", libc::syscall(libc::SYS_kcmp, me, sibling, 0, 0, 0));
        r(
            "other:get_robust_list",
            libc::syscall(libc::SYS_get_robust_list, sibling, &mut robust_head, &mut robust_len),
        );
        r("other:pidfd_open", libc::syscall(libc::SYS_pidfd_open, sibling, 0));
        // Through a descriptor: an owner the kernel signals (SIGIO, or any
        // signal after F_SETSIG), leases, dnotify, a terminal's group and input.
        {
            use std::os::fd::AsRawFd;
            let sock = pair[0];
            // struct f_owner_ex { int type; pid_t pid; } with type F_OWNER_PID (1).
            let owner: [libc::c_int; 2] = [1, parent];
            let c: libc::c_char = b'x' as libc::c_char;
            r("fd:F_SETOWN_parent", libc::syscall(libc::SYS_fcntl, sock, libc::F_SETOWN, parent));
            r("fd:F_SETOWN_group", libc::syscall(libc::SYS_fcntl, sock, libc::F_SETOWN, -parent));
            r("fd:F_SETOWN_self", libc::syscall(libc::SYS_fcntl, sock, libc::F_SETOWN, me));
            r("fd:F_SETOWN_EX", libc::syscall(libc::SYS_fcntl, sock, 15 /* F_SETOWN_EX */, owner.as_ptr()));
            r("fd:F_SETSIG", libc::syscall(libc::SYS_fcntl, sock, 10 /* F_SETSIG */, libc::SIGKILL));
            r(
                "fd:F_SETOWN_high_bits",
                libc::syscall(libc::SYS_fcntl, sock, (1i64 << 32) | libc::F_SETOWN as i64, parent),
            );
            r("fd:F_SETLEASE", libc::syscall(libc::SYS_fcntl, dirfd.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK));
            r("fd:F_NOTIFY", libc::syscall(libc::SYS_fcntl, dirfd.as_raw_fd(), libc::F_NOTIFY, 2 /* DN_MODIFY */));
            r("fd:FIOSETOWN", libc::syscall(libc::SYS_ioctl, sock, 0x8901, &parent));
            r("fd:SIOCSPGRP", libc::syscall(libc::SYS_ioctl, sock, 0x8902, &parent));
            r("fd:TIOCSPGRP", libc::syscall(libc::SYS_ioctl, 0, libc::TIOCSPGRP, &parent));
            r("fd:TIOCSCTTY", libc::syscall(libc::SYS_ioctl, 0, libc::TIOCSCTTY, 0));
            r("fd:TIOCSTI", libc::syscall(libc::SYS_ioctl, 0, libc::TIOCSTI, &c));
            r("fd:TIOCSTI_high_bits", libc::syscall(libc::SYS_ioctl, 0, (1i64 << 32) | libc::TIOCSTI as i64, &c));
            r("fd:TIOCLINUX", libc::syscall(libc::SYS_ioctl, 0, libc::TIOCLINUX, &c));
            r("fd:TIOCCONS", libc::syscall(libc::SYS_ioctl, 0, libc::TIOCCONS, 0));
            // The fd's own state stays readable and settable.
            let flags = libc::syscall(libc::SYS_fcntl, sock, libc::F_GETFL);
            r("self:F_GETFL", flags);
            r("self:F_SETFL", libc::syscall(libc::SYS_fcntl, sock, libc::F_SETFL, flags | libc::O_NONBLOCK as i64));
            let mut pending: libc::c_int = 0;
            r("self:FIONREAD", libc::syscall(libc::SYS_ioctl, sock, libc::FIONREAD, &mut pending));
        }
        // The x32 numbering of a self-only call is denied whatever its target.
        #[cfg(target_arch = "x86_64")]
        r("other:x32_kill", libc::syscall(libc::SYS_kill | 0x4000_0000, sibling, 0));
        // The tree.
        r("tree:utimensat", libc::syscall(libc::SYS_utimensat, libc::AT_FDCWD, file.as_ptr(), 0, 0));
        r("tree:setxattr", libc::syscall(libc::SYS_setxattr, file.as_ptr(), c"user.asp".as_ptr(), c"x".as_ptr(), 1, 0));
        r(
            "tree:lsetxattr",
            libc::syscall(libc::SYS_lsetxattr, file.as_ptr(), c"user.asp".as_ptr(), c"x".as_ptr(), 1, 0),
        );
        r("tree:removexattr", libc::syscall(libc::SYS_removexattr, file.as_ptr(), c"user.asp".as_ptr()));
        r("tree:fchmodat2", libc::syscall(452, libc::AT_FDCWD, file.as_ptr(), 0o777, 0));
        r("tree:inotify_init1", libc::syscall(libc::SYS_inotify_init1, 0));
        r(
            "tree:inotify_add_watch",
            libc::syscall(libc::SYS_inotify_add_watch, inotify, file.as_ptr(), libc::IN_ALL_EVENTS),
        );
        r("tree:fanotify_init", libc::syscall(libc::SYS_fanotify_init, 0, 0));
        #[cfg(target_arch = "x86_64")]
        {
            r("tree:utimes", libc::syscall(libc::SYS_utimes, file.as_ptr(), 0));
            r("tree:utime", libc::syscall(libc::SYS_utime, file.as_ptr(), 0));
            r("tree:futimesat", libc::syscall(libc::SYS_futimesat, libc::AT_FDCWD, file.as_ptr(), 0));
            r("tree:inotify_init", libc::syscall(libc::SYS_inotify_init));
        }
        // Objects shared with other processes.
        r("ipc:shmget", libc::syscall(libc::SYS_shmget, libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600));
        r("ipc:msgget", libc::syscall(libc::SYS_msgget, libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600));
        r("ipc:semget", libc::syscall(libc::SYS_semget, libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600));
        r(
            "ipc:mq_open",
            libc::syscall(libc::SYS_mq_open, c"asp-lockdown".as_ptr(), libc::O_RDWR | libc::O_CREAT, 0o600, 0),
        );
        // Itself: still allowed.
        libc::signal(libc::SIGUSR1, libc::SIG_IGN);
        let tid = libc::syscall(libc::SYS_gettid);
        r("self:kill", libc::syscall(libc::SYS_kill, me, 0));
        r("self:kill_usr1", libc::syscall(libc::SYS_kill, me, libc::SIGUSR1));
        r("self:tgkill", libc::syscall(libc::SYS_tgkill, me, tid, libc::SIGUSR1));
        r("self:setpriority", libc::syscall(libc::SYS_setpriority, libc::PRIO_PROCESS, 0, 0));
        r("self:setpriority_pid", libc::syscall(libc::SYS_setpriority, libc::PRIO_PROCESS, me, 0));
        r("self:prlimit64", libc::syscall(libc::SYS_prlimit64, 0, libc::RLIMIT_NOFILE, 0, &mut old));
        // Not on the allow-list even for itself.
        r(
            "own:sched_setaffinity",
            libc::syscall(libc::SYS_sched_setaffinity, 0, std::mem::size_of::<libc::cpu_set_t>(), &mask),
        );
        r("own:sched_setscheduler", libc::syscall(libc::SYS_sched_setscheduler, me, libc::SCHED_OTHER, &param));
        r(
            "self:sched_getaffinity",
            libc::syscall(libc::SYS_sched_getaffinity, 0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask),
        );
        // Allowed on any pid (pthread_getattr_np asks by tid): a CPU mask, information only.
        r(
            "info:sched_getaffinity_sibling",
            libc::syscall(libc::SYS_sched_getaffinity, sibling, std::mem::size_of::<libc::cpu_set_t>(), &mut mask),
        );
        r("own:prlimit64_set", libc::syscall(libc::SYS_prlimit64, 0, libc::RLIMIT_NOFILE, &old, 0));
        let mut byte = [0u8; 1];
        r("self:read", libc::syscall(libc::SYS_read, pipe[0], byte.as_mut_ptr(), 1));
    }
    println!("REACH {}", out.join(" "));
}

#[test]
fn lockdown_denies_reaching_other_processes_and_the_tree() {
    if std::env::var(REACH_CHILD).is_ok() {
        reach_child();
        return;
    }
    // A live sibling to aim at, and a file whose times and attributes must not change.
    let mut sibling = Command::new("sleep").arg("60").spawn().unwrap();
    let dir = std::env::temp_dir().join(format!("asp-lockdown-reach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("target.txt");
    std::fs::write(&file, "x").unwrap();
    let before = std::fs::metadata(&file).unwrap();
    // SAFETY: reads the sibling's nice value; no pointers.
    let nice_before = unsafe { libc::getpriority(libc::PRIO_PROCESS, sibling.id()) };
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lockdown_denies_reaching_other_processes_and_the_tree", "--nocapture", "--test-threads=1"])
        .env(REACH_CHILD, "1")
        .env("UV_USE_IO_URING", "0")
        .env("SIBLING", sibling.id().to_string())
        .env("FILE", &file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let alive = sibling.try_wait().unwrap().is_none();
    // SAFETY: as above.
    let nice_after = unsafe { libc::getpriority(libc::PRIO_PROCESS, sibling.id()) };
    let after = std::fs::metadata(&file).unwrap();
    let _ = sibling.kill();
    let _ = sibling.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line =
        stdout.lines().find_map(|l| l.split_once("REACH ").map(|(_, r)| r)).unwrap_or_else(|| panic!("{stdout}"));
    let results: Vec<(&str, i32)> = line
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k, v.parse().unwrap())
        })
        .collect();
    assert!(results.len() > 40, "{line}");
    for (name, errno) in &results {
        // `self:` on the allow-list for this process; `own:` aimed at itself but not on it.
        let want = if name.starts_with("self:") || name.starts_with("info:") { 0 } else { libc::EPERM };
        assert_eq!(*errno, want, "{name}: errno {errno}, want {want}\n{line}");
    }
    assert!(alive, "the sibling survived");
    assert_eq!(nice_before, nice_after, "the sibling's priority is unchanged");
    assert_eq!(before.modified().unwrap(), after.modified().unwrap(), "the file's mtime is unchanged");
    assert_eq!(before.permissions(), after.permissions(), "the file's mode is unchanged");
}

/// The x86_64 allow-list, written out by number from the kernel's
/// `arch/x86/entry/syscalls/syscall_64.tbl` (an oracle independent of the
/// filter's code, which names calls through the libc crate).
#[cfg(target_arch = "x86_64")]
const X86_64_ALLOWED: &[(&str, i64)] = &[
    ("read", 0),
    ("write", 1),
    ("close", 3),
    ("fstat", 5),
    ("mmap", 9),
    ("mprotect", 10),
    ("munmap", 11),
    ("brk", 12),
    ("rt_sigaction", 13),
    ("rt_sigprocmask", 14),
    ("rt_sigreturn", 15),
    ("ioctl", 16),
    ("readv", 19),
    ("writev", 20),
    ("sched_yield", 24),
    ("mremap", 25),
    ("madvise", 28),
    ("nanosleep", 35),
    ("getpid", 39),
    ("recvmsg", 47),
    ("getsockname", 51),
    ("getsockopt", 55),
    ("clone", 56),
    ("exit", 60),
    ("kill", 62),
    ("uname", 63),
    ("fcntl", 72),
    ("getcwd", 79),
    ("gettimeofday", 96),
    ("getrusage", 98),
    ("getuid", 102),
    ("getgid", 104),
    ("geteuid", 107),
    ("getegid", 108),
    ("getppid", 110),
    ("sigaltstack", 131),
    ("getpriority", 140),
    ("setpriority", 141),
    ("prctl", 157),
    ("gettid", 186),
    ("time", 201),
    ("futex", 202),
    ("sched_getaffinity", 204),
    ("restart_syscall", 219),
    ("clock_gettime", 228),
    ("clock_getres", 229),
    ("clock_nanosleep", 230),
    ("exit_group", 231),
    ("epoll_wait", 232),
    ("epoll_ctl", 233),
    ("tgkill", 234),
    ("set_robust_list", 273),
    ("epoll_pwait", 281),
    ("eventfd2", 290),
    ("epoll_create1", 291),
    ("pipe2", 293),
    ("prlimit64", 302),
    ("getrandom", 318),
    ("membarrier", 324),
    ("pkey_mprotect", 329),
    ("rseq", 334),
    ("epoll_pwait2", 441),
];

/// Calls that answer a fixed errno whatever the mode (x86_64 numbers).
#[cfg(target_arch = "x86_64")]
const X86_64_ERRNO: &[(&str, i64, i32)] = &[
    ("open", 2, libc::EPERM),
    ("stat", 4, libc::EPERM),
    ("lstat", 6, libc::EPERM),
    ("readlink", 89, libc::EPERM),
    ("sysinfo", 99, libc::EPERM),
    ("capget", 125, libc::EPERM),
    ("openat", 257, libc::EPERM),
    ("newfstatat", 262, libc::EPERM),
    ("readlinkat", 267, libc::EPERM),
    ("statx", 332, libc::EPERM),
    ("clone3", 435, libc::ENOSYS),
];

const SWEEP_CHILD: &str = "ASP_LOCKDOWN_SWEEP_CHILD";

/// `uretprobe` (335) and `uprobe` (336) bypass seccomp by the kernel's design
/// (since 6.11 / 6.16) and answer any call from outside the kernel's uprobe
/// trampoline with SIGILL: nothing to deny. The sweep skips them;
/// `lockdown_uprobe_calls_only_kill_the_caller` checks they do no more.
#[cfg(target_arch = "x86_64")]
const KERNEL_SIGILL: &[i64] = &[335, 336];

/// In the locked child: every syscall number 0..=1023, its x32 twin, and a few
/// far numbers, except the allowed ones, with every argument -1 (so a call the
/// filter wrongly let through fails in the kernel rather than acting).
/// Prints `SWEEP nr=errno ...`.
#[cfg(target_arch = "x86_64")]
fn sweep_child() {
    let report = api_sandbox_permissions::lockdown::lockdown().expect("lockdown");
    // The report names exactly the oracle's calls.
    let mut named: Vec<&str> = report.allowed.iter().copied().chain(report.conditional.iter().map(|c| c.0)).collect();
    named.sort_unstable();
    let mut oracle: Vec<&str> = X86_64_ALLOWED.iter().map(|a| a.0).collect();
    oracle.sort_unstable();
    assert_eq!(named, oracle, "the report's allow-list is the oracle's");
    let mut errno_named: Vec<&str> = report.errno_always.iter().map(|e| e.0).collect();
    errno_named.sort_unstable();
    let mut errno_oracle: Vec<&str> = X86_64_ERRNO.iter().map(|e| e.0).collect();
    errno_oracle.sort_unstable();
    assert_eq!(errno_named, errno_oracle);
    let allowed: std::collections::BTreeSet<i64> = X86_64_ALLOWED.iter().map(|a| a.1).collect();
    let mut numbers: Vec<i64> = (0..1024).filter(|n| !allowed.contains(n) && !KERNEL_SIGILL.contains(n)).collect();
    numbers.extend((0..1024).map(|n| n | 0x4000_0000));
    numbers.extend([0x7fff_ffff, 0x8000_0000, 0xffff_fffe]);
    let mut out = Vec::with_capacity(numbers.len());
    for nr in numbers {
        // SAFETY: a raw syscall with integer arguments; the filter answers it
        // before the kernel acts (every argument -1 makes any slip fail).
        let rc = unsafe { libc::syscall(nr, -1i64, -1i64, -1i64, -1i64, -1i64, -1i64) };
        let errno = if rc < 0 { std::io::Error::last_os_error().raw_os_error().unwrap_or(-1) } else { 0 };
        out.push(format!("{nr}={errno}"));
    }
    println!("SWEEP {}", out.join(" "));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn lockdown_denies_every_syscall_number_not_on_the_allow_list() {
    if std::env::var(SWEEP_CHILD).is_ok() {
        sweep_child();
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lockdown_denies_every_syscall_number_not_on_the_allow_list",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SWEEP_CHILD, "1")
        .env("UV_USE_IO_URING", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line =
        stdout.lines().find_map(|l| l.split_once("SWEEP ").map(|(_, r)| r)).unwrap_or_else(|| panic!("{stdout}"));
    let mut tried = 0;
    for kv in line.split(' ') {
        let (nr, errno) = kv.split_once('=').unwrap();
        let (nr, errno): (i64, i32) = (nr.parse().unwrap(), errno.parse().unwrap());
        let want = X86_64_ERRNO.iter().find(|e| e.1 == nr).map_or(libc::EPERM, |e| e.2);
        assert_eq!(errno, want, "syscall {nr:#x}: errno {errno}, want {want}");
        tried += 1;
    }
    assert_eq!(tried, 1024 - X86_64_ALLOWED.len() - KERNEL_SIGILL.len() + 1024 + 3);
}

const KILL_CHILD: &str = "ASP_LOCKDOWN_KILL_CHILD";

#[test]
fn lockdown_kill_mode_kills_on_a_denied_call_and_answers_the_tolerated_ones() {
    use std::os::unix::process::ExitStatusExt;
    if std::env::var(KILL_CHILD).is_ok() {
        let opts = api_sandbox_permissions::lockdown::LockdownOptions {
            on_denied: api_sandbox_permissions::lockdown::OnDenied::Kill,
            ..Default::default()
        };
        api_sandbox_permissions::lockdown::lockdown_with(opts).expect("lockdown");
        // SAFETY: raw syscalls with valid arguments.
        unsafe {
            let fd = libc::openat(libc::AT_FDCWD, c"/etc/hostname".as_ptr(), libc::O_RDONLY);
            let open = if fd < 0 { std::io::Error::last_os_error().raw_os_error().unwrap_or(0) } else { 0 };
            let clone3 = libc::syscall(libc::SYS_clone3, 0, 0);
            let c3 = if clone3 < 0 { std::io::Error::last_os_error().raw_os_error().unwrap_or(0) } else { 0 };
            let thread_ok = std::thread::spawn(|| 1).join().unwrap() == 1;
            println!("ALIVE openat={open} clone3={c3} thread={thread_ok}");
            use std::io::Write;
            std::io::stdout().flush().unwrap();
            libc::syscall(libc::SYS_socket, libc::AF_INET, libc::SOCK_STREAM, 0);
        }
        println!("SURVIVED socket");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lockdown_kill_mode_kills_on_a_denied_call_and_answers_the_tolerated_ones",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(KILL_CHILD, "1")
        .env("UV_USE_IO_URING", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("ALIVE openat={} clone3={} thread=true", libc::EPERM, libc::ENOSYS)), "{stdout}");
    assert!(!stdout.contains("SURVIVED"), "{stdout}");
    assert_eq!(out.status.signal(), Some(libc::SIGSYS), "{:?}", out.status);
}

const UPROBE_CHILD: &str = "ASP_LOCKDOWN_UPROBE_CHILD";

#[cfg(target_arch = "x86_64")]
#[test]
fn lockdown_uprobe_calls_only_kill_the_caller() {
    use std::os::unix::process::ExitStatusExt;
    if let Ok(nr) = std::env::var(UPROBE_CHILD) {
        api_sandbox_permissions::lockdown::lockdown().expect("lockdown");
        println!("LOCKED");
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        // SAFETY: a raw syscall with no pointer the kernel would follow.
        let rc = unsafe { libc::syscall(nr.parse::<i64>().unwrap(), 0, 0, 0, 0, 0, 0) };
        println!("RETURNED {rc}");
        return;
    }
    for nr in KERNEL_SIGILL {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "lockdown_uprobe_calls_only_kill_the_caller", "--nocapture", "--test-threads=1"])
            .env(UPROBE_CHILD, nr.to_string())
            .env("UV_USE_IO_URING", "0")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("LOCKED"), "{stdout}");
        // Either the kernel has it (SIGILL outside the trampoline) or it does not (the filter's EPERM).
        let returned_eperm = stdout.contains("RETURNED -1") && out.status.success();
        assert!(out.status.signal() == Some(libc::SIGILL) || returned_eperm, "{nr}: {:?} {stdout}", out.status);
    }
}
