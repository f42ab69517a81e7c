//! SPEC §12 and §13 in the Rust core: a shadow policy never changes a
//! decision or an error; its denials count in
//! `plugin.permission_shadow_denied_total` on a real SDK meter provider.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use api_sandbox_permissions::testing::counter_totals;
use api_sandbox_permissions::{
    Capability, Decision, DenyReason, FsCheckOptions, FsMode, PermissionChecker, PermissionPolicy, Platform,
    PolicyOptions, ShadowEvent,
};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

fn policy(m: serde_json::Value) -> PermissionPolicy {
    PermissionPolicy::from_manifest(&m, PolicyOptions { plugin: "plug".into(), platform: Platform::Posix }).unwrap()
}

/// (instrument, capability, reason) -> count for the plugin "plug".
fn totals(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> BTreeMap<(String, String, String), u64> {
    counter_totals(provider, exporter)
        .into_iter()
        .filter(|((_, plugin, _, _), _)| plugin == "plug")
        .map(|((name, _, capability, reason), n)| ((name, capability, reason), n))
        .collect()
}

#[test]
fn shadow_counts_and_reports_but_never_decides() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    let meter = provider.meter("test");
    let enforced = json!({ "fs": ["/srv/**"], "fetch": ["https://api.example.com"], "secrets": ["A"] });
    let candidate = json!({ "fs": ["/srv/data/**"], "fetch": ["https://api.example.com/v1/**"] });
    let events: Arc<Mutex<Vec<ShadowEvent>>> = Arc::default();
    let sink = events.clone();
    let plain = PermissionChecker::new(policy(enforced.clone()), &meter);
    let c = PermissionChecker::new(policy(enforced), &meter)
        .with_shadow(
            policy(candidate),
            Some(Arc::new(move |e: &ShadowEvent| {
                sink.lock().unwrap().push(e.clone());
                panic!("a panicking callback is isolated");
            })),
        )
        .unwrap();
    let o = FsCheckOptions::default();
    assert_eq!(c.check_fs("/srv/x", FsMode::Read, o), Decision::Allowed);
    assert_eq!(c.check_fetch("https://api.example.com/v2/p?q"), Decision::Allowed);
    assert!(c.assert_fetch("https://api.example.com/v2/p").is_ok());
    assert_eq!(c.check_capability("secrets.get", &json!({ "name": "A" })), Decision::Allowed);
    let e1 = c.assert_fs("/etc/passwd", FsMode::Read, o).unwrap_err();
    let e2 = plain.assert_fs("/etc/passwd", FsMode::Read, o).unwrap_err();
    assert_eq!(e1, e2);
    let ev = events.lock().unwrap().clone();
    assert_eq!(ev.len(), 5);
    assert_eq!(
        ev[1],
        ShadowEvent {
            capability: Capability::Fetch,
            reason: DenyReason::PathNotAllowed,
            enforced_allowed: true,
            target: Some("https://api.example.com:443".into()),
        }
    );
    assert!(!ev[4].enforced_allowed);
    let t = totals(&provider, &exporter);
    let get = |n: &str, c: &str, r: &str| t.get(&(n.to_owned(), c.to_owned(), r.to_owned())).copied().unwrap_or(0);
    assert_eq!(get("plugin.permission_shadow_denied_total", "fetch", "path_not_allowed"), 2);
    assert_eq!(get("plugin.permission_shadow_denied_total", "fs.read", "not_allowlisted"), 2);
    assert_eq!(get("plugin.permission_shadow_denied_total", "secrets.get", "secret_not_declared"), 1);
    // Enforced: the two checkers' assert_fs, once each.
    assert_eq!(get("plugin.permission_denied_total", "fs.read", "not_allowlisted"), 2);
    assert_eq!(t.keys().filter(|k| k.0 == "plugin.permission_denied_total").count(), 1);
}

