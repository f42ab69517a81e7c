//! The wire: every value that crosses between JS and the core, in one place.
//!
//! `lib/native.js` is its one decoder. What crosses, and how:
//!
//! - **Tables** (`exportData`, once at load): the error registry, deny
//!   reasons, capabilities and their payload fields, budget kinds and
//!   reasons, sample fields, the decision-code table, instrument
//!   descriptors, limits, and the layouts of the numeric encodings below
//!   ([`io`], [`code`], [`fs_bits`]). JS reads every number by these names;
//!   `scripts/emit-tables.js` generates the `.d.ts` unions from them.
//! - **Hot paths** (`raw.rs`): a policy handle (a type-tagged external) and
//!   strings in, a decision code out (`0` allow, else a row of `decisions`).
//!   The test-hooks addon's raw budget functions (the Rust arithmetic, for
//!   the JS tracker's parity test) exchange readings and status through one
//!   `Float64Array` whose slots are [`io`]; the shipped `BudgetTracker`
//!   does its arithmetic in JS.
//! - **Cold results**: `#[napi(object)]` structs ([`CompiledPolicy`],
//!   [`Verdict`]).
//! - **Errors**: thrown by [`WireError::throw`], the one conversion: a JS
//!   `Error` (or `TypeError`) whose `code` is a registry code and whose
//!   `details` object holds the fields the JS error class takes. JS never
//!   reads a message back.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::json;

use super::raw;
use crate::error::{Capability, DenyReason, ManifestError, ERROR_REGISTRY};
use crate::fetch::{redacted_origin, NetTarget, NetUse};
use crate::metrics::{INSTRUMENTS, METER_NAME};
use crate::{BudgetKind, Decision, FsMode, PermissionPolicy, Platform, PolicyOptions};

/// The slots of the `Float64Array` of the test-hooks addon's `rawBudgetRecord`:
/// readings in, status out.
pub mod io {
    /// In: the clock reading (ms).
    pub const NOW: usize = 0;
    /// In: cumulative CPU ms (read when `PRESENCE` has [`CPU_PRESENT`]).
    pub const CPU_TIME_MS: usize = 1;
    /// In: resident MB (read when `PRESENCE` has [`RSS_PRESENT`]).
    pub const RSS_MB: usize = 2;
    /// In: which optional readings are present (bits below).
    pub const PRESENCE: usize = 3;
    /// Out: `1` within budget, `0` exceeded.
    pub const OK: usize = 4;
    /// Out: wall-clock ms since the tracker started.
    pub const ELAPSED_MS: usize = 5;
    /// Out, within budget: CPU percent, `-1` when unmeasured. Exceeded: the budget index.
    pub const CPU_PERCENT_OR_BUDGET: usize = 6;
    /// Out, within budget: memory MB, `-1` when unmeasured. Exceeded: the limit.
    pub const MEMORY_MB_OR_LIMIT: usize = 7;
    /// Out, exceeded: the observed value.
    pub const OBSERVED: usize = 8;
    /// Slots in all.
    pub const LEN: usize = 9;
    /// `PRESENCE` bit: a CPU reading.
    pub const CPU_PRESENT: u32 = 1;
    /// `PRESENCE` bit: an RSS reading.
    pub const RSS_PRESENT: u32 = 2;
}

/// The numeric results of `rawBudgetCreate` / `rawBudgetRecord`: the low
/// nibble is the kind, the bits above carry its data.
pub mod code {
    /// Record: within budget.
    pub const OK: u32 = 0;
    /// Record: a budget is exceeded (status in the io slots).
    pub const EXCEEDED: u32 = 1;
    /// Create/record: an invalid sample; the field index (into `sampleFields`) at [`FIELD_SHIFT`].
    pub const INVALID_SAMPLE: u32 = 2;
    /// Create: a budget without a sampler; the budget index at [`FIELD_SHIFT`].
    pub const UNMEASURED: u32 = 4;
    /// The kind bits.
    pub const KIND_MASK: u32 = 0xf;
    /// Record: the budgets newly breached, a bit per budget index, from this shift.
    pub const FRESH_SHIFT: u32 = 4;
    /// Width mask of the fresh-breach bits.
    pub const FRESH_MASK: u32 = 0x7;
    /// Where a field or budget index starts.
    pub const FIELD_SHIFT: u32 = 8;
}

