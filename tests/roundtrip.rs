//! A policy's printed form is the policy (SPEC §17): `from_manifest(p.to_json())`
//! decides every request exactly as `p`, prints the same again, and `diff`
//! finds nothing between the two either way. Random and hostile manifests
//! (Unicode and IDNA hosts, the fullwidth and small-form `*`, IPv4 forms,
//! IPv6, path scopes with escapes, globs with braces, classes and escapes on
//! both platforms, denies, CIDR blocks, bound secrets, topics, odd budgets)
//! through the public crate API.

use api_sandbox_permissions::diff::diff_policies;
use api_sandbox_permissions::fetch::{NetTarget, NetUse};
use api_sandbox_permissions::{Capability, FsMode, PermissionPolicy, Platform, PolicyOptions};
use proptest::prelude::*;
use serde_json::{json, Value};

const HOSTS: &[&str] = &[
    "api.example.com",
    "API.Example.COM",
    "a.b.example.com",
    "example.com.",
    "bücher.example",
    "xn--bcher-kva.example",
    "ＡＰＩ.example.com",
    "api。example.com",
    "ＥＸＡＭＰＬＥ．ＣＯＭ",
    "\u{FF0A}.example.com",
    "\u{FE61}.example.com",
    "a\u{FF0A}b.example.com",
    "\u{FF0A}",
    "exa\u{AD}mple.com",
    "faß.de",
    "xn--fa-hia.de",
    "_acme.example.com",
    "a!$&'()+,;=.example.com",
    "localhost",
    "sub.localhost",
    "127.0.0.1",
    "0x7f.1",
    "127.1",
    "2130706433",
    "１２７.0.0.1",
    "10.1.2.3",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:10.1.2.3]",
    "[64:ff9b::808:808]",
    "[fe80::1]",
    "8.8.8.8",
];

const SCHEMES: &[&str] = &["", "http://", "https://", "HTTPS://", "ws://", "wss://", "ftp://"];
const PORTS: &[&str] = &["", ":*", ":8443", ":443", ":80", ":1", ":21"];
const PATHS: &[&str] = &[
    "",
    "",
    "",
    "/",
    "/**",
    "/v1/*/x",
    "/v1/",
    "/caf%C3%A9",
    "/café",
    "/%2A",
    "/%2A%2A",
    "/*",
    "/a;b",
    "/%41",
    "/x/**",
    "/ａｄｍｉｎ",
];
const CIDRS: &[&str] =
    &["10.0.0.0/8", "[fd00::]/8", "[::ffff:808:800]/120", "127.0.0.0/8", "0.0.0.0/0", "[64:ff9b::]/96", "8.8.8.8/32"];
const POSIX_GLOBS: &[&str] = &[
    "/srv/**",
    "/srv/{a,b}/*.txt",
    "/srv/[abc]x",
    "/srv/\\*lit",
    "/srv//x/",
    "/srv/a/**/z",
    "/srv/caf\u{E9}/*",
    "/srv/[!a]*",
    "/srv/\\{x\\}",
    "/Srv/ẞ/**",
    "/srv/x?y",
    "/**",
];
const WIN32_GLOBS: &[&str] = &[
    "C:\\Users\\**",
    "C:/a/{b,c}",
    "c:\\x\\[!a]",
    "C:\\srv\\\\x\\",
    "D:\\data\\*.txt",
    "C:\\a\\**\\z",
    "C:\\Srv\\ẞ\\**",
    "C:\\",
];
const TOPICS: &[&str] = &["orders.*", "orders.**", "orders.created", "é.x", "a.b.c", "**", "*"];
const NAMES: &[&str] = &["API_KEY", "K", "ПАРОЛЬ", "k", "a b", "\u{202E}x"];

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(pool)
}

fn fetch_pattern() -> impl Strategy<Value = String> {
    (pick(SCHEMES), any::<bool>(), pick(HOSTS), pick(PORTS), pick(PATHS))
        .prop_map(|(s, suffix, h, p, path)| format!("{s}{}{h}{p}{path}", if suffix { "*." } else { "" }))
}

