//! The Rust WASI host on the same guests as the Node host
//! (`examples/wasi-host/guests/*.wat`, parsed by wasmtime's `wat` feature):
//! real files in a temp dir, a real HTTP server on 127.0.0.1, and a real
//! OpenTelemetry SDK meter with an in-memory exporter.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use api_sandbox_permissions::testing::counter_totals;
use api_sandbox_permissions::{PermissionPolicy, PolicyOptions};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;
use wasi_host_rs::{errno, run_guest, HostConfig, Outcome};

const HOSTILE_TAGS: [&str; 24] = [
    "traversal",
    "absolute",
    "write_right_on_read_grant",
    "trunc_on_read_grant",
    "create_in_read_grant",
    "open_through_symlink",
    "dotdot_after_symlink",
    "stat_traversal",
    "set_times_read_grant",
    "mkdir_read_grant",
    "unlink_read_grant",
    "rmdir_read_grant",
    "rename_out_of_grant",
    "rename_read_into_write",
    "link_out_of_grant",
    "link_read_into_write",
    "symlink_plant_relative",
    "symlink_plant_absolute",
    "readlink_traversal",
    "unlink_dotdot_after_symlink",
    "secret_undeclared",
    "fetch_metadata",
    "fetch_undeclared_host",
    "publish_undeclared",
];

fn guest(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wasi-host/guests").join(format!("{name}.wat"));
    std::fs::read(p).expect("guest source")
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    port: u16,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(root.join("data/sub")).unwrap();
    std::fs::create_dir(root.join("out")).unwrap();
    std::fs::write(root.join("data/input.txt"), "hello from a file\n").unwrap();
    std::fs::write(root.join("data/sub/inner.txt"), "inside sub\n").unwrap();
    std::fs::write(root.join("out/own.txt"), "the guest may change this\n").unwrap();
    std::fs::write(root.join("secret-outside.txt"), "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink(root.join("secret-outside.txt"), root.join("data/link-to-secret")).unwrap();
    std::os::unix::fs::symlink(".", root.join("data/here")).unwrap();
    std::os::unix::fs::symlink(".", root.join("out/here")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 2048];
            let n = s.read(&mut buf).unwrap_or(0);
            let ok = String::from_utf8_lossy(&buf[..n]).starts_with("GET /hello");
            let body = if ok { "hello from 127.0.0.1" } else { "" };
            let status = if ok { "200 OK" } else { "404 Not Found" };
            let _ = write!(s, "HTTP/1.0 {status}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        }
    });
    World { _tmp: tmp, root, port }
}

struct Probe {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl Probe {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
        Self { provider, exporter }
    }
    /// (instrument, capability, reason) -> count, for one plugin.
    fn counts(&self, plugin: &str) -> HashMap<(String, String, String), u64> {
        counter_totals(&self.provider, &self.exporter)
            .into_iter()
            .filter(|((_, p, _, _), _)| p == plugin)
            .map(|((name, _, capability, reason), n)| ((name, capability, reason), n))
            .collect()
    }
}

fn config(w: &World, plugin: &str, probe: &Probe, budgets: serde_json::Value) -> HostConfig {
    let root = w.root.to_str().unwrap();
    let manifest = json!({
        "fs": [format!("{root}/data/**"), { "path": format!("{root}/out/**"), "mode": "readwrite" }],
        "fetch": [format!("127.0.0.1:{}", w.port)],
        "secrets": ["GREETING"],
        "events": { "publishes": ["demo.*"] },
        "budgets": budgets,
    });
    HostConfig {
        policy: PermissionPolicy::from_manifest(&manifest, PolicyOptions::new(plugin)).unwrap(),
        meter: probe.provider.meter("wasi-host-rs-test"),
        preopens: vec![("/data".into(), w.root.join("data")), ("/out".into(), w.root.join("out"))],
        args: vec![plugin.into(), format!("http://127.0.0.1:{}/hello", w.port)],
        secrets: HashMap::from([
            ("GREETING".into(), "hi there".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "must never be read".into()),
        ]),
    }
}

