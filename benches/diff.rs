//! `cargo bench -p api-sandbox-permissions-benches --bench diff`: the semantic diff of two
//! manifests of 1,000 grants each side (the goal: under 1 s), for an
//! equal pair, a narrowing everywhere, and a narrowing with one widening
//! (a confirmed witness), plus a mix of fs wildcards, fetch, deny rules and
//! topics.
use api_sandbox_permissions::diff::diff_policies;
use api_sandbox_permissions::{PermissionPolicy, Platform, PolicyOptions};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;

fn policy(v: serde_json::Value) -> PermissionPolicy {
    PermissionPolicy::from_manifest(&v, PolicyOptions::new("b").platform(Platform::Posix)).unwrap()
}

/// 500 fs and 500 fetch grants; `narrow`: each one narrowed; `widen`: grant 321 widened.
fn side(narrow: bool, widen: bool) -> PermissionPolicy {
    let mut fs = Vec::new();
    let mut fetch = Vec::new();
    for i in 0..500 {
        fs.push(match (narrow, i % 4) {
            (false, 0) => format!("/srv/app{i}/**"),
            (false, 1) => format!("/data/t{i}/*.json"),
            (false, 2) => format!("/var/{{log,cache}}/p{i}/**"),
            (false, _) => format!("/opt/p{i}/[a-m]*/**"),
            (true, 0) => format!("/srv/app{i}/data/*.json"),
            (true, 1) => format!("/data/t{i}/x*.json"),
            (true, 2) => format!("/var/log/p{i}/**"),
            (true, _) => format!("/opt/p{i}/[c-f]x/**"),
        });
        fetch.push(if narrow {
            format!("https://api.svc{i}.example.com/v1/**")
        } else {
            format!("*.svc{i}.example.com")
        });
    }
    if widen {
        fs[321] = "/data/t321/**".into();
    }
    policy(json!({
        "fs": fs,
        "fetch": fetch,
        "deny": { "fs": ["/srv/app1/secret/**", "/data/**/.env"], "fetch": ["10.0.0.0/8"] },
        "events": { "publishes": ["orders.*"], "subscribes": ["audit.**"] },
        "budgets": { "wallClockMs": 1000 },
    }))
}

fn bench_diff(c: &mut Criterion) {
    let old = side(false, false);
    let same = side(false, false);
    let narrow = side(true, false);
    let widen = side(true, true);
    assert_eq!(diff_policies(&old, &same).exit_code(), 0);
    assert_eq!(diff_policies(&old, &narrow).exit_code(), 0);
    assert_eq!(diff_policies(&old, &widen).exit_code(), 1);
    let mut g = c.benchmark_group("diff_1000_grants");
    g.sample_size(10);
    g.bench_function("equal", |b| b.iter(|| black_box(diff_policies(&old, &same))));
    g.bench_function("narrowed", |b| b.iter(|| black_box(diff_policies(&old, &narrow))));
    g.bench_function("one_widening", |b| b.iter(|| black_box(diff_policies(&old, &widen))));
    g.finish();
}

criterion_group!(benches, bench_diff);
criterion_main!(benches);