#[test]
fn shadow_must_be_for_the_same_plugin() {
    let other = PermissionPolicy::from_manifest(
        &json!({}),
        PolicyOptions { plugin: "other".into(), platform: Platform::Posix },
    )
    .unwrap();
    assert!(PermissionChecker::with_global_meter(policy(json!({}))).with_shadow(other, None).is_err());
}

#[test]
fn bound_secrets() {
    let p = policy(json!({
        "fetch": ["https://api.example.com"],
        "secrets": ["R", { "name": "T", "hosts": ["https://api.example.com/v1/**"] }]
    }));
    let d = |id: &str, v: serde_json::Value| p.check_capability(id, &v).reason();
    assert_eq!(d("secrets.get", json!({ "name": "T" })), Some(DenyReason::SecretNotReadable));
    assert_eq!(d("secrets.get", json!({ "name": "R" })), None);
    assert_eq!(d("secrets.use", json!({ "name": "T", "url": "https://api.example.com/v1/x" })), None);
    assert_eq!(
        d("secrets.use", json!({ "name": "T", "url": "https://api.example.com/v2/x" })),
        Some(DenyReason::SecretDestinationNotAllowed)
    );
    assert_eq!(
        d("secrets.use", json!({ "name": "R", "url": "https://api.example.com/v1/x" })),
        Some(DenyReason::SecretDestinationNotAllowed)
    );
    assert_eq!(
        d("secrets.use", json!({ "name": "X", "url": "https://api.example.com/v1/x" })),
        Some(DenyReason::SecretNotDeclared)
    );
    assert_eq!(d("secrets.use", json!({ "name": "T" })), Some(DenyReason::InvalidPayload));
    assert_eq!(p.to_json()["secrets"], json!(["R", { "name": "T", "hosts": ["https://api.example.com/v1/**"] }]));
}

#[test]
fn budget_shadow_counts_each_breach_kind_once_and_never_raises() {
    use api_sandbox_permissions::budget::{BudgetTracker, Sample, TrackerOptions};
    use api_sandbox_permissions::metrics::Instruments;
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    let meter = provider.meter("test");
    let enforced = policy(json!({ "budgets": { "wallClockMs": 1000 } }));
    let candidate = policy(json!({ "budgets": { "wallClockMs": 100, "memoryMb": 10 } }));
    let now = Arc::new(Mutex::new(0.0f64));
    let clock_now = now.clone();
    let mut t = BudgetTracker::new(
        &enforced,
        move || *clock_now.lock().unwrap(),
        TrackerOptions {
            instruments: Some(Instruments::new(&meter)),
            unmeasured: vec![api_sandbox_permissions::BudgetKind::MemoryMb],
            shadow: Some(candidate.budgets()),
            ..Default::default()
        },
    )
    .unwrap();
    *now.lock().unwrap() = 150.0;
    assert!(t.check().unwrap().is_ok());
    assert!(t.assert_within().is_ok());
    assert!(t.record(Sample { now_ms: 160.0, cpu_time_ms: None, rss_mb: Some(50.0) }).unwrap().is_ok());
    assert!(t.check().unwrap().is_ok());
    let tt = totals(&provider, &exporter);
    assert_eq!(
        tt.get(&("plugin.budget_shadow_exceeded_total".into(), "request".into(), "wall_clock".into())),
        Some(&1)
    );
    assert_eq!(tt.get(&("plugin.budget_shadow_exceeded_total".into(), "request".into(), "memory".into())), Some(&1));
    assert!(!tt.keys().any(|k| k.0 == "plugin.budget_exceeded_total"));
    // A shadow budget with no sampler is refused like an enforced one.
    let cpu = policy(json!({ "budgets": { "cpuPercent": 5 } }));
    let r = BudgetTracker::new(&enforced, || 0.0, TrackerOptions { shadow: Some(cpu.budgets()), ..Default::default() });
    assert!(r.is_err());
}
