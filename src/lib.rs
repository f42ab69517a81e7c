#![doc = include_str!("../README.md")]
#![forbid(unsafe_op_in_unsafe_fn)]
// Every unsafe block states why it is sound (the binding is the only unsafe code).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod budget;
pub mod capability;
pub mod checker;
pub mod conformance;
pub mod error;
pub mod explain;
pub mod fetch;
pub mod fs;
pub mod glob;
pub mod lint;
#[cfg(all(feature = "lockdown", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod lockdown;
mod manifest;
pub mod metrics;
pub mod ntfs_upcase;
pub mod platform;
pub mod policy;
pub mod posix_fold;
#[cfg(feature = "testing")]
pub mod testing;
pub mod topic;
pub mod urlpath;

/// The Node-API binding (feature `napi`). Not a Rust API: use the core modules.
#[cfg(feature = "napi")]
#[doc(hidden)]
pub mod binding;

pub use checker::{FsCheckOptions, OnShadow, PermissionChecker, ShadowEvent, ShadowPluginMismatch};
pub use error::{
    BudgetExceeded, BudgetKind, Capability, Decision, Denial, DenyReason, ErrorCode, InvalidSample, ManifestError,
    PermissionDenied, UnmeasuredBudget, ERROR_REGISTRY,
};
pub use fs::FsMode;
pub use policy::{Budgets, PermissionPolicy, Platform, PolicyOptions};