fn deny_rule() -> impl Strategy<Value = String> {
    prop_oneof![3 => fetch_pattern(), 1 => pick(CIDRS).prop_map(str::to_owned)]
}

fn budget() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        Just(5e-324),
        Just(f64::MAX),
        Just(0.1 + 0.2),
        Just(1e21),
        Just(123_456_789.123_456_79),
    ]
}

/// A random manifest: each entry kept only when it is valid alone, so most
/// manifests compile.
fn manifest(platform: Platform) -> impl Strategy<Value = Value> {
    let globs = if platform == Platform::Win32 { WIN32_GLOBS } else { POSIX_GLOBS };
    (
        prop::collection::vec((pick(globs), 0..3usize), 0..4),
        prop::collection::vec(fetch_pattern(), 0..6),
        prop::collection::vec(deny_rule(), 0..4),
        prop::collection::vec(pick(globs), 0..2),
        prop::collection::vec((pick(NAMES), prop::collection::vec(fetch_pattern(), 0..3)), 0..3),
        prop::collection::vec(pick(TOPICS), 0..3),
        prop::collection::vec(pick(TOPICS), 0..3),
        prop::option::of(pick(NAMES)),
        prop::collection::vec(prop::option::of(budget()), 3),
    )
        .prop_map(move |(fs, fetch, deny, deny_fs, secrets, publishes, subscribes, db, budgets)| {
            let valid =
                |m: Value| PermissionPolicy::from_manifest(&m, PolicyOptions::new("t").platform(platform)).is_ok();
            let modes = ["read", "write", "readwrite"];
            let fs: Vec<Value> = fs
                .into_iter()
                .map(|(g, m)| if m == 0 { json!(g) } else { json!({ "path": g, "mode": modes[m] }) })
                .filter(|g| valid(json!({ "fs": [g] })))
                .collect();
            let fetch: Vec<String> = fetch.into_iter().filter(|p| valid(json!({ "fetch": [p] }))).collect();
            let deny: Vec<String> = deny.into_iter().filter(|p| valid(json!({ "deny": { "fetch": [p] } }))).collect();
            let deny_fs: Vec<&str> = deny_fs.into_iter().filter(|g| valid(json!({ "deny": { "fs": [g] } }))).collect();
            let mut seen = std::collections::HashSet::new();
            let secrets: Vec<Value> = secrets
                .into_iter()
                .filter(|(n, _)| seen.insert(*n))
                .map(|(n, hosts)| {
                    let hosts: Vec<String> = hosts.into_iter().filter(|p| valid(json!({ "fetch": [p] }))).collect();
                    if hosts.is_empty() {
                        json!(n)
                    } else {
                        json!({ "name": n, "hosts": hosts })
                    }
                })
                .collect();
            let mut m = json!({ "fs": fs, "fetch": fetch, "deny": { "fetch": deny, "fs": deny_fs }, "secrets": secrets,
                                "events": { "publishes": publishes, "subscribes": subscribes } });
            if let Some(d) = db {
                m["db"] = json!({ "database": d });
            }
            let mut b = serde_json::Map::new();
            for (k, v) in ["cpuPercent", "memoryMb", "wallClockMs"].iter().zip(budgets) {
                if let Some(v) = v.map(f64::abs).filter(|v| v.is_finite() && *v > 0.0) {
                    b.insert((*k).into(), json!(v));
                }
            }
            m["budgets"] = Value::Object(b);
            m
        })
}

/// Request URLs over the same hosts, as a plugin would spell them (the
/// printed host of `＊.example.com` included).
fn urls() -> Vec<String> {
    let hosts = [
        "api.example.com",
        "x.api.example.com",
        "*.example.com",
        "%2A.example.com",
        "a.example.com",
        "a*b.example.com",
        "x.a.b.example.com",
        "xn--bcher-kva.example",
        "bücher.example",
        "x.bücher.example",
        "fass.de",
        "xn--fa-hia.de",
        "x.localhost",
        "localhost",
        "127.0.0.1",
        "127.0.0.2",
        "10.9.9.9",
        "[::1]",
        "[::ffff:a01:203]",
        "[64:ff9b::808:808]",
        "8.8.8.8",
        "[fe80::1]",
        "_acme.example.com",
        "a!$&'()+,;=.example.com",
    ];
    let mut out = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        for (j, s) in ["http", "https", "ws", "wss", "ftp"].iter().enumerate() {
            for (k, port) in ["", ":8443", ":1", ":443"].iter().enumerate() {
                let path =
                    ["/", "/v1/a/x", "/café", "/caf%C3%A9", "/*", "/%2A", "/a%2Fb", "/v1/", "/..;/x", "/admin/x"]
                        [(i + j + k) % 10];
                out.push(format!("{s}://{h}{port}{path}"));
            }
        }
    }
    out
}

