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
