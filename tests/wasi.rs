//! The compound fs operations of a WASI host (`api_sandbox_permissions::wasi`)
//! on real temp dirs: what a rename moves, decided on the compiled deny
//! globs under the deny check's own fold (the folding class: `ẞ`/`ß`,
//! Georgian capitals, the Kelvin sign, HFS+ ignorables, NFC/NFD, win32 and
//! posix), and every operation bounded by the host's budget.
//!
//! The oracle of the reach rule is the deny check itself, through the public
//! API: whenever the checker denies some path below a directory as
//! `explicitly_denied`, renaming that directory must be refused (its
//! contents would leave the deny's reach under a new name).
#![cfg(unix)]

use std::cell::Cell;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use api_sandbox_permissions::wasi::{self, Budget, Deadline, FsOps, Outcome, PathCall, WasiGate};
use api_sandbox_permissions::{
    Capability, Denial, DenyReason, FsMode, PermissionChecker, PermissionPolicy, Platform, PolicyOptions,
};
use serde_json::json;

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> Self {
        let n = COUNTER.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        let base = std::env::temp_dir().join(format!("asp-wasi-{tag}-{}-{n}", std::process::id()));
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
thread_local! { static COUNTER: Cell<u32> = const { Cell::new(0) }; }

fn policy(root: &str, deny: &[String]) -> PermissionPolicy {
    PermissionPolicy::from_manifest(
        &json!({ "fs": [{ "path": format!("{root}/out/**"), "mode": "readwrite" }], "deny": { "fs": deny } }),
        PolicyOptions::new("wasi-test").platform(Platform::Posix),
    )
    .unwrap()
}

fn rename(ops: &FsOps<'_>, root: &str, from: &str, to: &str) -> Outcome {
    let call = PathCall::Rename { old: format!("{root}/out/{from}"), new: format!("{root}/out/{to}") };
    ops.path_call(&call, &mut Deadline(None))
}

const DENIED: Outcome =
    Outcome::Denied(Denial { capability: Capability::FsWrite, reason: DenyReason::ExplicitlyDenied });

/// The folding class: a deny written one way, a directory on disk spelled
/// another way that the deny check folds to it. The check denies the file
/// below the directory; renaming the directory must be refused in both
/// directions (out of the deny's reach, and another directory into it).
#[test]
fn a_directory_spelled_as_the_deny_check_folds_it_cannot_be_renamed() {
    let cases: &[(&str, &str)] = &[
        // `ẞ` folds to `ß` and on to `ss` (a one-pass fold stops at `ß`).
        ("ẞ", "ss"),
        ("ẞ", "ß"),
        ("ß", "SS"),
        ("STRAẞE", "strasse"),
        // Georgian: HFS+ folds `Ⴀ` (U+10A0) with `ა` (U+10D0); Unicode pairs it with `ⴀ` (U+2D00).
        ("\u{10A0}", "\u{10D0}"),
        ("\u{10D0}", "\u{10A0}"),
        ("\u{1C90}", "\u{10A0}"),
        // The Kelvin sign and `k`.
        ("\u{212A}ey", "key"),
        ("key", "\u{212A}EY"),
        // HFS+ ignorables in the name on disk, or in the deny.
        ("secret", "sec\u{200C}ret"),
        ("sec\u{FEFF}ret", "secret"),
        ("secret", "\u{206A}SECRET\u{202E}"),
        // NFC and NFD.
        ("caf\u{E9}", "cafe\u{301}"),
        ("cafe\u{301}", "CAF\u{C9}"),
        ("\u{1E9E}\u{E9}", "sse\u{301}"),
    ];
    for (deny_name, on_disk) in cases {
        for shape in ["{root}/out/{d}/**", "{root}/out/{d}/key.txt", "{root}/out/*/{d}/**", "{root}/out/{d}/*/x"] {
            let t = TempDir::new("fold");
            let r = t.s();
            std::fs::create_dir_all(t.0.join(format!("out/{on_disk}/sub"))).unwrap();
            std::fs::create_dir_all(t.0.join(format!("out/p/{on_disk}/sub"))).unwrap();
            std::fs::create_dir_all(t.0.join("out/p/plain")).unwrap();
            let glob = shape.replace("{root}", r).replace("{d}", deny_name);
            let p = policy(r, std::slice::from_ref(&glob));
            let ops = FsOps::new(&p);
            let (dir, probe) = if shape.contains("/*/{d}") {
                (format!("p/{on_disk}"), format!("{r}/out/p/{on_disk}/sub/x"))
            } else {
                (on_disk.to_string(), format!("{r}/out/{on_disk}/key.txt"))
            };
            let probe = if shape.ends_with("/*/x") { format!("{r}/out/{on_disk}/sub/x") } else { probe };
            // The precondition: the deny check itself denies a path below the directory.
            assert_eq!(
                p.check_fs(&probe, FsMode::Read).reason(),
                Some(DenyReason::ExplicitlyDenied),
                "{glob} must deny {probe:?}"
            );
            assert_eq!(rename(&ops, r, &dir, "moved"), DENIED, "{glob}: renaming {dir:?} out of its reach");
            assert_eq!(rename(&ops, r, "p/plain", &dir), DENIED, "{glob}: renaming a directory onto {dir:?}");
            // A directory the deny cannot reach below renames freely.
            assert!(matches!(rename(&ops, r, "p/plain", "p/plain2"), Outcome::Allowed { .. }), "{glob}");
        }
    }
}

/// Soundness of the reach rule against the deny check, over random deny
/// globs and directories built from the folding class: whenever the check
/// denies a path below a directory (the oracle), the policy says a deny
/// reaches below it.
#[test]
fn whenever_the_check_denies_below_a_directory_the_deny_reaches_it() {
    let pieces = [
        "a", "A", "ß", "ẞ", "ss", "SS", "\u{10A0}", "\u{10D0}", "\u{2D00}", "k", "\u{212A}", "K", "\u{200D}",
        "\u{FEFF}", "e\u{301}", "\u{E9}", "\u{C9}", "x",
    ];
    let wild = ["*", "?", "[a-z]", "[!x]", "**", "{ß,x}", "[ß]", "[\u{10A0}-\u{10C5}]"];
    let rng = Cell::new(0x9E37_79B9_7F4A_7C15u64);
    let next = |n: usize| {
        let mut x = rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rng.set(x);
        (x % n as u64) as usize
    };
    let mut reached = 0;
    for platform in [Platform::Posix, Platform::Win32] {
        let root = if platform == Platform::Win32 { "C:/r" } else { "/r" };
        for _ in 0..1000 {
            let seg = || -> String {
                let k = 1 + next(2);
                (0..k).map(|_| if next(4) == 0 { wild[next(wild.len())] } else { pieces[next(pieces.len())] }).collect()
            };
            let segs: Vec<String> = (0..1 + next(3)).map(|_| seg()).collect();
            let glob = format!("{root}/{}", segs.join("/"));
            let Ok(p) = PermissionPolicy::from_manifest(
                &json!({ "fs": [format!("{root}/**")], "deny": { "fs": [glob] } }),
                PolicyOptions::new("reach").platform(platform),
            ) else {
                continue;
            };
            // Paths of up to three names from the pieces; each prefix a directory.
            for _ in 0..20 {
                let names: Vec<String> =
                    (0..1 + next(3)).map(|_| (0..1 + next(2)).map(|_| pieces[next(pieces.len())]).collect()).collect();
                let path = format!("{root}/{}", names.join("/"));
                if p.check_fs(&path, FsMode::Read).reason() != Some(DenyReason::ExplicitlyDenied) {
                    continue;
                }
                for k in 0..=names.len() {
                    let dir = if k == 0 { root.to_owned() } else { format!("{root}/{}", names[..k].join("/")) };
                    assert!(p.fs_deny_reaches(&dir), "{platform:?}: {glob:?} denies {path:?}, so it reaches {dir:?}");
                    reached += 1;
                }
            }
        }
    }
    assert!(reached > 500, "the oracle found {reached} denied paths");
}

#[test]
fn a_deny_elsewhere_does_not_reach() {
    let p = policy("/r", &["/r/out/a/private/**".into(), "/r/out/*/secret".into()]);
    assert!(p.fs_deny_reaches("/r/out/a"));
    assert!(p.fs_deny_reaches("/r/out/a/private"));
    assert!(p.fs_deny_reaches("/r/out/a/private/deeper"), "inside the deny");
    assert!(p.fs_deny_reaches("/r/out/b"), "`*` then secret");
    assert!(p.fs_deny_reaches("/r"), "everything is below the root of the deny");
    assert!(p.fs_deny_reaches("/"));
    assert!(!p.fs_deny_reaches("/r/out/b/c"), "`/r/out/*/secret` ends a level above");
    assert!(!p.fs_deny_reaches("/r/other"));
    assert!(!p.fs_deny_reaches("/r/out/a/public"));
    assert!(!policy("/r", &[]).fs_deny_reaches("/"));
    // win32: NTFS folds case with its table, but never the Kelvin sign onto `k`.
    let w = PermissionPolicy::from_manifest(
        &json!({ "fs": ["C:/r/**"], "deny": { "fs": ["C:/r/Key/**"] } }),
        PolicyOptions::new("w").platform(Platform::Win32),
    )
    .unwrap();
    assert!(w.fs_deny_reaches("C:\\r\\KEY"));
    assert!(w.fs_deny_reaches("c:/r"));
    assert_eq!(w.check_fs("C:/r/\u{212A}ey/x", FsMode::Read).reason(), None);
    assert!(!w.fs_deny_reaches("C:/r/\u{212A}ey"), "NTFS keeps the Kelvin sign apart from k");
    assert!(w.fs_deny_reaches("C:/r/KEY~1"), "an 8.3 name may alias it");
}

/// The symlinks below a renamed directory, read from their new place, and
/// the budget: the walk asks it before every entry, and a refusal stops it.
#[test]
fn a_rename_walk_asks_the_budget_before_every_entry_and_stops_when_it_says_so() {
    let t = TempDir::new("budget");
    let r = t.s();
    std::fs::create_dir_all(t.0.join("out/many")).unwrap();
    for i in 0..300 {
        symlink(format!("../f{i}"), t.0.join(format!("out/many/l{i}"))).unwrap();
    }
    let p = policy(r, &[]);
    let ops = FsOps::new(&p);
    let call = PathCall::Rename { old: format!("{r}/out/many"), new: format!("{r}/out/many2") };
    // Unbounded: allowed (every link means out/f<i>, inside the grant, from the new place too).
    let mut asked = 0usize;
    let mut count = || {
        asked += 1;
        true
    };
    assert!(matches!(ops.path_call(&call, &mut count), Outcome::Allowed { .. }));
    assert!(asked >= 300, "asked {asked} times for 300 entries");
    // A budget that runs out after 20 steps: the walk stops there.
    for limit in [0usize, 1, 20, 150] {
        let mut asked = 0usize;
        let mut bounded = || {
            asked += 1;
            asked <= limit
        };
        assert_eq!(ops.path_call(&call, &mut bounded), Outcome::OutOfBudget, "limit {limit}");
        assert_eq!(asked, limit + 1, "not a step past the refusal");
    }
    // A deadline already past: out of budget before anything is touched.
    let past = Deadline(Some(std::time::Instant::now()));
    assert_eq!(ops.path_call(&call, &mut { past }), Outcome::OutOfBudget);
    assert_eq!(Outcome::OutOfBudget.errno(), wasi::errno::IO);
    // Moved one level deeper, each `../f<i>` means out/x/f<i>: still inside the grant.
    std::fs::create_dir_all(t.0.join("out/x")).unwrap();
    let deeper = PathCall::Rename { old: format!("{r}/out/many"), new: format!("{r}/out/x/many") };
    assert!(matches!(ops.path_call(&deeper, &mut Deadline(None)), Outcome::Allowed { .. }));
    // Moved to the top of a grant that is the directory itself, `../f0` climbs out of it.
    let narrow = PermissionPolicy::from_manifest(
        &json!({ "fs": [{ "path": format!("{r}/out/many/**"), "mode": "readwrite" }, { "path": format!("{r}/out/many/sub/**"), "mode": "readwrite" }] }),
        PolicyOptions::new("wasi-test").platform(Platform::Posix),
    )
    .unwrap();
    std::fs::create_dir_all(t.0.join("out/many/sub")).unwrap();
    std::fs::create_dir_all(t.0.join("out/many/d")).unwrap();
    symlink("../f", t.0.join("out/many/d/l")).unwrap();
    let into_sub = PathCall::Rename { old: format!("{r}/out/many/d"), new: format!("{r}/out/many/sub/d") };
    assert!(matches!(FsOps::new(&narrow).path_call(&into_sub, &mut Deadline(None)), Outcome::Allowed { .. }));
    let out = PathCall::Rename { old: format!("{r}/out/many/d"), new: format!("{r}/out/many/d2") };
    assert!(matches!(FsOps::new(&narrow).path_call(&out, &mut Deadline(None)), Outcome::Allowed { .. }));
}

/// The gate counts a refused call once, whatever refused it, and never a call
/// stopped by the budget (the host counts the breach).
#[test]
fn the_gate_counts_each_refused_call_once() {
    use opentelemetry::metrics::MeterProvider as _;
    let t = TempDir::new("gate");
    let r = t.s();
    std::fs::create_dir_all(t.0.join("out/a/private")).unwrap();
    std::fs::create_dir_all(t.0.join("out/c")).unwrap();
    let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
    let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(exporter.clone()).build())
        .build();
    let p = policy(r, &[format!("{r}/out/*/PRIVATE/**")]);
    let gate = WasiGate::new(PermissionChecker::new(p, &provider.meter("t")));
    let call = |from: &str, to: &str| PathCall::Rename { old: format!("{r}/out/{from}"), new: format!("{r}/out/{to}") };
    assert_eq!(gate.path_call(&call("a", "b"), &mut Deadline(None)), DENIED);
    assert_eq!(gate.path_call(&call("c", "a2"), &mut Deadline(None)), DENIED, "c/private may be created later");
    let mut never = || false;
    assert_eq!(gate.path_call(&call("a", "b"), &mut never), Outcome::OutOfBudget);
    provider.force_flush().unwrap();
    let mut total = 0;
    for rm in exporter.get_finished_metrics().unwrap().last().into_iter() {
        for sm in rm.scope_metrics() {
            for m in sm.metrics().filter(|m| m.name() == "plugin.permission_denied_total") {
                if let opentelemetry_sdk::metrics::data::AggregatedMetrics::U64(
                    opentelemetry_sdk::metrics::data::MetricData::Sum(s),
                ) = m.data()
                {
                    total += s.data_points().map(|d| d.value()).sum::<u64>();
                }
            }
        }
    }
    assert_eq!(total, 2, "two refusals, two counts; the budget stop is not a denial");
    let _: &dyn Budget = &Deadline(None);
}