/// The `mode` argument of the fs checks.
pub mod fs_bits {
    /// Write (else read).
    pub const WRITE: u32 = 1;
    /// Resolve symlinks (the real path is checked).
    pub const RESOLVE: u32 = 2;
}

/// The `flags` argument of `policyOpenChecked`: one bit per [`crate::open::OpenOptions`] flag.
pub mod open_bits {
    /// Read access.
    pub const READ: u32 = 1;
    /// Write access.
    pub const WRITE: u32 = 2;
    /// `O_APPEND`.
    pub const APPEND: u32 = 4;
    /// `O_CREAT`.
    pub const CREATE: u32 = 8;
    /// Truncate (after the verification).
    pub const TRUNCATE: u32 = 16;
    /// `O_EXCL`.
    pub const EXCLUSIVE: u32 = 32;
    /// `O_DIRECTORY`.
    pub const DIRECTORY: u32 = 64;
    /// Every bit.
    pub const ALL: u32 = 127;
}

/// The fields an `INVALID_SAMPLE` error can name, by the index its code carries.
pub const SAMPLE_FIELDS: [&str; 4] = ["now", "cpuTimeMs", "rssMb", "cpuGraceMs"];

/// The code of an invalid sample naming `field` (the test-hooks addon's `rawBudgetRecord`).
#[cfg(feature = "test-hooks")]
pub(crate) fn invalid_sample_code(field: &str) -> u32 {
    let i = SAMPLE_FIELDS.iter().position(|f| *f == field).unwrap_or(SAMPLE_FIELDS.len() - 1);
    code::INVALID_SAMPLE | ((i as u32) << code::FIELD_SHIFT)
}

/// Everything `lib/native.js` needs as data (see the module docs).
#[napi(catch_unwind)]
pub fn export_data() -> String {
    let registry: Vec<_> = ERROR_REGISTRY
        .iter()
        .map(|e| json!({ "code": e.code, "id": e.id, "message": e.message, "deprecated": e.deprecated }))
        .collect();
    let mut decisions = Vec::new();
    for c in Capability::ALL {
        for r in DenyReason::ALL {
            decisions.push(json!([Decision::deny(*c, *r).code(), c.as_str(), r.as_str()]));
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
        "budgetKinds": BudgetKind::ALL.iter().map(|k| json!([k.as_str(), k.reason()])).collect::<Vec<_>>(),
        "sampleFields": SAMPLE_FIELDS,
        "decisions": decisions,
        "instruments": instruments,
        "meterName": METER_NAME,
        "platforms": Platform::ALL.map(Platform::as_str),
        "wire": {
            "io": {
                "now": io::NOW, "cpuTimeMs": io::CPU_TIME_MS, "rssMb": io::RSS_MB, "presence": io::PRESENCE,
                "ok": io::OK, "elapsedMs": io::ELAPSED_MS, "cpuPercentOrBudget": io::CPU_PERCENT_OR_BUDGET,
                "memoryMbOrLimit": io::MEMORY_MB_OR_LIMIT, "observed": io::OBSERVED, "len": io::LEN,
                "cpuPresent": io::CPU_PRESENT, "rssPresent": io::RSS_PRESENT,
            },
            "code": {
                "ok": code::OK, "exceeded": code::EXCEEDED, "invalidSample": code::INVALID_SAMPLE,
                "unmeasured": code::UNMEASURED, "kindMask": code::KIND_MASK, "freshShift": code::FRESH_SHIFT,
                "freshMask": code::FRESH_MASK, "fieldShift": code::FIELD_SHIFT,
            },
            "fsBits": { "write": fs_bits::WRITE, "resolve": fs_bits::RESOLVE },
            "openBits": {
                "read": open_bits::READ, "write": open_bits::WRITE, "append": open_bits::APPEND,
                "create": open_bits::CREATE, "truncate": open_bits::TRUNCATE, "exclusive": open_bits::EXCLUSIVE,
                "directory": open_bits::DIRECTORY,
            },
        },
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
            "maxPolicyPathSegments": crate::policy::MAX_POLICY_PATH_SEGMENTS,
            "maxMatchSteps": crate::glob::MAX_MATCH_STEPS,
            "maxUrlBytes": crate::fetch::MAX_URL_BYTES,
            "defaultCpuGraceMs": crate::budget::DEFAULT_CPU_GRACE_MS,
            "maxCpuGraceMs": crate::budget::MAX_CPU_GRACE_MS,
        },
    })
    .to_string()
}

