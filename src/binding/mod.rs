//! The Node-API binding: every `#[napi]` item, and every conversion between
//! JS and the core. Decisions cross as compact numeric codes that `index.js`
//! maps to frozen decision objects; manifest errors are held by the policy
//! handle and turned into `INVALID_MANIFEST` errors in one place in JS.
//! Every entry point catches panics, so a Rust panic becomes a JS error.
//!
//! Strings: the raw hot paths read theirs with `raw::string`, which never
//! returns a prefix. The napi-rs `String` arguments below are read by
//! napi-rs as `napi_get_value_string_utf8` for the length (V8 `Utf8Length`),
//! then again into a buffer of exactly that length plus the NUL, so they are
//! whole strings too; the core counts every limit on them in UTF-8 bytes
//! (`MAX_URL_BYTES` in `fetch`, the manifest limits in `policy`). Lone
//! surrogates would arrive as U+FFFD: `index.js` refuses ill-formed strings
//! before any of them is passed here.
//!
//! Test hooks (`__panicForTesting`, `__rawPanicForTesting`,
//! `__lockdownProbe`) exist only with the `test-hooks` cargo feature, which
//! the shipped addon is never built with (`scripts/test-hooks-addon.js`
//! builds a separate debug addon for the tests that need them).

mod raw;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::json;

use crate::error::{Capability, DenyReason, ManifestError, ERROR_REGISTRY};
use crate::fetch::redacted_origin_str;
use crate::fs::FsMode;
use crate::metrics::{INSTRUMENTS, METER_NAME};
use crate::policy::{PermissionPolicy, Platform, PolicyOptions};

/// Everything `index.js` needs as data: the error registry, the closed sets,
/// the decision-code table, instrument descriptors, and limits.
#[napi(catch_unwind)]
pub fn export_data() -> String {
    let registry: Vec<_> = ERROR_REGISTRY
        .iter()
        .map(|e| json!({ "code": e.code, "id": e.id, "message": e.message, "deprecated": e.deprecated }))
        .collect();
    let mut decisions = Vec::new();
    for c in Capability::ALL {
        for r in DenyReason::ALL {
            decisions.push(json!([crate::Decision::deny(*c, *r).code(), c.as_str(), r.as_str()]));
        }
    }
    let instruments: Vec<_> = INSTRUMENTS
        .iter()
        .map(|d| {
            json!({ "name": d.name, "kind": d.kind, "unit": d.unit, "description": d.description, "attributeKeys": d.attribute_keys })
        })
        .collect();
    let capabilities: Vec<_> = Capability::ALL
        .iter()
        .filter_map(|c| {
            c.payload_field().map(|f| match c.second_payload_field() {
                Some(f2) => json!([c.as_str(), f, f2]),
                None => json!([c.as_str(), f]),
            })
        })
        .collect();
    json!({
        "registry": registry,
        "denyReasons": DenyReason::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        "capabilities": capabilities,
        "budgetKinds": crate::BudgetKind::ALL.iter().map(|k| json!([k.as_str(), k.reason()])).collect::<Vec<_>>(),
        "decisions": decisions,
        "instruments": instruments,
        "meterName": METER_NAME,
        "limits": {
            "maxPatterns": crate::policy::MAX_PATTERNS,
            "maxPathBytes": crate::fs::MAX_PATH_BYTES,
            "maxHostPatternBytes": crate::fetch::MAX_HOST_PATTERN_BYTES,
            "maxPayloadStringBytes": crate::capability::MAX_PAYLOAD_STRING_BYTES,
            "maxNameBytes": crate::policy::MAX_NAME_BYTES,
            "maxBraceGroups": crate::fs::MAX_BRACE_GROUPS,
            "maxBraceAlternatives": crate::fs::MAX_BRACE_ALTERNATIVES,
            "maxBraceVariants": crate::glob::MAX_BRACE_VARIANTS,
            "maxPolicyGlobVariants": crate::fs::MAX_POLICY_GLOB_VARIANTS,
            "maxPolicyGlobSize": crate::fs::MAX_POLICY_GLOB_SIZE,
            "maxMatchSteps": crate::glob::MAX_MATCH_STEPS,
            "maxUrlBytes": crate::fetch::MAX_URL_BYTES,
            "defaultCpuGraceMs": crate::budget::DEFAULT_CPU_GRACE_MS,
            "maxCpuGraceMs": crate::budget::MAX_CPU_GRACE_MS,
        },
    })
    .to_string()
}

/// Panics on purpose, inside the napi-rs layer, so the test suite can prove a
/// Rust panic reaches JS as an error and never aborts the process.
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, js_name = "__panicForTesting")]
pub fn panic_for_testing() {
    panic!("deliberate panic for the test suite");
}

