//! The conformance case table (SPEC §7), defined once as JSON data embedded in
//! the crate and shared by the Rust runner (`testing`, behind the `testing` feature) and the JS
//! harness (`./testing`). Cases are named `category - case`.

use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::error::{BudgetKind, DenyReason};
use crate::fs::FsMode;
use crate::platform::Platform;

/// The embedded data files, each starting with a provenance string.
pub const DATA_FILES: &[(&str, &str)] = &[
    ("manifest.json", include_str!("../data/conformance/manifest.json")),
    ("manifest-errors.json", include_str!("../data/conformance/manifest-errors.json")),
    ("fs.json", include_str!("../data/conformance/fs.json")),
    ("fetch.json", include_str!("../data/conformance/fetch.json")),
    ("capability.json", include_str!("../data/conformance/capability.json")),
    ("budget.json", include_str!("../data/conformance/budget.json")),
];

/// One step of a budget case: clock, cumulative CPU ms, RSS MB (`None`: sampler unset).
pub type BudgetStep = (f64, Option<f64>, Option<f64>);

/// What a case does.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// Build a policy from the manifest; `expect_pointer` `None` means valid.
    Manifest {
        /// The JSON pointer of the expected `INVALID_MANIFEST`.
        expect_pointer: Option<String>,
    },
    /// `checkFs(path, mode)`, lexical.
    Fs {
        /// The requested path, as the plugin wrote it.
        path: String,
        /// The requested access.
        mode: FsMode,
    },
    /// `checkFetch(url)`.
    Fetch {
        /// The requested URL, as the plugin wrote it.
        url: String,
    },
    /// `checkFetchAddress(url, ip)`: the DNS-rebinding check of a resolved address.
    FetchAddress {
        /// The requested URL.
        url: String,
        /// The address its host resolved to.
        ip: String,
    },
    /// `checkCapability(id, payload)`.
    Capability {
        /// The capability id, as the plugin wrote it.
        id: String,
        /// The call's payload.
        payload: Value,
    },
    /// A budget tracker driven by a manual clock and samplers.
    Budget {
        /// The CPU grace window, ms.
        grace_ms: f64,
        /// The readings: the tracker is created at the first, `sample()` is called at each other.
        steps: Vec<BudgetStep>,
        /// Budgets the host declares measured elsewhere (`unmeasured`). Absent
        /// from a case: every budget the first step has no sampler for.
        unmeasured: Vec<BudgetKind>,
    },
}

/// What a case expects.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Expect {
    /// The check allows.
    Allow,
    /// The check denies for this reason (the capability follows from the operation).
    Deny(DenyReason),
    /// `INVALID_MANIFEST` (the pointer is in [`Op::Manifest`]).
    InvalidManifest,
    /// A budget case within budget, optionally with an exact elapsed time.
    BudgetOk {
        /// The elapsed time the last status reports, when the case pins it.
        elapsed_ms: Option<f64>,
    },
    /// A budget case ending breached; `also` are other budgets also counted once.
    BudgetExceeded {
        /// The breach reported.
        budget: BudgetKind,
        /// Its limit.
        limit: f64,
        /// The value observed.
        observed: f64,
        /// Budget kinds breached at the same time: counted once each, not reported.
        also: Vec<BudgetKind>,
    },
    /// A reading (or the grace window) is `INVALID_SAMPLE`, and nothing is counted.
    InvalidSample,
    /// Building the tracker is refused: this budget has no sampler and is not declared unmeasured.
    UnmeasuredBudget(BudgetKind),
}

/// One conformance case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// `category - case`.
    pub name: String,
    /// The group it belongs to (`fs`, `fetch`, `adversarial`, ...).
    pub category: String,
    /// The manifest the policy is built from (placeholders expanded).
    pub manifest: Value,
    /// The path flavour the policy is built with.
    pub platform: Platform,
    /// What the case does.
    pub op: Op,
    /// What it expects.
    pub expect: Expect,
}

