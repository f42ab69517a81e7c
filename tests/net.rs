//! Raw connection targets (SPEC §15, §17): Deno's `net` and `import` name a
//! host and a port, and Deno then requests any path on them. So a target is
//! allowed only where the fetch check would allow every path on it: checked
//! here against the fetch check itself (an allowed `host:port` must pass
//! `check_fetch` for every hostile path under one scheme), and a target
//! without a port against all 65,536 ports.

use api_sandbox_permissions::fetch::{NetTarget, NetUse};
use api_sandbox_permissions::{DenyReason, PermissionPolicy, PolicyOptions};
use proptest::prelude::*;
use serde_json::{json, Value};

fn policy(m: Value) -> PermissionPolicy {
    PermissionPolicy::from_manifest(&m, PolicyOptions::new("t")).unwrap()
}

fn net(p: &PermissionPolicy, target: &str) -> Option<DenyReason> {
    p.check_net(&NetTarget::parse(target).expect(target), NetUse::Connect).reason()
}

fn import(p: &PermissionPolicy, target: &str) -> Option<DenyReason> {
    p.check_net(&NetTarget::parse(target).expect(target), NetUse::Import).reason()
}

/// Paths a client may request once it may connect: plain, deep, and the
/// segments a path scope refuses (servers decode them differently).
const PATHS: &[&str] =
    &["/", "/x", "/v1/a/b", "/a%2Fb", "/..;/admin", "/%2e%2e/x", "/admin/x", "/public/x", "/caf%C3%A9", "/x/"];

#[test]
fn a_grant_of_one_path_admits_no_raw_host() {
    let p = policy(json!({ "fetch": [
        "https://api.example.com/", "host.example:*/", "https://all.example.com/**", "https://v1.example.com/v1/**",
        "whole.example.com", "ws://sock.example.com:9000", "ftp://files.example.com"
    ] }));
    for t in
        ["api.example.com:443", "host.example:8080", "host.example:443", "all.example.com:443", "v1.example.com:443"]
    {
        assert_eq!(net(&p, t), Some(DenyReason::PathNotAllowed), "{t}");
        assert_eq!(import(&p, t.split(':').next().unwrap()), Some(DenyReason::PathNotAllowed), "{t}");
    }
    assert_eq!(net(&p, "whole.example.com:443"), None);
    assert_eq!(net(&p, "whole.example.com:80"), None);
    assert_eq!(net(&p, "whole.example.com:8443"), Some(DenyReason::PortNotAllowed));
    assert_eq!(net(&p, "sock.example.com:9000"), None);
    assert_eq!(net(&p, "files.example.com:21"), None);
    assert_eq!(import(&p, "sock.example.com:9000"), Some(DenyReason::SchemeNotAllowed));
    assert_eq!(import(&p, "whole.example.com"), None, "an import without a port is https's 443");
    assert_eq!(net(&p, "other.example.com:443"), Some(DenyReason::HostNotAllowlisted));
}

#[test]
fn a_deny_rule_of_the_host_denies_it_whatever_its_scheme_or_path() {
    let p = policy(json!({
        "fetch": ["*.example.com:*", "10.1.2.3:*", "127.0.0.1:*", "[::1]:*", "8.8.8.8"],
        "deny": { "fetch": ["a.example.com/admin/**", "ftp://b.example.com", "https://c.example.com:8443/x", "10.0.0.0/8", "localhost", "[64:ff9b::808:808]"] }
    }));
    assert_eq!(net(&p, "a.example.com:443"), Some(DenyReason::ExplicitlyDenied));
    assert_eq!(net(&p, "b.example.com:443"), Some(DenyReason::ExplicitlyDenied), "an ftp deny denies a raw connection");
    assert_eq!(net(&p, "c.example.com:8443"), Some(DenyReason::ExplicitlyDenied));
    assert_eq!(net(&p, "c.example.com:443"), None, "a deny of one port leaves the others");
    assert_eq!(net(&p, "c.example.com"), Some(DenyReason::ExplicitlyDenied), "every port includes the denied one");
    assert_eq!(net(&p, "10.1.2.3:80"), Some(DenyReason::ExplicitlyDenied));
    assert_eq!(net(&p, "[::ffff:10.1.2.3]:80"), Some(DenyReason::ExplicitlyDenied));
    assert_eq!(net(&p, "127.0.0.1:80"), Some(DenyReason::ExplicitlyDenied), "a localhost deny covers loopback");
    assert_eq!(net(&p, "[::1]:80"), Some(DenyReason::ExplicitlyDenied));
    assert_eq!(net(&p, "8.8.8.8:443"), Some(DenyReason::ExplicitlyDenied), "an IPv6 deny denies the IPv4 it embeds");
    assert_eq!(net(&p, "d.example.com"), None, "a :* grant and no deny: every port");
}