/// `lockdown()`: the JSON report, or an error whose message starts with
/// `LOCKDOWN_REFUSED:`, `LOCKDOWN_FAILED:` or `ERR_UNSUPPORTED_PLATFORM:`.
#[napi(catch_unwind)]
pub fn lockdown() -> Result<String> {
    #[cfg(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        use crate::lockdown::LockdownError;
        match crate::lockdown::lockdown() {
            Ok(r) => Ok(json!({
                "arch": r.arch,
                "action": "EPERM",
                "tsync": true,
                "noNewPrivs": true,
                "denied": r.denied,
                "clone": "denied without CLONE_THREAD",
                "clone3": "ENOSYS",
                "foreignArch": "kill process",
                "openFds": r.open_fds.iter().map(|(fd, t)| json!({ "fd": fd, "target": t })).collect::<Vec<_>>(),
            })
            .to_string()),
            Err(e @ LockdownError::UnsafeState(_)) => {
                Err(Error::new(Status::GenericFailure, format!("LOCKDOWN_REFUSED:{e}")))
            }
            Err(e @ LockdownError::Unsupported(_)) => {
                Err(Error::new(Status::GenericFailure, format!("ERR_UNSUPPORTED_PLATFORM:{e}")))
            }
            Err(e) => Err(Error::new(Status::GenericFailure, format!("LOCKDOWN_FAILED:{e}"))),
        }
    }
    #[cfg(not(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        Err(Error::new(Status::GenericFailure, "ERR_UNSUPPORTED_PLATFORM:lockdown needs Linux on x86_64 or aarch64"))
    }
}

/// Test probe for the process tier: raw `openat`, `socket` and `execve`
/// (of `/bin/true`, which never runs when denied), returning each errno
/// (0 when the call succeeded). Only meaningful after `lockdown()`.
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, js_name = "__lockdownProbe")]
pub fn lockdown_probe() -> Vec<i32> {
    #[cfg(all(feature = "lockdown", target_os = "linux"))]
    // SAFETY: plain syscalls with valid arguments: NUL-terminated C string
    // literals, NULL-terminated argv/envp arrays that outlive the call, and
    // descriptors closed only when the call returned one. `__errno_location`
    // is this thread's errno. A successful execve replaces the process, which
    // is what a test that runs this before lockdown would see.
    unsafe {
        let errno = || *libc::__errno_location();
        let fd = libc::openat(libc::AT_FDCWD, c"/etc/hostname".as_ptr(), libc::O_RDONLY);
        let open = if fd < 0 {
            errno()
        } else {
            libc::close(fd);
            0
        };
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        let sock = if s < 0 {
            errno()
        } else {
            libc::close(s);
            0
        };
        // execve only returns on failure; a success would replace this process, so probe it
        // with an argv that makes /bin/true exit 0 — the caller sees the process vanish.
        let argv = [c"true".as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null()];
        let rc = libc::execve(c"/bin/true".as_ptr(), argv.as_ptr(), envp.as_ptr());
        let exec = if rc < 0 { errno() } else { 0 };
        vec![open, sock, exec]
    }
    #[cfg(not(all(feature = "lockdown", target_os = "linux")))]
    {
        vec![]
    }
}

/// The conformance cases as JSON (see `conformance::cases_json`).
#[napi(catch_unwind)]
pub fn conformance_cases() -> String {
    crate::conformance::cases_json()
}

/// `scheme://host:port` of a URL string, or null.
#[napi(catch_unwind)]
pub fn redacted_origin(url: String) -> Option<String> {
    redacted_origin_str(&url)
}

/// Registers the raw hot-path functions (see `raw.rs`) next to the napi-rs ones.
#[napi(module_exports)]
pub fn init(exports: Object, env: Env) -> Result<()> {
    // SAFETY: `env` and `exports` are the live environment and exports object of module init.
    if unsafe { raw::register(env.raw(), exports.raw()) } {
        Ok(())
    } else {
        Err(Error::new(Status::GenericFailure, "could not register the raw functions"))
    }
}

/// A compiled policy, or the manifest error that stopped it.
#[napi]
pub struct NativePolicy {
    inner: std::result::Result<Arc<PermissionPolicy>, ManifestError>,
}

#[napi]
impl NativePolicy {
    /// Never throws for a bad manifest: read `error()` first.
    #[napi(constructor, catch_unwind)]
    pub fn new(manifest_json: String, plugin: String, platform: String) -> Self {
        let platform = match Platform::parse(&platform) {
            Some(p) => p,
            None => {
                return Self { inner: Err(ManifestError::new("", "options.platform: 'posix' or 'win32'")) };
            }
        };
        Self {
            inner: PermissionPolicy::from_json(&manifest_json, PolicyOptions::new(plugin).platform(platform))
                .map(Arc::new),
        }
    }

