//! Landlock from the manifest, checked against the kernel: the `asp-landlock`
//! launcher applies a manifest's ruleset and execs this test binary as the
//! child, which then opens every grant for real (allowed) and a path beside
//! each (EACCES), with raw syscalls and no checker in the way; connects to the
//! granted port and another; binds; signals its parent. Skips, saying why,
//! where the kernel has no Landlock.
#![cfg(all(target_os = "linux", feature = "launcher"))]

use std::process::Command;

use api_sandbox_permissions::lockdown::landlock::{kernel_abi, REPORT_ENV};

const CHILD: &str = "ASP_LANDLOCK_CHILD";

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
}

/// Raw `openat`: 0 when it opened (and closes it), else the errno.
fn open(path: &str, flags: i32) -> i32 {
    let c = std::ffi::CString::new(path).unwrap();
    // SAFETY: a NUL-terminated path; the descriptor is closed at once.
    let fd = unsafe { libc::openat(libc::AT_FDCWD, c.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd < 0 {
        return errno();
    }
    // SAFETY: a descriptor this function owns.
    unsafe { libc::close(fd) };
    0
}

fn connect(port: u16) -> i32 {
    // SAFETY: a socket, a sockaddr_in on the stack of the right size, closed after.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(s >= 0);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be() },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(s, (&addr as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&addr) as u32);
        let e = if rc < 0 { errno() } else { 0 };
        libc::close(s);
        e
    }
}

fn child() {
    let dir = std::env::var("DIR").unwrap();
    let granted: u16 = std::env::var("GRANTED_PORT").unwrap().parse().unwrap();
    let other: u16 = std::env::var("OTHER_PORT").unwrap().parse().unwrap();
    let report = std::env::var(REPORT_ENV).unwrap_or_default();
    let mut out = vec![format!("report={}", !report.is_empty())];
    let mut r = |name: &str, errno: i32| out.push(format!("{name}={errno}"));
    let ro = libc::O_RDONLY;
    let wr = libc::O_WRONLY | libc::O_CREAT;
    // Grants: read tree, write tree, an exact file.
    r("ok:read_granted", open(&format!("{dir}/read/a.txt"), ro));
    r("ok:list_granted", open(&format!("{dir}/read"), ro | libc::O_DIRECTORY));
    r("ok:read_nested", open(&format!("{dir}/read/sub/n.txt"), ro));
    r("ok:write_granted", open(&format!("{dir}/write/new.txt"), wr));
    r("ok:read_exact_file", open(&format!("{dir}/exact.txt"), ro));
    // Beside each grant.
    r("no:read_beside", open(&format!("{dir}/beside/b.txt"), ro));
    r("no:list_parent", open(&dir, ro | libc::O_DIRECTORY));
    r("no:write_into_read_grant", open(&format!("{dir}/read/new.txt"), wr));
    r("no:overwrite_read_grant", open(&format!("{dir}/read/a.txt"), libc::O_WRONLY));
    r("no:read_write_grant", open(&format!("{dir}/write/w.txt"), ro));
    r("no:read_beside_exact", open(&format!("{dir}/exact2.txt"), ro));
    r("no:etc_hostname", open("/etc/hostname", ro));
    // A checker's prefix trick: `read2` starts with `read` as a string.
    r("no:read_prefix_sibling", open(&format!("{dir}/read2/c.txt"), ro));
    let cd = std::ffi::CString::new(format!("{dir}/write/d")).unwrap();
    // SAFETY: NUL-terminated path.
    r("ok:mkdir_in_write", if unsafe { libc::mkdir(cd.as_ptr(), 0o700) } < 0 { errno() } else { 0 });
    let cd = std::ffi::CString::new(format!("{dir}/read/d")).unwrap();
    // SAFETY: NUL-terminated path.
    r("no:mkdir_in_read", if unsafe { libc::mkdir(cd.as_ptr(), 0o700) } < 0 { errno() } else { 0 });
    // Network: the granted port, another one, bind.
    r("ok:connect_granted", connect(granted));
    r("no:connect_other", connect(other));
    // SAFETY: as in `connect`.
    let bind = unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: 0u16.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be() },
            sin_zero: [0; 8],
        };
        let rc = libc::bind(s, (&addr as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&addr) as u32);
        let e = if rc < 0 { errno() } else { 0 };
        libc::close(s);
        e
    };
    r("no:bind", bind);
    // Scopes: the parent cannot be signalled; this process can.
    // SAFETY: signal 0 only checks permission.
    r("no:kill_parent", if unsafe { libc::kill(libc::getppid(), 0) } < 0 { errno() } else { 0 });
    // SAFETY: as above.
    r("ok:kill_self", if unsafe { libc::kill(libc::getpid(), 0) } < 0 { errno() } else { 0 });
    // A thread started now is confined too.
    let t = {
        let d = dir.clone();
        std::thread::spawn(move || open(&format!("{d}/beside/b.txt"), libc::O_RDONLY)).join().unwrap()
    };
    r("no:read_beside_from_thread", t);
    println!("LANDLOCK {}", out.join(" "));
    println!("REPORT {report}");
}

