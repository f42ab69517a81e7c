//! fs rules beyond the shared case table: limits, the fast matcher against
//! the naive reference (tests/common/naive_glob.rs) and against globset, as
//! proptest strategies, and symlinks on a real temp dir. Normalisation and
//! traversal properties are in tests/properties.rs.

use api_sandbox_permissions::fs::{normalize, real_path};
use api_sandbox_permissions::{Decision, DenyReason, FsMode, PermissionPolicy, Platform, PolicyOptions};
use proptest::prelude::*;
use serde_json::json;

#[path = "common/naive_glob.rs"]
mod naive_glob;
#[path = "common/runner.rs"]
mod runner;
use runner::run_counted;

fn policy(fs: serde_json::Value, platform: Platform) -> PermissionPolicy {
    PermissionPolicy::from_manifest(&json!({ "fs": fs }), PolicyOptions::new("t").platform(platform)).unwrap()
}

fn reason(d: Decision) -> Option<DenyReason> {
    d.reason()
}

#[test]
fn path_length_limit_is_4096_bytes() {
    let p = policy(json!(["/**"]), Platform::Posix);
    let at = format!("/{}", "a".repeat(4095));
    assert_eq!(reason(p.check_fs(&at, FsMode::Read)), None);
    let over = format!("/{}", "a".repeat(4096));
    assert_eq!(reason(p.check_fs(&over, FsMode::Read)), Some(DenyReason::InvalidPath));
    // Bytes, not characters.
    let multibyte = format!("/{}", "é".repeat(2048));
    assert_eq!(reason(p.check_fs(&multibyte, FsMode::Read)), Some(DenyReason::InvalidPath));
}

/// Pieces of a random glob and of a random path; non-ASCII and case pairs
/// (`é`/`É`, `A`/`a`) so the win32 fold is exercised.
const PAT_PIECES: &[&str] =
    &["a", "b", ".x", "*", "?", "[ab]", "[!a]", "{a,b}", "**", "a*", "*.x", "A", "é", "?é", "[!é]", "É"];
const PATH_PIECES: &[&str] = &["a", "b", ".x", "ab", "ba", "x.x", "A", "c", ".", "aa.x", "é", "É", "aé"];

/// `/` + pieces joined by `/` (`/` alone for none).
fn joined(pieces: &'static [&'static str], len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), len).prop_map(|v| format!("/{}", v.join("/")))
}

/// One fs grant compiled for `platform` (a drive prefix on win32), or `None` if the manifest refuses it.
fn grant(pattern: &str, platform: Platform) -> Option<PermissionPolicy> {
    let grant = if platform == Platform::Win32 { format!("C:{pattern}") } else { pattern.to_owned() };
    PermissionPolicy::from_manifest(&json!({ "fs": [grant] }), PolicyOptions::new("t").platform(platform)).ok()
}

#[test]
fn fast_matcher_agrees_with_the_naive_reference() {
    let cases = (joined(PAT_PIECES, 1..5), prop::collection::vec(joined(PATH_PIECES, 0..5), 60));
    let checked = run_counted(file!(), 400, cases, |(pattern, paths)| {
        let mut checked = 0;
        for platform in [Platform::Posix, Platform::Win32] {
            let Some(p) = grant(&pattern, platform) else { continue };
            for path in &paths {
                let input = if platform == Platform::Win32 { format!("C:{path}") } else { path.to_owned() };
                let Ok(norm) = normalize(&input, platform) else { continue };
                let body = if platform == Platform::Win32 { &norm.path()[2..] } else { norm.path() };
                let want = naive_glob::matches(&pattern, body, platform == Platform::Win32);
                let got = p.check_fs(&input, FsMode::Read).is_allowed();
                prop_assert_eq!(got, want, "{:?} pattern {:?} path {:?}", platform, pattern, input);
                checked += 1;
            }
        }
        Ok(checked)
    });
    assert!(checked > 10000, "{checked}");
}

