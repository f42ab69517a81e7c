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

use crate::budget::{BudgetError, BudgetStatus, BudgetTracker, Clock, Sampler, TrackerError};
use crate::conformance::{cases, BudgetStep, Case, Expect, Op};
use crate::error::{BudgetKind, Capability, Decision, ErrorCode, InvalidSample, ManifestError, PermissionDenied};
use crate::fs::FsMode;
use crate::metrics::{BUDGET_EXCEEDED_TOTAL, METER_NAME, PERMISSION_DENIED_TOTAL};
use crate::platform::Platform;

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
    /// The manual clock's current reading, ms.
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

/// A budget tracker under test. [`BudgetTracker`] implements it, so a host
/// that uses this crate's tracker returns it as it is (no newtype).
pub trait ConformanceTracker {
    /// Reads the clock and the samplers, records, and evaluates
    /// ([`BudgetTracker::sample`]).
    fn sample(&mut self) -> Result<BudgetStatus, InvalidSample>;
    /// The host's `assertWithin` path ([`BudgetTracker::assert_within`]): `Ok`
    /// within budget, else [`BudgetError::Exceeded`] naming the plugin, the
    /// budget, its limit and the observed value; a breach it raises is not
    /// counted again. `None` (the default): the host has no assert path, and the
    /// runner checks statuses only.
    fn assert_within(&mut self) -> Option<Result<(), BudgetError>> {
        None
    }
}

impl<C: Clock> ConformanceTracker for BudgetTracker<C> {
    fn sample(&mut self) -> Result<BudgetStatus, InvalidSample> {
        BudgetTracker::sample(self)
    }
    fn assert_within(&mut self) -> Option<Result<(), BudgetError>> {
        Some(BudgetTracker::assert_within(self))
    }
}

/// What a host adapts its checker to.
///
/// The `check_*` methods are required. The `assert_*` methods are the host's
/// error path (SPEC §5): when an adapter provides one, the runner calls it
/// after the check and requires `Ok(())` for an allowed call and, for a
/// denied one, a [`PermissionDenied`] whose plugin, capability and reason
/// are the case's, whose `target` (if any) is `scheme://host:port` only, and
/// which is counted exactly once (an assert that denies does not count
/// twice). The default, `None`, skips that step for the case.
pub trait ConformanceChecker {
    /// `checkFs(path, mode)` (SPEC §2), lexical (no symlink resolution).
    fn check_fs(&self, path: &str, mode: FsMode) -> Decision;
    /// `checkFetch(url)` (SPEC §3).
    fn check_fetch(&self, url: &str) -> Decision;
    /// `checkCapability(id, payload)` (SPEC §4).
    fn check_capability(&self, id: &str, payload: &Value) -> Decision;
    /// `None`: the adapter has no address check; its cases are skipped and printed.
    fn check_fetch_address(&self, _url: &str, _ip: &str) -> Option<Decision> {
        None
    }
    /// `assertFs(path, mode)`; `None`: the adapter has no assert path.
    fn assert_fs(&self, _path: &str, _mode: FsMode) -> Option<Result<(), PermissionDenied>> {
        None
    }
    /// `assertFetch(url)`; `None`: the adapter has no assert path.
    fn assert_fetch(&self, _url: &str) -> Option<Result<(), PermissionDenied>> {
        None
    }
    /// `assertFetchAddress(url, ip)`; `None`: the adapter has no assert path.
    fn assert_fetch_address(&self, _url: &str, _ip: &str) -> Option<Result<(), PermissionDenied>> {
        None
    }
    /// `assertCapability(id, payload)`; `None`: the adapter has no assert path.
    fn assert_capability(&self, _id: &str, _payload: &Value) -> Option<Result<(), PermissionDenied>> {
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

/// Run options. Build them as a struct literal ending in `..Default::default()`.
#[derive(Debug, Clone, Default)]
pub struct ConformanceOptions {
    /// Only cases whose name contains this substring.
    pub filter: Option<String>,
    /// Cases the adapter declares it cannot support: (name or `category - ` prefix, reason).
    pub skip: Vec<(String, String)>,
    /// Exact case names the adapter is known to fail (the JS harness's
    /// `expectedFailures`): a listed case that fails goes to
    /// [`ConformanceReport::expected_failures`], one that passes is a failure
    /// (an unexpected pass, so the list only shrinks), and a name that is no
    /// case is a failure of the run. A declared skip wins over a listing.
    pub expected_failures: Vec<String>,
}

/// The outcome of a run.
#[derive(Debug, Clone, Default)]
pub struct ConformanceReport {
    /// The label the run was given.
    pub label: String,
    /// Names of the cases that passed.
    pub passed: Vec<String>,
    /// Cases that failed: (name, what was wrong).
    pub failed: Vec<(String, String)>,
    /// Cases not run: (name, why), declared by the options or the adapter.
    pub skipped: Vec<(String, String)>,
    /// Cases listed in [`ConformanceOptions::expected_failures`] that failed: (name, what was wrong).
    pub expected_failures: Vec<(String, String)>,
}

/// The name of the failure a run reports when
/// [`ConformanceOptions::expected_failures`] lists a name that is no case.
pub const UNKNOWN_EXPECTED_FAILURES: &str = "options.expected_failures names only conformance cases";

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
    if let Some(asserted) = assert_op(checker, &case.op) {
        check_assert(asserted, want, "")?;
        denial_metrics(probe, want.reason().map(|r| (cap, r.as_str())))
            .map_err(|e| format!("after the assert (a denial counts exactly once): {e}"))?;
    }
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
    shadow_metrics(probe, cap, want, "")?;
    if let Some(asserted) = assert_op(shadowed, &case.op) {
        check_assert(asserted, want, "with a shadow: ")?;
        shadow_metrics(probe, cap, want, " after the assert")?;
    }
    Ok(())
}

/// The increments since the last look, beside a deny-all shadow: the enforced
/// ones of `want`, and exactly one shadow increment with capability `cap`.
fn shadow_metrics(probe: &mut Probe, cap: Capability, want: Decision, when: &str) -> Result<(), String> {
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
        return Err(format!("with a shadow{when}: enforced increments {rest:?}, expected {want_rest:?}"));
    }
    let once =
        shadow.len() == 1 && shadow.iter().all(|(k, v)| *v == 1 && k.1 == CONFORMANCE_PLUGIN && k.2 == cap.as_str());
    if !once {
        return Err(format!("with a deny-all shadow{when}: shadow increments {shadow:?}, expected one for {cap}"));
    }
    Ok(())
}