#[test]
fn follow_lexically_reads_link_targets_as_node_wasi_does() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("lexical");
    let root = tmp.0.clone();
    let r = root.to_str().unwrap();
    std::fs::create_dir_all(root.join("d1/d2")).unwrap();
    symlink(root.join("d1/d2"), root.join("lk")).unwrap();
    symlink("lk/../t", root.join("x")).unwrap();
    symlink("x", root.join("chain")).unwrap();
    symlink("loop", root.join("loop")).unwrap();
    std::fs::write(root.join("f"), "").unwrap();
    // The kernel would read lk/../t as d1/t; node:wasi reads it lexically.
    assert_eq!(wasi::follow_lexically(&format!("{r}/x")), format!("{r}/t"));
    assert_eq!(wasi::follow_lexically(&format!("{r}/chain")), format!("{r}/t"));
    assert_eq!(wasi::follow_lexically(&format!("{r}/chain/")), format!("{r}/t"));
    assert_eq!(wasi::follow_lexically(&format!("{r}/lk")), format!("{r}/d1/d2"));
    assert_eq!(wasi::follow_lexically(&format!("{r}/f")), format!("{r}/f"));
    assert_eq!(wasi::follow_lexically(&format!("{r}/loop")), format!("{r}/loop"));
    assert_eq!(wasi::follow_lexically("/"), "/");
}