/// An error for JS. [`WireError::throw`] is the one conversion: it sets
/// `code` (a registry code) and `details` (what the JS error class takes).
pub(crate) enum WireError {
    /// A `TypeError` (an argument of the wrong shape).
    Type(String),
    /// `INVALID_MANIFEST { pointer, expected }` (raw; the JS class redacts).
    Manifest(ManifestError),
    /// `LOCKDOWN_REFUSED` / `LOCKDOWN_FAILED { reason }`.
    #[cfg_attr(
        not(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))),
        allow(dead_code)
    )]
    Lockdown(&'static str, String),
    /// `ERR_UNSUPPORTED_PLATFORM { feature, platform }` (platform as Node names it).
    Unsupported(&'static str),
}

/// `process.platform-process.arch` of this build, as Node spells them.
fn node_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        o => o,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        a => a,
    };
    format!("{os}-{arch}")
}

impl WireError {
    /// Throws this error into JS and returns the `PendingException` error
    /// napi-rs passes through without throwing again.
    pub(crate) fn throw(self, env: &Env) -> Error {
        // SAFETY: `env` is the live environment of the current call.
        match unsafe { self.into_js(env.raw()) } {
            Some(e) => {
                // SAFETY: as above; `e` is a live error object of this environment.
                unsafe { sys::napi_throw(env.raw(), e) };
                Error::new(Status::PendingException, "")
            }
            None => Error::new(Status::GenericFailure, "api-sandbox-permissions: could not build an error"),
        }
    }

    unsafe fn into_js(self, env: sys::napi_env) -> Option<sys::napi_value> {
        let (code, message, type_error, details): (&str, String, bool, Vec<(&str, String)>) = match self {
            WireError::Type(m) => ("", m, true, vec![]),
            WireError::Manifest(e) => {
                let m = e.to_string();
                ("INVALID_MANIFEST", m, false, vec![("pointer", e.pointer), ("expected", e.expected)])
            }
            WireError::Lockdown(code, reason) => (code, reason.clone(), false, vec![("reason", reason)]),
            WireError::Unsupported(feature) => (
                "ERR_UNSUPPORTED_PLATFORM",
                format!("{feature} is not supported on this platform"),
                false,
                vec![("feature", feature.to_owned()), ("platform", node_platform())],
            ),
        };
        // SAFETY: every call gets this live `env` and live out-pointers;
        // strings are passed with their byte length.
        unsafe {
            let s = |x: &str| {
                let mut v = std::ptr::null_mut();
                (sys::napi_create_string_utf8(env, x.as_ptr().cast(), x.len() as isize, &mut v) == sys::Status::napi_ok)
                    .then_some(v)
            };
            let (c, m) = (s(code)?, s(&message)?);
            let mut e = std::ptr::null_mut();
            // A TypeError is a plain one (no `code`), as the JS argument checks throw.
            let st = if type_error {
                sys::napi_create_type_error(env, std::ptr::null_mut(), m, &mut e)
            } else {
                sys::napi_create_error(env, c, m, &mut e)
            };
            if st != sys::Status::napi_ok {
                return None;
            }
            if !type_error {
                let mut d = std::ptr::null_mut();
                if sys::napi_create_object(env, &mut d) != sys::Status::napi_ok {
                    return None;
                }
                for (k, v) in details {
                    let v = s(&v)?;
                    let mut key = k.as_bytes().to_vec();
                    key.push(0);
                    if sys::napi_set_named_property(env, d, key.as_ptr().cast(), v) != sys::Status::napi_ok {
                        return None;
                    }
                }
                if sys::napi_set_named_property(env, e, c"details".as_ptr(), d) != sys::Status::napi_ok {
                    return None;
                }
            }
            Some(e)
        }
    }
}

