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

/// A policy with metrics. Cheap to clone (the policy is shared).
#[derive(Debug, Clone)]
pub struct PermissionChecker {
    policy: Arc<PermissionPolicy>,
    instruments: Instruments,
}

impl PermissionChecker {
    /// A checker recording to `meter`.
    pub fn new(policy: PermissionPolicy, meter: &Meter) -> Self {
        Self { policy: Arc::new(policy), instruments: Instruments::new(meter) }
    }

    /// A checker recording to the global meter provider.
    pub fn with_global_meter(policy: PermissionPolicy) -> Self {
        Self { policy: Arc::new(policy), instruments: Instruments::global() }
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
        self.count(Decision::Denied(denial));
        PermissionDenied { plugin: self.policy.plugin().to_owned(), denial, target: redacted_origin_str(url) }
    }

    pub fn check_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Decision {
        self.count(self.fs_decision(path, mode, options))
    }

    pub fn check_fetch(&self, url: &str) -> Decision {
        self.count(self.policy.check_fetch(url))
    }

    /// The fetch check; when allowed, the canonical URL to fetch.
    pub fn check_fetch_url(&self, url: &str) -> Result<Url, Decision> {
        self.policy.check_fetch_url(url).map(|a| a.url).map_err(|r| self.count(Decision::deny(Capability::Fetch, r)))
    }

    pub fn check_fetch_address(&self, url: &str, resolved_ip: &str) -> Decision {
        self.count(crate::fetch::decision_of(&self.policy.check_fetch_address(url, resolved_ip)))
    }

    pub fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        self.count(self.policy.check_capability(id, payload))
    }

    pub fn assert_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Result<(), PermissionDenied> {
        self.denied(self.fs_decision(path, mode, options), None)
    }

    /// Asserts (a denial counts once), and returns the path the host must
    /// open: the normalised path, or with `resolve_symlinks` the real path.
    /// Open exactly this path, without following a final symlink.
    pub fn authorize_fs(&self, path: &str, mode: FsMode, options: FsCheckOptions) -> Result<String, PermissionDenied> {
        self.policy.authorize_fs(path, mode, options.resolve_symlinks).map_err(|reason| {
            let denial = Denial { capability: mode.capability(), reason };
            self.count(Decision::Denied(denial));
            PermissionDenied { plugin: self.policy.plugin().to_owned(), denial, target: None }
        })
    }

    /// Asserts, and returns the canonical URL the host must fetch.
    pub fn assert_fetch(&self, url: &str) -> Result<Url, PermissionDenied> {
        match self.policy.check_fetch_url(url) {
            Ok(AllowedUrl { url, .. }) => Ok(url),
            Err(r) => Err(self.fetch_error(r, url)),
        }
    }

    pub fn assert_fetch_address(&self, url: &str, resolved_ip: &str) -> Result<Url, PermissionDenied> {
        match self.policy.check_fetch_address(url, resolved_ip) {
            Ok(a) => Ok(a.url),
            Err(r) => Err(self.fetch_error(r, url)),
        }
    }

    pub fn assert_capability(&self, id: &str, payload: &Value) -> Result<(), PermissionDenied> {
        let d = self.policy.check_capability(id, payload);
        let target = match (d, payload.get("url").and_then(Value::as_str)) {
            (Decision::Denied(x), Some(u)) if x.capability == Capability::Fetch => redacted_origin_str(u),
            _ => None,
        };
        self.denied(d, target)
    }
}

/// The reason as a `Result`, for hosts that prefer `?`.
pub fn into_result(d: Decision) -> Result<(), DenyReason> {
    d.reason().map_or(Ok(()), Err)
}
