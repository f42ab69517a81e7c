//! Landlock from the manifest: the kernel's outer wall around a process tier
//! child, applied by the `asp-landlock` launcher **before `exec`**.
//!
//! On Landlock ABI ≤ 7 `landlock_restrict_self` binds only the calling thread
//! and the threads it creates later (TSYNC is ABI 8), so it cannot confine a
//! running Node process, whose V8 and libuv threads already exist. The
//! launcher is a single-threaded process: it applies the ruleset to itself
//! and execs the child, which inherits the domain on every thread it starts.
//!
//! The ruleset ([`LandlockSpec`]):
//! - each `fs` grant becomes a path-beneath rule at its glob's **literal
//!   prefix** (the segments before the first one with a glob character): read
//!   grants get `READ_FILE`/`READ_DIR`, write grants every write right the ABI
//!   offers (`WRITE_FILE`, make, remove, `REFER`, `TRUNCATE`, `IOCTL_DEV`).
//!   `deny.fs` and the globs themselves stay the checker's: the kernel rule is
//!   the outer wall, the checker the precise one;
//! - the runtime paths the child needs to start (its executable, libraries,
//!   the package) are added by the caller as read or exec rules;
//! - the `fetch` grants' TCP ports become `CONNECT_TCP` rules (ABI 4); `BIND_TCP`
//!   is handled with no rule, so nothing can listen. A `:*` grant leaves
//!   `connect` unhandled (no port rule can say "every port");
//! - signals and abstract unix sockets are scoped to the child (ABI 6), so it
//!   cannot signal the parent or another process, nor reach an abstract socket
//!   outside.
//!
//! Best effort by ABI: [`apply`] reports exactly what the kernel enforced
//! ([`LandlockReport`]) and, with `strict`, fails unless every part above
//! was enforced (ABI ≥ 6 and every rule added).

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

use crate::fetch::{PortRule, Scheme};
use crate::fs::GrantMode;
use crate::policy::PermissionPolicy;

/// The environment variable the launcher passes its report in (JSON).
pub const REPORT_ENV: &str = "ASP_LANDLOCK_REPORT";

/// The newest ABI this module asks for; older kernels get what they offer.
const TARGET: ABI = ABI::V6;
/// The ABI at which every part of the ruleset is enforced (scopes are ABI 6).
const FULL_ABI: i32 = 6;

/// What a path-beneath rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rights {
    /// Read files and list directories.
    Read,
    /// Create, write, truncate, remove, rename (no read).
    Write,
    /// Read and execute (the child's executable and libraries).
    Exec,
}

impl Rights {
    fn as_str(self) -> &'static str {
        match self {
            Rights::Read => "read",
            Rights::Write => "write",
            Rights::Exec => "exec",
        }
    }

    fn access(self, abi: ABI) -> BitFlags<AccessFs> {
        match self {
            Rights::Read => AccessFs::ReadFile | AccessFs::ReadDir,
            Rights::Write => AccessFs::from_write(abi),
            Rights::Exec => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
        }
    }
}

/// The ruleset to apply: path rules and TCP ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LandlockSpec {
    /// Path-beneath rules.
    pub paths: Vec<(PathBuf, Rights)>,
    /// Ports `connect` may reach; `None`: connect is not restricted (a `:*` grant).
    pub connect_tcp: Option<Vec<u16>>,
}