/// A manifest's budgets; absent ones are absent.
#[napi(object)]
pub struct BudgetsView {
    pub cpu_percent: Option<f64>,
    pub memory_mb: Option<f64>,
    pub wall_clock_ms: Option<f64>,
}

/// A fetch or capability decision made on the cold path, with what the
/// first parse found: the canonical URL when the fetch check allowed, and the
/// redacted origin (`scheme://host:port`) of the input when denied.
#[napi(object)]
pub struct Verdict {
    /// The decision code.
    pub code: u32,
    /// Allowed: the canonical URL (for a capability: the fetch check's canonical URL of its URL
    /// field; for `policyAuthorizeFs`: the path to open; for `policyCheckNet`, allowed or not:
    /// `https://host[:port]/` of the parsed target).
    pub url: Option<String>,
    /// Denied (or checked with a `NodeView`): `scheme://host:port` of the URL, when it has one.
    pub target: Option<String>,
}

/// Node's reading of a URL for the SPEC §3 parity rule: its href, absent
/// when Node's `URL` refused the input.
#[napi(object)]
pub struct NodeView {
    pub href: Option<String>,
}

/// The policy behind a handle argument, or a TypeError.
pub(crate) fn policy_of(env: &Env, handle: &Unknown<'_>) -> Result<Arc<PermissionPolicy>> {
    // SAFETY: `handle` is a live argument of the current call.
    match unsafe { raw::policy_arc(env.raw(), handle.raw()) } {
        Some(p) => Ok(p),
        None => Err(WireError::Type("expected a policy handle".into()).throw(env)),
    }
}

/// Builds a policy in one call: the handle every other call takes, or a
/// thrown `INVALID_MANIFEST` error. A plugin id or platform out of range is a
/// `TypeError` (SPEC: options are TypeErrors; the core decides the plugin id).
/// Nothing else crosses: the budgets are read when asked ([`policy_budgets`]),
/// so a host that compiles many policies pays for one value per policy.
#[napi(catch_unwind, ts_return_type = "number")]
pub fn compile_policy<'env>(
    env: &'env Env,
    manifest_json: String,
    plugin: String,
    platform: String,
) -> Result<Unknown<'env>> {
    if !PermissionPolicy::is_valid_plugin_id(&plugin) {
        return Err(WireError::Type(format!(
            "options.plugin must be a plugin id of 1 to {} UTF-8 bytes without control characters",
            crate::policy::MAX_NAME_BYTES
        ))
        .throw(env));
    }
    let Some(platform) = Platform::parse(&platform) else {
        return Err(WireError::Type("options.platform must be 'posix' or 'win32'".into()).throw(env));
    };
    let policy = PermissionPolicy::from_json(&manifest_json, PolicyOptions::new(plugin).platform(platform))
        .map_err(|e| WireError::Manifest(e).throw(env))?;
    // SAFETY: `env` is this call's live environment; the table owns the `Arc` reference.
    let v = unsafe { raw::policy_handle(env.raw(), Arc::new(policy)) };
    if v.is_null() {
        return Err(Error::new(Status::GenericFailure, "could not create a policy handle"));
    }
    // SAFETY: `v` is a live napi_value of this environment, just created.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), v) })
}

/// The policy's budgets (absent ones `undefined`).
#[napi(catch_unwind)]
pub fn policy_budgets(env: Env, handle: Unknown<'_>) -> Result<BudgetsView> {
    let b = policy_of(&env, &handle)?.budgets();
    Ok(BudgetsView { cpu_percent: b.cpu_percent, memory_mb: b.memory_mb, wall_clock_ms: b.wall_clock_ms })
}

/// The normalised manifest as JSON.
#[napi(catch_unwind)]
pub fn policy_to_json(env: Env, handle: Unknown<'_>) -> Result<String> {
    Ok(policy_of(&env, &handle)?.to_json().to_string())
}

/// JSON array of lint warnings `{ pointer, code, message }`.
#[napi(catch_unwind)]
pub fn policy_lint(env: Env, handle: Unknown<'_>) -> Result<String> {
    Ok(serde_json::Value::Array(policy_of(&env, &handle)?.lint()).to_string())
}