/// Many grants and deny globs in one policy, added in any order (a deeper
/// prefix before or after its ancestors, more prefixes than the index scans
/// on insert), against the naive reference: the walk over a path's
/// ancestors may stop early where no prefix of the index lies below (issue
/// K), and it must never stop before a grant or deny glob that matches. A
/// policy allows exactly when some grant of the mode matches and no deny
/// glob (or the directory a trailing `**` hangs from) does. Paths are drawn
/// along the globs' own literal prefixes, so the walks cross many of them.
#[test]
fn many_globs_in_any_order_agree_with_the_naive_reference() {
    const NAMES: &[&str] = &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    const TAILS: &[&str] = &["", "/**", "/*.x", "/*", "/**/x.x", "/?", "/{a,b}/**", "/**/**", "/[ab]*"];
    const MODES: &[&str] = &["read", "write", "readwrite"];
    let glob = || (joined(NAMES, 1..6), prop::sample::select(TAILS)).prop_map(|(lit, tail)| format!("{lit}{tail}"));
    let grants = prop::collection::vec((glob(), prop::sample::select(MODES)), 1..160);
    let denies = prop::collection::vec(glob(), 0..40);
    let case = (grants, denies).prop_flat_map(|(grants, deny)| {
        let n = grants.len() + deny.len();
        let path = (0..n, 0..6usize, joined(&["a", "b", "c", "x.x", "zz"], 1..4));
        (Just(grants), Just(deny), prop::collection::vec(path, 60))
    });
    let denied = |deny: &[String], body: &str, fold: bool| {
        deny.iter().any(|d| {
            let mut d = d.as_str();
            loop {
                if naive_glob::matches(d, body, fold) {
                    return true;
                }
                match d.strip_suffix("/**") {
                    Some(up) => d = up,
                    None => return false,
                }
            }
        })
    };
    let (compiled, allowed) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let checked = run_counted(file!(), 250, case, |(grants, deny, picks)| {
        // A path: the first `keep` literal segments of glob `i`, then `extra`.
        let globs: Vec<&str> = grants.iter().map(|(g, _)| g.as_str()).chain(deny.iter().map(String::as_str)).collect();
        let paths: Vec<String> = picks
            .iter()
            .map(|(i, keep, extra)| {
                let lit: Vec<&str> =
                    globs[*i].split('/').skip(1).take_while(|s| NAMES.contains(s)).take(*keep).collect();
                format!("{}{extra}", if lit.is_empty() { String::new() } else { format!("/{}", lit.join("/")) })
            })
            .collect();
        let mut checked = 0;
        for platform in [Platform::Posix, Platform::Win32] {
            let drive = if platform == Platform::Win32 { "C:" } else { "" };
            let fs: Vec<_> = grants.iter().map(|(g, m)| json!({ "path": format!("{drive}{g}"), "mode": m })).collect();
            let deny_fs: Vec<_> = deny.iter().map(|d| format!("{drive}{d}")).collect();
            let manifest = json!({ "fs": fs, "deny": { "fs": deny_fs } });
            let p = PermissionPolicy::from_manifest(&manifest, PolicyOptions::new("t").platform(platform))
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            compiled.set(compiled.get() + 1);
            let fold = platform == Platform::Win32;
            for path in &paths {
                let input = format!("{drive}{path}");
                let norm = normalize(&input, platform).expect("a plain absolute path");
                let body = &norm.path()[drive.len()..];
                let no = denied(&deny, body, fold);
                for (mode, bit) in [(FsMode::Read, "read"), (FsMode::Write, "write")] {
                    let want = !no && grants.iter().any(|(g, m)| m.contains(bit) && naive_glob::matches(g, body, fold));
                    let got = p.check_fs(&input, mode).is_allowed();
                    prop_assert_eq!(
                        got,
                        want,
                        "{:?} {:?} {:?} grants {:?} deny {:?}",
                        platform,
                        mode,
                        input,
                        grants,
                        deny
                    );
                    allowed.set(allowed.get() + usize::from(got));
                    checked += 1;
                }
            }
        }
        Ok(checked)
    });
    let (compiled, allowed) = (compiled.get(), allowed.get());
    assert!(
        compiled >= 500 && allowed > 5000 && checked >= 60_000,
        "{compiled} policies, {allowed} of {checked} allowed"
    );
}

