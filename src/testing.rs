//! `run_permissions_conformance` for Rust sandbox hosts (SPEC §7), behind the
//! `testing` cargo feature. It runs every case of [`crate::conformance`]
//! against a host's checker and checks decisions, manifest errors, budget
//! statuses and metric increments (through an in-memory OpenTelemetry SDK
//! meter handed to the host in [`ConformanceContext`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry::metrics::{Meter, MeterProvider};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::Value;

use crate::budget::{BudgetStatus, Sampler, TrackerError};
use crate::conformance::{cases, BudgetStep, Case, Expect, Op};
use crate::error::{BudgetKind, Capability, Decision, InvalidSample, ManifestError};
use crate::fs::FsMode;
use crate::metrics::{BUDGET_EXCEEDED_TOTAL, METER_NAME, PERMISSION_DENIED_TOTAL};
use crate::policy::Platform;

/// The plugin id every conformance policy is built with.
pub const CONFORMANCE_PLUGIN: &str = "conformance-plugin";
/// The `capability` label budget breaches are expected under.
pub const BUDGET_CAPABILITY: &str = "request";

/// What `make_checker` gets besides the manifest.
pub struct ConformanceContext {
    /// Build the policy with this plugin id.
    pub plugin: String,
    /// Build the policy with this path flavour.
    pub platform: Platform,
    /// Record metrics here: the harness reads it back.
    pub meter: Meter,
}

/// Manual clock and samplers a budget case drives.
#[derive(Clone, Default)]
pub struct ManualHooks(Arc<Mutex<BudgetStep>>);

impl ManualHooks {
    fn set(&self, step: BudgetStep) {
        *self.0.lock().unwrap() = step;
    }
    pub fn now_ms(&self) -> f64 {
        self.0.lock().unwrap().0
    }
    /// A clock reading the manual time.
    pub fn clock(&self) -> impl FnMut() -> f64 + Send + 'static {
        let h = self.clone();
        move || h.now_ms()
    }
    /// A CPU sampler, if the case has CPU readings.
    pub fn cpu_sampler(&self) -> Option<Sampler> {
        let h = self.clone();
        self.0.lock().unwrap().1.map(|_| Box::new(move || h.0.lock().unwrap().1.unwrap_or(f64::NAN)) as Sampler)
    }
    /// An RSS sampler, if the case has memory readings.
    pub fn rss_sampler(&self) -> Option<Sampler> {
        let h = self.clone();
        self.0.lock().unwrap().2.map(|_| Box::new(move || h.0.lock().unwrap().2.unwrap_or(f64::NAN)) as Sampler)
    }
}

/// A budget tracker under test.
pub trait ConformanceTracker {
    fn sample(&mut self) -> Result<BudgetStatus, InvalidSample>;
}

/// What a host adapts its checker to.
pub trait ConformanceChecker {
    fn check_fs(&self, path: &str, mode: FsMode) -> Decision;
    fn check_fetch(&self, url: &str) -> Decision;
    fn check_capability(&self, id: &str, payload: &Value) -> Decision;
    /// `None`: the adapter has no address check; its cases are skipped and printed.
    fn check_fetch_address(&self, _url: &str, _ip: &str) -> Option<Decision> {
        None
    }
    /// `None`: the adapter has no budget tracker; budget cases are skipped and printed.
    /// The tracker must be created at the hooks' current readings, with the
    /// hooks' samplers and `unmeasured` (budgets declared measured
    /// elsewhere); a budget with neither must be refused
    /// ([`TrackerError::Unmeasured`]).
    fn budget_tracker(
        &self,
        _hooks: &ManualHooks,
        _cpu_grace_ms: f64,
        _unmeasured: &[BudgetKind],
    ) -> Option<Result<Box<dyn ConformanceTracker>, TrackerError>> {
        None
    }
    /// SPEC §12: the same checker with a shadow policy that denies every call
    /// (an empty manifest, same plugin id), recording to the same meter.
    /// `None`: the adapter has no shadow support; the shadow pass is not run.
    fn with_deny_all_shadow(&self) -> Option<Box<dyn ConformanceChecker>> {
        None
    }
}