#[test]
fn targets_that_are_not_host_and_port_are_refused() {
    for bad in [
        "",
        ":80",
        "a b:80",
        "a@b:80",
        "a/b:80",
        "[::1",
        "[::1]x",
        "[::1%lo]:1",
        "[]:1",
        "a:",
        "a:65536",
        "a:-1",
        "a:1:2",
        "ex\u{e4}mple.com:80",
        "a#b:1",
        "a?b:1",
        "a\\b:1",
        "a%2eb:1",
        "300.1.1.1:80",
        "\u{FF0A}.example.com:443",
    ] {
        assert!(NetTarget::parse(bad).is_none(), "{bad:?}");
    }
    let t = NetTarget::parse("API.Example.COM.:0443").unwrap();
    assert_eq!((t.to_string(), t.port()), ("api.example.com:443".to_owned(), Some(443)));
    assert_eq!(NetTarget::parse("0x7f.1:80").unwrap().to_string(), "127.0.0.1:80");
    assert_eq!(NetTarget::parse("[::ffff:127.0.0.1]").unwrap().to_string(), "127.0.0.1");
}

const HOSTS: &[&str] = &["a.example.com", "b.a.example.com", "127.0.0.1", "10.1.2.3", "[::1]", "[fd00::1]"];

fn grant() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&["", "http://", "https://", "ws://", "wss://", "ftp://"][..]),
        prop::sample::select(
            &["a.example.com", "*.example.com", "*.a.example.com", "127.0.0.1", "10.1.2.3", "[::1]", "[fd00::1]"][..],
        ),
        prop::sample::select(&["", ":*", ":1", ":443", ":80", ":8443", ":21"][..]),
        prop::sample::select(&["", "", "", "/", "/**", "/x", "/admin/**", "/public/**"][..]),
    )
        .prop_map(|(s, h, p, path)| format!("{s}{h}{p}{path}"))
}

fn deny() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => grant(),
        1 => prop::sample::select(&["10.0.0.0/8", "[fd00::]/8", "127.0.0.0/8", "localhost"][..]).prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// An allowed raw target is a host and port on which the fetch check
    /// allows every path under one scheme (for `import`: https); a target
    /// without a port is allowed exactly when every port is.
    #[test]
    fn an_allowed_target_is_one_every_path_of_is_allowed(
        grants in prop::collection::vec(grant(), 0..5),
        denies in prop::collection::vec(deny(), 0..3),
    ) {
        let p = policy(json!({ "fetch": grants, "deny": { "fetch": denies } }));
        for h in HOSTS {
            for port in [1u16, 21, 80, 443, 8443, 9] {
                let t = format!("{h}:{port}");
                for (use_, schemes) in [(NetUse::Connect, &["http", "https", "ws", "wss", "ftp"][..]), (NetUse::Import, &["https"][..])] {
                    if p.check_net(&NetTarget::parse(&t).unwrap(), use_).is_allowed() {
                        let every_path = |s: &&str| PATHS.iter().all(|path| p.check_fetch(&format!("{s}://{t}{path}")).is_allowed());
                        prop_assert!(schemes.iter().any(every_path), "{t} {use_:?} allowed, but some path is not: {grants:?} {denies:?}");
                    }
                }
            }
        }
        // Every port, for one host a case (65,536 checks).
        let h = HOSTS[grants.len() % HOSTS.len()];
        let all = NetTarget::parse(h).unwrap();
        let every = (0..=u16::MAX).all(|port| p.check_net(&NetTarget::parse(&format!("{h}:{port}")).unwrap(), NetUse::Connect).is_allowed());
        prop_assert_eq!(p.check_net(&all, NetUse::Connect).is_allowed(), every, "{} {:?} {:?}", h, grants, denies);
    }
}