/// `path` opened `O_PATH` with `openat2(RESOLVE_NO_SYMLINKS)`: `ELOOP` when
/// any component is a symlink, so what the rule names is what was checked,
/// in one atomic resolution (no window between a check and the open).
fn open_no_symlinks(path: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: open_how is plain data; zeroed is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: a NUL-terminated path and a live open_how of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor; it is ours alone.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether an `O_PATH` descriptor is a directory (`fstat` works on `O_PATH`).
fn is_dir_fd(fd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: stat is plain data; fstat writes it for a live descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is live for the call; `st` is a live local.
    unsafe { libc::fstat(fd.as_raw_fd(), &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR }
}

/// The literal prefix of a normalised posix glob: its segments before the
/// first one with a glob character (`*`, `?`, `[`, `{`, `\`).
pub fn literal_prefix(glob: &str) -> PathBuf {
    let mut out = PathBuf::from("/");
    for seg in glob.split('/').filter(|s| !s.is_empty()) {
        if seg.contains(['*', '?', '[', ']', '{', '}', '\\']) {
            break;
        }
        out.push(seg);
    }
    out
}

impl LandlockSpec {
    /// The manifest's part: fs grants at their literal prefixes, fetch ports.
    pub fn from_policy(policy: &PermissionPolicy) -> Self {
        let mut paths = Vec::new();
        for g in policy.fs_grants() {
            let prefix = literal_prefix(g.glob());
            match g.mode() {
                GrantMode::Read => paths.push((prefix, Rights::Read)),
                GrantMode::Write => paths.push((prefix, Rights::Write)),
                GrantMode::ReadWrite => {
                    paths.push((prefix.clone(), Rights::Read));
                    paths.push((prefix, Rights::Write));
                }
            }
        }
        let mut ports = Some(Vec::new());
        for p in policy.fetch_patterns() {
            let add: &[u16] = match (p.port(), p.scheme()) {
                (PortRule::Any, _) => {
                    ports = None;
                    break;
                }
                (PortRule::Exact(n), _) => &[n],
                (PortRule::Default, Some(Scheme::Http)) => &[80],
                (PortRule::Default, Some(Scheme::Https)) => &[443],
                (PortRule::Default, _) => &[80, 443],
            };
            if let Some(v) = ports.as_mut() {
                v.extend_from_slice(add);
            }
        }
        if let Some(v) = ports.as_mut() {
            v.sort_unstable();
            v.dedup();
        }
        paths.sort();
        paths.dedup();
        LandlockSpec { paths, connect_tcp: ports }
    }
}

/// One rule as the kernel took it (or why not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleOutcome {
    /// The path.
    pub path: String,
    /// `read`, `write` or `exec`.
    pub rights: &'static str,
    /// `None`: added; `Some(why)`: not added (a missing path, ...).
    pub skipped: Option<String>,
}

/// What the kernel enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockReport {
    /// The Landlock ABI in force (0: Landlock unavailable; nothing enforced).
    pub abi: i32,
    /// The kernel's own ABI when newer than this crate knows.
    pub kernel_abi: Option<i32>,
    /// File-system rights the domain handles (denied unless a rule grants them).
    pub fs_handled: Vec<&'static str>,
    /// The path rules.
    pub rules: Vec<RuleOutcome>,
    /// Ports `connect` may reach, when the domain handles `CONNECT_TCP`.
    pub connect_tcp: Option<Vec<u16>>,
    /// `BIND_TCP` is handled with no rule: nothing may bind.
    pub bind_denied: bool,
    /// Scopes in force (`signal`, `abstract_unix_socket`).
    pub scoped: Vec<&'static str>,
    /// What this kernel could not enforce, by feature (and the ABI that has it).
    pub unavailable: Vec<&'static str>,
}

fn fs_names(a: BitFlags<AccessFs>) -> Vec<&'static str> {
    let all: [(AccessFs, &str); 16] = [
        (AccessFs::Execute, "execute"),
        (AccessFs::WriteFile, "write_file"),
        (AccessFs::ReadFile, "read_file"),
        (AccessFs::ReadDir, "read_dir"),
        (AccessFs::RemoveDir, "remove_dir"),
        (AccessFs::RemoveFile, "remove_file"),
        (AccessFs::MakeChar, "make_char"),
        (AccessFs::MakeDir, "make_dir"),
        (AccessFs::MakeReg, "make_reg"),
        (AccessFs::MakeSock, "make_sock"),
        (AccessFs::MakeFifo, "make_fifo"),
        (AccessFs::MakeBlock, "make_block"),
        (AccessFs::MakeSym, "make_sym"),
        (AccessFs::Refer, "refer"),
        (AccessFs::Truncate, "truncate"),
        (AccessFs::IoctlDev, "ioctl_dev"),
    ];
    all.iter().filter(|(f, _)| a.contains(*f)).map(|(_, n)| *n).collect()
}

fn abi_of(n: i32) -> ABI {
    match n {
        ..=0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => ABI::V6,
    }
}

/// The running kernel's Landlock ABI (0 when unavailable), from
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
pub fn kernel_abi() -> i32 {
    // SAFETY: the version query takes no pointer (NULL, size 0).
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if v < 0 {
        0
    } else {
        v as i32
    }
}

impl LandlockReport {
    /// Every part of the ruleset was enforced (ABI ≥ 6, every rule added).
    pub fn fully_enforced(&self) -> bool {
        self.abi >= FULL_ABI && self.rules.iter().all(|r| r.skipped.is_none())
    }