#[test]
fn good_guest_is_allowed_everything_it_needs() {
    let w = world();
    let probe = Probe::new();
    let r = run_guest(&guest("good"), config(&w, "good", &probe, json!({ "wallClockMs": 10000, "cpuPercent": 95 })))
        .unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    let reports: Vec<(&str, i32)> = r.reports.iter().map(|(t, v)| (t.as_str(), *v)).collect();
    assert_eq!(
        reports,
        [("read", 0), ("secret", 0), ("fetch", 0), ("fetch_status", 200), ("write", 0), ("publish", 0)]
    );
    assert_eq!(
        std::fs::read_to_string(w.root.join("out/result.txt")).unwrap(),
        "hello from a file\nhi therehello from 127.0.0.1"
    );
    assert_eq!(r.events, [("demo.finished".to_owned(), "{\"ok\":true}".to_owned())]);
    assert!(r.calls.iter().all(|c| c.allowed), "{:?}", r.calls);
    assert!(probe.counts("good").is_empty(), "{:?}", probe.counts("good"));
}

#[test]
fn hostile_guest_gets_eacces_for_every_call_and_is_stopped_by_its_budget() {
    let w = world();
    let probe = Probe::new();
    let r =
        run_guest(&guest("hostile"), config(&w, "hostile", &probe, json!({ "wallClockMs": 1500, "cpuPercent": 80 })))
            .unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert!(["cpuPercent", "wallClockMs"].contains(&b.budget.as_str()), "{b:?}");
    let tags: Vec<&str> = r.reports.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(tags, HOSTILE_TAGS);
    for (tag, value) in &r.reports {
        assert_eq!(*value, errno::ACCES, "{tag}: errno {value}, expected EACCES");
    }
    let denied: Vec<_> = r.calls.iter().filter(|c| !c.allowed).collect();
    assert_eq!(denied.len(), HOSTILE_TAGS.len(), "{:?}", r.calls);
    assert_eq!(r.calls.len(), HOSTILE_TAGS.len(), "no hostile call was allowed: {:?}", r.calls);
    let counts = probe.counts("hostile");
    let total: u64 = counts.iter().filter(|(k, _)| k.0 == "plugin.permission_denied_total").map(|(_, v)| v).sum();
    assert_eq!(total, HOSTILE_TAGS.len() as u64, "{counts:?}");
    let budget: u64 = counts.iter().filter(|(k, _)| k.0 == "plugin.budget_exceeded_total").map(|(_, v)| v).sum();
    assert_eq!(budget, 1, "{counts:?}");
    for (cap, reason) in [
        ("fs.read", "path_traversal"),
        ("fs.read", "symlink_escape"),
        ("fs.write", "mode_not_granted"),
        ("secrets.get", "secret_not_declared"),
        ("fetch", "host_not_allowlisted"),
        ("events.publish", "topic_not_declared"),
    ] {
        assert!(
            counts.contains_key(&("plugin.permission_denied_total".into(), cap.into(), reason.into())),
            "{cap} {reason}: {counts:?}"
        );
    }
    // Nothing changed on disk.
    assert_eq!(std::fs::read_to_string(w.root.join("data/input.txt")).unwrap(), "hello from a file\n");
    let mut out: Vec<_> = std::fs::read_dir(w.root.join("out")).unwrap().map(|e| e.unwrap().file_name()).collect();
    out.sort();
    assert_eq!(out, ["here", "own.txt"]);
    assert!(!w.root.join("escaped.txt").exists() && !w.root.join("leak.txt").exists());
    assert!(w.root.join("secret-outside.txt").exists());
}

