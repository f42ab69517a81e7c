#![no_main]
//! Manifest parsing: any bytes are either a policy or INVALID_MANIFEST with a
//! JSON pointer that resolves in the input; never a panic or a hang.
use api_sandbox_permissions::{PermissionPolicy, Platform, PolicyOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for platform in [Platform::Posix, Platform::Win32] {
        match PermissionPolicy::from_json(text, PolicyOptions::new("fuzz").platform(platform)) {
            Ok(p) => {
                // The normalised form is itself a valid manifest with the same normal form.
                let json = p.to_json();
                let again = PermissionPolicy::from_manifest(&json, PolicyOptions::new("fuzz").platform(platform))
                    .expect("to_json is a valid manifest");
                assert_eq!(again.to_json(), json);
                let _ = p.lint();
            }
            Err(e) => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
                    // The pointer's parent exists in the input (the leaf may be a missing required key).
                    let parent = e.pointer.rsplit_once('/').map_or("", |(a, _)| a);
                    assert!(e.pointer.is_empty() || v.pointer(parent).is_some(), "{} in {text}", e.pointer);
                }
            }
        }
    }
});