/// The adapter's assert path for the case's operation, if it has one.
fn assert_op(checker: &dyn ConformanceChecker, op: &Op) -> Option<Result<(), PermissionDenied>> {
    match op {
        Op::Fs { path, mode } => checker.assert_fs(path, *mode),
        Op::Fetch { url } => checker.assert_fetch(url),
        Op::FetchAddress { url, ip } => checker.assert_fetch_address(url, ip),
        Op::Capability { id, payload } => checker.assert_capability(id, payload),
        _ => None,
    }
}

/// An assert's outcome against the case's decision: `Ok(())` when allowed;
/// when denied, `PERMISSION_DENIED` with the case's plugin, capability and
/// reason, and a redaction-safe target (SPEC §5).
fn check_assert(got: Result<(), PermissionDenied>, want: Decision, when: &str) -> Result<(), String> {
    match (got, want) {
        (Ok(()), Decision::Allowed) => Ok(()),
        (Err(e), Decision::Allowed) => Err(format!("{when}the assert path denied an allowed call: {e}")),
        (Ok(()), Decision::Denied(d)) => Err(format!("{when}the assert path returned for a denied call ({d:?})")),
        (Err(e), Decision::Denied(d)) => {
            if e.code() != ErrorCode::PermissionDenied {
                return Err(format!("{when}the assert path raised {}, expected PERMISSION_DENIED", e.code()));
            }
            if e.plugin != CONFORMANCE_PLUGIN {
                return Err(format!("{when}PermissionDenied.plugin {:?}, expected {CONFORMANCE_PLUGIN:?}", e.plugin));
            }
            if e.denial != d {
                return Err(format!("{when}PermissionDenied.denial {:?}, expected {d:?}", e.denial));
            }
            match &e.target {
                Some(t) if !is_origin_only(t) => {
                    Err(format!("{when}PermissionDenied.target {t:?} must be scheme://host:port only"))
                }
                _ => Ok(()),
            }
        }
    }
}

/// `scheme://host:port` and nothing else: no userinfo, path, query, fragment or whitespace.
fn is_origin_only(t: &str) -> bool {
    let Some((scheme, rest)) = t.split_once("://") else { return false };
    let Some((host, port)) = rest.rsplit_once(':') else { return false };
    let mut sc = scheme.chars();
    sc.next().is_some_and(|c| c.is_ascii_lowercase())
        && sc.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '.' | '-'))
        && !host.is_empty()
        && !host.contains(['/', '?', '#', '@'])
        && !host.chars().any(char::is_whitespace)
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
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
    let checked: Result<Option<String>, String> = match (&case.expect, last) {
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
    };
    if checked?.is_none() {
        assert_within_pass(&mut *tracker, probe, &case.expect)?;
    }
    Ok(None)
}

