//! The shared conformance harness (`run_permissions_conformance`) against an
//! adapter built on the Rust WASI host: fs checks through its `Gate`, fetch and
//! capabilities through the gate of its host imports, budgets through its
//! tracker factory.

use std::sync::Mutex;

use api_sandbox_permissions::budget::TrackerError;
use api_sandbox_permissions::error::{BudgetKind, Decision, ManifestError};
use api_sandbox_permissions::testing::{
    run_permissions_conformance, ConformanceChecker, ConformanceContext, ConformanceTracker, ManualHooks,
};
use api_sandbox_permissions::{FsMode, PermissionChecker, PermissionPolicy, PolicyOptions};
use opentelemetry::metrics::Meter;
use serde_json::{json, Value};
use wasi_host_rs::{budget_tracker, Clock, Gate};

struct WasiAdapter {
    gate: Mutex<Gate>,
    policy: PermissionPolicy,
    meter: Meter,
}

impl ConformanceChecker for WasiAdapter {
    fn check_fs(&self, path: &str, mode: FsMode) -> Decision {
        self.gate.lock().unwrap().check_lexical(path, mode)
    }
    fn check_fetch(&self, url: &str) -> Decision {
        self.gate.lock().unwrap().capability_decision("fetch", &json!({ "url": url }), url)
    }
    fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        self.gate.lock().unwrap().capability_decision(id, payload, "")
    }
    fn check_fetch_address(&self, url: &str, ip: &str) -> Option<Decision> {
        Some(self.gate.lock().unwrap().fetch_address(url, ip))
    }
    fn budget_tracker(
        &self,
        hooks: &ManualHooks,
        cpu_grace_ms: f64,
        unmeasured: &[BudgetKind],
    ) -> Option<Result<Box<dyn ConformanceTracker>, TrackerError>> {
        let clock: Clock = Box::new(hooks.clock());
        Some(
            budget_tracker(
                &self.policy,
                &self.meter,
                clock,
                hooks.cpu_sampler(),
                hooks.rss_sampler(),
                Some(cpu_grace_ms),
                unmeasured,
            )
            .map(|t| Box::new(t) as Box<dyn ConformanceTracker>),
        )
    }
}

fn wasi_adapter(manifest: &Value, ctx: &ConformanceContext) -> Result<Box<dyn ConformanceChecker>, ManifestError> {
    let policy = PermissionPolicy::from_manifest(manifest, PolicyOptions::new(&ctx.plugin).platform(ctx.platform))?;
    let gate = Gate::new(PermissionChecker::new(policy.clone(), &ctx.meter));
    Ok(Box::new(WasiAdapter { gate: Mutex::new(gate), policy, meter: ctx.meter.clone() }))
}

#[test]
fn the_wasi_host_passes_every_conformance_case() {
    let report = run_permissions_conformance("wasi-host-rs (Gate)", wasi_adapter);
    println!("{} conformance cases passed", report.passed.len());
    assert!(report.passed.len() > 250, "only {} cases ran", report.passed.len());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(report.passed.iter().any(|n| n.starts_with("adversarial - ")));
}