#[test]
fn a_runaway_is_stopped_on_the_wall_clock_alone() {
    let w = world();
    let probe = Probe::new();
    let started = std::time::Instant::now();
    let r = run_guest(&guest("hostile"), config(&w, "spinner", &probe, json!({ "wallClockMs": 300 }))).unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "wallClockMs");
    assert!(b.observed > 300.0 && started.elapsed().as_millis() < 5000, "{b:?}");
    assert_eq!(
        probe.counts("spinner").get(&("plugin.budget_exceeded_total".into(), "request".into(), "wall_clock".into())),
        Some(&1)
    );
}

#[test]
fn abi_edges_bad_utf8_bad_pointers_unknown_and_closed_fds_nul_opened_dirs() {
    let w = world();
    let probe = Probe::new();
    let r = run_guest(&guest("edge"), config(&w, "edge", &probe, json!({ "wallClockMs": 10000 }))).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    let reports: Vec<(&str, i32)> = r.reports.iter().map(|(t, v)| (t.as_str(), *v)).collect();
    assert_eq!(
        reports,
        [
            ("ilseq", 25),
            ("efault", 21),
            ("ebadf", 8),
            ("nul", errno::ACCES),
            ("open_dir", 0),
            ("dir_traversal", errno::ACCES),
            ("dir_relative", 0),
            ("closed_dir", 8)
        ]
    );
    let mut denied: Vec<_> =
        probe.counts("edge").into_iter().filter(|(k, _)| k.0 == "plugin.permission_denied_total").collect();
    denied.sort();
    assert_eq!(
        denied,
        [
            (("plugin.permission_denied_total".into(), "fs.read".into(), "invalid_path".into()), 1),
            (("plugin.permission_denied_total".into(), "fs.read".into(), "path_traversal".into()), 1)
        ]
    );
}

/// The usual world and grants, for guests that use no path (budget and memory outcomes).
fn bare(w: &World, plugin: &str, probe: &Probe, budgets: serde_json::Value) -> HostConfig {
    config(w, plugin, probe, budgets)
}

fn budget_count(probe: &Probe, plugin: &str, reason: &str) -> Option<u64> {
    probe.counts(plugin).get(&("plugin.budget_exceeded_total".into(), "request".into(), reason.into())).copied()
}

#[test]
fn a_start_function_runs_under_the_budget_from_instantiation() {
    let w = world();
    let probe = Probe::new();
    let started = std::time::Instant::now();
    let r = run_guest(&guest("start"), bare(&w, "start", &probe, json!({ "wallClockMs": 300 }))).unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "wallClockMs");
    assert!(started.elapsed().as_millis() < 5000, "{b:?}");
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    assert_eq!(budget_count(&probe, "start", "wall_clock"), Some(1));
    // The CPU budget too: the spinning start function is all CPU (a low limit: the
    // thread's CPU time is what is measured, and this machine may be shared).
    let probe = Probe::new();
    let r =
        run_guest(&guest("start"), bare(&w, "start-cpu", &probe, json!({ "wallClockMs": 60000, "cpuPercent": 10 })))
            .unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "cpuPercent");
    assert_eq!(budget_count(&probe, "start-cpu", "cpu"), Some(1));
}

#[test]
fn memory_mb_bounds_all_linear_memories_together() {
    let w = world();
    // 8 memories x 2 MiB: each under 4 MB, together 16 MiB: over at instantiation.
    let probe = Probe::new();
    let r = run_guest(&guest("memories"), bare(&w, "mem8", &probe, json!({ "memoryMb": 4 }))).unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "memoryMb");
    assert!(b.observed > 4.0 && b.observed <= 16.0, "{b:?}");
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    assert_eq!(budget_count(&probe, "mem8", "memory"), Some(1));
    // The same guest under a budget that holds all eight runs.
    let probe = Probe::new();
    let r = run_guest(&guest("memories"), bare(&w, "mem8-ok", &probe, json!({ "memoryMb": 17 }))).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    assert_eq!(r.reports, [("instantiated".to_owned(), 0)]);
    assert_eq!(budget_count(&probe, "mem8-ok", "memory"), None);
}