const FS_POSIX: &[&str] = &[
    "/srv/a/x.txt",
    "/srv/b/y.txt",
    "/srv/ax",
    "/srv/*lit",
    "/srv/\\*lit",
    "/srv/x/",
    "/srv/x",
    "/srv/a/q/z",
    "/srv/café/k",
    "/srv/cafe\u{301}/k",
    "/srv/{x}",
    "/Srv/ß/k",
    "/srv/ss/k",
    "/srv/xzy",
    "/etc/passwd",
    "/srv/../etc/passwd",
];
const FS_WIN32: &[&str] = &[
    "C:\\Users\\me\\x",
    "c:\\users\\me\\x",
    "C:\\a\\b",
    "C:\\a\\c",
    "C:\\x\\b",
    "C:\\x\\a",
    "C:\\srv\\x",
    "D:\\data\\f.txt",
    "D:\\DATA\\F.TXT",
    "C:\\a\\q\\z",
    "C:\\Srv\\ß\\k",
    "C:\\Srv\\SS\\k",
    "C:\\Windows\\x",
    "C:\\Users\\..\\Windows",
];
const IPS: &[&str] = &["93.184.216.34", "127.0.0.1", "10.1.2.3", "::1", "::ffff:127.0.0.1", "8.8.8.8", "fe80::1"];
const NET: &[&str] = &[
    "api.example.com:443",
    "api.example.com:8443",
    "api.example.com",
    "x.api.example.com:443",
    "a.example.com:1",
    "a.example.com",
    "xn--bcher-kva.example:443",
    "127.0.0.1:80",
    "127.0.0.1",
    "10.9.9.9:443",
    "[::1]:8443",
    "[::ffff:a01:203]:443",
    "localhost:21",
    "8.8.8.8:443",
];

/// Every decision `a` and `b` make on the sampled requests, side by side:
/// the first difference, if any.
/// A case samples every `stride`-th URL from `offset` (the whole table is
/// about 500 URLs, each checked many ways).
fn first_difference(a: &PermissionPolicy, b: &PermissionPolicy, offset: usize, stride: usize) -> Option<String> {
    let fs = if a.platform() == Platform::Win32 { FS_WIN32 } else { FS_POSIX };
    for p in fs {
        for mode in [FsMode::Read, FsMode::Write] {
            if a.check_fs(p, mode) != b.check_fs(p, mode) {
                return Some(format!("check_fs({p:?}, {mode:?})"));
            }
            if a.check_fs_resolved(p, mode) != b.check_fs_resolved(p, mode) {
                return Some(format!("check_fs_resolved({p:?}, {mode:?})"));
            }
        }
    }
    for u in urls().into_iter().skip(offset % stride).step_by(stride) {
        let (x, y) = (a.check_fetch_url(&u), b.check_fetch_url(&u));
        if x.as_ref().map(|v| v.url().as_str()).map_err(|e| *e) != y.as_ref().map(|v| v.url().as_str()).map_err(|e| *e)
            || a.check_fetch(&u) != b.check_fetch(&u)
        {
            return Some(format!("check_fetch({u:?})"));
        }
        for ip in IPS {
            let (x, y) = (a.check_fetch_address(&u, ip), b.check_fetch_address(&u, ip));
            if x.map(|v| v.into_url()) != y.map(|v| v.into_url()) {
                return Some(format!("check_fetch_address({u:?}, {ip})"));
            }
        }
        for n in NAMES {
            let payload = json!({ "name": n, "url": u });
            if a.check_capability("secrets.use", &payload) != b.check_capability("secrets.use", &payload) {
                return Some(format!("secrets.use {payload}"));
            }
        }
    }
    for n in NAMES {
        if a.check_secret(n) != b.check_secret(n) || a.check_database(n) != b.check_database(n) {
            return Some(format!("secrets.get / db.query {n:?}"));
        }
    }
    for t in ["orders.created", "orders.x.y", "é.x", "a.b.c", "orders.*", "orders.**", "x"] {
        for c in [Capability::EventsPublish, Capability::EventsSubscribe] {
            if a.check_topic(c, t) != b.check_topic(c, t) {
                return Some(format!("{c:?} {t:?}"));
            }
        }
    }
    for t in NET {
        let t = NetTarget::parse(t).unwrap();
        for u in [NetUse::Connect, NetUse::Import] {
            if a.check_net(&t, u) != b.check_net(&t, u) {
                return Some(format!("check_net({t}, {u:?})"));
            }
        }
    }
    if a.budgets() != b.budgets() {
        return Some("budgets".into());
    }
    None
}

