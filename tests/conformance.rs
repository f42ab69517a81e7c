//! The shipped harness against this crate's own checker, and against broken
//! adapters it must catch.

use api_sandbox_permissions::budget::TrackerError;
use api_sandbox_permissions::testing::{
    native_checker, run_permissions_conformance, run_permissions_conformance_with, ConformanceChecker,
    ConformanceContext, ConformanceOptions, ConformanceTracker, ManualHooks, NativeAdapter, CONFORMANCE_PLUGIN,
    UNKNOWN_EXPECTED_FAILURES,
};
use api_sandbox_permissions::{
    BudgetKind, Decision, FsMode, ManifestError, PermissionPolicy, PolicyOptions, UnmeasuredBudget,
};
use serde_json::Value;

#[test]
fn native_checker_passes_every_case() {
    let report = run_permissions_conformance("native", native_checker);
    assert!(report.passed.len() > 250, "only {} cases ran", report.passed.len());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(report.passed.iter().any(|n| n.starts_with("adversarial - ")));
}

#[test]
fn case_names_are_unique_and_categorised() {
    let mut seen = std::collections::HashSet::new();
    for c in api_sandbox_permissions::conformance::cases() {
        assert!(c.name.starts_with(&format!("{} - ", c.category)), "{}", c.name);
        assert!(seen.insert(c.name.clone()), "duplicate case {}", c.name);
    }
}

#[test]
fn filter_and_declared_skips() {
    let options = ConformanceOptions {
        filter: Some("fetch address".into()),
        skip: vec![("fetch address - public address".into(), "resolver not wired".into())],
        ..Default::default()
    };
    let report = run_permissions_conformance_with("filtered", &options, native_checker);
    assert_eq!(report.skipped.len(), 1);
    assert!(report.failed.is_empty());
    assert!(report.passed.iter().all(|n| n.starts_with("fetch address - ")));
}

/// Wraps the native adapter, overriding one behaviour.
struct Broken {
    inner: NativeAdapter,
    kind: &'static str,
}

impl ConformanceChecker for Broken {
    fn check_fs(&self, path: &str, mode: FsMode) -> Decision {
        match self.kind {
            "allow-all" => Decision::Allowed,
            "no-metrics" => self.inner.checker.policy().check_fs(path, mode),
            _ => self.inner.check_fs(path, mode),
        }
    }
    fn check_fetch(&self, url: &str) -> Decision {
        match self.kind {
            "allow-all" => Decision::Allowed,
            "ignore-ports" => match self.inner.check_fetch(url) {
                Decision::Denied(d) if d.reason == api_sandbox_permissions::DenyReason::PortNotAllowed => {
                    Decision::Allowed
                }
                d => d,
            },
            _ => self.inner.check_fetch(url),
        }
    }
    fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        match self.kind {
            "allow-all" => Decision::Allowed,
            _ => self.inner.check_capability(id, payload),
        }
    }
    fn check_fetch_address(&self, url: &str, ip: &str) -> Option<Decision> {
        self.inner.check_fetch_address(url, ip)
    }
    fn budget_tracker(
        &self,
        hooks: &ManualHooks,
        cpu_grace_ms: f64,
        unmeasured: &[BudgetKind],
    ) -> Option<Result<Box<dyn ConformanceTracker>, TrackerError>> {
        match self.kind {
            // Declares every budget measured elsewhere: a silently unenforced budget.
            "lax-tracker" => self.inner.budget_tracker(hooks, cpu_grace_ms, BudgetKind::ALL),
            // Refuses, but names the wrong budget.
            "wrong-budget" => match self.inner.budget_tracker(hooks, cpu_grace_ms, unmeasured) {
                Some(Err(TrackerError::Unmeasured(_))) => {
                    Some(Err(UnmeasuredBudget { budget: BudgetKind::WallClockMs }.into()))
                }
                other => other,
            },
            _ => self.inner.budget_tracker(hooks, cpu_grace_ms, unmeasured),
        }
    }
    fn with_deny_all_shadow(&self) -> Option<Box<dyn ConformanceChecker>> {
        match self.kind {
            // Enforces the candidate instead of reporting it (SPEC §12).
            "shadow-decides" => {
                let deny_all = api_sandbox_permissions::PermissionPolicy::from_manifest(
                    &serde_json::json!({}),
                    api_sandbox_permissions::PolicyOptions::new(self.inner.checker.policy().plugin())
                        .platform(self.inner.checker.policy().platform()),
                )
                .ok()?;
                let checker = api_sandbox_permissions::PermissionChecker::new(deny_all, &self.inner.meter);
                Some(Box::new(NativeAdapter { checker, meter: self.inner.meter.clone() }))
            }
            // A shadow that is never evaluated.
            "shadow-silent" => {
                Some(Box::new(NativeAdapter { checker: self.inner.checker.clone(), meter: self.inner.meter.clone() }))
            }
            _ => self.inner.with_deny_all_shadow(),
        }
    }
}