#[test]
fn memory_mb_counts_every_growth_of_memories_and_tables() {
    let w = world();
    let probe = Probe::new();
    let r = run_guest(&guest("grow"), bare(&w, "grow", &probe, json!({ "memoryMb": 4 }))).unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "memoryMb");
    // Every growth that was allowed succeeded; the run ended at the first one past 4 MB,
    // while no single memory had reached it.
    assert!(r.reports.iter().all(|(_, v)| *v >= 0), "{:?}", r.reports);
    let firsts = r.reports.iter().filter(|(t, _)| t == "grow_first").count();
    assert!((3..=5).contains(&firsts), "{:?}", r.reports);
    assert!(!r.reports.iter().any(|(t, _)| t == "not_stopped"));
    assert_eq!(budget_count(&probe, "grow", "memory"), Some(1));
    // Tables count: at the end the two memories hold (1 + 64 * 8) pages each, 64.125 MiB,
    // and the table 64 Ki + 1 elements (pointers), 0.5 MiB more. 64.5 MB holds the
    // memories alone, not the memories and the table.
    let probe = Probe::new();
    let r = run_guest(&guest("grow"), bare(&w, "grow-table", &probe, json!({ "memoryMb": 64.5 }))).unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("tables not counted: {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "memoryMb");
    assert_eq!(budget_count(&probe, "grow-table", "memory"), Some(1));
    let probe = Probe::new();
    let r = run_guest(&guest("grow"), bare(&w, "grow-big", &probe, json!({ "memoryMb": 65 }))).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    assert_eq!(r.reports.iter().filter(|(t, v)| t == "grow_table" && *v >= 0).count(), 64);
    assert_eq!(budget_count(&probe, "grow-big", "memory"), None);
}

#[test]
fn a_guest_declares_at_most_32_memories_whatever_their_size() {
    let w = world();
    let many = |n: usize| {
        let mems: String = (1..n).map(|i| format!("(memory $m{i} 0)")).collect();
        format!("(module (import \"host\" \"report\" (func $report (param i32 i32 i32))) (memory (export \"memory\") 1) {mems} (func (export \"_start\")))")
    };
    let probe = Probe::new();
    let r = run_guest(many(32).as_bytes(), bare(&w, "m32", &probe, json!({ "wallClockMs": 10000 }))).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    let r = run_guest(many(33).as_bytes(), bare(&w, "m33", &probe, json!({ "wallClockMs": 10000 }))).unwrap();
    let Outcome::Trap(m) = r.outcome else { panic!("33 memories instantiated: {:?}", r.outcome) };
    assert!(m.contains("memory"), "{m}");
}

/// fixture.js `plantLinks`: links into the grants, out of them, dangling, a
/// directory two levels down (`lk/..` reads two ways), a denied directory.
fn plant_links(w: &World) {
    use std::os::unix::fs::symlink;
    let r = &w.root;
    std::fs::create_dir(r.join("outside-dir")).unwrap();
    symlink("sub/inner.txt", r.join("data/link-to-inner")).unwrap();
    symlink("sub", r.join("data/link-sub")).unwrap();
    symlink(r.join("data/input.txt"), r.join("out/link-to-input")).unwrap();
    symlink(r.join("secret-outside.txt"), r.join("out/link-out")).unwrap();
    symlink(r.join("created-outside.txt"), r.join("out/dang")).unwrap();
    symlink("own.txt", r.join("out/link-to-own")).unwrap();
    symlink(r.join("outside-dir"), r.join("out/link-dir")).unwrap();
    std::fs::create_dir_all(r.join("out/d1/d2")).unwrap();
    symlink(r.join("out/d1/d2"), r.join("out/lk")).unwrap();
    std::fs::write(r.join("outside-dir/victim"), "VICTIM\n").unwrap();
    std::fs::create_dir(r.join("out/private")).unwrap();
    std::fs::write(r.join("out/private/key.txt"), "PRIVATE\n").unwrap();
    symlink("lk/../private/key.txt", r.join("out/x-lex")).unwrap();
}

