//! Property tests (proptest): normalisation, traversal, the fast matcher
//! against the naive reference, and what an allowed URL's host can be.

use api_sandbox_permissions::fs::normalize;
use api_sandbox_permissions::{FsMode, PermissionPolicy, Platform, PolicyOptions};
use proptest::prelude::*;
use serde_json::json;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("...".to_owned()),
        Just(".git".to_owned()),
        "[a-z.\\\\é]{1,4}",
    ]
}

fn raw_path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..8).prop_map(|segs| format!("/{}", segs.join("/")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// A normalised path never holds `.`, `..` or empty segments, and normalising again changes nothing.
    #[test]
    fn normalised_paths_are_clean(raw in raw_path(), win in any::<bool>()) {
        let (platform, input) = if win { (Platform::Win32, format!("C:{raw}")) } else { (Platform::Posix, raw) };
        if let Ok(n) = normalize(&input, platform) {
            let body = if win { &n.path()[2..] } else { n.path() };
            prop_assert!(body.starts_with('/'));
            if body != "/" {
                for s in body[1..].split('/') {
                    prop_assert!(!matches!(s, "" | "." | ".."), "{:?} -> {:?}", input, n.path());
                }
            }
            prop_assert_eq!(normalize(n.path(), platform).unwrap().into_path(), n.path());
        }
    }

    /// A path with `..` that climbs above a grant's root is never allowed.
    #[test]
    fn dotdot_never_climbs_out_of_a_grant(segs in prop::collection::vec(segment(), 0..10), mode in any::<bool>()) {
        let p = PermissionPolicy::from_manifest(
            &json!({ "fs": [{ "path": "/data/plugin/**", "mode": "readwrite" }, "/data/plugin/x/*.txt"] }),
            PolicyOptions::new("t").platform(Platform::Posix),
        ).unwrap();
        let raw = format!("/data/plugin/{}", segs.join("/"));
        let mode = if mode { FsMode::Read } else { FsMode::Write };
        let allowed = p.check_fs(&raw, mode).is_allowed();
        let inside = matches!(normalize(&raw, Platform::Posix), Ok(n) if n.path().starts_with("/data/plugin/"));
        prop_assert_eq!(allowed, inside, "{:?}", raw);
    }

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
