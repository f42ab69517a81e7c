use api_sandbox_permissions::{PermissionPolicy, PolicyOptions, Platform};
use std::time::Instant;
fn main() {
    let host_only: Vec<String> = (0..1000).map(|i| format!("https://api-{i}.example.com")).collect();
    let scoped: Vec<String> = (0..1000).map(|i| format!("https://api-{}.example.com/v1/repos/r{}/*/issues", i % 100, i / 100)).collect();
    let mk = |v: &Vec<String>| PermissionPolicy::from_manifest(&serde_json::json!({ "fetch": v }), PolicyOptions::new("b").platform(Platform::Posix)).unwrap();
    let (a, b) = (mk(&host_only), mk(&scoped));
    let urls = |h: usize| -> Vec<String> { (0..4096).map(|j| format!("https://api-{}.example.com/v1/repos/r{}/acme-{j}/issues?page={j}", (j * 7919) % h, j % 10)).collect() };
    let (ua, ub) = (urls(1000), urls(100));
    for round in 0..3 {
        for (name, p, u) in [("host", &a, &ua), ("path", &b, &ub)] {
            let t = Instant::now();
            let mut ok = 0;
            for _ in 0..50 { for x in u.iter() { if p.check_fetch(x).is_allowed() { ok += 1; } } }
            println!("{round} {name}: {:.1} ns/op ({ok})", t.elapsed().as_nanos() as f64 / (50.0 * u.len() as f64));
        }
    }
}