/// `guests/expect.json`: the reports a guest must see, as (tag, errno).
fn expected(guest: &str) -> Vec<(String, i32)> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wasi-host/guests/expect.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    v[guest]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let name = row[1].as_str().unwrap();
            (row[0].as_str().unwrap().to_owned(), v["errno"][name].as_i64().unwrap() as i32)
        })
        .collect()
}

fn linked_config(w: &World, plugin: &str, probe: &Probe) -> HostConfig {
    let mut cfg = config(w, plugin, probe, json!({ "wallClockMs": 10000 }));
    let root = w.root.to_str().unwrap();
    let manifest = json!({
        "fs": [format!("{root}/data/**"), { "path": format!("{root}/out/**"), "mode": "readwrite" }],
        "deny": { "fs": [format!("{root}/out/private/**")] },
        "budgets": { "wallClockMs": 10000 },
    });
    cfg.policy = PermissionPolicy::from_manifest(&manifest, PolicyOptions::new(plugin)).unwrap();
    cfg
}

fn denied_total(probe: &Probe, plugin: &str) -> u64 {
    probe.counts(plugin).iter().filter(|(k, _)| k.0 == "plugin.permission_denied_total").map(|(_, v)| v).sum()
}

#[test]
fn symlinks_are_checked_as_every_runtime_reads_them() {
    let w = world();
    plant_links(&w);
    let probe = Probe::new();
    let r = run_guest(&guest("symlink"), linked_config(&w, "symlink", &probe)).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    let want = expected("symlink");
    assert_eq!(r.reports, want);
    let eacces = want.iter().filter(|(_, e)| *e == errno::ACCES).count() as u64;
    assert_eq!(denied_total(&probe, "symlink"), eacces);
    assert_eq!(std::fs::read_to_string(w.root.join("secret-outside.txt")).unwrap(), "TOP SECRET\n");
    assert_eq!(std::fs::read_to_string(w.root.join("outside-dir/victim")).unwrap(), "VICTIM\n");
    assert!(!w.root.join("created-outside.txt").exists());
}

#[test]
fn fd_level_calls_are_checked_by_the_fds_path_and_rights() {
    let w = world();
    plant_links(&w);
    let probe = Probe::new();
    let r = run_guest(&guest("fdops"), linked_config(&w, "fdops", &probe)).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    let want = expected("fdops");
    assert_eq!(r.reports, want);
    let eacces = want.iter().filter(|(_, e)| *e == errno::ACCES).count() as u64;
    assert_eq!(denied_total(&probe, "fdops"), eacces);
    assert_eq!(std::fs::read_to_string(w.root.join("data/input.txt")).unwrap(), "hello from a file\n");
}

#[test]
fn a_growth_past_a_memorys_own_maximum_fails_and_is_not_counted() {
    // Each memory.grow / table.grow passes the budget's limiter and then fails on
    // the declared maximum (-1 for the guest): the total must not keep it, or 64
    // failed attempts would add up past 4 MB (memories: 64 x 128 KiB; the table:
    // 64 x 8192 pointers, each on its own).
    let w = world();
    let probe = Probe::new();
    let wat = r#"(module
      (import "host" "report" (func $report (param i32 i32 i32)))
      (memory (export "memory") 1 2)
      (table $t 1 2 funcref)
      (data (i32.const 64) "grow")
      (func (export "_start") (local $i i32)
        (loop $again
          (call $report (i32.const 64) (i32.const 4)
            (i32.add (memory.grow (i32.const 2)) (table.grow $t (ref.null func) (i32.const 8192))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $again (i32.lt_u (local.get $i) (i32.const 64))))))"#;
    let r = run_guest(wat.as_bytes(), bare(&w, "grow-max", &probe, json!({ "memoryMb": 4 }))).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    assert_eq!(r.reports.len(), 64);
    assert!(r.reports.iter().all(|(_, v)| *v == -2), "{:?}", r.reports);
    assert_eq!(budget_count(&probe, "grow-max", "memory"), None);
}

