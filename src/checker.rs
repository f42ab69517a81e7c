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
    pub capability: Capability,
    /// The shadow policy's reason.
    pub reason: DenyReason,
    /// What the enforced policy decided: `true` allowed.
    pub enforced_allowed: bool,
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
}

impl PermissionChecker {
    /// A checker recording to `meter`.
    pub fn new(policy: PermissionPolicy, meter: &Meter) -> Self {
        Self { policy: Arc::new(policy), instruments: Instruments::new(meter), shadow: None }
    }

    /// A checker recording to the global meter provider.
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

    pub fn policy(&self) -> &PermissionPolicy {
        &self.policy
    }

    fn count(&self, d: Decision) -> Decision {
        if let Decision::Denied(x) = d {
            self.instruments.denied(self.policy.plugin(), x.capability.as_str(), x.reason.as_str());
        }
        d
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

    pub fn check_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Decision {
        let d = self.count(self.fs_decision(path, mode, options));
        self.observe(Input::Fs(path, mode, options), &d);
        d
    }

    pub fn check_fetch(&self, url: &str) -> Decision {
        let d = self.count(self.policy.check_fetch(url));
        self.observe(Input::Fetch(url), &d);
        d
    }

    /// The fetch check; when allowed, the canonical URL to fetch.
    pub fn check_fetch_url(&self, url: &str) -> Result<Url, Decision> {
        let r = self
            .policy
            .check_fetch_url(url)
            .map(|a| a.url)
            .map_err(|r| self.count(Decision::deny(Capability::Fetch, r)));
        self.observe(Input::Fetch(url), r.as_ref().err().unwrap_or(&Decision::Allowed));
        r
    }

    pub fn check_fetch_address(&self, url: &str, resolved_ip: &str) -> Decision {
        let d = self.count(crate::fetch::decision_of(&self.policy.check_fetch_address(url, resolved_ip)));
        self.observe(Input::FetchAddress(url, resolved_ip), &d);
        d
    }

    pub fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        let d = self.count(self.policy.check_capability(id, payload));
        self.observe(Input::Capability(id, payload), &d);
        d
    }

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

    /// Asserts, and returns the canonical URL the host must fetch.
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

    pub fn assert_fetch_address(&self, url: &str, resolved_ip: &str) -> Result<Url, PermissionDenied> {
        let r = self.policy.check_fetch_address(url, resolved_ip);
        let d = r.as_ref().err().map_or(Decision::Allowed, |x| Decision::deny(Capability::Fetch, *x));
        self.observe(Input::FetchAddress(url, resolved_ip), &d);
        match r {
            Ok(a) => Ok(a.url),
            Err(r) => Err(self.fetch_error(r, url)),
        }
    }

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
