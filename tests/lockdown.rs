//! `lockdown()` from Rust: the test re-executes itself as a child that locks
//! down and then tries raw `openat`, `socket` and `execve`.
#![cfg(all(target_os = "linux", feature = "lockdown", any(target_arch = "x86_64", target_arch = "aarch64")))]

use std::process::Command;

const CHILD: &str = "ASP_LOCKDOWN_CHILD";

fn child() {
    let report = api_sandbox_permissions::lockdown::lockdown().expect("lockdown");
    assert!(report.denied.contains(&"openat") && report.denied.contains(&"execve"));
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
    assert!(report.self_only.contains(&"kill") && report.denied.contains(&"utimensat"));
    assert!(report.denied_commands.contains(&"F_SETOWN") && report.denied_commands.contains(&"TIOCSTI"));
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
        r(
            "self:sched_setaffinity",
            libc::syscall(libc::SYS_sched_setaffinity, 0, std::mem::size_of::<libc::cpu_set_t>(), &mask),
        );
        r("self:sched_setscheduler", libc::syscall(libc::SYS_sched_setscheduler, me, libc::SCHED_OTHER, &param));
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
        let want = if name.starts_with("self:") { 0 } else { libc::EPERM };
        assert_eq!(*errno, want, "{name}: errno {errno}, want {want}\n{line}");
    }
    assert!(alive, "the sibling survived");
    assert_eq!(nice_before, nice_after, "the sibling's priority is unchanged");
    assert_eq!(before.modified().unwrap(), after.modified().unwrap(), "the file's mtime is unchanged");
    assert_eq!(before.permissions(), after.permissions(), "the file's mode is unchanged");
}