#[test]
fn a_guest_declares_at_most_32_tables() {
    let w = world();
    let many = |n: usize| {
        let tables: String = (0..n).map(|i| format!("(table $t{i} 1 funcref)")).collect();
        format!("(module (memory (export \"memory\") 1) {tables} (func (export \"_start\")))")
    };
    let probe = Probe::new();
    for n in [2, 32] {
        let r = run_guest(many(n).as_bytes(), bare(&w, "tables", &probe, json!({ "wallClockMs": 10000 }))).unwrap();
        assert!(matches!(r.outcome, Outcome::Exited(0)), "{n} tables: {:?}", r.outcome);
    }
    let r = run_guest(many(33).as_bytes(), bare(&w, "tables", &probe, json!({ "wallClockMs": 10000 }))).unwrap();
    assert!(matches!(r.outcome, Outcome::Trap(_)), "33 tables instantiated: {:?}", r.outcome);
}

#[test]
fn a_failed_growth_leaves_the_total_exact() {
    // $a (1 page, max 2) fails to grow by 2; then $b grows a page at a time: with
    // the total exact (a 1 + b 1 + k pages), the 63rd growth passes 4 MB (64 pages).
    let w = world();
    let probe = Probe::new();
    let wat = r#"(module
      (import "host" "report" (func $report (param i32 i32 i32)))
      (memory $a (export "memory") 1 2)
      (memory $b 1)
      (data (i32.const 64) "fail") (data (i32.const 72) "grow")
      (func (export "_start")
        (call $report (i32.const 64) (i32.const 4) (memory.grow $a (i32.const 2)))
        (loop $again
          (call $report (i32.const 72) (i32.const 4) (memory.grow $b (i32.const 1)))
          (br $again))))"#;
    let r = run_guest(wat.as_bytes(), bare(&w, "grow-exact", &probe, json!({ "memoryMb": 4 }))).unwrap();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a memory breach: {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "memoryMb");
    assert_eq!(r.reports.first(), Some(&("fail".to_owned(), -1)));
    assert_eq!(r.reports.iter().filter(|(t, v)| t == "grow" && *v > 0).count(), 62, "{:?}", r.reports.len());
    assert_eq!(budget_count(&probe, "grow-exact", "memory"), Some(1));
}

/// A guest renaming through the real `path_rename` wrapper (preopen `/out` is fd 3).
const RENAME_GUEST: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_rename" (func $rename (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "a")
  (data (i32.const 8) "b")
  (data (i32.const 16) "c")
  (data (i32.const 24) "d")
  (data (i32.const 32) "a/l")
  (data (i32.const 40) "l")
  (data (i32.const 48) "a/m")
  (data (i32.const 56) "a/n")
  (data (i32.const 100) "dir_deny")
  (data (i32.const 120) "dir_free")
  (data (i32.const 140) "link_out")
  (data (i32.const 160) "link_in")
  (func (export "_start")
    (call $report (i32.const 100) (i32.const 8)
      (call $rename (i32.const 3) (i32.const 0) (i32.const 1) (i32.const 3) (i32.const 8) (i32.const 1)))
    (call $report (i32.const 120) (i32.const 8)
      (call $rename (i32.const 3) (i32.const 16) (i32.const 1) (i32.const 3) (i32.const 24) (i32.const 1)))
    (call $report (i32.const 140) (i32.const 8)
      (call $rename (i32.const 3) (i32.const 32) (i32.const 3) (i32.const 3) (i32.const 40) (i32.const 1)))
    (call $report (i32.const 160) (i32.const 7)
      (call $rename (i32.const 3) (i32.const 48) (i32.const 3) (i32.const 3) (i32.const 56) (i32.const 3)))))
