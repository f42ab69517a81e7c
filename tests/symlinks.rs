//! `resolveSymlinks` and `authorize_fs` on real temp dirs: the named attacks
//! (a `..` after a directory link, Node's TRAVERSALSYMLINK regression), the
//! limits (40 links, loops, `..` after a missing directory), and the kernel as
//! the oracle over random link trees (a proptest strategy): whatever is allowed, `open(2)` of the
//! RAW path reaches a file inside the grant (read back from /proc/self/fd),
//! and the authorised path names that same file.
#![cfg(unix)]

use std::cell::Cell;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};

use api_sandbox_permissions::fs::real_path;
use api_sandbox_permissions::{
    DenyReason, FsCheckOptions, FsMode, PermissionChecker, PermissionPolicy, Platform, PolicyOptions,
};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;

#[path = "common/runner.rs"]
mod runner;
use runner::run_counted;

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> Self {
        let base = std::env::temp_dir().join(format!("asp-symlinks-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        TempDir(std::fs::canonicalize(&base).unwrap())
    }
    fn s(&self) -> &str {
        self.0.to_str().unwrap()
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn policy(grants: serde_json::Value) -> PermissionPolicy {
    PermissionPolicy::from_manifest(&json!({ "fs": grants }), PolicyOptions::new("t").platform(Platform::Posix))
        .unwrap()
}

fn resolved(p: &PermissionPolicy, raw: &str, mode: FsMode) -> Result<String, DenyReason> {
    p.authorize_fs(raw, mode, true)
}

#[test]
fn a_dotdot_after_a_directory_link_climbs_from_the_target() {
    let t = TempDir::new("dotdot");
    let root = t.s();
    std::fs::create_dir_all(t.0.join("grant/a/b/c")).unwrap();
    std::fs::write(t.0.join("protected.md"), "p").unwrap();
    std::fs::write(t.0.join("grant/a/b/ok.txt"), "ok").unwrap();
    symlink("/", t.0.join("grant/rootlink")).unwrap();
    symlink(".", t.0.join("grant/a/b/c/dot")).unwrap();
    let p = policy(json!([{ "path": format!("{root}/grant/**"), "mode": "readwrite" }]));

    // The case: lexically inside, and the kernel opens /etc/passwd.
    let raw = format!("{root}/grant/rootlink/../etc/passwd");
    assert_eq!(p.check_fs(&raw, FsMode::Read).reason(), None);
    assert_eq!(resolved(&p, &raw, FsMode::Read), Err(DenyReason::SymlinkEscape));
    assert_eq!(real_path(Path::new(&raw)).unwrap(), PathBuf::from("/etc/passwd"));
    // A link to `.` at depth 3 climbs three levels more than the text says.
    let raw = format!("{root}/grant/a/b/c/dot/../../../../protected.md");
    assert_eq!(p.check_fs(&raw, FsMode::Read).reason(), None);
    assert_eq!(resolved(&p, &raw, FsMode::Read), Err(DenyReason::SymlinkEscape));
    assert_eq!(real_path(Path::new(&raw)).unwrap(), t.0.join("protected.md"));
    // The same link, used within the grant, resolves to where the kernel goes.
    let raw = format!("{root}/grant/a/b/c/dot/../ok.txt");
    assert_eq!(resolved(&p, &raw, FsMode::Read), Ok(format!("{root}/grant/a/b/ok.txt")));
    // `..` at `/` stays at `/`, as in the kernel.
    let raw = format!("{root}/grant/rootlink/../../../{}", &root[1..]);
    assert_eq!(real_path(Path::new(&raw)).unwrap(), t.0);
}

/// Node's own regression case (test/parallel/test-permission-fs-symlink.js,
/// TRAVERSALSYMLINK): allowed/deep1/deep2/deep3/gotcha -> allowed, then
/// `gotcha/../protected-file.md` is lexically inside `allowed` but opens the
/// file beside it.
#[test]
fn node_traversal_symlink_regression_is_denied() {
    let t = TempDir::new("node");
    let allowed = t.0.join("allowed-folder");
    std::fs::create_dir_all(allowed.join("deep1/deep2/deep3")).unwrap();
    std::fs::write(t.0.join("protected-file.md"), "protected").unwrap();
    let gotcha = allowed.join("deep1/deep2/deep3/gotcha");
    symlink(&allowed, &gotcha).unwrap();
    let allowed_s = allowed.to_str().unwrap();
    let p = policy(json!([{ "path": format!("{allowed_s}/**"), "mode": "readwrite" }]));
    let raw = format!("{}/../protected-file.md", gotcha.to_str().unwrap());
    assert_eq!(p.check_fs(&raw, FsMode::Read).reason(), None, "lexically inside");
    assert_eq!(std::fs::read_to_string(&raw).unwrap(), "protected", "the kernel really leaves");
    assert_eq!(resolved(&p, &raw, FsMode::Read), Err(DenyReason::SymlinkEscape));
    assert_eq!(resolved(&p, &raw, FsMode::Write), Err(DenyReason::SymlinkEscape));
}

#[test]
fn limits_loops_dangling_links_and_missing_tails_fail_closed() {
    let t = TempDir::new("limits");
    let root = t.s();
    std::fs::create_dir_all(t.0.join("grant/sub")).unwrap();
    std::fs::create_dir_all(t.0.join("outside")).unwrap();
    std::fs::write(t.0.join("grant/sub/f.txt"), "f").unwrap();
    // chain0 -> chain1 -> ... -> chain40 -> sub: 41 links; chain1 needs 40.
    for i in 0..41 {
        let target = if i == 40 { "sub".to_owned() } else { format!("chain{}", i + 1) };
        symlink(target, t.0.join(format!("grant/chain{i}"))).unwrap();
    }
    symlink("loop-b", t.0.join("grant/loop-a")).unwrap();
    symlink("loop-a", t.0.join("grant/loop-b")).unwrap();
    symlink("../outside/created", t.0.join("grant/dangling-out")).unwrap();
    symlink("sub/created", t.0.join("grant/dangling-in")).unwrap();
    symlink("dangling-in", t.0.join("grant/dangling-chain")).unwrap();
    symlink("missing/../../outside/x", t.0.join("grant/dangling-dotdot")).unwrap();
    let p = policy(json!([{ "path": format!("{root}/grant/**"), "mode": "readwrite" }]));
    let g = |rel: &str| format!("{root}/grant/{rel}");

    // The kernel follows 40 links and refuses the 41st: so does the walk.
    assert_eq!(resolved(&p, &g("chain1/f.txt"), FsMode::Read), Ok(g("sub/f.txt")));
    assert!(std::fs::read(g("chain1/f.txt")).is_ok());
    assert_eq!(resolved(&p, &g("chain0/f.txt"), FsMode::Read), Err(DenyReason::SymlinkEscape));
    assert_eq!(std::fs::read(g("chain0/f.txt")).unwrap_err().raw_os_error(), Some(40), "ELOOP");
    assert_eq!(resolved(&p, &g("loop-a"), FsMode::Read), Err(DenyReason::SymlinkEscape));
    // A dangling final link resolves to what a create would make.
    assert_eq!(resolved(&p, &g("dangling-out"), FsMode::Write), Err(DenyReason::SymlinkEscape));
    assert_eq!(resolved(&p, &g("dangling-in"), FsMode::Write), Ok(g("sub/created")));
    assert_eq!(resolved(&p, &g("dangling-chain"), FsMode::Write), Ok(g("sub/created")));
    assert_eq!(resolved(&p, &g("dangling-dotdot"), FsMode::Write), Err(DenyReason::SymlinkEscape));
    // Missing tails: appended lexically, but `..` after a missing directory denies.
    assert_eq!(resolved(&p, &g("missing/new.txt"), FsMode::Write), Ok(g("missing/new.txt")));
    assert_eq!(resolved(&p, &g("sub/missing/../f.txt"), FsMode::Read), Err(DenyReason::SymlinkEscape));
    // A file used as a directory is ENOTDIR for the kernel: deny.
    assert_eq!(resolved(&p, &g("sub/f.txt/../f.txt"), FsMode::Read), Err(DenyReason::SymlinkEscape));
    assert_eq!(resolved(&p, &g("sub/f.txt/"), FsMode::Read), Err(DenyReason::SymlinkEscape));
    // `.`, repeated and trailing slashes are no-ops on directories.
    assert_eq!(resolved(&p, &format!("{root}//grant/./sub//f.txt"), FsMode::Read), Ok(g("sub/f.txt")));
    assert_eq!(resolved(&p, &g("sub/"), FsMode::Read), Ok(g("sub")));
    // A real path past the length limit cannot be checked: deny.
    // (Built through a shortcut link: no path string handed to mkdir is over PATH_MAX.)
    let eight = vec!["d".repeat(250); 8].join("/");
    let nine = vec!["d".repeat(250); 9].join("/");
    std::fs::create_dir_all(t.0.join("grant").join(&eight)).unwrap();
    symlink(&eight, t.0.join("grant/shortcut")).unwrap();
    std::fs::create_dir_all(t.0.join("grant/shortcut").join(&nine)).unwrap();
    let raw = g(&format!("shortcut/{nine}/x"));
    assert!(raw.len() < 4096);
    assert_eq!(p.check_fs(&raw, FsMode::Write).reason(), None);
    assert_eq!(resolved(&p, &raw, FsMode::Write), Err(DenyReason::SymlinkEscape));
    // Without resolving, authorize hands back the normalised path.
    assert_eq!(p.authorize_fs(&format!("{root}/grant/./x//y/../z"), FsMode::Read, false), Ok(g("x/z")));
    assert_eq!(p.authorize_fs(&format!("{root}/grant/../x"), FsMode::Read, false), Err(DenyReason::PathTraversal));
}

#[test]
fn the_real_path_keeps_its_own_mode_and_both_paths_must_be_granted() {
    let t = TempDir::new("modes");
    let root = t.s();
    std::fs::create_dir_all(t.0.join("rw")).unwrap();
    std::fs::create_dir_all(t.0.join("ro")).unwrap();
    symlink(t.0.join("ro"), t.0.join("rw/to-ro")).unwrap();
    symlink(t.0.join("rw"), t.0.join("ro/to-rw")).unwrap();
    let p = policy(json!([{ "path": format!("{root}/rw/**"), "mode": "readwrite" }, format!("{root}/ro/**")]));
    assert_eq!(resolved(&p, &format!("{root}/rw/to-ro/x"), FsMode::Read), Ok(format!("{root}/ro/x")));
    assert_eq!(resolved(&p, &format!("{root}/rw/to-ro/x"), FsMode::Write), Err(DenyReason::ModeNotGranted));
    // The lexical path must be granted too: a read-only path into a writable dir stays read-only.
    assert_eq!(resolved(&p, &format!("{root}/ro/to-rw/x"), FsMode::Write), Err(DenyReason::ModeNotGranted));
    // The checker counts and returns the same.
    let checker = PermissionChecker::with_global_meter(policy(json!([format!("{root}/ro/**")])));
    let opts = FsCheckOptions { resolve_symlinks: true };
    assert_eq!(checker.authorize_fs(&format!("{root}/ro/./y"), FsMode::Read, opts).unwrap(), format!("{root}/ro/y"));
    let err = checker.authorize_fs(&format!("{root}/ro/to-rw/y"), FsMode::Read, opts).unwrap_err();
    assert_eq!(err.denial.reason, DenyReason::SymlinkEscape);
    // A win32 policy cannot resolve on a posix host: fail closed.
    let w = PermissionPolicy::from_manifest(
        &json!({ "fs": ["C:\\**"] }),
        PolicyOptions::new("t").platform(Platform::Win32),
    )
    .unwrap();
    assert_eq!(w.authorize_fs("C:\\x", FsMode::Read, true), Err(DenyReason::SymlinkEscape));
    assert_eq!(w.authorize_fs("C:\\x\\.\\y", FsMode::Read, false), Ok("C:/x/y".to_owned()));
}

/// What the kernel opened for `raw`, and the opened file's (dev, ino).
fn kernel_open(raw: &str, write: bool) -> Option<(String, (u64, u64))> {
    let f = std::fs::OpenOptions::new().read(!write).write(write).append(write).create(write).open(raw).ok()?;
    use std::os::fd::AsRawFd;
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()?;
    let m = f.metadata().ok()?;
    Some((opened.to_str()?.to_owned(), (m.dev(), m.ino())))
}

/// One random tree: entries (every third a file, the rest directories) under
/// a directory made before them, links from a directory to a target, and the
/// paths to open below the grant, each read or written.
#[derive(Debug, Clone)]
struct Tree {
    entries: Vec<(Index, Index)>,
    links: Vec<(Index, Index)>,
    paths: Vec<(Vec<Index>, bool)>,
}

fn tree() -> impl Strategy<Value = Tree> {
    let pair = || (any::<Index>(), any::<Index>());
    (
        prop::collection::vec(pair(), 10),
        prop::collection::vec(pair(), 6),
        prop::collection::vec((prop::collection::vec(any::<Index>(), 1..=6), any::<bool>()), 150),
    )
        .prop_map(|(entries, links, paths)| Tree { entries, links, paths })
}

#[cfg(target_os = "linux")]
#[test]
fn the_kernel_opens_inside_the_grant_whatever_resolve_symlinks_allows() {
    let t = TempDir::new("kernel");
    let names = ["a", "b", "é", "中", "😀", "f.txt", "l0", "l1", "l2", "l3", "l4", "l5", "up", "..", ".", ""];
    let next_tree = Cell::new(0);
    let (allowed, opened) = (Cell::new(0), Cell::new(0));
    let cases = run_counted(file!(), 12, tree(), |tree| {
        // A fresh directory per case, shrinking included.
        let base = t.0.join(next_tree.replace(next_tree.get() + 1).to_string());
        let grant = base.join("grant");
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("secret.txt"), "s").unwrap();
        let mut dirs = vec![grant.clone(), base.join("outside")];
        std::fs::create_dir_all(&grant).unwrap();
        for (i, (parent, name)) in tree.entries.iter().enumerate() {
            let p = parent.get(&dirs).join(name.get(&names[..6]));
            if p.symlink_metadata().is_ok() {
                continue;
            }
            if i % 3 == 2 {
                std::fs::write(&p, "x").unwrap();
            } else {
                std::fs::create_dir(&p).unwrap();
                dirs.push(p);
            }
        }
        let grant_s = grant.to_str().unwrap().to_owned();
        let targets =
            [".", "..", "../..", "/", &grant_s, base.to_str().unwrap(), "missing", "../outside/new", "a/../.."];
        for (i, (dir, target)) in tree.links.iter().enumerate() {
            let link = dir.get(&dirs).join(format!("l{i}"));
            if link.symlink_metadata().is_ok() {
                continue;
            }
            symlink(target.get(&targets), &link).unwrap();
        }
        let _ = symlink("..", grant.join("up"));
        let p = policy(json!([{ "path": format!("{grant_s}/**"), "mode": "readwrite" }]));
        for (segments, write) in &tree.paths {
            let mut raw = grant_s.clone();
            for name in segments {
                raw.push('/');
                raw.push_str(name.get::<&str>(&names));
            }
            let mode = if *write { FsMode::Write } else { FsMode::Read };
            let decision = p.check_fs_resolved(&raw, mode);
            let authorized = p.authorize_fs(&raw, mode, true);
            prop_assert_eq!(decision.is_allowed(), authorized.is_ok(), "check and authorize agree on {}", raw);
            let existed = Path::new(&raw).exists();
            let Some((real, id)) = kernel_open(&raw, *write) else { continue };
            opened.set(opened.get() + 1);
            if let Ok(path) = authorized {
                allowed.set(allowed.get() + 1);
                prop_assert!(real.starts_with(&format!("{grant_s}/")), "{} allowed, the kernel opened {}", raw, real);
                let m = std::fs::symlink_metadata(&path).unwrap();
                prop_assert!(!m.file_type().is_symlink(), "{} is a link", path);
                prop_assert_eq!((m.dev(), m.ino()), id, "{} authorised {}, the kernel opened {}", raw, path, real);
            }
            if !existed {
                let _ = std::fs::remove_file(&real);
            }
        }
        Ok(tree.paths.len())
    });
    let (allowed, opened) = (allowed.get(), opened.get());
    println!("kernel oracle: {cases} cases, {opened} opened by the kernel, {allowed} allowed and checked");
    assert!(allowed > 0 && cases > 1000);
}
