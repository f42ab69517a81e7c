//! Runs one guest under the Rust WASI host and prints its outcome as one JSON
//! line, for the differential test against the Node host
//! (`__test__/wasi-differential.test.js`). Reads one JSON object on stdin:
//! `{ "guest": path (.wat or .wasm), "manifest": {...}, "plugin": id,
//!    "preopens": [[guestDir, hostDir], ...], "args": [...], "secrets": {name: value} }`.
//! Prints `{ "outcome": { "kind": "exited", "code" } | { "kind": "budget", "budget" }
//! | { "kind": "trap", "message" }, "reports": [[tag, errno], ...], "calls": [...],
//! "counters": [[instrument, capability, reason, value], ...] }`, counters read from
//! a real OpenTelemetry SDK meter with an in-memory exporter.

use std::collections::HashMap;
use std::io::Read;

use api_sandbox_permissions::testing::counter_totals;
use api_sandbox_permissions::{PermissionPolicy, PolicyOptions};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::{json, Value};
use wasi_host_rs::{run_guest, HostConfig, Outcome};

fn main() {
    if let Err(e) = run() {
        eprintln!("wasi-host-rs run: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).map_err(|e| e.to_string())?;
    let req: Value = serde_json::from_str(&input).map_err(|e| format!("stdin: {e}"))?;
    let field = |k: &str| req.get(k).ok_or_else(|| format!("missing `{k}`"));
    let plugin = field("plugin")?.as_str().ok_or("plugin: a string")?;
    let guest = std::fs::read(field("guest")?.as_str().ok_or("guest: a path")?).map_err(|e| format!("guest: {e}"))?;
    let strings = |v: &Value| -> Result<Vec<String>, String> {
        v.as_array()
            .ok_or("an array")?
            .iter()
            .map(|s| s.as_str().map(str::to_owned).ok_or_else(|| "a string".to_owned()))
            .collect()
    };
    let preopens = field("preopens")?
        .as_array()
        .ok_or("preopens: an array")?
        .iter()
        .map(|p| {
            strings(p).and_then(|p| match p.as_slice() {
                [g, h] => Ok((g.clone(), h.into())),
                _ => Err("preopens: [guest, host] pairs".to_owned()),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let secrets: HashMap<String, String> = match req.get("secrets").and_then(Value::as_object) {
        Some(m) => m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect(),
        None => HashMap::new(),
    };
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    let policy =
        PermissionPolicy::from_manifest(field("manifest")?, PolicyOptions::new(plugin)).map_err(|e| e.to_string())?;
    let cfg = HostConfig {
        policy,
        meter: provider.meter("wasi-host-rs-run"),
        preopens,
        args: req.get("args").map(strings).transpose()?.unwrap_or_else(|| vec![plugin.to_owned()]),
        secrets,
    };
    let r = run_guest(&guest, cfg).map_err(|e| format!("{e:#}"))?;
    let outcome = match &r.outcome {
        Outcome::Exited(code) => json!({ "kind": "exited", "code": code }),
        Outcome::BudgetExceeded(b) => json!({ "kind": "budget", "budget": b.budget.as_str(), "observed": b.observed }),
        Outcome::Trap(m) => json!({ "kind": "trap", "message": m }),
    };
    let mut counters: Vec<(String, String, String, u64)> = counter_totals(&provider, &exporter)
        .into_iter()
        .filter(|((_, p, _, _), _)| p == plugin)
        .map(|((name, _, capability, reason), n)| (name, capability, reason, n))
        .collect();
    counters.sort();
    let calls: Vec<Value> = r
        .calls
        .iter()
        .map(|c| json!({ "op": c.op, "what": c.what, "capability": c.capability, "allowed": c.allowed, "reason": c.reason }))
        .collect();
    let out = json!({ "outcome": outcome, "reports": r.reports, "calls": calls, "counters": counters });
    println!("{out}");
    Ok(())
}