struct Fixture {
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture(tag: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("asp-landlock-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["read/sub", "read2", "write", "beside"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    for (f, body) in [
        ("read/a.txt", "a"),
        ("read/sub/n.txt", "n"),
        ("read2/c.txt", "c"),
        ("write/w.txt", "w"),
        ("beside/b.txt", "b"),
        ("exact.txt", "e"),
        ("exact2.txt", "e2"),
    ] {
        std::fs::write(dir.join(f), body).unwrap();
    }
    Fixture { dir }
}

/// The launcher's arguments for this test binary as the child: the manifest
/// and what the binary needs to start (itself, its libraries).
fn launcher(manifest: &str, strict: bool) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_asp-landlock"));
    if strict {
        c.arg("--strict");
    }
    c.args(["--manifest", manifest]);
    c.arg("--exec").arg(&exe);
    // The kernel opens the ELF interpreter (ld.so) for execution: EXECUTE there.
    for (flag, p) in [("--exec", "/lib"), ("--exec", "/lib64"), ("--read", "/usr/lib"), ("--read", "/etc/ld.so.cache")]
    {
        if std::path::Path::new(p).exists() {
            c.args([flag, p]);
        }
    }
    c.arg("--").arg(exe).args([
        "--exact",
        "landlock_enforces_the_manifest_against_the_kernel",
        "--nocapture",
        "--test-threads=1",
    ]);
    c
}

#[test]
fn landlock_enforces_the_manifest_against_the_kernel() {
    if std::env::var(CHILD).is_ok() {
        child();
        return;
    }
    if kernel_abi() < 1 {
        eprintln!("skipped: this kernel has no Landlock (landlock_create_ruleset answered ENOSYS/EOPNOTSUPP)");
        return;
    }
    let f = fixture("enforce");
    let d = f.dir.to_str().unwrap();
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (gp, op) = (granted.local_addr().unwrap().port(), other.local_addr().unwrap().port());
    let manifest = serde_json::json!({
        "fs": [format!("{d}/read/**"), { "path": format!("{d}/write/**"), "mode": "write" }, format!("{d}/exact.txt")],
        "fetch": [format!("http://127.0.0.1:{gp}")],
    })
    .to_string();
    let out = launcher(&manifest, false)
        .env(CHILD, "1")
        .env("DIR", d)
        .env("GRANTED_PORT", gp.to_string())
        .env("OTHER_PORT", op.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line =
        stdout.lines().find_map(|l| l.split_once("LANDLOCK ").map(|(_, r)| r)).unwrap_or_else(|| panic!("{stdout}"));
    let abi = kernel_abi();
    let mut checked = 0;
    for kv in line.split(' ') {
        let (name, v) = kv.split_once('=').unwrap();
        if name == "report" {
            assert_eq!(v, "true", "the launcher passed its report");
            continue;
        }
        let errno: i32 = v.parse().unwrap();
        // Features by ABI: fs from 1, TCP from 4, scopes from 6.
        let needs = if name.contains("connect") || name.contains("bind") {
            4
        } else if name.contains("kill") {
            6
        } else {
            1
        };
        if !name.starts_with("ok:") && abi < needs {
            // This kernel lacks the feature: the report lists it as unavailable.
            continue;
        }
        let want = if name.starts_with("ok:") {
            0
        } else if name.contains("kill_parent") {
            libc::EPERM
        } else {
            libc::EACCES
        };
        assert_eq!(errno, want, "{name}: errno {errno}, want {want}\n{line}");
        checked += 1;
    }
    assert!(checked >= 20, "{line}");
    let report: serde_json::Value =
        serde_json::from_str(stdout.lines().find_map(|l| l.strip_prefix("REPORT ")).unwrap()).unwrap();
    assert_eq!(report["abi"], abi);
    let paths: Vec<&str> = report["rules"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    for p in [format!("{d}/read"), format!("{d}/write"), format!("{d}/exact.txt")] {
        assert!(paths.contains(&p.as_str()), "{p} in {paths:?}");
    }
    if abi >= 4 {
        assert_eq!(report["connectTcp"], serde_json::json!([gp]));
        assert_eq!(report["bindDenied"], true);
    }
    if abi >= 6 {
        assert_eq!(report["fullyEnforced"], true);
        assert_eq!(report["scoped"], serde_json::json!(["signal", "abstract_unix_socket"]));
    }
    drop((granted, other));
}

#[test]
fn landlock_strict_fails_closed_before_the_child_runs() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    // A grant whose literal prefix does not exist cannot become a rule: strict refuses.
    let f = fixture("strict");
    let manifest = serde_json::json!({ "fs": [format!("{}/missing/**", f.dir.display())] }).to_string();
    let out = launcher(&manifest, true).env(CHILD, "1").env("DIR", &f.dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(126), "{stdout}\n{stderr}");
    assert!(!stdout.contains("LANDLOCK"), "the child never ran: {stdout}");
    assert!(stderr.contains("not fully enforced") || stderr.contains("not available"), "{stderr}");
    // Without --strict the same manifest runs, and the report says what was skipped.
    let out = launcher(&manifest, false)
        .env(CHILD, "1")
        .env("DIR", &f.dir)
        .env("GRANTED_PORT", "9")
        .env("OTHER_PORT", "9")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if kernel_abi() >= 1 {
        let report: serde_json::Value =
            serde_json::from_str(stdout.lines().find_map(|l| l.strip_prefix("REPORT ")).unwrap()).unwrap();
        assert_eq!(report["fullyEnforced"], false, "{report}");
        assert!(report["rules"][0]["skipped"].as_str().unwrap().contains("cannot open"), "{report}");
    }
}