/// `diffPolicies(old, new)`: the report of [`crate::diff::diff_policies`] as JSON.
#[napi(catch_unwind)]
pub fn policy_diff(env: Env, old: Unknown<'_>, new: Unknown<'_>) -> Result<String> {
    let (a, b) = (policy_of(&env, &old)?, policy_of(&env, &new)?);
    Ok(crate::diff::diff_policies(&a, &b).to_json().to_string())
}

/// JSON explanation: kind `fs-read`/`fs-write` (a = path), `fetch` (a = url),
/// `cap` (a = id, b = the payload field or null), `cap-json` (a = id, b = the payload as JSON).
#[napi(catch_unwind)]
pub fn policy_explain(env: Env, handle: Unknown<'_>, kind: String, a: String, b: Option<String>) -> Result<String> {
    let p = policy_of(&env, &handle)?;
    let v = match kind.as_str() {
        "fs-read" => p.explain_fs(&a, FsMode::Read),
        "fs-write" => p.explain_fs(&a, FsMode::Write),
        "fetch" => p.explain_fetch(&a),
        "cap" => p.explain_capability(&a, b.as_deref()),
        "cap-json" => {
            let payload = b.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or(serde_json::Value::Null);
            p.explain_capability_payload(&a, &payload)
        }
        _ => return Err(WireError::Type("unknown explain kind".into()).throw(&env)),
    };
    Ok(v.to_string())
}

/// `authorizeFs`: `{ code: 0, url: path to open }` or `{ code }`; mode: [`fs_bits`].
#[napi(catch_unwind)]
pub fn policy_authorize_fs(env: Env, handle: Unknown<'_>, path: String, mode: u32) -> Result<Verdict> {
    let p = policy_of(&env, &handle)?;
    if mode > (fs_bits::WRITE | fs_bits::RESOLVE) {
        return Err(WireError::Type("mode must be 0-3".into()).throw(&env));
    }
    let fs_mode = if mode & fs_bits::WRITE != 0 { FsMode::Write } else { FsMode::Read };
    // The path limit is the core's (its normaliser refuses a longer path as invalid_path).
    let r = p.authorize_fs(&path, fs_mode, mode & fs_bits::RESOLVE != 0);
    Ok(match r {
        Ok(path) => Verdict { code: 0, url: Some(path), target: None },
        Err(r) => Verdict { code: Decision::deny(fs_mode.capability(), r).code(), url: None, target: None },
    })
}

/// Whether Node's view of a URL reads the same scheme, host and port as the
/// core's parse (`origin`), SPEC §3. Node refusing the URL never agrees.
fn agrees(origin: &Option<String>, node: &NodeView) -> bool {
    match &node.href {
        Some(href) => *origin == parse(href).as_ref().and_then(redacted_origin),
        None => false,
    }
}

fn parse(s: &str) -> Option<url::Url> {
    if s.len() > crate::fetch::MAX_URL_BYTES {
        return None;
    }
    url::Url::parse(s).ok()
}

/// A fetch check with its verdict: the URL is parsed once; that parse gives
/// the decision, the canonical URL and the origin of a denial. `node`
/// (present when the URL needs the second parse) applies the SPEC §3 origin
/// parity: a disagreement is `invalid_url`. With `ip`, the DNS-rebinding
/// check (`checkFetchAddress`).
#[napi(catch_unwind)]
pub fn policy_check_fetch(
    env: Env,
    handle: Unknown<'_>,
    url: String,
    ip: Option<String>,
    node: Option<NodeView>,
) -> Result<Verdict> {
    Ok(fetch_verdict(&*policy_of(&env, &handle)?, &url, ip.as_deref(), node.as_ref()))
}

fn fetch_verdict(p: &PermissionPolicy, url: &str, ip: Option<&str>, node: Option<&NodeView>) -> Verdict {
    let deny = |r, target| Verdict { code: Decision::deny(Capability::Fetch, r).code(), url: None, target };
    let Some(parsed) = parse(url) else {
        return deny(DenyReason::InvalidUrl, None);
    };
    let origin = redacted_origin(&parsed);
    if node.is_some_and(|n| !agrees(&origin, n)) {
        return deny(DenyReason::InvalidUrl, origin);
    }
    let r = match ip {
        None => p.check_fetch_parsed(parsed),
        Some(ip) => p.check_fetch_address_parsed(parsed, ip),
    };
    match r {
        // With `node`, JS may still refuse on the path (SPEC §11): that refusal carries the target too.
        Ok(a) => Verdict { code: 0, url: Some(a.url.into()), target: if node.is_some() { origin } else { None } },
        Err(r) => deny(r, origin),
    }
}