/// Expands `{"$repeat": [s, n]}` and `{"$array": [v, n]}` placeholders.
pub(crate) fn expand(v: &Value) -> Value {
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("$repeat") => {
            let a = &o["$repeat"];
            a[0].as_str().unwrap_or_default().repeat(a[1].as_u64().unwrap_or(0) as usize).into()
        }
        Value::Object(o) if o.len() == 1 && o.contains_key("$array") => {
            let a = &o["$array"];
            Value::Array(vec![expand(&a[0]); a[1].as_u64().unwrap_or(0) as usize])
        }
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), expand(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn reason(v: &Value) -> Expect {
    match v.as_str() {
        Some("allow") => Expect::Allow,
        Some(r) => Expect::Deny(DenyReason::parse(r).unwrap_or_else(|| panic!("unknown reason {r}"))),
        None => panic!("bad expectation {v}"),
    }
}

fn budget_expect(v: &Value) -> Expect {
    match v {
        Value::String(s) if s == "ok" => Expect::BudgetOk { elapsed_ms: None },
        Value::String(s) if s == "invalid_sample" => Expect::InvalidSample,
        Value::Object(o) if o.contains_key("unmeasured") => {
            Expect::UnmeasuredBudget(BudgetKind::parse(o["unmeasured"].as_str().unwrap()).unwrap())
        }
        Value::Object(o) if o.get("ok") == Some(&Value::Bool(true)) => {
            Expect::BudgetOk { elapsed_ms: o.get("elapsedMs").and_then(num) }
        }
        Value::Object(o) => Expect::BudgetExceeded {
            budget: BudgetKind::parse(o["budget"].as_str().unwrap()).unwrap(),
            limit: num(&o["limit"]).unwrap(),
            observed: num(&o["observed"]).unwrap(),
            also: o
                .get("also")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|k| BudgetKind::parse(k.as_str().unwrap()).unwrap()).collect())
                .unwrap_or_default(),
        },
        _ => panic!("bad budget expectation {v}"),
    }
}

fn load() -> Vec<Case> {
    let mut out = Vec::new();
    for (file, text) in DATA_FILES {
        let doc: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(doc["provenance"].as_str().is_some_and(|p| !p.is_empty()), "{file} has no provenance");
        for g in doc["groups"].as_array().unwrap() {
            let category = g["category"].as_str().unwrap().to_owned();
            let manifest = expand(g.get("manifest").unwrap_or(&Value::Null));
            let platform =
                g.get("platform").and_then(Value::as_str).and_then(Platform::parse).unwrap_or(Platform::Posix);
            let mut push = |name: &str, manifest: Value, op: Op, expect: Expect| {
                out.push(Case {
                    name: format!("{category} - {name}"),
                    category: category.clone(),
                    manifest,
                    platform,
                    op,
                    expect,
                });
            };
            let rows = |key: &str| g.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
            for c in rows("manifest_cases") {
                let pointer = c[2].as_str().map(str::to_owned);
                let expect = if pointer.is_some() { Expect::InvalidManifest } else { Expect::Allow };
                push(c[0].as_str().unwrap(), expand(&c[1]), Op::Manifest { expect_pointer: pointer }, expect);
            }
            for c in rows("fs") {
                let mode = FsMode::parse(c[2].as_str().unwrap()).unwrap();
                push(
                    c[0].as_str().unwrap(),
                    manifest.clone(),
                    Op::Fs { path: c[1].as_str().unwrap().into(), mode },
                    reason(&c[3]),
                );
            }
            for c in rows("fetch") {
                push(
                    c[0].as_str().unwrap(),
                    manifest.clone(),
                    Op::Fetch { url: c[1].as_str().unwrap().into() },
                    reason(&c[2]),
                );
            }
            for c in rows("address") {
                let op = Op::FetchAddress { url: c[1].as_str().unwrap().into(), ip: c[2].as_str().unwrap().into() };
                push(c[0].as_str().unwrap(), manifest.clone(), op, reason(&c[3]));
            }
            for c in rows("capability") {
                let op = Op::Capability { id: c[1].as_str().unwrap().into(), payload: expand(&c[2]) };
                push(c[0].as_str().unwrap(), manifest.clone(), op, reason(&c[3]));
            }
            for c in rows("budget") {
                let spec = &c[1];
                let steps = spec["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| (num(&s[0]).unwrap(), num(&s[1]), num(&s[2])))
                    .collect::<Vec<BudgetStep>>();
                let unmeasured = match spec.get("unmeasured") {
                    Some(list) => list
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|k| BudgetKind::parse(k.as_str().unwrap()).unwrap())
                        .collect(),
                    // Declaring a budget the manifest does not set changes nothing.
                    None => [(BudgetKind::CpuPercent, steps[0].1), (BudgetKind::MemoryMb, steps[0].2)]
                        .into_iter()
                        .filter_map(|(kind, first)| first.is_none().then_some(kind))
                        .collect(),
                };
                let op = Op::Budget { grace_ms: num(&spec["grace"]).unwrap_or(0.0), steps, unmeasured };
                push(c[0].as_str().unwrap(), manifest.clone(), op, budget_expect(&c[2]));
            }
        }
    }
    out
}