    /// The report as JSON (the launcher's `ASP_LANDLOCK_REPORT`; `lockdown()` returns it).
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "abi": self.abi,
            "kernelAbi": self.kernel_abi,
            "fullyEnforced": self.fully_enforced(),
            "fsHandled": self.fs_handled,
            "rules": self.rules.iter().map(|r| serde_json::json!({
                "path": r.path, "rights": r.rights, "skipped": r.skipped,
            })).collect::<Vec<_>>(),
            "connectTcp": self.connect_tcp,
            "bindDenied": self.bind_denied,
            "scoped": self.scoped,
            "unavailable": self.unavailable,
        })
        .to_string()
    }
}

/// Whether a launcher report (JSON, [`LandlockReport::to_json`]) says every
/// part was enforced: ABI ≥ 6 and no rule skipped. Anything else is `false`.
pub fn report_fully_enforced(json: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else { return false };
    let abi_ok = v.get("abi").and_then(|a| a.as_i64()).is_some_and(|a| a >= i64::from(FULL_ABI));
    let rules_ok = v
        .get("rules")
        .and_then(|r| r.as_array())
        .is_some_and(|rs| rs.iter().all(|r| r.get("skipped").is_some_and(|s| s.is_null())));
    abi_ok && rules_ok
}

/// Whether a launcher report has a path rule at `/` itself (which would let
/// the process list the root directory).
pub fn report_has_root_rule(json: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(json).ok().is_some_and(|v| {
        v.get("rules")
            .and_then(|r| r.as_array())
            .is_some_and(|rs| rs.iter().any(|r| r.get("path").and_then(|p| p.as_str()) == Some("/")))
    })
}

/// Why [`apply`] failed. Nothing is half-applied silently: on error the
/// caller must not exec the child.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LandlockError {
    /// The kernel or the crate refused the ruleset.
    #[error("landlock: {0}")]
    Kernel(String),
    /// `strict` was asked for and this is what was not enforced.
    #[error("landlock (strict): not fully enforced: {0}")]
    NotEnforced(String),
}

fn kerr(e: impl std::fmt::Display) -> LandlockError {
    LandlockError::Kernel(e.to_string())
}