/// `checkCapability` on the cold path, for a capability whose payload holds
/// a URL (`fetch { url }`, `secrets.use { name, url }`): the decision, the
/// fetch check's canonical URL of the URL (for the path parity of SPEC §11)
/// and its origin. `node` applies the SPEC §3 origin parity as in
/// [`policy_check_fetch`]: a disagreement is `invalid_url` for `fetch`,
/// `secret_destination_not_allowed` for `secrets.use`. Each field is at most
/// `maxPayloadStringBytes`, checked here and nowhere in JS.
#[napi(catch_unwind)]
pub fn policy_check_capability(
    env: Env,
    handle: Unknown<'_>,
    id: String,
    field: Option<String>,
    url: Option<String>,
    node: Option<NodeView>,
) -> Result<Verdict> {
    let p = policy_of(&env, &handle)?;
    let Some(cap) = Capability::from_id(&id) else {
        let code = Decision::deny(Capability::Unknown, DenyReason::UnknownCapability).code();
        return Ok(Verdict { code, url: None, target: None });
    };
    let max = crate::capability::MAX_PAYLOAD_STRING_BYTES;
    let invalid = Verdict { code: Decision::deny(cap, DenyReason::InvalidPayload).code(), url: None, target: None };
    let Some(field) = field.as_deref().filter(|f| f.len() <= max) else {
        return Ok(invalid);
    };
    if cap.second_payload_field().is_none() {
        return Ok(match cap {
            Capability::Fetch => fetch_verdict(&p, field, None, node.as_ref()),
            _ => Verdict { code: p.check_capability_field(&id, Some(field)).code(), url: None, target: None },
        });
    }
    let Some(u) = url.as_deref().filter(|u| u.len() <= max) else {
        return Ok(invalid);
    };
    let parsed = parse(u);
    let origin = parsed.as_ref().and_then(redacted_origin);
    if node.as_ref().is_some_and(|n| !agrees(&origin, n)) {
        let code = Decision::deny(cap, DenyReason::SecretDestinationNotAllowed).code();
        return Ok(Verdict { code, url: None, target: origin });
    }
    let canonical = parsed.filter(|_| node.is_some()).and_then(|x| p.check_fetch_parsed(x).ok()).map(|a| a.url.into());
    let code = p.check_capability_fields(&id, Some(field), Some(u)).code();
    Ok(Verdict { code, url: canonical, target: if code == 0 && node.is_none() { None } else { origin } })
}

/// A raw connection check (SPEC §15, §17): Deno's `net` (`import` false)
/// or `import` (true) for its `host[:port]` value, decided by
/// [`PermissionPolicy::check_net`]. `{ code, url }`: `url` is
/// `https://host[:port]/` of the parsed target (for an audit record), absent
/// when the value is not a target (`invalid_url`).
#[napi(catch_unwind)]
pub fn policy_check_net(env: Env, handle: Unknown<'_>, target: String, import: bool) -> Result<Verdict> {
    let p = policy_of(&env, &handle)?;
    let Some(t) = NetTarget::parse(&target) else {
        let code = Decision::deny(Capability::Fetch, DenyReason::InvalidUrl).code();
        return Ok(Verdict { code, url: None, target: None });
    };
    let use_ = if import { NetUse::Import } else { NetUse::Connect };
    Ok(Verdict { code: p.check_net(&t, use_).code(), url: Some(format!("https://{t}/")), target: None })
}