#[test]
fn a_trailing_separator_or_final_dot_is_checked_as_followed() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("lexical");
    let root = tmp.0.clone();
    let r = root.to_str().unwrap();
    std::fs::create_dir_all(root.join("out")).unwrap();
    // out/away -> the root, outside the readwrite grant.
    symlink(&root, root.join("out/away")).unwrap();
    let manifest = serde_json::json!({ "fs": [{ "path": format!("{r}/out/**"), "mode": "readwrite" }] });
    let policy = PermissionPolicy::from_manifest(&manifest, PolicyOptions::new("gate")).unwrap();
    let ops = FsOps::new(&policy);
    let check = |p: &str| ops.check_path(p, FsMode::Write, false, &mut Deadline(None));
    assert!(check(&format!("{r}/out/away")).is_ok(), "the link itself");
    for tail in ["/", "//", "/.", "/./"] {
        assert!(check(&format!("{r}/out/away{tail}")).is_err(), "out/away{tail}");
    }
}

#[test]
fn final_symlink_errno_is_what_o_nofollow_gives() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("lexical");
    let root = tmp.0.clone();
    let r = root.to_str().unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    symlink("d", root.join("l")).unwrap();
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/l"), false), wasi::errno::LOOP);
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/l/"), false), wasi::errno::LOOP);
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/l"), true), wasi::errno::EXIST);
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/d"), false), wasi::errno::SUCCESS);
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/none"), false), wasi::errno::SUCCESS);
    // `.`, `..` and an empty name are never a symlink, whatever precedes them.
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/l/."), false), wasi::errno::SUCCESS);
    assert_eq!(wasi::final_symlink_errno(&format!("{r}/l/.."), false), wasi::errno::SUCCESS);
    assert_eq!(wasi::final_symlink_errno("l", false), wasi::errno::SUCCESS);
}
