//! `PermissionChecker`: a policy plus the counters. Every call that denies
//! counts exactly once; `assert_*` return `PermissionDenied` instead.

use std::sync::Arc;

use opentelemetry::metrics::Meter;
use serde_json::Value;
use url::Url;

use crate::error::{Capability, Decision, Denial, DenyReason, PermissionDenied};
use crate::fetch::{redacted_origin_str, AllowedUrl};
use crate::fs::FsMode;
use crate::metrics::Instruments;
use crate::policy::PermissionPolicy;

/// Options for one fs check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsCheckOptions {
    /// Also check the real path, symlinks resolved. Default: `false` (lexical only).
    pub resolve_symlinks: bool,
}

/// What a shadow policy would have denied (SPEC §12), passed to the
/// `on_shadow` callback. Redacted like errors: `target` is only
/// `scheme://host:port` of a fetch (or `secrets.use`) URL, never a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowEvent {
    /// The capability checked.
    pub capability: Capability,
    /// The shadow policy's reason.
    pub reason: DenyReason,
    /// What the enforced policy decided: `true` allowed.
    pub enforced_allowed: bool,
    /// `scheme://host:port` of the URL of a fetch or `secrets.use` check; `None` for every other check.
    pub target: Option<String>,
}

/// The shadow callback. A panic inside it is caught and ignored (isolated).
pub type OnShadow = Arc<dyn Fn(&ShadowEvent) + Send + Sync>;

/// The shadow policy and its callback.
#[derive(Clone)]
struct Shadow {
    policy: Arc<PermissionPolicy>,
    on_shadow: Option<OnShadow>,
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow").field("plugin", &self.policy.plugin()).finish()
    }
}

/// `with_shadow` with a policy for another plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowPluginMismatch;

impl std::fmt::Display for ShadowPluginMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the shadow policy must be for the same plugin id as the enforced policy")
    }
}

impl std::error::Error for ShadowPluginMismatch {}

/// A policy with metrics. Cheap to clone (the policy is shared).
///
/// `assert_*` turn a denial into [`PermissionDenied`], safe to log or send to
/// the plugin: a fetch denial's `target` is the origin alone, without
/// credentials, path or query.
///
/// ```
/// use api_sandbox_permissions::serde_json::json;
/// use api_sandbox_permissions::{DenyReason, PermissionChecker, PermissionPolicy, PolicyOptions};
///
/// let policy = PermissionPolicy::from_manifest(&json!({ "fetch": ["api.example.com"] }), PolicyOptions::new("my-plugin"))?;
/// let checker = PermissionChecker::with_global_meter(policy);
///
/// let err = checker.assert_fetch("https://user:hunter2@api.example.com:8443/v1?key=abc").unwrap_err();
/// assert_eq!(err.denial.reason, DenyReason::CredentialsInUrl);
/// assert_eq!(err.target.as_deref(), Some("https://api.example.com:8443"));
/// assert!(!err.to_string().contains("hunter2"));
/// # Ok::<(), api_sandbox_permissions::ManifestError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PermissionChecker {
    policy: Arc<PermissionPolicy>,
    instruments: Instruments,
    shadow: Option<Shadow>,
}