/// `lockdown(onDenied, landlock, fs)`: the JSON report, or a thrown
/// `LOCKDOWN_REFUSED`, `LOCKDOWN_FAILED` or `ERR_UNSUPPORTED_PLATFORM` error.
/// `on_denied` is `"eperm"` or `"kill"`, `landlock` `"report"` or `"strict"`,
/// `fs` `"none"` or `"landlock"`
/// (lib/lockdown.js validates them; anything else is refused here too).
#[napi(catch_unwind)]
pub fn lockdown(env: Env, on_denied: String, landlock: String, fs: String) -> Result<String> {
    #[cfg(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        use crate::lockdown::{FsAccess, LandlockRequirement, LockdownError, LockdownOptions, OnDenied};
        /// One of an option's named values, or LOCKDOWN_REFUSED naming the option.
        fn choose<T: Copy>(env: &Env, option: &str, value: &str, choices: &[(&str, T)]) -> Result<T> {
            choices.iter().find(|(name, _)| *name == value).map(|&(_, v)| v).ok_or_else(|| {
                WireError::Lockdown("LOCKDOWN_REFUSED", format!("unknown {option} {value:?}")).throw(env)
            })
        }
        let on_denied = choose(&env, "onDenied", &on_denied, &[("eperm", OnDenied::Eperm), ("kill", OnDenied::Kill)])?;
        let landlock = choose(
            &env,
            "landlock",
            &landlock,
            &[("report", LandlockRequirement::Report), ("strict", LandlockRequirement::Strict)],
        )?;
        let fs = choose(&env, "fs", &fs, &[("none", FsAccess::None), ("landlock", FsAccess::Landlock)])?;
        match crate::lockdown::lockdown_with(LockdownOptions { on_denied, landlock, fs }) {
            Ok(r) => {
                let self_only: Vec<&str> =
                    r.conditional.iter().filter(|(_, c)| c.contains("this process")).map(|(n, _)| *n).collect();
                let landlock = r.landlock.as_deref().and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok());
                Ok(json!({
                    "arch": r.arch,
                    "action": match r.on_denied { OnDenied::Eperm => "EPERM", OnDenied::Kill => "kill" },
                    "tsync": true,
                    "noNewPrivs": true,
                    "fs": match r.fs { FsAccess::None => "none", FsAccess::Landlock => "landlock" },
                    "allowed": r.allowed,
                    "conditional": r.conditional.iter().map(|(n, c)| json!({ "name": n, "only": c })).collect::<Vec<_>>(),
                    "selfOnly": self_only,
                    "errnoAlways": r.errno_always.iter().map(|(n, e)| json!({ "name": n, "errno": e })).collect::<Vec<_>>(),
                    "clone": "pthread_create's flags only",
                    "clone3": "ENOSYS",
                    "foreignArch": "kill process",
                    "openFds": r.open_fds.iter().map(|(fd, t)| json!({ "fd": fd, "target": t })).collect::<Vec<_>>(),
                    "landlock": landlock,
                })
                .to_string())
            }
            Err(LockdownError::Unsupported(_)) => Err(WireError::Unsupported("lockdown").throw(&env)),
            Err(e @ LockdownError::UnsafeState(_)) => {
                Err(WireError::Lockdown("LOCKDOWN_REFUSED", e.to_string()).throw(&env))
            }
            Err(e) => Err(WireError::Lockdown("LOCKDOWN_FAILED", e.to_string()).throw(&env)),
        }
    }
    #[cfg(not(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        let _ = (on_denied, landlock, fs);
        Err(WireError::Unsupported("lockdown").throw(&env))
    }
}

/// The conformance cases as JSON (see `conformance::cases_json`).
#[napi(catch_unwind)]
pub fn conformance_cases() -> String {
    crate::conformance::cases_json()
}

/// `scheme://host:port` of a URL string, or null (the shadow observer's `target`).
#[napi(catch_unwind)]
pub fn redacted_origin_of(url: String) -> Option<String> {
    parse(&url).as_ref().and_then(redacted_origin)
}

/// The result of `policyOpenChecked`: `code` 0 and the descriptor (which JS
/// then owns) with the checked real path; or a denial's decision code; or,
/// allowed but not opened, the `errno` of the failure.
#[napi(object)]
pub struct OpenVerdict {
    /// The decision code (0: the check allowed).
    pub code: u32,
    /// Opened: the descriptor number, owned by the caller from here on.
    pub fd: Option<i32>,
    /// Opened: the checked real path.
    pub path: Option<String>,
    /// Allowed but not opened: the positive `errno`.
    pub errno: Option<i32>,
}

