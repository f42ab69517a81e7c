//! The Node-API binding: every `#[napi]` item, and every conversion between
//! JS and the core. Decisions cross as compact numeric codes that `index.js`
//! maps to frozen decision objects; manifest errors are held by the policy
//! handle and turned into `INVALID_MANIFEST` errors in one place in JS.
//! Every entry point catches panics, so a Rust panic becomes a JS error.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::json;

use crate::budget::{BudgetState, BudgetStatus, Sample};
use crate::error::{Capability, DenyReason, ManifestError, ERROR_REGISTRY};
use crate::fetch::redacted_origin_str;
use crate::fs::FsMode;
use crate::metrics::{INSTRUMENTS, METER_NAME};
use crate::policy::{PermissionPolicy, Platform, PolicyOptions};

fn mode(m: u32) -> FsMode {
    if m == 1 {
        FsMode::Write
    } else {
        FsMode::Read
    }
}

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
    let capabilities: Vec<_> =
        Capability::ALL.iter().filter_map(|c| c.payload_field().map(|f| json!([c.as_str(), f]))).collect();
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
            "maxUrlBytes": crate::fetch::MAX_URL_BYTES,
            "defaultCpuGraceMs": crate::budget::DEFAULT_CPU_GRACE_MS,
        },
    })
    .to_string()
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

/// A compiled policy, or the manifest error that stopped it.
#[napi]
pub struct NativePolicy {
    inner: std::result::Result<PermissionPolicy, ManifestError>,
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
        Self { inner: PermissionPolicy::from_json(&manifest_json, PolicyOptions::new(plugin).platform(platform)) }
    }

    /// `[pointer, expected]` of the manifest error, or null.
    #[napi(catch_unwind)]
    pub fn error(&self) -> Option<Vec<String>> {
        self.inner.as_ref().err().map(|e| vec![e.pointer.clone(), e.expected.clone()])
    }

    fn policy(&self) -> Result<&PermissionPolicy> {
        self.inner.as_ref().map_err(|e| Error::new(Status::InvalidArg, e.to_string()))
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

    /// Decision code for `checkFs`; mode 0 read, 1 write.
    #[napi(catch_unwind)]
    pub fn check_fs(&self, path: String, mode_code: u32) -> Result<u32> {
        Ok(self.policy()?.check_fs(&path, mode(mode_code)).code())
    }

    /// Decision code for `checkFs(.., { resolveSymlinks: true })`.
    #[napi(catch_unwind)]
    pub fn check_fs_resolved(&self, path: String, mode_code: u32) -> Result<u32> {
        Ok(self.policy()?.check_fs_resolved(&path, mode(mode_code)).code())
    }

    /// Decision code for `checkFetch`.
    #[napi(catch_unwind)]
    pub fn check_fetch(&self, url: String) -> Result<u32> {
        Ok(self.policy()?.check_fetch(&url).code())
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

    /// JSON explanation: kind `fs-read`/`fs-write` (a = path), `fetch` (a = url),
    /// `cap` (a = id, b = the payload field or null).
    #[napi(catch_unwind)]
    pub fn explain(&self, kind: String, a: String, b: Option<String>) -> Result<String> {
        let p = self.policy()?;
        let v = match kind.as_str() {
            "fs-read" => p.explain_fs(&a, FsMode::Read),
            "fs-write" => p.explain_fs(&a, FsMode::Write),
            "fetch" => p.explain_fetch(&a),
            "cap" => p.explain_capability(&a, b.as_deref()),
            _ => return Err(Error::new(Status::InvalidArg, "unknown explain kind")),
        };
        Ok(v.to_string())
    }

    /// JSON array of lint warnings `{ pointer, code, message }`.
    #[napi(catch_unwind)]
    pub fn lint(&self) -> Result<String> {
        Ok(serde_json::Value::Array(self.policy()?.lint()).to_string())
    }

    /// Decision code for `checkCapability(id, payload)`, given the payload's
    /// field for that capability (null when missing or not a string).
    #[napi(catch_unwind)]
    pub fn check_capability(&self, id: String, field: Option<String>) -> Result<u32> {
        Ok(self.policy()?.check_capability_field(&id, field.as_deref()).code())
    }
}

/// The budget state machine for the JS `BudgetTracker`.
#[napi]
pub struct NativeBudget {
    state: BudgetState,
    last: BudgetStatus,
}

/// Result codes of `NativeBudget.record`: low byte 0 ok, 1 exceeded, 2
/// invalid sample (then bits 8.. hold the field: 0 now, 1 cpuTimeMs, 2 rssMb,
/// 3 cpuGraceMs); bits 4-6 the budgets newly breached by this call.
fn status_code(status: &BudgetStatus, new: crate::budget::NewBreaches) -> u32 {
    let base = if status.is_ok() { 0 } else { 1 };
    base | ((new.0 as u32) << 4)
}

fn invalid_code(field: &str) -> u32 {
    let f = match field {
        "now" => 0,
        "cpuTimeMs" => 1,
        "rssMb" => 2,
        _ => 3,
    };
    2 | (f << 8)
}

#[napi]
impl NativeBudget {
    /// Creates the state at the start readings. Use `create` to learn about invalid ones.
    #[napi(factory, catch_unwind)]
    pub fn create(
        policy: &NativePolicy,
        now: f64,
        cpu_time_ms: Option<f64>,
        rss_mb: Option<f64>,
        cpu_grace_ms: f64,
    ) -> Result<Self> {
        let p = policy.policy()?;
        let start = Sample { now_ms: now, cpu_time_ms, rss_mb };
        match BudgetState::new(p.budgets(), start, cpu_grace_ms) {
            Ok(state) => {
                let last = BudgetStatus::Ok { elapsed_ms: 0.0, cpu_percent: None, memory_mb: start.rss_mb };
                Ok(Self { state, last })
            }
            Err(e) => Err(Error::new(Status::InvalidArg, format!("INVALID_SAMPLE:{}", e.field))),
        }
    }

    /// Records readings and evaluates; see `status_code`.
    #[napi(catch_unwind)]
    pub fn record(&mut self, now: f64, cpu_time_ms: Option<f64>, rss_mb: Option<f64>) -> u32 {
        match self.state.record(Sample { now_ms: now, cpu_time_ms, rss_mb }) {
            Ok((status, new)) => {
                self.last = status;
                status_code(&status, new)
            }
            Err(e) => invalid_code(e.field),
        }
    }

    /// The last status: `[ok, elapsedMs, cpuPercent|-1, memoryMb|-1]` or
    /// `[0, elapsedMs, budgetIndex, limit, observed]`.
    #[napi(catch_unwind)]
    pub fn status(&self) -> Vec<f64> {
        match self.last {
            BudgetStatus::Ok { elapsed_ms, cpu_percent, memory_mb } => {
                vec![1.0, elapsed_ms, cpu_percent.unwrap_or(-1.0), memory_mb.unwrap_or(-1.0)]
            }
            BudgetStatus::Exceeded(b) => vec![0.0, b.elapsed_ms, b.budget.index() as f64, b.limit, b.observed],
        }
    }

    #[napi(getter, catch_unwind)]
    pub fn elapsed_ms(&self) -> f64 {
        self.state.elapsed_ms()
    }
}
