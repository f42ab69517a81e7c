#![no_main]
//! Path normalisation and checkFs: no panic; a normalised path is clean and
//! idempotent; an allowed path normalises under a granted prefix.
use api_sandbox_permissions::fs::normalize;
use api_sandbox_permissions::{FsMode, PermissionPolicy, Platform, PolicyOptions};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn policies() -> &'static [(Platform, PermissionPolicy)] {
    static P: OnceLock<Vec<(Platform, PermissionPolicy)>> = OnceLock::new();
    P.get_or_init(|| {
        let posix = serde_json::json!({ "fs": ["/data/plugin/**", { "path": "/out/*.json", "mode": "write" }, "/etc/app.conf", "/srv/{a,b}/[xy]?/**"] });
        let win = serde_json::json!({ "fs": ["C:\\data\\plugin\\**", { "path": "D:\\out\\*.json", "mode": "write" }] });
        vec![
            (Platform::Posix, PermissionPolicy::from_manifest(&posix, PolicyOptions::new("f").platform(Platform::Posix)).unwrap()),
            (Platform::Win32, PermissionPolicy::from_manifest(&win, PolicyOptions::new("f").platform(Platform::Win32)).unwrap()),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    for (platform, p) in policies() {
        let n = normalize(raw, *platform);
        if let Ok(n) = &n {
            let root = if *platform == Platform::Win32 { 2 } else { 0 };
            let body = &n.path()[root..];
            assert!(body == "/" || body[1..].split('/').all(|s| !matches!(s, "" | "." | "..")), "{raw:?} -> {n:?}");
            assert_eq!(normalize(n.path(), *platform).unwrap().path(), n.path());
        }
        for mode in [FsMode::Read, FsMode::Write] {
            if p.check_fs(raw, mode).is_allowed() {
                let n = n.as_ref().expect("allowed implies normalisable");
                let lower = n.path().to_lowercase();
                let ok = match platform {
                    Platform::Posix => n.path().starts_with("/data/plugin/") || n.path().starts_with("/out/") || n.path() == "/etc/app.conf" || n.path().starts_with("/srv/"),
                    Platform::Win32 => lower.starts_with("c:/data/plugin/") || lower.starts_with("d:/out/"),
                };
                assert!(ok, "{raw:?} allowed as {:?}", n.path());
            }
        }
    }
});
