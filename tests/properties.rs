//! Property tests (proptest): normalisation, traversal, and what an allowed
//! URL's host can be. The fast glob matcher against its references is in
//! tests/fs.rs.

use std::sync::LazyLock;

use api_sandbox_permissions::fs::normalize;
use api_sandbox_permissions::{DenyReason, FsMode, PermissionPolicy, Platform, PolicyOptions};
use proptest::prelude::*;
use serde_json::json;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&["..", ".", "", "a", "b", "...", ".git", ".a", "a.", "\\", "..\\"][..])
            .prop_map(str::to_owned),
        "[a-z.\\\\é]{1,4}",
    ]
}

fn raw_path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..8).prop_map(|segs| format!("/{}", segs.join("/")))
}

proptest! {
    // Each case checks both platforms; tests/fs.rs ran 20,000 of these as a hand-rolled loop.
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

    /// A normalised path never holds `.`, `..` or empty segments (nor, on
    /// win32, a backslash), and normalising again changes nothing; a path
    /// that cannot be normalised is a traversal or an invalid path.
    #[test]
    fn normalised_paths_are_clean(raw in raw_path()) {
        for platform in [Platform::Posix, Platform::Win32] {
            let win = platform == Platform::Win32;
            let input = if win { format!("C:{raw}") } else { raw.clone() };
            match normalize(&input, platform) {
                Ok(n) => {
                    let body = if win { &n.path()[2..] } else { n.path() };
                    prop_assert!(body.starts_with('/'));
                    if body != "/" {
                        for s in body[1..].split('/') {
                            prop_assert!(!matches!(s, "" | "." | ".."), "{:?} -> {:?}", input, n.path());
                            prop_assert!(!(win && s.contains('\\')), "{:?} -> {:?}", input, n.path());
                        }
                    }
                    prop_assert_eq!(normalize(n.path(), platform).unwrap().into_path(), n.path());
                }
                Err(r) => prop_assert!(matches!(r, DenyReason::PathTraversal | DenyReason::InvalidPath), "{:?}: {:?}", input, r),
            }
        }
    }

    /// A path with `..` that climbs above a grant's root is never allowed.
    #[test]
    fn dotdot_never_climbs_out_of_a_grant(
        segs in prop::collection::vec(prop_oneof![segment(), prop::sample::select(&["x", "plugin", "data", "plugin-evil"][..]).prop_map(str::to_owned)], 0..10),
        mode in any::<bool>(),
    ) {
        let raw = format!("/data/plugin/{}", segs.join("/"));
        let mode = if mode { FsMode::Read } else { FsMode::Write };
        let allowed = GRANT.check_fs(&raw, mode).is_allowed();
        let inside = matches!(normalize(&raw, Platform::Posix), Ok(n) if n.path().starts_with("/data/plugin/"));
        prop_assert_eq!(allowed, inside, "{:?}", raw);
    }
}

static GRANT: LazyLock<PermissionPolicy> = LazyLock::new(|| {
    PermissionPolicy::from_manifest(
        &json!({ "fs": [{ "path": "/data/plugin/**", "mode": "readwrite" }, "/data/plugin/x/*.txt"] }),
        PolicyOptions::new("t").platform(Platform::Posix),
    )
    .unwrap()
});

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// An allowed URL's host equals a granted host, or ends with '.' + a granted suffix.
    #[test]
    fn allowed_hosts_are_granted_hosts(
        label in "[a-zA-Z0-9%.\\-@:/\\\\#?\\[\\]]{0,12}",
        tail in prop_oneof![Just("example.com"), Just("example.com."), Just("cdn.example.net"), Just("xample.com"), Just("127.0.0.1"), Just("[::1]")],
        scheme in prop_oneof![Just("http://"), Just("https://"), Just("HTTPS://"), Just("https:"), Just("ws://"), Just("file://")],
        port in prop_oneof![Just(String::new()), Just(":443".to_owned()), Just(":8080".to_owned()), Just(":0".to_owned())],
        path in "[/a-z?#@.]{0,6}",
    ) {
        let p = PermissionPolicy::from_manifest(
            &json!({ "fetch": ["example.com", "*.cdn.example.net", "127.0.0.1:8080"] }),
            PolicyOptions::new("t"),
        ).unwrap();
        let input = format!("{scheme}{label}{tail}{port}{path}");
        if let Ok(allowed) = p.check_fetch_url(&input) {
            let u = url::Url::parse(&input).unwrap();
            let host = u.host_str().unwrap().trim_end_matches('.').to_owned();
            prop_assert!(
                host == "example.com"
                    || (host.ends_with(".cdn.example.net") && !host.starts_with('.') && !host.contains(".."))
                    || host == "127.0.0.1",
                "{:?} allowed with host {:?}", input, host
            );
            prop_assert_eq!(u.username(), "");
            prop_assert!(u.password().is_none());
            prop_assert_eq!(allowed.url().as_str(), u.as_str());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

    /// A budget limit reads back as exactly the number the manifest's JSON
    /// text wrote (Rust's shortest round-trip spelling, as JS's
    /// `JSON.stringify` writes it): a limit parsed 1 ULP high would let a
    /// reading 1 ULP over the manifest's limit pass as within budget.
    #[test]
    fn budget_limits_read_back_exactly(bits in any::<u64>()) {
        let v = f64::from_bits(bits).abs();
        prop_assume!(v.is_finite() && v > 0.0);
        for text in [format!("{v}"), format!("{v:e}")] {
            let p = PermissionPolicy::from_json(
                &format!(r#"{{"budgets":{{"memoryMb":{text},"wallClockMs":{text},"cpuPercent":{text}}}}}"#),
                PolicyOptions::new("t"),
            ).unwrap();
            let b = p.budgets();
            for got in [b.memory_mb, b.wall_clock_ms, b.cpu_percent] {
                prop_assert_eq!(got.map(f64::to_bits), Some(v.to_bits()), "{}", text);
            }
        }
    }
}