/// The tracker's assert path after the case's last sample, at the same
/// readings: `Ok` within budget, else `BUDGET_EXCEEDED` with the plugin and
/// the breach's figures; nothing counted again.
fn assert_within_pass(tracker: &mut dyn ConformanceTracker, probe: &mut Probe, expect: &Expect) -> Result<(), String> {
    let Some(got) = tracker.assert_within() else { return Ok(()) };
    match (expect, got) {
        (Expect::BudgetOk { .. }, Ok(())) => {}
        (Expect::BudgetExceeded { budget, limit, observed, .. }, Err(BudgetError::Exceeded(e))) => {
            if e.code() != ErrorCode::BudgetExceeded
                || e.plugin != CONFORMANCE_PLUGIN
                || e.budget != *budget
                || !close(e.limit, *limit)
                || !close(e.observed, *observed)
            {
                return Err(format!(
                    "assert_within raised {e:?}, expected {budget:?} limit {limit} observed {observed} for {CONFORMANCE_PLUGIN:?}"
                ));
            }
        }
        (e, got) => return Err(format!("assert_within returned {got:?}, expected {e:?}")),
    }
    let d = probe.delta();
    if d.is_empty() {
        Ok(())
    } else {
        Err(format!("assert_within counted {d:?} again (each breach counts once)"))
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
    let unknown: Vec<String> = options
        .expected_failures
        .iter()
        .filter(|n| !cases().iter().any(|c| c.name == **n))
        .map(|n| format!("{n:?}"))
        .collect();
    if !unknown.is_empty() {
        report.failed.push((
            UNKNOWN_EXPECTED_FAILURES.to_owned(),
            format!(
                "options.expected_failures lists {} no conformance case: {} (a case name is 'category - case', as conformance::cases() lists them)",
                if unknown.len() == 1 { "a name that is" } else { "names that are" },
                unknown.join(", ")
            ),
        ));
    }
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
        let expected_failure = options.expected_failures.contains(&case.name);
        match (result, expected_failure) {
            (Ok(None), false) => report.passed.push(case.name.clone()),
            (Ok(None), true) => report.failed.push((
                case.name.clone(),
                format!(
                    "unexpected pass: {} is listed in options.expected_failures and passed; remove it from the list",
                    case.name
                ),
            )),
            (Ok(Some(why)), _) => report.skipped.push((case.name.clone(), why)),
            (Err(why), false) => report.failed.push((case.name.clone(), why)),
            (Err(why), true) => report.expected_failures.push((case.name.clone(), why)),
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
    /// The checker under test.
    pub checker: crate::PermissionChecker,
    /// The meter its trackers record to (the run's in-memory one).
    pub meter: Meter,
}

impl NativeAdapter {
    /// This crate's checker for one case: the manifest compiled with the
    /// case's plugin id and platform, counting to the run's meter. The one
    /// constructor of the native adapter, for [`native_checker`] and for test
    /// hosts that wrap it.
    pub fn from_manifest(manifest: &Value, ctx: &ConformanceContext) -> Result<Self, ManifestError> {
        let policy = crate::PermissionPolicy::from_manifest(
            manifest,
            crate::PolicyOptions::new(&ctx.plugin).platform(ctx.platform),
        )?;
        Ok(NativeAdapter { checker: crate::PermissionChecker::new(policy, &ctx.meter), meter: ctx.meter.clone() })
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
    fn assert_fs(&self, path: &str, mode: FsMode) -> Option<Result<(), PermissionDenied>> {
        Some(self.checker.assert_fs(path, mode, crate::FsCheckOptions::default()))
    }
    fn assert_fetch(&self, url: &str) -> Option<Result<(), PermissionDenied>> {
        Some(self.checker.assert_fetch(url).map(drop))
    }
    fn assert_fetch_address(&self, url: &str, ip: &str) -> Option<Result<(), PermissionDenied>> {
        Some(self.checker.assert_fetch_address(url, ip).map(drop))
    }
    fn assert_capability(&self, id: &str, payload: &Value) -> Option<Result<(), PermissionDenied>> {
        Some(self.checker.assert_capability(id, payload))
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
            BudgetTracker::new(self.checker.policy(), hooks.clock(), options)
                .map(|t| Box::new(t) as Box<dyn ConformanceTracker>),
        )
    }
}

/// `make_checker` for this crate's own checker.
pub fn native_checker(
    manifest: &Value,
    ctx: &ConformanceContext,
) -> Result<Box<dyn ConformanceChecker>, ManifestError> {
    Ok(Box::new(NativeAdapter::from_manifest(manifest, ctx)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The native adapter with one assert path broken.
    struct BrokenAssert {
        inner: NativeAdapter,
        kind: &'static str,
    }

    struct RenamedTracker(Box<dyn ConformanceTracker>);

    impl ConformanceTracker for RenamedTracker {
        fn sample(&mut self) -> Result<BudgetStatus, InvalidSample> {
            self.0.sample()
        }
        fn assert_within(&mut self) -> Option<Result<(), BudgetError>> {
            self.0.assert_within().map(|r| {
                r.map_err(|e| match e {
                    BudgetError::Exceeded(mut x) => {
                        x.plugin = "another-plugin".into();
                        BudgetError::Exceeded(x)
                    }
                    e => e,
                })
            })
        }
    }

    impl ConformanceChecker for BrokenAssert {
        fn check_fs(&self, path: &str, mode: FsMode) -> Decision {
            self.inner.check_fs(path, mode)
        }
        fn check_fetch(&self, url: &str) -> Decision {
            self.inner.check_fetch(url)
        }
        fn check_capability(&self, id: &str, payload: &Value) -> Decision {
            self.inner.check_capability(id, payload)
        }
        fn assert_fs(&self, path: &str, mode: FsMode) -> Option<Result<(), PermissionDenied>> {
            if self.kind == "counts-twice" {
                let _ = self.inner.check_fs(path, mode);
            }
            self.inner.assert_fs(path, mode)
        }
        fn assert_fetch(&self, url: &str) -> Option<Result<(), PermissionDenied>> {
            self.inner.assert_fetch(url).map(|r| {
                r.map_err(|mut e| {
                    if self.kind == "leaks-url" {
                        e.target = Some(url.to_owned());
                    }
                    e
                })
            })
        }
        fn assert_capability(&self, id: &str, payload: &Value) -> Option<Result<(), PermissionDenied>> {
            match self.kind {
                "returns-on-deny" => Some(Ok(())),
                _ => self.inner.assert_capability(id, payload),
            }
        }
        fn budget_tracker(
            &self,
            hooks: &ManualHooks,
            cpu_grace_ms: f64,
            unmeasured: &[BudgetKind],
        ) -> Option<Result<Box<dyn ConformanceTracker>, TrackerError>> {
            let t = self.inner.budget_tracker(hooks, cpu_grace_ms, unmeasured)?;
            Some(t.map(|t| {
                if self.kind == "wrong-plugin" {
                    Box::new(RenamedTracker(t)) as Box<dyn ConformanceTracker>
                } else {
                    t
                }
            }))
        }
    }

    fn broken(
        kind: &'static str,
    ) -> impl FnMut(&Value, &ConformanceContext) -> Result<Box<dyn ConformanceChecker>, ManifestError> {
        move |m, ctx| Ok(Box::new(BrokenAssert { inner: NativeAdapter::from_manifest(m, ctx)?, kind }))
    }

    #[test]
    fn the_assert_paths_of_a_host_are_checked() {
        for (kind, must_fail, why) in [
            ("counts-twice", "fs - write to a read grant", "exactly once"),
            ("leaks-url", "fetch - other port", "scheme://host:port only"),
            ("returns-on-deny", "capability - fs.write on a read grant", "returned for a denied call"),
            ("wrong-plugin", "budget - wall clock over the limit", "assert_within raised"),
        ] {
            let options = ConformanceOptions::default();
            let report = run_permissions_conformance_with(kind, &options, broken(kind));
            let hit = report.failed.iter().find(|(n, _)| n == must_fail);
            assert!(
                hit.is_some_and(|(_, w)| w.contains(why)),
                "{kind} not caught at {must_fail}: {hit:?} (first failures {:?})",
                report.failed.iter().take(3).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn the_native_adapter_passes_its_assert_paths_and_allowed_asserts_return() {
        let report = run_permissions_conformance("native with asserts", native_checker);
        assert!(report.passed.len() > 250, "only {} cases ran", report.passed.len());
        // An adapter whose asserts all pass-through still passes: the pass adds checks, not failures.
        let report = run_permissions_conformance_with("pass-through", &ConformanceOptions::default(), broken("none"));
        assert!(report.failed.is_empty(), "{:?}", report.failed.iter().take(3).collect::<Vec<_>>());
    }

    #[test]
    fn origin_only_targets() {
        for ok in ["https://a.example:443", "http://[::1]:8080", "ws://10.0.0.1:80"] {
            assert!(is_origin_only(ok), "{ok}");
        }
        for bad in [
            "https://a.example",
            "https://u@a.example:443",
            "https://a.example:443/x",
            "a.example:443",
            "https://a b:1",
        ] {
            assert!(!is_origin_only(bad), "{bad}");
        }
    }
}
