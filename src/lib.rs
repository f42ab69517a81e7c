//! The permission model of sandboxed-tier plugins: fs, fetch and capability
//! checks, per-request budgets, metrics and a conformance harness.
//!
//! A sandbox host calls this crate before every capability call an untrusted
//! plugin makes. The plugin's manifest is parsed once into an immutable
//! [`PermissionPolicy`] (compiled matchers, never raw strings); each call is
//! then checked against it and gets a [`Decision`]. Unknown input is denied:
//! an empty manifest grants nothing, an unknown capability id is
//! [`DenyReason::UnknownCapability`], a path or URL that does not parse is
//! denied, never guessed at. The same core backs the npm package
//! `@suaveplan/api-sandbox-permissions` (through its Node-API binding), so a
//! Rust host and a Node host decide every call alike; the shared case table
//! ([`conformance`]) holds both to it.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `napi` | on | the Node-API binding of the npm package. Rust hosts turn it off: `default-features = false`. |
//! | `lockdown` | on | `lockdown::lockdown()` (Linux x86_64/aarch64): a default-deny seccomp allow-list, synchronised across threads, for the process tier; `lockdown::landlock`, the manifest's Landlock ruleset. |
//! | `launcher` | off | the `asp-landlock` binary, which applies that ruleset and execs the child (implies `lockdown`; without `napi`). |
//! | `testing` | off | `testing::run_permissions_conformance`, the conformance runner for Rust hosts, with an in-memory OpenTelemetry SDK meter. |
//! | `test-hooks` | off | test-only exports of the addon (implies `napi`); never in a shipped build. |
//!
//! ```toml
//! [dependencies]
//! api-sandbox-permissions = { version = "0.1", default-features = false, features = ["lockdown"] }
//! ```
//!
//! The types of the crates in its API are re-exported ([`url`],
//! [`opentelemetry`], [`serde_json`]), so a host need not match their versions.
//!
//! # A policy, and checks against it
//!
//! ```
//! use api_sandbox_permissions::serde_json::json;
//! use api_sandbox_permissions::{Capability, Decision, DenyReason, FsMode, PermissionPolicy, PolicyOptions, Platform};
//!
//! let manifest = json!({
//!     "fs": ["/data/plugin/**", { "path": "/tmp/plugin/**", "mode": "readwrite" }],
//!     "fetch": ["api.example.com", "*.cdn.example.com"],
//!     "secrets": ["API_KEY"],
//!     "deny": { "fs": ["/data/plugin/secrets/**"] }
//! });
//! let policy = PermissionPolicy::from_manifest(&manifest, PolicyOptions::new("weather").platform(Platform::Posix))?;
//!
//! // fs: paths are normalised lexically first; `..` never climbs out of a grant.
//! assert!(policy.check_fs("/data/plugin/config.json", FsMode::Read).is_allowed());
//! assert_eq!(
//!     policy.check_fs("/data/plugin/../../etc/passwd", FsMode::Read).reason(),
//!     Some(DenyReason::PathTraversal)
//! );
//! assert_eq!(
//!     policy.check_fs("/data/plugin/config.json", FsMode::Write),
//!     Decision::deny(Capability::FsWrite, DenyReason::ModeNotGranted)
//! );
//! // A deny rule wins over every grant.
//! assert_eq!(
//!     policy.check_fs("/data/plugin/secrets/key.pem", FsMode::Read).reason(),
//!     Some(DenyReason::ExplicitlyDenied)
//! );
//!
//! // fetch: WHATWG parsing, typed hosts, a port rule (no port in a pattern: the default one).
//! assert!(policy.check_fetch("https://api.example.com/v1/forecast?q=1").is_allowed());
//! assert!(policy.check_fetch("https://img.cdn.example.com/a.png").is_allowed());
//! assert_eq!(policy.check_fetch("https://api.example.com:8443/").reason(), Some(DenyReason::PortNotAllowed));
//! assert_eq!(policy.check_fetch("https://user:pw@api.example.com/").reason(), Some(DenyReason::CredentialsInUrl));
//!
//! // Capabilities by id, with the payload the plugin sent.
//! assert!(policy.check_capability("secrets.get", &json!({ "name": "API_KEY" })).is_allowed());
//! assert_eq!(
//!     policy.check_capability("secrets.get", &json!({ "name": "DB_PASSWORD" })).reason(),
//!     Some(DenyReason::SecretNotDeclared)
//! );
//! assert_eq!(policy.check_capability("__proto__", &json!({})).reason(), Some(DenyReason::UnknownCapability));
//!
//! // An invalid manifest names the JSON pointer of the bad field.
//! let err = PermissionPolicy::from_manifest(&json!({ "fs": ["relative/**"] }), PolicyOptions::new("weather"))
//!     .unwrap_err();
//! assert_eq!(err.pointer, "/fs/0");
//! # Ok::<(), api_sandbox_permissions::ManifestError>(())
//! ```
//!
//! # A checker that counts denials on an OpenTelemetry meter
//!
//! [`PermissionChecker`] wraps a policy, counts every denial once in
//! `plugin.permission_denied_total{plugin, capability, reason}`
//! ([`metrics::PERMISSION_DENIED_TOTAL`]) and adds `assert_*` methods that
//! return [`PermissionDenied`] (its details are redaction-safe: a fetch
//! denial carries `scheme://host:port` only). Any [`opentelemetry::metrics::Meter`]
//! works; this one is the SDK's, with an in-memory exporter:
//!
//! ```
//! use api_sandbox_permissions::opentelemetry::metrics::MeterProvider as _;
//! use api_sandbox_permissions::serde_json::json;
//! use api_sandbox_permissions::{metrics, DenyReason, FsCheckOptions, FsMode, PermissionChecker, PermissionPolicy, PolicyOptions};
//! use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
//! use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
//!
//! let exporter = InMemoryMetricExporter::default();
//! let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
//! let meter = provider.meter(metrics::METER_NAME);
//!
//! let policy = PermissionPolicy::from_manifest(&json!({ "fetch": ["api.example.com"] }), PolicyOptions::new("weather"))?;
//! let checker = PermissionChecker::new(policy, &meter);
//!
//! // The URL to fetch is the canonical one the check parsed, never the raw input.
//! let url = checker.assert_fetch("https://API.example.com/v1")?;
//! assert_eq!(url.as_str(), "https://api.example.com/v1");
//!
//! let err = checker.assert_fetch("https://evil.example.net/steal?token=abc").unwrap_err();
//! assert_eq!(err.denial.reason, DenyReason::HostNotAllowlisted);
//! assert_eq!(err.target.as_deref(), Some("https://evil.example.net:443")); // no path, no query
//! assert_eq!(err.code().spec().id, "SAND_PERM_001");
//! assert!(!checker.check_fs("/etc/passwd", FsMode::Read, FsCheckOptions::default()).is_allowed());
//!
//! provider.force_flush()?;
//! let mut denials = 0;
//! for rm in exporter.get_finished_metrics()? {
//!     for sm in rm.scope_metrics() {
//!         for m in sm.metrics().filter(|m| m.name() == metrics::PERMISSION_DENIED_TOTAL.name) {
//!             if let AggregatedMetrics::U64(MetricData::Sum(sum)) = m.data() {
//!                 denials = sum.data_points().map(|p| p.value()).sum::<u64>();
//!             }
//!         }
//!     }
//! }
//! assert_eq!(denials, 2); // one per denied call
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Budgets
//!
//! [`BudgetTracker`] enforces a policy's `budgets` (CPU percent, memory,
//! wall clock) with a clock the host injects (any `FnMut() -> f64`, in ms)
//! and optional samplers; see [`budget`] for the exact semantics.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use api_sandbox_permissions::budget::{BudgetStatus, TrackerOptions};
//! use api_sandbox_permissions::serde_json::json;
//! use api_sandbox_permissions::{BudgetKind, BudgetTracker, PermissionPolicy, PolicyOptions};
//!
//! let policy = PermissionPolicy::from_manifest(&json!({ "budgets": { "wallClockMs": 100 } }), PolicyOptions::new("weather"))?;
//! let now = Arc::new(AtomicU64::new(1_000));
//! let clock = { let now = now.clone(); move || now.load(Ordering::Relaxed) as f64 };
//! let mut tracker = BudgetTracker::new(&policy, clock, TrackerOptions::default())?;
//!
//! now.store(1_100, Ordering::Relaxed);
//! assert!(tracker.check()?.is_ok()); // exactly at the limit is within it
//! now.store(1_101, Ordering::Relaxed);
//! match tracker.check()? {
//!     BudgetStatus::Exceeded(b) => assert_eq!((b.budget, b.limit, b.observed), (BudgetKind::WallClockMs, 100.0, 101.0)),
//!     BudgetStatus::Ok { .. } => unreachable!(),
//! }
//! assert!(tracker.assert_within().is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Testing a host
//!
//! With the `testing` feature, `testing::run_permissions_conformance` runs
//! every case of the shared table (the one the npm package's `./testing`
//! runs) against a host's adapter: decisions, manifest errors, budget
//! statuses, metric increments, and the host's `assert_*` error shapes.
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]
// Every unsafe block states why it is sound (the binding is the only unsafe code).
#![deny(clippy::undocumented_unsafe_blocks)]