/// One check's input, replayed on the shadow policy.
enum Input<'a> {
    Fs(&'a str, FsMode, FsCheckOptions),
    Fetch(&'a str),
    FetchAddress(&'a str, &'a str),
    Capability(&'a str, &'a Value),
    /// A checked open: the fs check with symlinks resolved, in each mode until one denies.
    #[cfg(unix)]
    FsOpen(&'a str, &'static [FsMode]),
}

impl PermissionChecker {
    /// A checker recording to `meter`.
    #[must_use]
    pub fn new(policy: PermissionPolicy, meter: &Meter) -> Self {
        Self { policy: Arc::new(policy), instruments: Instruments::new(meter), shadow: None }
    }

    /// A checker recording to the global meter provider.
    #[must_use]
    pub fn with_global_meter(policy: PermissionPolicy) -> Self {
        Self { policy: Arc::new(policy), instruments: Instruments::global(), shadow: None }
    }

    /// Adds a shadow (report-only) policy (SPEC §12): every check is still
    /// decided by the enforced policy alone; the shadow is evaluated too, and
    /// each call it would deny counts once in
    /// `plugin.permission_shadow_denied_total` (its reason) and calls
    /// `on_shadow`. The shadow must be for the same plugin id.
    pub fn with_shadow(
        mut self,
        shadow: PermissionPolicy,
        on_shadow: Option<OnShadow>,
    ) -> Result<Self, ShadowPluginMismatch> {
        if shadow.plugin() != self.policy.plugin() {
            return Err(ShadowPluginMismatch);
        }
        self.shadow = Some(Shadow { policy: Arc::new(shadow), on_shadow });
        Ok(self)
    }

    /// The shadow policy, if any.
    #[must_use]
    pub fn shadow_policy(&self) -> Option<&PermissionPolicy> {
        self.shadow.as_ref().map(|s| &*s.policy)
    }

    /// Evaluates the shadow on the same input (no-op without one).
    #[inline]
    fn observe(&self, input: Input<'_>, enforced: &Decision) {
        if let Some(sh) = &self.shadow {
            self.observe_shadow(sh, input, matches!(enforced, Decision::Allowed));
        }
    }

    #[cold]
    fn observe_shadow(&self, sh: &Shadow, input: Input<'_>, enforced_allowed: bool) {
        let p = &sh.policy;
        let (d, url) = match input {
            Input::Fs(path, mode, o) => {
                (if o.resolve_symlinks { p.check_fs_resolved(path, mode) } else { p.check_fs(path, mode) }, None)
            }
            #[cfg(unix)]
            Input::FsOpen(path, modes) => {
                let first_denial = modes.iter().map(|m| p.check_fs_resolved(path, *m)).find(|d| !d.is_allowed());
                (first_denial.unwrap_or(Decision::Allowed), None)
            }
            Input::Fetch(u) => (p.check_fetch(u), Some(u)),
            Input::FetchAddress(u, ip) => (crate::fetch::decision_of(&p.check_fetch_address(u, ip)), Some(u)),
            Input::Capability(id, payload) => {
                let d = p.check_capability(id, payload);
                let u = match d {
                    Decision::Denied(x) if matches!(x.capability, Capability::Fetch | Capability::SecretsUse) => {
                        payload.get("url").and_then(Value::as_str)
                    }
                    _ => None,
                };
                (d, u)
            }
        };
        let Decision::Denied(x) = d else { return };
        self.instruments.shadow_denied(p.plugin(), x.capability.as_str(), x.reason.as_str());
        if let Some(cb) = &sh.on_shadow {
            let ev = ShadowEvent {
                capability: x.capability,
                reason: x.reason,
                enforced_allowed,
                target: url.and_then(redacted_origin_str),
            };
            // Isolated: a panicking callback changes nothing.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(&ev)));
        }
    }

    /// The enforced policy.
    #[must_use]
    pub fn policy(&self) -> &PermissionPolicy {
        &self.policy
    }

    fn count(&self, d: Decision) -> Decision {
        if let Decision::Denied(x) = d {
            self.instruments.denied(self.policy.plugin(), x.capability.as_str(), x.reason.as_str());
        }
        d
    }

    /// Counts once a denial that a compound operation decided on the policy
    /// ([`crate::wasi`]: a rename refused for what it moves), and evaluates
    /// the shadow on the same operation: `shadow` decides it on the shadow
    /// policy (never called without one). Returns the denial.
    pub(crate) fn count_compound(
        &self,
        denial: Option<Denial>,
        shadow: impl FnOnce(&PermissionPolicy) -> Option<Denial>,
    ) -> Option<Denial> {
        if let Some(d) = denial {
            let _counted = self.count(Decision::Denied(d));
        }
        if let Some(sh) = &self.shadow {
            if let Some(x) = shadow(&sh.policy) {
                self.instruments.shadow_denied(sh.policy.plugin(), x.capability.as_str(), x.reason.as_str());
                if let Some(cb) = &sh.on_shadow {
                    let ev = ShadowEvent {
                        capability: x.capability,
                        reason: x.reason,
                        enforced_allowed: denial.is_none(),
                        target: None,
                    };
                    // Isolated: a panicking callback changes nothing.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(&ev)));
                }
            }
        }
        denial
    }

    fn denied(&self, d: Decision, target: Option<String>) -> Result<(), PermissionDenied> {
        match self.count(d) {
            Decision::Allowed => Ok(()),
            Decision::Denied(denial) => {
                Err(PermissionDenied { plugin: self.policy.plugin().to_owned(), denial, target })
            }
        }
    }

    fn fs_decision(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Decision {
        if options.resolve_symlinks {
            self.policy.check_fs_resolved(path, mode)
        } else {
            self.policy.check_fs(path, mode)
        }
    }

    /// Counts a fetch denial and builds its error (target: `scheme://host:port` only).
    fn fetch_error(&self, reason: DenyReason, url: &str) -> PermissionDenied {
        let denial = Denial { capability: Capability::Fetch, reason };
        let _counted = self.count(Decision::Denied(denial));
        PermissionDenied { plugin: self.policy.plugin().to_owned(), denial, target: redacted_origin_str(url) }
    }

    /// `checkFs`: the policy's fs check; a denial is counted once.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Decision {
        let d = self.count(self.fs_decision(path, mode, options));
        self.observe(Input::Fs(path, mode, options), &d);
        d
    }

    /// `checkFetch`: the policy's fetch check; a denial is counted once.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_fetch(&self, url: &str) -> Decision {
        let d = self.count(self.policy.check_fetch(url));
        self.observe(Input::Fetch(url), &d);
        d
    }

    /// The fetch check; when allowed, the canonical URL to fetch. The same
    /// result as [`PermissionPolicy::check_fetch_url`] (the capability is
    /// always `fetch`); a denial is counted once.
    pub fn check_fetch_url(&self, url: &str) -> Result<AllowedUrl, DenyReason> {
        let r = self.policy.check_fetch_url(url);
        let d = self.count(crate::fetch::decision_of(&r));
        self.observe(Input::Fetch(url), &d);
        r
    }

    /// `checkFetchAddress`: the fetch check with the address the host resolved
    /// (DNS-rebinding defence); a denial is counted once.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_fetch_address(&self, url: &str, resolved_ip: &str) -> Decision {
        let d = self.count(crate::fetch::decision_of(&self.policy.check_fetch_address(url, resolved_ip)));
        self.observe(Input::FetchAddress(url, resolved_ip), &d);
        d
    }

    /// `checkCapability`: the policy's capability check on a JSON payload; a
    /// denial is counted once.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        let d = self.count(self.policy.check_capability(id, payload));
        self.observe(Input::Capability(id, payload), &d);
        d
    }

    /// `assertFs`: the fs check as a `Result`; a denial is counted once and
    /// becomes [`PermissionDenied`] (no path in it).
    pub fn assert_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Result<(), PermissionDenied> {
        let d = self.fs_decision(path, mode, options);
        self.observe(Input::Fs(path, mode, options), &d);
        self.denied(d, None)
    }

    /// Asserts (a denial counts once), and returns the path the host must
    /// open: the normalised path, or with `resolve_symlinks` the real path.
    /// Open exactly this path, without following a final symlink.
    pub fn authorize_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Result<String, PermissionDenied> {
        let r = self.policy.authorize_fs(path, mode, options.resolve_symlinks);
        let d = r.as_ref().err().map_or(Decision::Allowed, |reason| Decision::deny(mode.capability(), *reason));
        self.observe(Input::Fs(path, mode, options), &d);
        r.map_err(|reason| {
            let denial = Denial { capability: mode.capability(), reason };
            let _counted = self.count(Decision::Denied(denial));
            PermissionDenied { plugin: self.policy.plugin().to_owned(), denial, target: None }
        })
    }

    /// Checks and opens in one step ([`PermissionPolicy::open_checked`], see
    /// [`crate::open`]): an open descriptor of exactly the checked real path,
    /// or the denial, counted once (a tree changed between the check and the
    /// open included, as `symlink_escape`). I/O errors and invalid options
    /// are not denials and count nothing. Unix only.
    #[cfg(unix)]
    pub fn open_checked(
        &self,
        path: &str,
        options: crate::open::OpenOptions,
    ) -> Result<crate::open::CheckedFile, crate::open::OpenError> {
        use crate::open::OpenError;
        let r = self.policy.open_checked(path, options);
        let d = match &r {
            Err(OpenError::InvalidOptions(_)) => return r,
            Err(OpenError::Denied(e)) => Decision::Denied(e.denial),
            _ => Decision::Allowed,
        };
        self.observe(Input::FsOpen(path, options.modes()), &d);
        let _counted = self.count(d);
        r
    }

    /// `assertFetch`: asserts, and returns the canonical URL the host must
    /// fetch; a denial is counted once and becomes [`PermissionDenied`] with
    /// target `scheme://host:port`.
    pub fn assert_fetch(&self, url: &str) -> Result<Url, PermissionDenied> {
        let r = self.policy.check_fetch_url(url);
        self.observe(
            Input::Fetch(url),
            &r.as_ref().err().map_or(Decision::Allowed, |x| Decision::deny(Capability::Fetch, *x)),
        );
        match r {
            Ok(AllowedUrl { url, .. }) => Ok(url),
            Err(r) => Err(self.fetch_error(r, url)),
        }
    }

    /// `assertFetchAddress`: as [`Self::check_fetch_address`], returning the
    /// canonical URL to fetch; a denial is counted once and becomes
    /// [`PermissionDenied`] with target `scheme://host:port`.
    pub fn assert_fetch_address(&self, url: &str, resolved_ip: &str) -> Result<Url, PermissionDenied> {
        let r = self.policy.check_fetch_address(url, resolved_ip);
        let d = r.as_ref().err().map_or(Decision::Allowed, |x| Decision::deny(Capability::Fetch, *x));
        self.observe(Input::FetchAddress(url, resolved_ip), &d);
        match r {
            Ok(a) => Ok(a.url),
            Err(r) => Err(self.fetch_error(r, url)),
        }
    }

    /// `assertCapability`: the capability check as a `Result`; a denial is
    /// counted once and becomes [`PermissionDenied`] (target: the origin of a
    /// fetch or `secrets.use` URL).
    pub fn assert_capability(&self, id: &str, payload: &Value) -> Result<(), PermissionDenied> {
        let d = self.policy.check_capability(id, payload);
        self.observe(Input::Capability(id, payload), &d);
        let target = match (d, payload.get("url").and_then(Value::as_str)) {
            (Decision::Denied(x), Some(u)) if matches!(x.capability, Capability::Fetch | Capability::SecretsUse) => {
                redacted_origin_str(u)
            }
            _ => None,
        };
        self.denied(d, target)
    }
}