/// Run options.
#[derive(Debug, Clone, Default)]
pub struct ConformanceOptions {
    /// Only cases whose name contains this substring.
    pub filter: Option<String>,
    /// Cases the adapter declares it cannot support: (name or `category - ` prefix, reason).
    pub skip: Vec<(String, String)>,
}

/// The outcome of a run.
#[derive(Debug, Clone, Default)]
pub struct ConformanceReport {
    pub label: String,
    pub passed: Vec<String>,
    pub failed: Vec<(String, String)>,
    pub skipped: Vec<(String, String)>,
}

type MetricKey = (String, String, String, String);

struct Probe {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
    last: HashMap<MetricKey, u64>,
}

impl Probe {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
        Self { provider, exporter, last: HashMap::new() }
    }

    /// Increments since the last call, by (instrument, plugin, capability, reason).
    fn delta(&mut self) -> HashMap<MetricKey, u64> {
        let now = counter_totals(&self.provider, &self.exporter);
        self.exporter.reset();
        let mut delta = HashMap::new();
        for (k, v) in &now {
            let d = v - self.last.get(k).copied().unwrap_or(0).min(*v);
            if d > 0 {
                delta.insert(k.clone(), d);
            }
        }
        self.last = now;
        delta
    }
}

fn expected_capability(op: &Op) -> Capability {
    match op {
        Op::Fs { mode, .. } => mode.capability(),
        Op::Fetch { .. } | Op::FetchAddress { .. } => Capability::Fetch,
        Op::Capability { id, .. } => Capability::from_id(id).unwrap_or(Capability::Unknown),
        _ => Capability::Unknown,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn denial_metrics(probe: &mut Probe, expected: Option<(Capability, &str)>) -> Result<(), String> {
    let delta = probe.delta();
    let want: HashMap<MetricKey, u64> = expected
        .map(|(c, r)| {
            let key = (
                PERMISSION_DENIED_TOTAL.name.to_owned(),
                CONFORMANCE_PLUGIN.to_owned(),
                c.as_str().to_owned(),
                r.to_owned(),
            );
            HashMap::from([(key, 1)])
        })
        .unwrap_or_default();
    if delta == want {
        Ok(())
    } else {
        Err(format!("metric increments {delta:?}, expected {want:?}"))
    }
}

fn run_case(
    case: &Case,
    probe: &mut Probe,
    checker: &dyn ConformanceChecker,
    hooks: &ManualHooks,
) -> Result<Option<String>, String> {
    let got = match &case.op {
        Op::Fs { path, mode } => checker.check_fs(path, *mode),
        Op::Fetch { url } => checker.check_fetch(url),
        Op::FetchAddress { url, ip } => match checker.check_fetch_address(url, ip) {
            Some(d) => d,
            None => return Ok(Some("the adapter has no checkFetchAddress".into())),
        },
        Op::Capability { id, payload } => checker.check_capability(id, payload),
        Op::Budget { grace_ms, steps, unmeasured } => {
            return run_budget(case, probe, checker, hooks, (*grace_ms, unmeasured), steps)
        }
        Op::Manifest { .. } => unreachable!(),
    };
    let cap = expected_capability(&case.op);
    let want = match case.expect {
        Expect::Allow => Decision::Allowed,
        Expect::Deny(r) => Decision::deny(cap, r),
        _ => unreachable!(),
    };
    if got != want {
        return Err(format!("decision {got:?}, expected {want:?}"));
    }
    denial_metrics(probe, want.reason().map(|r| (cap, r.as_str())))?;
    if let Some(shadowed) = checker.with_deny_all_shadow() {
        shadow_pass(case, probe, &*shadowed, cap, want)?;
    }
    Ok(None)
}

/// The case again beside a deny-all shadow: the same decision and enforced
/// increments, and exactly one shadow increment with the call's capability.
fn shadow_pass(
    case: &Case,
    probe: &mut Probe,
    shadowed: &dyn ConformanceChecker,
    cap: Capability,
    want: Decision,
) -> Result<(), String> {
    let got = match &case.op {
        Op::Fs { path, mode } => shadowed.check_fs(path, *mode),
        Op::Fetch { url } => shadowed.check_fetch(url),
        Op::FetchAddress { url, ip } => match shadowed.check_fetch_address(url, ip) {
            Some(d) => d,
            None => return Ok(()),
        },
        Op::Capability { id, payload } => shadowed.check_capability(id, payload),
        _ => return Ok(()),
    };
    if got != want {
        return Err(format!(
            "with a shadow: decision {got:?}, expected {want:?} (a shadow must never change a decision)"
        ));
    }
    let shadow_name = crate::metrics::PERMISSION_SHADOW_DENIED_TOTAL.name;
    let delta = probe.delta();
    let (shadow, rest): (HashMap<_, _>, HashMap<_, _>) = delta.into_iter().partition(|(k, _)| k.0 == shadow_name);
    let want_rest: HashMap<MetricKey, u64> = want
        .reason()
        .map(|r| {
            let key = (
                PERMISSION_DENIED_TOTAL.name.to_owned(),
                CONFORMANCE_PLUGIN.to_owned(),
                cap.as_str().to_owned(),
                r.as_str().to_owned(),
            );
            HashMap::from([(key, 1)])
        })
        .unwrap_or_default();
    if rest != want_rest {
        return Err(format!("with a shadow: enforced increments {rest:?}, expected {want_rest:?}"));
    }
    let once =
        shadow.len() == 1 && shadow.iter().all(|(k, v)| *v == 1 && k.1 == CONFORMANCE_PLUGIN && k.2 == cap.as_str());
    if !once {
        return Err(format!("with a deny-all shadow: shadow increments {shadow:?}, expected one for {cap}"));
    }
    Ok(())
}

fn run_budget(
    case: &Case,
    probe: &mut Probe,
    checker: &dyn ConformanceChecker,
    hooks: &ManualHooks,
    (grace_ms, unmeasured): (f64, &[BudgetKind]),
    steps: &[BudgetStep],
) -> Result<Option<String>, String> {
    hooks.set(steps[0]);
    let mut tracker = match (checker.budget_tracker(hooks, grace_ms, unmeasured), &case.expect) {
        (None, _) => return Ok(Some("the adapter has no budget tracker".into())),
        (Some(Err(TrackerError::Unmeasured(e))), Expect::UnmeasuredBudget(k)) if e.budget == *k => return Ok(None),
        (Some(Ok(_)), Expect::UnmeasuredBudget(k)) => {
            return Err(format!("a {} budget with no sampler was accepted (a silently unenforced budget)", k.as_str()))
        }
        (Some(Ok(t)), _) => t,
        (Some(Err(TrackerError::InvalidSample(_))), Expect::InvalidSample) => return Ok(None),
        (Some(Err(e)), _) => return Err(format!("creating the tracker: {e}")),
    };
    let mut last = None;
    for step in &steps[1..] {
        hooks.set(*step);
        match tracker.sample() {
            Ok(s) => last = Some(s),
            Err(e) => {
                if case.expect == Expect::InvalidSample {
                    let d = probe.delta();
                    return if d.is_empty() { Ok(None) } else { Err(format!("an invalid sample counted {d:?}")) };
                }
                return Err(format!("unexpected {e}"));
            }
        }
    }
    let last = last.ok_or("no sample taken")?;
    let delta = probe.delta();
    let key = |reason: &str| {
        (
            BUDGET_EXCEEDED_TOTAL.name.to_owned(),
            CONFORMANCE_PLUGIN.to_owned(),
            BUDGET_CAPABILITY.to_owned(),
            reason.to_owned(),
        )
    };
    match (&case.expect, last) {
        (Expect::BudgetOk { elapsed_ms }, BudgetStatus::Ok { elapsed_ms: got, .. }) => {
            if let Some(e) = elapsed_ms {
                if !close(*e, got) {
                    return Err(format!("elapsedMs {got}, expected {e}"));
                }
            }
            if !delta.is_empty() {
                return Err(format!("within budget but counted {delta:?}"));
            }
            Ok(None)
        }
        (Expect::BudgetExceeded { budget, limit, observed, also }, BudgetStatus::Exceeded(b)) => {
            if b.budget != *budget || !close(b.limit, *limit) || !close(b.observed, *observed) {
                return Err(format!("breach {b:?}, expected {budget:?} limit {limit} observed {observed}"));
            }
            let want: HashMap<MetricKey, u64> =
                std::iter::once(budget).chain(also.iter()).map(|k| (key(k.reason()), 1)).collect();
            if delta != want {
                return Err(format!("metric increments {delta:?}, expected {want:?}"));
            }
            Ok(None)
        }
        (e, got) => Err(format!("status {got:?}, expected {e:?}")),
    }
}

/// Runs every case and returns the report (never panics on a failing case).
pub fn run_permissions_conformance_with<F>(
    label: &str,
    options: &ConformanceOptions,
    mut make_checker: F,
) -> ConformanceReport
where
    F: FnMut(&Value, &ConformanceContext) -> Result<Box<dyn ConformanceChecker>, ManifestError>,
{
    let mut probe = Probe::new();
    let mut report = ConformanceReport { label: label.to_owned(), ..Default::default() };
    for case in cases() {
        if options.filter.as_ref().is_some_and(|f| !case.name.contains(f.as_str())) {
            continue;
        }
        if let Some((_, why)) = options.skip.iter().find(|(n, _)| case.name == *n || case.name.starts_with(n.as_str()))
        {
            report.skipped.push((case.name.clone(), why.clone()));
            continue;
        }
        let ctx = ConformanceContext {
            plugin: CONFORMANCE_PLUGIN.into(),
            platform: case.platform,
            meter: probe.provider.meter(METER_NAME),
        };
        let built = make_checker(&case.manifest, &ctx);
        let result = match (&case.op, built) {
            (Op::Manifest { expect_pointer: None }, Ok(_)) => Ok(None),
            (Op::Manifest { expect_pointer: Some(p) }, Err(e)) if e.pointer == *p => Ok(None),
            (Op::Manifest { expect_pointer }, Err(e)) => Err(format!(
                "INVALID_MANIFEST at {:?} ({}), expected pointer {expect_pointer:?}",
                e.pointer, e.expected
            )),
            (Op::Manifest { expect_pointer }, Ok(_)) => {
                Err(format!("manifest accepted, expected INVALID_MANIFEST at {expect_pointer:?}"))
            }
            (_, Err(e)) => Err(format!("the case's manifest was rejected: {e}")),
            (_, Ok(checker)) => {
                probe.delta();
                run_case(case, &mut probe, checker.as_ref(), &ManualHooks::default())
            }
        };
        match result {
            Ok(None) => report.passed.push(case.name.clone()),
            Ok(Some(why)) => report.skipped.push((case.name.clone(), why)),
            Err(why) => report.failed.push((case.name.clone(), why)),
        }
    }
    report
}

/// Runs every case; prints skips; panics listing every failing case.
pub fn run_permissions_conformance<F>(label: &str, make_checker: F) -> ConformanceReport
where
    F: FnMut(&Value, &ConformanceContext) -> Result<Box<dyn ConformanceChecker>, ManifestError>,
{
    let report = run_permissions_conformance_with(label, &ConformanceOptions::default(), make_checker);
    for (name, why) in &report.skipped {
        eprintln!("[{label}] skipped {name}: {why}");
    }
    if !report.failed.is_empty() {
        let lines: Vec<String> = report.failed.iter().map(|(n, w)| format!("  {n}: {w}")).collect();
        panic!(
            "[{label}] {} of {} conformance cases failed:\n{}",
            report.failed.len(),
            report.failed.len() + report.passed.len(),
            lines.join("\n")
        );
    }
    report
}

/// The adapter for this crate's own [`crate::PermissionChecker`] and [`crate::budget::BudgetTracker`].
pub struct NativeAdapter {
    pub checker: crate::PermissionChecker,
    pub meter: Meter,
}

struct NativeTracker<C: crate::budget::Clock>(crate::budget::BudgetTracker<C>);

impl<C: crate::budget::Clock> ConformanceTracker for NativeTracker<C> {
    fn sample(&mut self) -> Result<BudgetStatus, InvalidSample> {
        self.0.sample()
    }
}

impl ConformanceChecker for NativeAdapter {
    fn check_fs(&self, path: &str, mode: FsMode) -> Decision {
        self.checker.check_fs(path, mode, crate::FsCheckOptions::default())
    }
    fn check_fetch(&self, url: &str) -> Decision {
        self.checker.check_fetch(url)
    }
    fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        self.checker.check_capability(id, payload)
    }
    fn check_fetch_address(&self, url: &str, ip: &str) -> Option<Decision> {
        Some(self.checker.check_fetch_address(url, ip))
    }
    fn with_deny_all_shadow(&self) -> Option<Box<dyn ConformanceChecker>> {
        if self.checker.shadow_policy().is_some() {
            return None;
        }
        let options = crate::PolicyOptions {
            plugin: self.checker.policy().plugin().to_owned(),
            platform: self.checker.policy().platform(),
        };
        let deny_all = crate::PermissionPolicy::from_manifest(&serde_json::json!({}), options).ok()?;
        let checker = self.checker.clone().with_shadow(deny_all, None).ok()?;
        Some(Box::new(NativeAdapter { checker, meter: self.meter.clone() }))
    }
    fn budget_tracker(
        &self,
        hooks: &ManualHooks,
        cpu_grace_ms: f64,
        unmeasured: &[BudgetKind],
    ) -> Option<Result<Box<dyn ConformanceTracker>, TrackerError>> {
        let options = crate::budget::TrackerOptions {
            cpu_time_ms: hooks.cpu_sampler(),
            rss_mb: hooks.rss_sampler(),
            cpu_grace_ms,
            unmeasured: unmeasured.to_vec(),
            instruments: Some(crate::metrics::Instruments::new(&self.meter)),
            ..Default::default()
        };
        Some(
            crate::budget::BudgetTracker::new(self.checker.policy(), hooks.clock(), options)
                .map(|t| Box::new(NativeTracker(t)) as Box<dyn ConformanceTracker>),
        )
    }
}

/// `make_checker` for this crate's own checker.
pub fn native_checker(
    manifest: &Value,
    ctx: &ConformanceContext,
) -> Result<Box<dyn ConformanceChecker>, ManifestError> {
    let policy = crate::PermissionPolicy::from_manifest(
        manifest,
        crate::PolicyOptions::new(&ctx.plugin).platform(ctx.platform),
    )?;
    Ok(Box::new(NativeAdapter { checker: crate::PermissionChecker::new(policy, &ctx.meter), meter: ctx.meter.clone() }))
}

/// Every `u64` counter data point `exporter` holds after `provider` is
/// flushed (the last export, cumulative), summed by (instrument, plugin,
/// capability, reason); a label a point lacks reads as `""`. The one readout
/// of an in-memory SDK meter for the runner, this crate's tests and example
/// hosts' tests.
pub fn counter_totals(
    provider: &SdkMeterProvider,
    exporter: &InMemoryMetricExporter,
) -> HashMap<(String, String, String, String), u64> {
    let _ = provider.force_flush();
    let mut out = HashMap::new();
    if let Some(rm) = exporter.get_finished_metrics().unwrap_or_default().last() {
        for sm in rm.scope_metrics() {
            for m in sm.metrics() {
                if let AggregatedMetrics::U64(MetricData::Sum(sum)) = m.data() {
                    for dp in sum.data_points() {
                        let get = |k: &str| {
                            dp.attributes()
                                .find(|kv| kv.key.as_str() == k)
                                .map(|kv| kv.value.as_str().into_owned())
                                .unwrap_or_default()
                        };
                        let key = (m.name().to_owned(), get("plugin"), get("capability"), get("reason"));
                        *out.entry(key).or_default() += dp.value();
                    }
                }
            }
        }
    }
    out
}