"#;

/// `<root>/out/**` readwrite, these `deny.fs` globs, `/out` preopened as fd 3.
fn out_config(w: &World, plugin: &str, probe: &Probe, deny: &[String]) -> HostConfig {
    let root = w.root.to_str().unwrap();
    let manifest = json!({
        "fs": [{ "path": format!("{root}/out/**"), "mode": "readwrite" }],
        "deny": { "fs": deny },
        "budgets": { "wallClockMs": 60000 },
    });
    HostConfig {
        policy: PermissionPolicy::from_manifest(&manifest, PolicyOptions::new(plugin)).unwrap(),
        meter: probe.provider.meter("wasi-host-rs-test"),
        preopens: vec![("/out".into(), w.root.join("out"))],
        args: vec![plugin.into()],
        secrets: HashMap::new(),
    }
}

#[test]
fn a_rename_is_checked_for_what_it_moves() {
    let w = world();
    let out = w.root.join("out");
    std::fs::create_dir_all(out.join("a/private")).unwrap();
    std::fs::write(out.join("a/private/key.txt"), "KEY\n").unwrap();
    std::fs::create_dir(out.join("c")).unwrap();
    // From out/a the link names out/secret-outside.txt (inside); from out/, the root's secret.
    std::os::unix::fs::symlink("../secret-outside.txt", out.join("a/l")).unwrap();
    std::os::unix::fs::symlink("../own.txt", out.join("a/m")).unwrap();
    let probe = Probe::new();
    let deny = [format!("{}/out/a/private/**", w.root.to_str().unwrap())];
    let r = run_guest(RENAME_GUEST.as_bytes(), out_config(&w, "rename", &probe, &deny)).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    let reports: Vec<(&str, i32)> = r.reports.iter().map(|(t, v)| (t.as_str(), *v)).collect();
    assert_eq!(reports, [("dir_deny", errno::ACCES), ("dir_free", 0), ("link_out", errno::ACCES), ("link_in", 0)]);
    let counts = probe.counts("rename");
    assert_eq!(
        counts.get(&("plugin.permission_denied_total".into(), "fs.write".into(), "explicitly_denied".into())),
        Some(&1),
        "{counts:?}"
    );
    assert_eq!(denied_total(&probe, "rename"), 2, "{counts:?}");
    assert!(out.join("a/private/key.txt").exists() && out.join("d").is_dir() && !out.join("c").exists());
    assert!(out.join("a/l").is_symlink() && !out.join("l").exists());
    assert!(out.join("a/n").is_symlink());
    let denied: Vec<_> = r.calls.iter().filter(|c| !c.allowed).map(|c| c.what.as_str()).collect();
    assert_eq!(denied, ["a -> b", "a/l -> l"]);
}