#[rustfmt::skip] // generated by scripts/gen-bestfit.js
mod bestfit_table;
pub mod budget;
pub mod capability;
pub mod checker;
pub mod conformance;
pub mod diff;
pub mod error;
pub mod explain;
pub mod fetch;
pub mod fs;
mod glob;
#[cfg(any(feature = "napi", test))]
mod handle_table;
#[rustfmt::skip] // generated by scripts/gen-hfsplus-fold.js
mod hfsplus_table;
pub mod lint;
#[cfg(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod lockdown;
mod manifest;
pub mod metrics;
mod ntfs_upcase;
#[cfg(unix)]
pub mod open;
pub mod platform;
pub mod policy;
mod posix_fold;
mod small_map;
#[cfg(feature = "testing")]
pub mod testing;
pub mod topic;
mod urlpath;
pub mod wasi;

/// The Node-API binding (feature `napi`). Not a Rust API: use the core modules.
#[cfg(feature = "napi")]
#[doc(hidden)]
pub mod binding;

pub use budget::BudgetTracker;
pub use checker::{FsCheckOptions, OnShadow, PermissionChecker, ShadowEvent, ShadowPluginMismatch};
pub use error::{
    BudgetExceeded, BudgetKind, Capability, Decision, Denial, DenyReason, ErrorCode, InvalidSample, ManifestError,
    PermissionDenied, UnmeasuredBudget, ERROR_REGISTRY,
};
pub use fs::FsMode;
pub use platform::Platform;
pub use policy::{Budgets, PermissionPolicy, PolicyOptions};

// The crates whose types appear in this API, so a host uses the same versions.
/// The `opentelemetry` crate this API records through ([`PermissionChecker::new`] takes its `Meter`).
pub use opentelemetry;
/// The `serde_json` crate: manifests and payloads are its `Value`s.
pub use serde_json;
/// The `url` crate: an allowed fetch yields its `Url`, canonical as the WHATWG parser serialises it.
pub use url;