    /// `[pointer, expected]` of the manifest error, or null.
    #[napi(catch_unwind)]
    pub fn error(&self) -> Option<Vec<String>> {
        self.inner.as_ref().err().map(|e| vec![e.pointer.clone(), e.expected.clone()])
    }

    fn policy(&self) -> Result<&PermissionPolicy> {
        self.inner.as_deref().map_err(|e| Error::new(Status::InvalidArg, e.to_string()))
    }

    /// A type-tagged external sharing the policy, for the raw hot-path functions.
    #[napi(catch_unwind, ts_return_type = "object")]
    pub fn handle(&self, env: Env) -> Result<Unknown<'_>> {
        let policy = self.inner.as_ref().map_err(|e| Error::new(Status::InvalidArg, e.to_string()))?.clone();
        // SAFETY: `env` is this call's live environment; the handle owns its own `Arc` reference.
        let v = unsafe { raw::policy_handle(env.raw(), policy) };
        if v.is_null() {
            return Err(Error::new(Status::GenericFailure, "could not create a policy handle"));
        }
        // SAFETY: `v` is a live napi_value of this environment, just created.
        Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), v) })
    }

    #[napi(catch_unwind)]
    pub fn to_json(&self) -> Result<String> {
        Ok(self.policy()?.to_json().to_string())
    }

    /// `[cpuPercent, memoryMb, wallClockMs]`, `-1` for absent.
    #[napi(catch_unwind)]
    pub fn budgets(&self) -> Result<Vec<f64>> {
        let b = self.policy()?.budgets();
        Ok([b.cpu_percent, b.memory_mb, b.wall_clock_ms].iter().map(|x| x.unwrap_or(-1.0)).collect())
    }

    /// The canonical URL when allowed, else the decision code.
    #[napi(catch_unwind)]
    pub fn check_fetch_url(&self, url: String) -> Result<Either<String, u32>> {
        Ok(match self.policy()?.check_fetch_url(&url) {
            Ok(a) => Either::A(a.url.into()),
            Err(r) => Either::B(crate::Decision::deny(Capability::Fetch, r).code()),
        })
    }

    /// The canonical URL when allowed, else the decision code.
    #[napi(catch_unwind)]
    pub fn check_fetch_address(&self, url: String, ip: String) -> Result<Either<String, u32>> {
        Ok(match self.policy()?.check_fetch_address(&url, &ip) {
            Ok(a) => Either::A(a.url.into()),
            Err(r) => Either::B(crate::Decision::deny(Capability::Fetch, r).code()),
        })
    }

    /// `authorizeFs`: the path to open when allowed, else the decision code.
    /// `mode`: bit 0 write (else read), bit 1 resolve symlinks.
    #[napi(catch_unwind)]
    pub fn authorize_fs(&self, path: String, mode: u32) -> Result<Either<String, u32>> {
        if mode > 3 {
            return Err(Error::new(Status::InvalidArg, "mode must be 0-3"));
        }
        let fs_mode = if mode & 1 == 1 { FsMode::Write } else { FsMode::Read };
        Ok(match self.policy()?.authorize_fs(&path, fs_mode, mode & 2 == 2) {
            Ok(p) => Either::A(p),
            Err(r) => Either::B(crate::Decision::deny(fs_mode.capability(), r).code()),
        })
    }

    /// JSON explanation: kind `fs-read`/`fs-write` (a = path), `fetch` (a = url),
    /// `cap` (a = id, b = the payload field or null), `cap-json` (a = id, b = the payload as JSON).
    #[napi(catch_unwind)]
    pub fn explain(&self, kind: String, a: String, b: Option<String>) -> Result<String> {
        let p = self.policy()?;
        let v = match kind.as_str() {
            "fs-read" => p.explain_fs(&a, FsMode::Read),
            "fs-write" => p.explain_fs(&a, FsMode::Write),
            "fetch" => p.explain_fetch(&a),
            "cap" => p.explain_capability(&a, b.as_deref()),
            // a = id, b = the whole payload as JSON (two-field capabilities).
            "cap-json" => {
                let payload =
                    b.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or(serde_json::Value::Null);
                p.explain_capability_payload(&a, &payload)
            }
            _ => return Err(Error::new(Status::InvalidArg, "unknown explain kind")),
        };
        Ok(v.to_string())
    }

    /// JSON array of lint warnings `{ pointer, code, message }`.
    #[napi(catch_unwind)]
    pub fn lint(&self) -> Result<String> {
        Ok(serde_json::Value::Array(self.policy()?.lint()).to_string())
    }
}