/// 10,010 small stats then 20 with a 4 MiB path (fd 3 is `/out`).
const TRACE_GUEST: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_filestat_get" (func $stat (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 80)
  (data (i32.const 0) "own.txt")
  (func (export "_start")
    (local $i i32)
    (loop $small
      (drop (call $stat (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 7) (i32.const 256)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $small (i32.lt_u (local.get $i) (i32.const 10010))))
    (memory.fill (i32.const 65536) (i32.const 97) (i32.const 4194304))
    (local.set $i (i32.const 0))
    (loop $large
      (drop (call $stat (i32.const 3) (i32.const 0) (i32.const 65536) (i32.const 4194304) (i32.const 256)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $large (i32.lt_u (local.get $i) (i32.const 20))))))
"#;

#[test]
fn the_trace_is_bounded_whatever_the_guest_sends() {
    let w = world();
    let probe = Probe::new();
    let r = run_guest(TRACE_GUEST.as_bytes(), out_config(&w, "trace", &probe, &[])).unwrap();
    assert!(matches!(r.outcome, Outcome::Exited(0)), "{:?}", r.outcome);
    assert_eq!(r.calls.len(), 10_000);
    assert_eq!(r.dropped_calls, 30);
    assert!(r.calls.iter().all(|c| c.what.len() <= 256));
    let last = r.calls.last().unwrap();
    assert!(!last.allowed && last.what.ends_with('…') && last.what.starts_with("aaa"), "{last:?}");
    assert_eq!(r.calls.iter().filter(|c| !c.allowed).count(), 20);
}

#[test]
fn a_guest_sleeping_in_poll_oneoff_is_ended_by_its_wall_clock_budget() {
    // An honest 50 ms sleep gets its clock event; the 2^64-1 ns sleep that follows
    // blocks in the host, where epoch interruption cannot fire: the budget ends it.
    let w = world();
    let probe = Probe::new();
    let started = std::time::Instant::now();
    let r = run_guest(&guest("sleep"), bare(&w, "sleep", &probe, json!({ "wallClockMs": 1000 }))).unwrap();
    let took = started.elapsed();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "wallClockMs");
    assert!(b.observed > 1000.0, "{b:?}");
    assert!(took.as_millis() < 3000, "ended in {took:?}, not after the sleep");
    let reports: Vec<(&str, i32)> = r.reports.iter().map(|(t, v)| (t.as_str(), *v)).collect();
    assert_eq!(reports, [("short", 0), ("nevents", 1), ("userdata", 1), ("cpu_clock", 28)]);
    assert_eq!(budget_count(&probe, "sleep", "wall_clock"), Some(1));
    let total: u64 =
        probe.counts("sleep").iter().filter(|(k, _)| k.0 == "plugin.budget_exceeded_total").map(|(_, v)| v).sum();
    assert_eq!(total, 1);
}

#[test]
fn a_fetch_from_a_dribbling_server_is_ended_by_the_wall_clock_budget() {
    // A granted server that sends one byte every 2 s: each read alone is short
    // enough, the fetch as a whole is bounded by what is left of the budget.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf);
                for b in b"HTTP/1.0 200 OK\r\n\r\n".iter().cycle() {
                    if s.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_secs(2));
                }
            });
        }
    });
    let url = format!("http://127.0.0.1:{port}/slow");
    let wat = format!(
        r#"(module
  (import "host" "fetch" (func $fetch (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{url}")
  (data (i32.const 200) "fetch")
  (func (export "_start")
    (call $report (i32.const 200) (i32.const 5)
      (call $fetch (i32.const 0) (i32.const {len}) (i32.const 1024) (i32.const 1024) (i32.const 300) (i32.const 304)))))"#,
        len = url.len()
    );
    let probe = Probe::new();
    let manifest = json!({ "fetch": [format!("127.0.0.1:{port}")], "budgets": { "wallClockMs": 1000 } });
    let cfg = HostConfig {
        policy: PermissionPolicy::from_manifest(&manifest, PolicyOptions::new("dribble")).unwrap(),
        meter: probe.provider.meter("wasi-host-rs-test"),
        preopens: vec![],
        args: vec!["dribble".into()],
        secrets: HashMap::new(),
    };
    let started = std::time::Instant::now();
    let r = run_guest(wat.as_bytes(), cfg).unwrap();
    let took = started.elapsed();
    let Outcome::BudgetExceeded(b) = r.outcome else { panic!("expected a budget breach, got {:?}", r.outcome) };
    assert_eq!(b.budget.as_str(), "wallClockMs");
    assert!(took.as_millis() < 3000, "ended in {took:?}");
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    assert_eq!(budget_count(&probe, "dribble", "wall_clock"), Some(1));
    assert_eq!(denied_total(&probe, "dribble"), 0);
    assert!(r.calls.iter().any(|c| c.op == "fetch" && c.allowed), "{:?}", r.calls);
}