fn broken(
    kind: &'static str,
) -> impl FnMut(&Value, &ConformanceContext) -> Result<Box<dyn ConformanceChecker>, ManifestError> {
    move |m, ctx| Ok(Box::new(Broken { inner: NativeAdapter::from_manifest(m, ctx)?, kind }))
}

#[test]
fn broken_adapters_are_caught() {
    for (kind, must_fail) in [
        ("allow-all", "adversarial - traversal out of a grant"),
        ("ignore-ports", "fetch - other port"),
        ("no-metrics", "fs - write to a read grant"),
        ("lax-tracker", "adversarial - a memory budget with no memory sampler is refused, never silently unenforced"),
        ("wrong-budget", "adversarial - a cpu budget with no cpu sampler is refused, never silently unenforced"),
        ("shadow-decides", "destination-bound secrets (SPEC §13) - a bound secret is sent to its host and path"),
        ("shadow-silent", "destination-bound secrets (SPEC §13) - a readable secret is read"),
    ] {
        let report = run_permissions_conformance_with(kind, &ConformanceOptions::default(), broken(kind));
        assert!(
            report.failed.iter().any(|(n, _)| n == must_fail),
            "{kind} not caught at {must_fail}: {:?}",
            report.failed.iter().map(|f| &f.0).take(5).collect::<Vec<_>>()
        );
    }
}

#[test]
#[should_panic(expected = "conformance cases failed")]
fn the_panicking_runner_fails_on_a_broken_adapter() {
    run_permissions_conformance("allow-all", broken("allow-all"));
}

#[test]
fn cases_json_carries_every_case_and_the_unmeasured_rule() {
    let all: Vec<Value> = serde_json::from_str(&api_sandbox_permissions::conformance::cases_json()).unwrap();
    assert_eq!(all.len(), api_sandbox_permissions::conformance::cases().len());
    let budget: Vec<&Value> = all.iter().filter(|c| c["op"] == "budget").collect();
    assert!(budget.len() > 20);
    // Every budget case names its declared budgets, so a JS factory is told exactly what to declare.
    assert!(budget.iter().all(|c| c["args"]["unmeasured"].is_array()), "a budget case without unmeasured");
    let refused: Vec<&&Value> = budget.iter().filter(|c| c["expect"]["error"] == "UNMEASURED_BUDGET").collect();
    assert_eq!(refused.len(), 5);
    let named = |n: &str| budget.iter().find(|c| c["name"].as_str().unwrap().contains(n)).unwrap();
    let c = named("no samplers at all");
    assert_eq!(c["expect"]["budget"], "memoryMb");
    assert_eq!(c["args"]["unmeasured"], serde_json::json!([]));
    // Absent from the data: every budget without a sampler in the first step.
    let c = named("wall clock over the limit");
    assert_eq!(c["args"]["unmeasured"], serde_json::json!(["cpuPercent", "memoryMb"]));
    let c = named("memory over the limit");
    assert_eq!(c["args"]["unmeasured"], serde_json::json!(["cpuPercent"]));
    assert_eq!(named("within every budget")["args"]["unmeasured"], serde_json::json!([]));
}

/// The syntax-error table: every row of data/conformance/manifest-errors.json
/// is a case of the shipped table (so every host's harness checks its
/// pointer), and this crate's error there also says what the row's fourth
/// column says would be valid.
#[test]
fn manifest_errors_name_their_pointer_and_what_would_be_valid() {
    let doc: Value = serde_json::from_str(include_str!("../data/conformance/manifest-errors.json")).unwrap();
    let cases = api_sandbox_permissions::conformance::cases();
    let mut checked = 0;
    for g in doc["groups"].as_array().unwrap() {
        let category = g["category"].as_str().unwrap();
        for row in g["manifest_cases"].as_array().unwrap() {
            let name = format!("{category} - {}", row[0].as_str().unwrap());
            let case =
                cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("{name}: not a conformance case"));
            let options = PolicyOptions::new(CONFORMANCE_PLUGIN).platform(case.platform);
            let err = PermissionPolicy::from_manifest(&case.manifest, options).expect_err(&name);
            assert_eq!(Some(err.pointer.as_str()), row[2].as_str(), "{name}");
            let valid = row[3].as_str().unwrap_or_else(|| panic!("{name}: no fourth column"));
            assert!(err.expected.contains(valid), "{name}: {:?} does not say {valid:?}", err.expected);
            checked += 1;
        }
    }
    assert!(checked > 130, "{checked} rows");
}

