#![no_main]
//! checkFetch with a differential oracle: the host an allowed URL goes to
//! (per `url::Url`, the WHATWG parser) is a granted one, without credentials,
//! and the canonical URL is exactly `url::Url`'s serialisation.
use api_sandbox_permissions::{PermissionPolicy, PolicyOptions};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn policy() -> &'static PermissionPolicy {
    static P: OnceLock<PermissionPolicy> = OnceLock::new();
    P.get_or_init(|| {
        let m = serde_json::json!({ "fetch": ["api.example.com", "*.cdn.example.net:*", "127.0.0.1:8080", "[::1]:9000", "ws://socket.example.com", "xn--bcher-kva.example"] });
        PermissionPolicy::from_manifest(&m, PolicyOptions::new("f")).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let p = policy();
    let Ok(allowed) = p.check_fetch_url(input) else { return };
    let u = url::Url::parse(input).expect("allowed implies parseable");
    assert_eq!(allowed.url().as_str(), u.as_str());
    assert!(u.username().is_empty() && u.password().is_none());
    let host = u.host_str().expect("a host").trim_end_matches('.').to_owned();
    let ok = host == "api.example.com"
        || (host.ends_with(".cdn.example.net") && !host.starts_with('.') && !host.contains(".."))
        || host == "127.0.0.1"
        || host == "[::1]"
        || host == "[::ffff:7f00:1]"
        || host == "socket.example.com"
        || host == "xn--bcher-kva.example";
    assert!(ok, "{input:?} allowed with host {host:?}");
    assert!(matches!(u.scheme(), "http" | "https" | "ws"), "{input:?}");
    // The decision-only path agrees.
    assert!(p.check_fetch(input).is_allowed());
});
