//! `cargo bench -p api-sandbox-permissions-benches --bench checks`: the core checks in Rust, at 10 and
//! 10,000 grants, over thousands of distinct inputs per shape.
use api_sandbox_permissions::{FsMode, PermissionPolicy, Platform, PolicyOptions};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

fn fs_patterns(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 3 {
            0 => format!("/srv/app-{i}/data/**"),
            1 => format!("/tmp/cache-{i}/*.json"),
            _ => format!("/etc/app-{i}.conf"),
        })
        .collect()
}

fn fs_inputs(n: usize, shape: &str) -> Vec<String> {
    (0..4096)
        .map(|j| {
            let k = 3 * ((j * 7919) % n.div_ceil(3));
            match shape {
                "allow" => format!("/srv/app-{k}/data/dir-{}/file-{j}.txt", j % 13),
                "deny" => format!("/home/user-{j}/.ssh/id_rsa"),
                "json" => format!("/tmp/cache-{}/entry-{j}.json", k + 1),
                _ => format!("/srv/app-{k}/datax/file-{j}.txt"),
            }
        })
        .collect()
}

fn bench_fs(c: &mut Criterion) {
    let mut g = c.benchmark_group("check_fs");
    g.throughput(Throughput::Elements(4096));
    for n in [10usize, 10_000] {
        let p = PermissionPolicy::from_manifest(
            &serde_json::json!({ "fs": fs_patterns(n) }),
            PolicyOptions::new("b").platform(Platform::Posix),
        )
        .unwrap();
        for shape in ["allow", "deny", "json", "near-miss"] {
            let inputs = fs_inputs(n, shape);
            g.bench_with_input(BenchmarkId::new(shape, n), &inputs, |b, inputs| {
                b.iter(|| {
                    for i in inputs {
                        let _ = black_box(p.check_fs(black_box(i), FsMode::Read));
                    }
                })
            });
        }
    }
    g.finish();
}

fn bench_fetch(c: &mut Criterion) {
    let mut g = c.benchmark_group("check_fetch");
    g.throughput(Throughput::Elements(4096));
    for n in [10usize, 1000] {
        let pats: Vec<String> = (0..n)
            .map(|i| if i % 2 == 1 { format!("api-{i}.example.com") } else { format!("*.cdn-{i}.example.net") })
            .collect();
        let p =
            PermissionPolicy::from_manifest(&serde_json::json!({ "fetch": pats }), PolicyOptions::new("b")).unwrap();
        for shape in ["exact", "suffix", "deny"] {
            let inputs: Vec<String> = (0..4096)
                .map(|j| {
                    let k = 2 * ((j * 7919) % n.div_ceil(2));
                    match shape {
                        "exact" => format!("https://api-{}.example.com/v1/items/{j}?q={j}", k + 1),
                        "suffix" => format!("https://img-{j}.cdn-{k}.example.net/a/{j}.png"),
                        _ => format!("https://evil-{j}.example.org/steal?x={j}"),
                    }
                })
                .collect();
            g.bench_with_input(BenchmarkId::new(shape, n), &inputs, |b, inputs| {
                b.iter(|| {
                    for u in inputs {
                        let _ = black_box(p.check_fetch(black_box(u)));
                    }
                })
            });
        }
    }
    g.finish();
}

fn bench_compile(c: &mut Criterion) {
    let manifest = serde_json::json!({ "fs": fs_patterns(10_000) });
    let mut g = c.benchmark_group("compile");
    g.sample_size(10);
    g.bench_function("fs 10000 globs", |b| {
        b.iter(|| PermissionPolicy::from_manifest(black_box(&manifest), PolicyOptions::new("b")).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench_fs, bench_fetch, bench_compile);
criterion_main!(benches);