/// What the open on the thread pool found; a descriptor stays owned (closed
/// on drop) until it is handed to JS.
#[cfg(unix)]
pub enum OpenOutcome {
    /// Opened.
    Opened(crate::open::CheckedFile),
    /// Denied: the decision code.
    Denied(u32),
    /// Allowed, not opened: the errno.
    Failed(i32),
}

/// The checked open of `policyOpenChecked`, run on the libuv thread pool:
/// the check and the open are one step there (`PermissionPolicy::open_checked`).
#[cfg(unix)]
pub struct OpenTask {
    policy: Arc<PermissionPolicy>,
    path: String,
    options: crate::open::OpenOptions,
}

#[cfg(unix)]
impl Task for OpenTask {
    type Output = OpenOutcome;
    type JsValue = OpenVerdict;

    fn compute(&mut self) -> Result<OpenOutcome> {
        use crate::open::OpenError;
        // A panic must not unwind out of the thread pool's callback (it would abort the process).
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::open::open_with(&self.policy, &self.path, self.options, crate::open::Strategy::Best)
        }))
        .map_err(|_| Error::new(Status::GenericFailure, "api-sandbox-permissions: internal error (panic caught)"))?;
        Ok(match r {
            Ok(f) => OpenOutcome::Opened(f),
            Err(OpenError::Denied(e)) => OpenOutcome::Denied(Decision::Denied(e.denial).code()),
            // EIO for an error without an errno (none is expected: every failure is a syscall's).
            Err(OpenError::Io(e)) => OpenOutcome::Failed(e.raw_os_error().unwrap_or(5)),
            Err(OpenError::InvalidOptions(why)) => return Err(Error::new(Status::InvalidArg, why)),
        })
    }

    fn resolve(&mut self, _env: Env, out: OpenOutcome) -> Result<OpenVerdict> {
        use std::os::fd::IntoRawFd;
        Ok(match out {
            OpenOutcome::Opened(f) => {
                let (fd, path) = f.into_parts();
                OpenVerdict { code: 0, fd: Some(fd.into_raw_fd()), path: Some(path), errno: None }
            }
            OpenOutcome::Denied(code) => OpenVerdict { code, fd: None, path: None, errno: None },
            OpenOutcome::Failed(errno) => OpenVerdict { code: 0, fd: None, path: None, errno: Some(errno) },
        })
    }
}

/// Checks and opens in one step on the thread pool (see `crate::open`):
/// resolves to an [`OpenVerdict`]. `flags` are [`open_bits`];
/// `permissions` the bits of a created file. Options no open can mean are a
/// TypeError, before anything is checked. Unix only
/// (`ERR_UNSUPPORTED_PLATFORM` elsewhere).
#[cfg(unix)]
#[napi(catch_unwind, ts_return_type = "Promise<OpenVerdict>")]
pub fn policy_open_checked(
    env: Env,
    handle: Unknown<'_>,
    path: String,
    flags: u32,
    permissions: u32,
) -> Result<AsyncTask<OpenTask>> {
    let policy = policy_of(&env, &handle)?;
    let on = |bit: u32| flags & bit != 0;
    let options = crate::open::OpenOptions::new()
        .read(on(open_bits::READ))
        .write(on(open_bits::WRITE))
        .append(on(open_bits::APPEND))
        .create(on(open_bits::CREATE))
        .truncate(on(open_bits::TRUNCATE))
        .exclusive(on(open_bits::EXCLUSIVE))
        .directory(on(open_bits::DIRECTORY))
        .permissions(permissions);
    if flags & !open_bits::ALL != 0 {
        return Err(WireError::Type("open flags: unknown bits".into()).throw(&env));
    }
    if let Some(why) = options.invalid() {
        return Err(WireError::Type(format!("open options: {why}")).throw(&env));
    }
    Ok(AsyncTask::new(OpenTask { policy, path, options }))
}

/// Not unix: a checked open is `ERR_UNSUPPORTED_PLATFORM`.
#[cfg(not(unix))]
#[napi(catch_unwind, ts_return_type = "Promise<OpenVerdict>")]
pub fn policy_open_checked(env: Env, handle: Unknown<'_>, path: String, flags: u32, permissions: u32) -> Result<()> {
    let _ = (handle, path, flags, permissions);
    Err(WireError::Unsupported("openChecked").throw(&env))
}
