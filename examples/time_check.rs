//! Rough per-call timing of the core checks (`cargo run --release --no-default-features --example time_check`).
//! The measured suite is `cargo bench`; this is a quick look.
use api_sandbox_permissions::{FsMode, PermissionPolicy, PolicyOptions};
use std::time::Instant;

fn main() {
    let mut pats = Vec::new();
    for i in 0..10 {
        pats.push(match i % 3 {
            0 => format!("/srv/app-{i}/data/**"),
            1 => format!("/tmp/cache-{i}/*.json"),
            _ => format!("/etc/app-{i}.conf"),
        });
    }
    let p = PermissionPolicy::from_manifest(
        &serde_json::json!({ "fs": pats, "fetch": ["api.example.com"] }),
        PolicyOptions::new("t"),
    )
    .unwrap();
    let inputs: Vec<String> =
        (0..4096).map(|j| format!("/srv/app-{}/data/dir-{}/file-{j}.txt", 3 * (j % 3), j % 13)).collect();
    let urls: Vec<String> = (0..4096).map(|j| format!("https://api.example.com/v1/items/{j}?q={j}")).collect();
    {
        use api_sandbox_permissions::fs::normalize;
        let t = Instant::now();
        let mut n = 0usize;
        for i in 0..1_000_000 {
            n += normalize(&inputs[i & 4095], api_sandbox_permissions::Platform::Posix).unwrap().path.len();
        }
        println!("normalize {:.1} ns ({n})", t.elapsed().as_nanos() as f64 / 1e6);
        let t = Instant::now();
        for i in 0..1_000_000 {
            n += url::Url::parse(&urls[i & 4095]).unwrap().as_str().len();
        }
        println!("Url::parse {:.1} ns ({n})", t.elapsed().as_nanos() as f64 / 1e6);
        use std::collections::HashMap;
        let mut m: HashMap<String, u32> = HashMap::new();
        for x in &inputs {
            m.insert(x.clone(), 1);
        }
        let t = Instant::now();
        for i in 0..1_000_000 {
            n += m.get(inputs[(i * 7) & 4095].as_str()).copied().unwrap_or(0) as usize;
        }
        println!("hash lookup {:.1} ns ({n})", t.elapsed().as_nanos() as f64 / 1e6);
    }
    for _ in 0..3 {
        let t = Instant::now();
        let mut n = 0;
        for i in 0..1_000_000 {
            n += p.check_fs(&inputs[i & 4095], FsMode::Read).is_allowed() as u32;
        }
        println!("check_fs {:.1} ns ({n})", t.elapsed().as_nanos() as f64 / 1e6);
        let t = Instant::now();
        for i in 0..1_000_000 {
            n += p.check_fetch(&urls[i & 4095]).is_allowed() as u32;
        }
        println!("check_fetch {:.1} ns ({n})", t.elapsed().as_nanos() as f64 / 1e6);
    }
}