fn round_trip(m: &Value, platform: Platform, offset: usize) -> Result<(), TestCaseError> {
    let options = PolicyOptions::new("t").platform(platform);
    let Ok(p) = PermissionPolicy::from_manifest(m, options.clone()) else { return Ok(()) };
    let printed = p.to_json();
    let r = PermissionPolicy::from_manifest(&printed, options)
        .map_err(|e| TestCaseError::fail(format!("the printed form does not compile: {e:?}\n{printed}")))?;
    prop_assert_eq!(&r.to_json(), &printed, "printing is not idempotent");
    if let Some(d) = first_difference(&p, &r, offset, 6) {
        return Err(TestCaseError::fail(format!("{d} differs after the round trip\n{m}\n{printed}")));
    }
    for (old, new) in [(&p, &r), (&r, &p)] {
        let report = diff_policies(old, new);
        prop_assert_eq!(report.exit_code(), 0, "diff of a policy and its reload: {}\n{}", report.to_json(), printed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn posix_policies_round_trip(m in manifest(Platform::Posix), offset in any::<usize>()) {
        round_trip(&m, Platform::Posix, offset)?;
    }

    #[test]
    fn win32_policies_round_trip(m in manifest(Platform::Win32), offset in any::<usize>()) {
        round_trip(&m, Platform::Win32, offset)?;
    }
}

/// The fullwidth and small-form `*` map to `*` (IDNA): a host holding one is
/// refused wherever a fetch pattern is read, with its JSON pointer, so no
/// printed `*.example.com` stands for the literal host.
#[test]
fn a_host_that_maps_to_a_star_is_refused_everywhere() {
    for star in ["\u{FF0A}", "\u{FE61}"] {
        for host in [
            format!("{star}.example.com"),
            format!("a{star}b.example.com"),
            format!("*.{star}.example.com"),
            star.to_owned(),
        ] {
            for (m, ptr) in [
                (json!({ "fetch": ["a.example", host] }), "/fetch/1"),
                (json!({ "fetch": [format!("https://{host}:8443/v1/**")] }), "/fetch/0"),
                (json!({ "deny": { "fetch": [format!("{host}/admin/**")] } }), "/deny/fetch/0"),
                (json!({ "secrets": [{ "name": "K", "hosts": ["a.example", host] }] }), "/secrets/0/hosts/1"),
            ] {
                let e = PermissionPolicy::from_manifest(&m, PolicyOptions::new("t")).expect_err(&m.to_string());
                assert_eq!(e.pointer, ptr, "{m}");
                assert!(e.expected.contains("`*` only as a leading ASCII `*.` label"), "{}", e.expected);
            }
        }
    }
    // The ASCII wildcard is still the wildcard, and prints as itself.
    let p = PermissionPolicy::from_manifest(&json!({ "fetch": ["*.EXAMPLE.com"] }), PolicyOptions::new("t")).unwrap();
    assert_eq!(p.to_json()["fetch"], json!(["*.example.com"]));
}