/// Invalid manifests have one home: a manifest case with a pointer anywhere
/// else, or one without a pointer in manifest-errors.json, is in the wrong table.
#[test]
fn invalid_manifests_live_only_in_the_syntax_error_table() {
    for (file, text) in api_sandbox_permissions::conformance::DATA_FILES {
        let doc: Value = serde_json::from_str(text).unwrap();
        for g in doc["groups"].as_array().unwrap() {
            for row in g.get("manifest_cases").and_then(Value::as_array).into_iter().flatten() {
                assert_eq!(row[2].is_string(), *file == "manifest-errors.json", "{file}: {}", row[0]);
            }
        }
    }
}

/// The case the "no-metrics" adapter fails (it records no denial).
const NO_METRICS_CASE: &str = "fs - write to a read grant";

fn expecting(list: &[&str]) -> ConformanceOptions {
    ConformanceOptions {
        filter: Some(NO_METRICS_CASE.into()),
        expected_failures: list.iter().map(|n| (*n).to_owned()).collect(),
        ..Default::default()
    }
}

#[test]
fn expected_failures_a_listed_case_that_fails_is_reported_as_expected() {
    // The baseline: without the list, the case fails.
    let report = run_permissions_conformance_with("unlisted", &expecting(&[]), broken("no-metrics"));
    assert_eq!(report.failed.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), [NO_METRICS_CASE]);

    let report = run_permissions_conformance_with("listed", &expecting(&[NO_METRICS_CASE]), broken("no-metrics"));
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(report.passed.is_empty(), "{:?}", report.passed);
    assert_eq!(report.expected_failures.len(), 1, "{:?}", report.expected_failures);
    let (name, why) = &report.expected_failures[0];
    assert_eq!(name, NO_METRICS_CASE);
    assert!(why.contains("metric increments"), "{why}");
}

#[test]
fn expected_failures_a_listed_case_that_passes_is_an_unexpected_pass() {
    let report = run_permissions_conformance_with("listed", &expecting(&[NO_METRICS_CASE]), native_checker);
    assert!(report.passed.is_empty(), "{:?}", report.passed);
    assert!(report.expected_failures.is_empty(), "{:?}", report.expected_failures);
    assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
    let (name, why) = &report.failed[0];
    assert_eq!(name, NO_METRICS_CASE);
    assert_eq!(
        why,
        "unexpected pass: fs - write to a read grant is listed in options.expected_failures and passed; remove it from the list"
    );
}

#[test]
fn expected_failures_a_name_that_is_no_case_fails_the_run() {
    // Exact names: a case name in another case is no case either.
    let options = expecting(&["fs - no such case", &NO_METRICS_CASE.to_uppercase()]);
    let report = run_permissions_conformance_with("unknown", &options, native_checker);
    assert_eq!(report.passed, [NO_METRICS_CASE]);
    assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
    let (name, why) = &report.failed[0];
    assert_eq!(name, UNKNOWN_EXPECTED_FAILURES);
    assert!(
        why.contains(r#"names that are no conformance case: "fs - no such case", "FS - WRITE TO A READ GRANT""#),
        "{why}"
    );
    // A name outside the filter is still a case: not reported.
    let options = ConformanceOptions {
        filter: Some(NO_METRICS_CASE.into()),
        expected_failures: vec!["fetch - other port".into()],
        ..Default::default()
    };
    let report = run_permissions_conformance_with("outside the filter", &options, native_checker);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
}

#[test]
fn expected_failures_a_declared_skip_wins_over_a_listing() {
    let options = ConformanceOptions {
        skip: vec![(NO_METRICS_CASE.into(), "not wired".into())],
        ..expecting(&[NO_METRICS_CASE])
    };
    let report = run_permissions_conformance_with("skipped", &options, broken("no-metrics"));
    assert_eq!(report.skipped, [(NO_METRICS_CASE.to_owned(), "not wired".to_owned())]);
    assert!(report.failed.is_empty() && report.expected_failures.is_empty(), "{report:?}");
}