/// Applies `spec` to the calling thread and the threads (and programs) it
/// starts later, and sets no-new-privs. Call it single-threaded, right before
/// `exec`. With `strict`, returns [`LandlockError::NotEnforced`] (and the
/// caller must not exec) unless [`LandlockReport::fully_enforced`].
pub fn apply(spec: &LandlockSpec, strict: bool) -> Result<LandlockReport, LandlockError> {
    let kabi = kernel_abi();
    let abi = abi_of(kabi);
    let mut report = LandlockReport {
        abi: kabi,
        kernel_abi: Some(kabi),
        fs_handled: vec![],
        rules: vec![],
        connect_tcp: None,
        bind_denied: false,
        scoped: vec![],
        unavailable: vec![],
    };
    for (min, what) in [
        (1, "fs (ABI 1)"),
        (2, "refer (ABI 2)"),
        (3, "truncate (ABI 3)"),
        (4, "tcp connect/bind (ABI 4)"),
        (5, "ioctl_dev (ABI 5)"),
        (6, "scoped signals and abstract unix sockets (ABI 6)"),
    ] {
        if kabi < min {
            report.unavailable.push(what);
        }
    }
    if kabi < 1 {
        if strict {
            return Err(LandlockError::NotEnforced("Landlock is not available on this kernel".into()));
        }
        return Ok(report);
    }
    let handled = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default().handle_access(handled).map_err(kerr)?;
    report.fs_handled = fs_names(handled);
    let net = kabi >= 4;
    if net {
        let mut n: BitFlags<AccessNet> = AccessNet::BindTcp.into();
        if spec.connect_tcp.is_some() {
            n |= AccessNet::ConnectTcp;
        }
        ruleset = ruleset.handle_access(n).map_err(kerr)?;
        report.bind_denied = true;
        report.connect_tcp = spec.connect_tcp.clone();
    }
    if kabi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(TARGET)).map_err(kerr)?;
        report.scoped = vec!["signal", "abstract_unix_socket"];
    }
    let mut created = ruleset.create().map_err(kerr)?;
    for (path, rights) in &spec.paths {
        let outcome = |skipped: Option<String>| RuleOutcome {
            path: path.to_string_lossy().into_owned(),
            rights: rights.as_str(),
            skipped,
        };
        // Never through a symlink: a grant's directory is the plugin's to
        // change (a write grant above it lets a run swap it for a link to `/`,
        // and the next run's rule would follow). Runtime paths come canonical.
        let fd = match open_no_symlinks(path) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                report.rules.push(outcome(Some("a symlink on the path (not followed)".into())));
                continue;
            }
            Err(e) => {
                report.rules.push(outcome(Some(format!("cannot open: {e}"))));
                continue;
            }
        };
        let mut access = rights.access(abi) & handled;
        if !is_dir_fd(&fd) {
            access &= AccessFs::from_file(abi);
        }
        if access.is_empty() {
            report.rules.push(outcome(Some("no right applies to this file".into())));
            continue;
        }
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(kerr)?;
        report.rules.push(outcome(None));
    }
    if net {
        for &port in spec.connect_tcp.iter().flatten() {
            created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp)).map_err(kerr)?;
        }
    }
    if strict && !report.fully_enforced() {
        return Err(LandlockError::NotEnforced(report.to_json()));
    }
    let status = created.restrict_self().map_err(kerr)?;
    match status.landlock {
        LandlockStatus::Available { effective_abi, .. } if status.no_new_privs => {
            // The crate agrees with the version query (it knows up to ABI 10).
            if (effective_abi as i32) < kabi.min(10) {
                return Err(kerr(format!("the crate enforced ABI {} of {kabi}", effective_abi as i32)));
            }
        }
        other => return Err(kerr(format!("not enforced: {other:?}, no_new_privs={}", status.no_new_privs))),
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_from_a_manifest() {
        let json = r#"{
            "fs": ["/srv/app/**", { "path": "/var/out/*.log", "mode": "write" }, { "path": "/data/x.json", "mode": "readwrite" }],
            "fetch": ["https://api.example.com", "http://a.example:8080/v1/*", "b.example"]
        }"#;
        let policy =
            PermissionPolicy::from_json(json, crate::PolicyOptions::new("p").platform(crate::Platform::Posix)).unwrap();
        let spec = LandlockSpec::from_policy(&policy);
        assert_eq!(
            spec.paths,
            vec![
                (PathBuf::from("/data/x.json"), Rights::Read),
                (PathBuf::from("/data/x.json"), Rights::Write),
                (PathBuf::from("/srv/app"), Rights::Read),
                (PathBuf::from("/var/out"), Rights::Write),
            ]
        );
        assert_eq!(spec.connect_tcp, Some(vec![80, 443, 8080]));
        // A `:*` grant: no port rule can say "every port", so connect is not handled.
        let any =
            PermissionPolicy::from_json(r#"{ "fetch": ["https://a.example:*"] }"#, crate::PolicyOptions::new("p"))
                .unwrap();
        assert_eq!(LandlockSpec::from_policy(&any).connect_tcp, None);
        // No fetch grant: connect handled with no port.
        let none = PermissionPolicy::from_json("{}", crate::PolicyOptions::new("p")).unwrap();
        assert_eq!(LandlockSpec::from_policy(&none).connect_tcp, Some(vec![]));
    }

    #[test]
    fn fully_enforced_reads_only_a_whole_report() {
        assert!(report_fully_enforced(r#"{"abi":7,"rules":[{"path":"/a","rights":"read","skipped":null}]}"#));
        assert!(!report_fully_enforced(r#"{"abi":5,"rules":[]}"#));
        assert!(!report_fully_enforced(r#"{"abi":7,"rules":[{"path":"/a","rights":"read","skipped":"cannot open"}]}"#));
        assert!(!report_fully_enforced(r#"{"abi":"7","rules":[]}"#));
        assert!(!report_fully_enforced("not json"));
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(literal_prefix("/srv/app/**"), PathBuf::from("/srv/app"));
        assert_eq!(literal_prefix("/srv/*.txt"), PathBuf::from("/srv"));
        assert_eq!(literal_prefix("/srv/a/b.txt"), PathBuf::from("/srv/a/b.txt"));
        assert_eq!(literal_prefix("/srv/{a,b}/c"), PathBuf::from("/srv"));
        assert_eq!(literal_prefix("/**"), PathBuf::from("/"));
    }
}