/// Every case, in file order.
pub fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(load)
}

fn js_num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        json!("NaN")
    } else if x > 0.0 {
        json!("Infinity")
    } else {
        json!("-Infinity")
    }
}

/// The cases as one JSON document for the JS harness: placeholders expanded,
/// non-finite numbers as the strings `NaN`, `Infinity`, `-Infinity`.
pub fn cases_json() -> String {
    let list: Vec<Value> = cases()
        .iter()
        .map(|c| {
            let (op, args) = match &c.op {
                Op::Manifest { expect_pointer } => ("manifest", json!({ "pointer": expect_pointer })),
                Op::Fs { path, mode } => {
                    ("fs", json!({ "path": path, "mode": if *mode == FsMode::Read { "read" } else { "write" } }))
                }
                Op::Fetch { url } => ("fetch", json!({ "url": url })),
                Op::FetchAddress { url, ip } => ("fetchAddress", json!({ "url": url, "ip": ip })),
                Op::Capability { id, payload } => ("capability", json!({ "id": id, "payload": payload })),
                Op::Budget { grace_ms, steps, unmeasured } => {
                    let steps: Vec<Value> = steps
                        .iter()
                        .map(|(n, c, r)| json!([js_num(*n), c.map(js_num), r.map(js_num)]))
                        .collect();
                    let unmeasured: Vec<_> = unmeasured.iter().map(|k| k.as_str()).collect();
                    ("budget", json!({ "graceMs": grace_ms, "steps": steps, "unmeasured": unmeasured }))
                }
            };
            let expect = match &c.expect {
                Expect::Allow => json!({ "allowed": true }),
                Expect::Deny(r) => json!({ "allowed": false, "reason": r.as_str() }),
                Expect::InvalidManifest => json!({ "error": "INVALID_MANIFEST" }),
                Expect::BudgetOk { elapsed_ms } => json!({ "ok": true, "elapsedMs": elapsed_ms }),
                Expect::BudgetExceeded { budget, limit, observed, also } => json!({
                    "ok": false, "budget": budget.as_str(), "reason": budget.reason(), "limit": limit, "observed": observed,
                    "also": also.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
                }),
                Expect::InvalidSample => json!({ "error": "INVALID_SAMPLE" }),
                Expect::UnmeasuredBudget(k) => json!({ "error": "UNMEASURED_BUDGET", "budget": k.as_str() }),
            };
            json!({
                "name": c.name, "category": c.category, "manifest": c.manifest,
                "platform": c.platform.as_str(), "op": op, "args": args, "expect": expect,
            })
        })
        .collect();
    Value::Array(list).to_string()
}