/// The reason as a `Result`, for hosts that prefer `?`.
pub fn into_result(d: Decision) -> Result<(), DenyReason> {
    d.reason().map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    use serde_json::json;

    use super::*;
    use crate::policy::{Platform, PolicyOptions};

    /// `(capability, reason) -> count` of `plugin.permission_denied_total`.
    fn denied(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> Vec<(String, String, u64)> {
        provider.force_flush().unwrap();
        let mut out = Vec::new();
        if let Some(rm) = exporter.get_finished_metrics().unwrap().last() {
            for sm in rm.scope_metrics() {
                for m in sm.metrics().filter(|m| m.name() == crate::metrics::PERMISSION_DENIED_TOTAL.name) {
                    if let AggregatedMetrics::U64(MetricData::Sum(sum)) = m.data() {
                        for dp in sum.data_points() {
                            let get = |k: &str| {
                                dp.attributes().find(|kv| kv.key.as_str() == k).unwrap().value.as_str().into_owned()
                            };
                            out.push((get("capability"), get("reason"), dp.value()));
                        }
                    }
                }
            }
        }
        out
    }

    #[cfg(unix)]
    #[test]
    fn open_checked_counts_a_denial_once_and_nothing_else() {
        use crate::open::{OpenError, OpenOptions};
        let exporter = InMemoryMetricExporter::default();
        let provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
        let policy = PermissionPolicy::from_manifest(
            &json!({ "fs": ["/nonexistent-asp-open/**"] }),
            PolicyOptions::new("p").platform(Platform::Posix),
        )
        .unwrap();
        let checker = PermissionChecker::new(policy, &provider.meter("t"));
        let denied_err = checker.open_checked("/etc/hostname", OpenOptions::new()).unwrap_err();
        assert!(matches!(denied_err, OpenError::Denied(e) if e.denial.reason == DenyReason::NotAllowlisted));
        // Allowed, then not found: an I/O error, not a denial.
        let io = checker.open_checked("/nonexistent-asp-open/x", OpenOptions::new()).unwrap_err();
        assert!(matches!(io, OpenError::Io(e) if e.kind() == std::io::ErrorKind::NotFound));
        let invalid = checker.open_checked("/etc/hostname", OpenOptions::new().create(true)).unwrap_err();
        assert!(matches!(invalid, OpenError::InvalidOptions(_)));
        assert_eq!(denied(&provider, &exporter), [("fs.read".to_owned(), "not_allowlisted".to_owned(), 1)]);
    }

    #[test]
    fn check_fetch_url_has_the_policys_result_and_counts_a_denial_once() {
        let exporter = InMemoryMetricExporter::default();
        let provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
        let policy = PermissionPolicy::from_manifest(
            &json!({ "fetch": ["https://api.example.com"] }),
            PolicyOptions::new("p").platform(Platform::Posix),
        )
        .unwrap();
        let checker = PermissionChecker::new(policy.clone(), &provider.meter("t"));
        for url in ["https://API.example.com/a?b", "http://api.example.com/", "https://other.example/", "not a url"] {
            let (got, want) = (checker.check_fetch_url(url), policy.check_fetch_url(url));
            assert_eq!(got.as_ref().map(|a| a.url.as_str()), want.as_ref().map(|a| a.url.as_str()), "{url}");
            assert_eq!(got.is_ok(), checker.check_fetch(url).is_allowed(), "{url}");
        }
        assert_eq!(
            checker.check_fetch_url("https://api.example.com/x").unwrap().url.as_str(),
            "https://api.example.com/x"
        );
        // Three denials, each counted by check_fetch_url and again by check_fetch: twice per URL, not more.
        let total: u64 = denied(&provider, &exporter).iter().map(|(c, _, n)| if c == "fetch" { *n } else { 0 }).sum();
        assert_eq!(total, 6);
    }
}