/// The chunked one-segment matcher (`*` runs, substring search, a step
/// budget) against plain backtracking: a leading `?` segment keeps the grant
/// out of the literal-prefix index, so the segment pattern itself decides.
#[test]
fn segment_matching_agrees_with_naive_backtracking() {
    const PIECES: &[&str] = &["*", "a", "b", "?", "[ab]", "[!a]", "é", "ab", "*a", "b*"];
    const NAMES: &[&str] = &["", "a", "b", "ab", "ba", "aab", "abab", "bbb", "é", "aéb", "abba", "babab"];
    let segment = prop::collection::vec(prop::sample::select(PIECES), 1..6)
        .prop_map(|v| v.concat())
        .prop_filter("** is a whole segment only", |s| !s.contains("**"));
    let checked = run_counted(file!(), 3000, segment, |segment| {
        let pattern = format!("/?/{segment}");
        let p = grant(&pattern, Platform::Posix).expect("a valid one-segment glob");
        for name in NAMES {
            let path = format!("/x/{name}");
            let want = naive_glob::matches(&pattern, normalize(&path, Platform::Posix).unwrap().path(), false);
            prop_assert_eq!(p.check_fs(&path, FsMode::Read).is_allowed(), want, "{:?} ~ {:?}", segment, name);
        }
        Ok(NAMES.len())
    });
    assert!(checked >= 20_000, "{checked}");
}

#[test]
fn globs_and_grants_normalise() {
    let p = policy(json!(["/data//x/", { "path": "/a/**", "mode": "readwrite" }]), Platform::Posix);
    assert_eq!(
        p.to_json(),
        json!({ "fs": [{ "path": "/data/x", "mode": "read" }, { "path": "/a/**", "mode": "readwrite" }] })
    );
    let w = policy(json!(["c:\\Data\\**"]), Platform::Win32);
    assert_eq!(w.to_json(), json!({ "fs": [{ "path": "C:/Data/**", "mode": "read" }] }));
    // Escaped wildcard on posix is literal.
    let e = policy(json!(["/data/\\*"]), Platform::Posix);
    assert!(e.check_fs("/data/*", FsMode::Read).is_allowed());
    assert!(!e.check_fs("/data/x", FsMode::Read).is_allowed());
    // A glob with a separator inside a class is refused: "manifest fs glob
    // grammar - a separator inside a class" in data/conformance/manifest-errors.json.
}

