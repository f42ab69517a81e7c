//! `asp-landlock`: applies the manifest's Landlock ruleset to itself, then
//! execs the process tier's child, which inherits it on every thread it will
//! ever start (Landlock ABI ≤ 7 cannot confine threads that already run, so a
//! Node child cannot apply it itself). Single-threaded until `exec`.
//!
//! ```text
//! asp-landlock [--strict] [--manifest JSON] [--read PATH]... [--write PATH]...
//!              [--exec PATH]... -- PROGRAM [ARG]...
//! ```
//!
//! `--manifest`: the plugin's manifest (its `fs` grants and `fetch` ports);
//! `--read`/`--write`/`--exec`: the runtime paths the child needs besides
//! (its executable, libraries, the package). The report of what the kernel
//! enforced goes to the child in `ASP_LANDLOCK_REPORT` (JSON), where
//! `lockdown()` returns it. `--strict`: exit 126 without running PROGRAM
//! unless every part was enforced. Errors: 126 (Landlock), 127 (exec), 2 (usage).

#[cfg(target_os = "linux")]
fn main() {
    use api_sandbox_permissions::lockdown::landlock::{apply, LandlockSpec, Rights, REPORT_ENV};
    use api_sandbox_permissions::{PermissionPolicy, Platform, PolicyOptions};
    use std::os::unix::process::CommandExt;

    let usage = |msg: &str| -> ! {
        eprintln!("asp-landlock: {msg}\nusage: asp-landlock [--strict] [--manifest JSON] [--read P]... [--write P]... [--exec P]... -- PROGRAM [ARG]...");
        std::process::exit(2)
    };
    let mut args = std::env::args_os().skip(1);
    let mut spec = LandlockSpec::default();
    let mut extra = Vec::new();
    let mut strict = false;
    let mut program = Vec::new();
    while let Some(a) = args.next() {
        let mut value = |what: &str| args.next().unwrap_or_else(|| usage(&format!("{what} needs a value")));
        match a.to_str() {
            Some("--strict") => strict = true,
            Some("--manifest") => {
                let json = value("--manifest").into_string().unwrap_or_else(|_| usage("--manifest is not UTF-8"));
                let policy =
                    PermissionPolicy::from_json(&json, PolicyOptions::new("asp-landlock").platform(Platform::Posix))
                        .unwrap_or_else(|e| usage(&format!("invalid manifest: {e}")));
                spec = LandlockSpec::from_policy(&policy);
            }
            // Runtime paths are the host's (trusted): canonical, so their rules
            // are taken without symlinks like the manifest's (which are not resolved).
            Some("--read") => extra.push((canonical(value("--read")), Rights::Read)),
            Some("--write") => extra.push((canonical(value("--write")), Rights::Write)),
            Some("--exec") => extra.push((canonical(value("--exec")), Rights::Exec)),
            Some("--") => {
                program.extend(args.by_ref());
                break;
            }
            _ => usage(&format!("unknown argument {a:?}")),
        }
    }
    if program.is_empty() {
        usage("no PROGRAM after --");
    }
    spec.paths.extend(extra);
    let report = match apply(&spec, strict) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("asp-landlock: {e}");
            std::process::exit(126)
        }
    };
    let err = std::process::Command::new(&program[0]).args(&program[1..]).env(REPORT_ENV, report.to_json()).exec();
    eprintln!("asp-landlock: cannot exec {:?}: {err}", program[0]);
    std::process::exit(127)
}

/// A runtime path resolved (`/lib` -> `/usr/lib`, `/proc/self` -> `/proc/<pid>`),
/// or as given when it does not exist (its rule is then skipped: cannot open).
#[cfg(target_os = "linux")]
fn canonical(p: std::ffi::OsString) -> std::path::PathBuf {
    std::fs::canonicalize(&p).unwrap_or_else(|_| p.into())
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("asp-landlock: Landlock is Linux only");
    std::process::exit(126)
}