struct TempDir(std::path::PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_a_grant_are_caught_with_resolve_symlinks() {
    use std::os::unix::fs::symlink;
    let base = std::env::temp_dir().join(format!("asp-fs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("grant/sub")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    let tmp = TempDir(std::fs::canonicalize(&base).unwrap());
    let root = tmp.0.to_str().unwrap().to_owned();
    std::fs::write(tmp.0.join("outside/secret"), "s").unwrap();
    std::fs::write(tmp.0.join("grant/sub/ok.txt"), "ok").unwrap();
    symlink(tmp.0.join("outside"), tmp.0.join("grant/link")).unwrap();
    symlink(tmp.0.join("outside/new-file"), tmp.0.join("grant/dangling")).unwrap();
    symlink("sub", tmp.0.join("grant/inner")).unwrap();
    symlink("../outside/secret", tmp.0.join("grant/relative")).unwrap();
    symlink("loop-b", tmp.0.join("grant/loop-a")).unwrap();
    symlink("loop-a", tmp.0.join("grant/loop-b")).unwrap();

    let p = policy(json!([{ "path": format!("{root}/grant/**"), "mode": "readwrite" }]), Platform::Posix);
    let f = |rel: &str| format!("{root}/grant/{rel}");
    let cases = [
        ("link/secret", FsMode::Read, None, Some(DenyReason::SymlinkEscape)),
        ("dangling", FsMode::Write, None, Some(DenyReason::SymlinkEscape)),
        ("relative", FsMode::Read, None, Some(DenyReason::SymlinkEscape)),
        ("inner/ok.txt", FsMode::Read, None, None),
        ("sub/ok.txt", FsMode::Read, None, None),
        ("sub/new.txt", FsMode::Write, None, None),
        ("missing-dir/new.txt", FsMode::Write, None, None),
        ("loop-a/x", FsMode::Read, None, Some(DenyReason::SymlinkEscape)),
    ];
    for (rel, mode, lexical, resolved) in cases {
        assert_eq!(reason(p.check_fs(&f(rel), mode)), lexical, "lexical {rel}");
        assert_eq!(reason(p.check_fs_resolved(&f(rel), mode)), resolved, "resolved {rel}");
    }
    assert_eq!(real_path(std::path::Path::new(&f("inner/ok.txt"))).unwrap(), tmp.0.join("grant/sub/ok.txt"));
    // A win32 policy cannot resolve on a posix host: fail closed.
    let w = policy(json!(["C:\\**"]), Platform::Win32);
    assert_eq!(reason(w.check_fs_resolved("C:\\x", FsMode::Read)), Some(DenyReason::SymlinkEscape));
}

/// The in-crate engine against globset (the engine the spec's glob semantics
/// were first pinned on), outside the one documented difference: a root is
/// covered only by a literal root grant.
#[test]
fn glob_engine_agrees_with_globset() {
    // ASCII only: globset matches `?` and classes per byte, this engine per
    // character (non-ASCII is covered by the naive reference test).
    const PAT: &[&str] =
        &["a", "b", ".x", "*", "?", "[ab]", "[!a]", "[a-c]", "{a,b}", "{x,*.x}", "**", "a*", "*.x", "A", "\\*"];
    const PATH: &[&str] = &["a", "b", ".x", "ab", "ba", "x.x", "A", "c", "aa.x", "*"];
    let cases = (joined(PAT, 1..5), prop::collection::vec(joined(PATH, 1..5), 40));
    let compared = run_counted(file!(), 1500, cases, |(pattern, paths)| {
        let mut compared = 0;
        for platform in [Platform::Posix, Platform::Win32] {
            // Escapes are posix-only: on win32 a backslash is a separator.
            if platform == Platform::Win32 && pattern.contains('\\') {
                continue;
            }
            let Some(p) = grant(&pattern, platform) else { continue };
            let glob = if platform == Platform::Win32 { format!("C:{pattern}") } else { pattern.clone() };
            let reference = globset::GlobBuilder::new(&glob)
                .literal_separator(true)
                .case_insensitive(platform == Platform::Win32)
                .backslash_escape(platform == Platform::Posix)
                .build()
                .expect("globset accepts what we accept")
                .compile_matcher();
            for path in &paths {
                let input = if platform == Platform::Win32 { format!("C:{path}") } else { path.clone() };
                let Ok(norm) = normalize(&input, platform) else { continue };
                let want = reference.is_match(norm.path());
                let got = p.check_fs(&input, FsMode::Read).is_allowed();
                prop_assert_eq!(got, want, "{:?} glob {:?} path {:?}", platform, glob, input);
                compared += 1;
            }
        }
        Ok(compared)
    });
    assert!(compared > 50_000, "{compared}");
}

/// A posix policy granting `/srv/**` read-write with one `deny.fs` glob.
fn posix_srv_with_deny(deny: &str) -> PermissionPolicy {
    PermissionPolicy::from_manifest(
        &json!({ "fs": [{ "path": "/srv/**", "mode": "readwrite" }], "deny": { "fs": [deny] } }),
        PolicyOptions::new("t").platform(Platform::Posix),
    )
    .unwrap()
}

/// The posix deny fold is skipped only where it is the identity on both
/// sides (an ASCII path without upper case, deny globs the fold leaves as
/// they are): a deny written in upper case or with a class still denies
/// every case of what it reads, and `fs_denied` (explain, lint) agrees.
#[test]
fn posix_deny_fold_is_skipped_only_where_it_changes_nothing() {
    let denied = Some(DenyReason::ExplicitlyDenied);
    for (deny, path) in [
        ("/srv/OUT/**", "/srv/out/x"),
        ("/SRV/out/**", "/srv/out/x"),
        ("/srv/[A-C]x/**", "/srv/bx/y"),
        ("/srv/a.KEY", "/srv/a.key"),
        ("/srv/out/**", "/srv/OUT/x"),
        ("/srv/out/**", "/srv/out/x"),
        // An even number of upper-case letters or of non-ASCII bytes: the
        // skip test must not let pairs cancel (cargo mutants: `|` -> `^`).
        ("/srv/out/**", "/srv/OUt/x"),
        ("/srv/out/**", "/srv/OUT/XY"),
        // U+017F LATIN SMALL LETTER LONG S (two UTF-8 bytes) folds to `s`.
        ("/srv/sout/**", "/srv/\u{17f}out/x"),
        ("/srv/sout/**", "/srv/\u{17f}OUT/x"),
    ] {
        let p = posix_srv_with_deny(deny);
        assert_eq!(reason(p.check_fs(path, FsMode::Read)), denied, "{deny} {path}");
        assert_eq!(reason(p.check_fs(path, FsMode::Write)), denied, "{deny} {path}");
        assert!(p.fs_denied(path), "{deny} {path}");
    }
    let p = posix_srv_with_deny("/srv/out/**");
    assert_eq!(reason(p.check_fs("/srv/in/x", FsMode::Read)), None);
    assert!(!p.fs_denied("/srv/in/x"));
    assert!(!p.fs_denied("/srv/outer/x"));
    let p = posix_srv_with_deny("/srv/OUT/**");
    assert_eq!(reason(p.check_fs("/srv/in/x", FsMode::Read)), None);
    assert!(!p.fs_denied("/srv/in/x"));
}

/// Multi-segment grant shapes the glob index files apart (cargo mutants):
/// a wildcard last segment below a wildcard directory (`general`), a literal
/// last segment (`by_last`), `**/name-pattern` (`below`).
#[test]
fn multi_segment_grants_of_every_shape_match() {
    let p = policy(json!(["/srv/*/x*", "/etc/*/app.conf", "/var/**/*.log", "/opt/a?/**/b[0-9]"]), Platform::Posix);
    for (path, allowed) in [
        ("/srv/a/xy", true),
        ("/srv/a/b/xy", false),
        ("/srv/a/yx", false),
        ("/etc/p/app.conf", true),
        ("/etc/p/app.confx", false),
        ("/var/log/x.log", true),
        ("/var/a/b/c/d.log", true),
        ("/var/x.logx", false),
        ("/opt/ab/c/b7", true),
        ("/opt/ab/b7", true),
        ("/opt/abc/b7", false),
    ] {
        assert_eq!(p.check_fs(path, FsMode::Read).is_allowed(), allowed, "{path}");
    }
}

/// The posix deny fold's two extra readings (cargo mutants): the path with
/// HFS+ ignorables dropped against the deny as written (a class holding `ẞ`
/// still matches `ẞ` followed by an ignorable), and the
/// one-character-per-character fold (`ẞ` -> `ß`, where the full fold gives
/// `ss`, which a one-character class cannot match).
#[test]
fn posix_deny_fold_extra_readings() {
    let denied =
        |p: &PermissionPolicy, path: &str| reason(p.check_fs(path, FsMode::Read)) == Some(DenyReason::ExplicitlyDenied);
    let p = posix_srv_with_deny("/srv/[\u{100}-\u{212A}]/**");
    assert!(denied(&p, "/srv/\u{1E9E}/x"));
    assert!(denied(&p, "/srv/\u{1E9E}\u{202A}/x"), "an ignorable after a character the class holds");
    assert!(!denied(&p, "/srv/a\u{202A}/x"));
    let p = posix_srv_with_deny("/srv/[\u{DF}]/**");
    assert!(denied(&p, "/srv/\u{DF}/x"));
    assert!(denied(&p, "/srv/\u{1E9E}/x"), "capital sharp s folds to sharp s one for one");
    let p = posix_srv_with_deny("/srv/[a]/**");
    assert!(!denied(&p, "/srv/\u{1E9E}/x"), "a fold that changes the path is no deny by itself");
}
