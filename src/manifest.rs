//! The manifest, section by section (SPEC §1): one small parser per
//! top-level key, each validating its part and naming the JSON pointer of
//! the first invalid field, and the normalised manifest written back
//! ([`Sections::to_json`]). A section the manifest lacks is `None`, so what
//! was present and what was granted are one thing.
//!
//! The sections are parsed in a fixed order (`fs`, `fetch`, `deny`,
//! `budgets`, `secrets`, `events`, `db`), so a manifest with several errors
//! always reports the same one.

use serde_json::{Map, Value};

use crate::capability::{BoundSecret, CapabilityGrants, Events, Secrets};
use crate::error::ManifestError;
use crate::fetch::{DenyFetch, FetchMatcher, FetchPattern};
use crate::fs::{self, FsGrant, FsMatcher, GrantMode};
use crate::platform::Platform;
use crate::topic::TopicPattern;

/// Most entries one manifest list (`fs`, `fetch`, `secrets`, `events.publishes`,
/// `events.subscribes`) may hold.
pub const MAX_PATTERNS: usize = 10_000;
/// Most bound-secret host patterns one manifest may hold, all secrets together
/// (each `hosts` list is also at most [`MAX_PATTERNS`]): 10,000 secrets of
/// 10,000 hosts each would be 10^8 compiled patterns.
pub const MAX_BOUND_SECRET_HOSTS: usize = MAX_PATTERNS;

/// Path-scope segments of one policy's fetch patterns, `deny.fetch` rules
/// and bound-secret hosts together (SPEC §8: a manifest within every limit
/// compiles to bounded memory). Each segment is a node of a path trie, so
/// 10,000 patterns of 1,024 bytes each (500 segments) would otherwise
/// compile to gigabytes.
pub const MAX_POLICY_PATH_SEGMENTS: usize = 1 << 17;

/// Adds `pattern`'s path-scope segments to the policy's count; past
/// [`MAX_POLICY_PATH_SEGMENTS`], an error at `ptr`.
fn count_path_segments(pattern: &FetchPattern, total: &mut usize, ptr: &str) -> Result<(), ManifestError> {
    *total += pattern.path.as_ref().map_or(0, |p| p.segs.len());
    if *total > MAX_POLICY_PATH_SEGMENTS {
        return Err(ManifestError::new(
            ptr,
            format!(
                "path scopes within the policy-wide cap of {MAX_POLICY_PATH_SEGMENTS} segments (fetch, deny.fetch \
                 and bound-secret hosts together; this one takes it past)"
            ),
        ));
    }
    Ok(())
}
/// Longest secret name, database name or plugin id, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// The top-level keys, in the order their errors are reported.
const TOP_KEYS: &[&str] = &["fs", "fetch", "budgets", "secrets", "events", "db", "deny"];

/// Per-request budgets. Each is optional; an absent budget is not enforced.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budgets {
    /// CPU time over wall time, in percent of one core. Finite, > 0.
    pub cpu_percent: Option<f64>,
    /// Resident memory, in MB. Finite, > 0.
    pub memory_mb: Option<f64>,
    /// Wall clock since the request started, in ms. Finite, > 0.
    pub wall_clock_ms: Option<f64>,
}

/// One budget key of the manifest: its name, the unit its error names, and its field.
struct BudgetKey {
    key: &'static str,
    unit: &'static str,
    field: fn(&mut Budgets) -> &mut Option<f64>,
}

/// The budget keys, spelled once: parsing, the unknown-key message and `to_json` read this table.
const BUDGET_KEYS: [BudgetKey; 3] = [
    BudgetKey { key: "cpuPercent", unit: "percent of one core", field: |b| &mut b.cpu_percent },
    BudgetKey { key: "memoryMb", unit: "MB", field: |b| &mut b.memory_mb },
    BudgetKey { key: "wallClockMs", unit: "ms", field: |b| &mut b.wall_clock_ms },
];

/// The manifest's `deny` section (SPEC §10).
#[derive(Debug, Clone, Default)]
pub(crate) struct Deny {
    /// `deny.fs` globs, normalised.
    pub(crate) fs: Option<Vec<String>>,
    /// `deny.fetch` rules.
    pub(crate) fetch: Option<Vec<DenyFetch>>,
}

/// A validated manifest: each section `None` when the manifest lacks its key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sections {
    /// `fs` grants, normalised.
    pub(crate) fs: Option<Vec<FsGrant>>,
    /// `fetch` patterns.
    pub(crate) fetch: Option<Vec<FetchPattern>>,
    /// `deny` (boxed, like the rarer sections: most policies have none, and
    /// every policy carries this struct inline).
    pub(crate) deny: Option<Box<Deny>>,
    /// `budgets`.
    pub(crate) budgets: Option<Budgets>,
    /// `secrets`, `events`, `db`.
    pub(crate) capabilities: CapabilityGrants,
}

/// A validated manifest and the matchers compiled from it.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// The sections, as validated.
    pub(crate) sections: Sections,
    /// The fs grants and `deny.fs` globs, compiled.
    pub(crate) fs: FsMatcher,
    /// The fetch grants and `deny.fetch` rules, compiled.
    pub(crate) fetch: FetchMatcher,
}

/// Validates a manifest value and compiles its matchers for `platform`.
pub(crate) fn compile(manifest: &Value, platform: Platform) -> Result<Compiled, ManifestError> {
    let top = expect_object(manifest, "", "a manifest object", TOP_KEYS)?;
    let mut fs = FsMatcher::new(platform);
    let fs_grants = top.get("fs").map(|v| fs_section(v, platform, &mut fs)).transpose()?;
    let mut path_segments = 0usize;
    let fetch = top.get("fetch").map(|v| fetch_section(v, &mut path_segments)).transpose()?;
    let deny = top.get("deny").map(|v| deny_section(v, platform, &mut fs, &mut path_segments)).transpose()?;
    let fetch_matcher = FetchMatcher::compile_with_deny(
        fetch.as_deref().unwrap_or_default(),
        deny.as_ref().and_then(|d| d.fetch.as_deref()).unwrap_or_default(),
    );
    let budgets = top.get("budgets").map(budgets_section).transpose()?;
    let secrets = top.get("secrets").map(|v| secrets_section(v, &mut path_segments)).transpose()?;
    let events = top.get("events").map(events_section).transpose()?;
    let database = top.get("db").map(db_section).transpose()?;
    let capabilities = CapabilityGrants { secrets: secrets.map(Box::new), events: events.map(Box::new), database };
    let sections = Sections { fs: fs_grants, fetch, deny: deny.map(Box::new), budgets, capabilities };
    Ok(Compiled { sections, fs, fetch: fetch_matcher })
}

/// `fs`: grant strings (read) or `{ path, mode? }`, each glob normalised and compiled into `matcher`.
fn fs_section(v: &Value, platform: Platform, matcher: &mut FsMatcher) -> Result<Vec<FsGrant>, ManifestError> {
    let what = "fs grants (an absolute glob string, or { path, mode? } with mode 'read', 'write' or 'readwrite')";
    let list = expect_array(v, "/fs", what)?;
    let mut grants = Vec::with_capacity(list.len());
    // The pointers are written into buffers reused across the grants (a
    // grant's pointer is needed only if it is wrong, but it is passed down).
    let (mut ptr, mut path_ptr) = (String::new(), String::new());
    for (i, g) in list.iter().enumerate() {
        index_pointer(&mut ptr, "/fs", i);
        path_ptr.clear();
        path_ptr.push_str(&ptr);
        let (path_v, mode) = match g {
            Value::String(_) => (g, GrantMode::Read),
            Value::Object(_) => {
                let o = expect_object(g, &ptr, "an fs grant", &["path", "mode"])?;
                path_ptr.push_str("/path");
                let path_v = o
                    .get("path")
                    .ok_or_else(|| ManifestError::new(&path_ptr, "a required 'path': an absolute glob string"))?;
                let mode = match o.get("mode") {
                    None => GrantMode::Read,
                    Some(m) => {
                        let mptr = format!("{ptr}/mode");
                        let s = expect_str(m, &mptr, "'read', 'write' or 'readwrite'")?;
                        GrantMode::parse(s)
                            .ok_or_else(|| ManifestError::new(&mptr, "'read', 'write' or 'readwrite'"))?
                    }
                };
                (path_v, mode)
            }
            other => return Err(ManifestError::new(&ptr, format!("{what}, got {}", type_name(other)))),
        };
        let raw = expect_str(path_v, &path_ptr, "an absolute glob string")?;
        let glob = fs::normalize_grant(raw, platform, &path_ptr)?;
        let grant = FsGrant { glob, mode };
        matcher.add(&grant, &path_ptr)?;
        grants.push(grant);
    }
    Ok(grants)
}

/// `fetch`: host pattern strings.
fn fetch_section(v: &Value, path_segments: &mut usize) -> Result<Vec<FetchPattern>, ManifestError> {
    let list = expect_array(v, "/fetch", "host pattern strings")?;
    fetch_patterns_upto(list, "/fetch", "a host pattern string", usize::MAX, path_segments)
}

/// The first `max` entries of a list of fetch pattern strings at `ptr`
/// (`fetch`, a bound secret's `hosts`), parsed; their path-scope segments
/// are counted into `path_segments`.
fn fetch_patterns_upto(
    list: &[Value],
    ptr: &str,
    each: &str,
    max: usize,
    path_segments: &mut usize,
) -> Result<Vec<FetchPattern>, ManifestError> {
    let mut out = Vec::with_capacity(list.len().min(max));
    let mut pptr = String::new();
    for (i, p) in list.iter().take(max).enumerate() {
        index_pointer(&mut pptr, ptr, i);
        let pattern = FetchPattern::parse(expect_str(p, &pptr, each)?, &pptr)?;
        count_path_segments(&pattern, path_segments, &pptr)?;
        out.push(pattern);
    }
    Ok(out)
}

/// `deny`: `{ fs?, fetch? }`; `deny.fs` globs are compiled into `matcher` beside the grants.
fn deny_section(
    v: &Value,
    platform: Platform,
    matcher: &mut FsMatcher,
    path_segments: &mut usize,
) -> Result<Deny, ManifestError> {
    let o = expect_object(v, "/deny", "a deny object { fs?, fetch? }", &["fs", "fetch"])?;
    let mut deny = Deny::default();
    if let Some(a) = o.get("fs") {
        let mut globs = Vec::new();
        let mut ptr = String::new();
        for (i, g) in expect_array(a, "/deny/fs", "absolute glob strings")?.iter().enumerate() {
            index_pointer(&mut ptr, "/deny/fs", i);
            let raw = expect_str(g, &ptr, "an absolute glob string")?;
            let glob = fs::normalize_grant(raw, platform, &ptr)?;
            matcher.add_deny(&glob, &ptr)?;
            globs.push(glob);
        }
        deny.fs = Some(globs);
    }
    if let Some(a) = o.get("fetch") {
        let mut rules = Vec::new();
        let mut ptr = String::new();
        for (i, p) in expect_array(a, "/deny/fetch", "fetch pattern or CIDR strings")?.iter().enumerate() {
            index_pointer(&mut ptr, "/deny/fetch", i);
            let s = expect_str(p, &ptr, "a fetch pattern or CIDR block string")?;
            let rule = DenyFetch::parse(s, &ptr)?;
            if let DenyFetch::Pattern(pattern) = &rule {
                count_path_segments(pattern, path_segments, &ptr)?;
            }
            rules.push(rule);
        }
        deny.fetch = Some(rules);
    }
    Ok(deny)
}

/// `budgets`: the keys of [`BUDGET_KEYS`], each a finite number > 0.
fn budgets_section(v: &Value) -> Result<Budgets, ManifestError> {
    let keys = BUDGET_KEYS.map(|k| k.key);
    let o = expect_object(v, "/budgets", "a budgets object", &keys)?;
    let mut budgets = Budgets::default();
    for k in &BUDGET_KEYS {
        if let Some(x) = o.get(k.key) {
            *(k.field)(&mut budgets) = Some(expect_budget(x, &format!("/budgets/{}", k.key), k.unit)?);
        }
    }
    Ok(budgets)
}

/// `secrets`: readable names, or `{ name, hosts }` for a destination-bound secret (SPEC §13).
fn secrets_section(v: &Value, path_segments: &mut usize) -> Result<Secrets, ManifestError> {
    let what = "secrets (a secret name, or { name, hosts } for a destination-bound secret)";
    let mut secrets = Secrets::default();
    // Bound-secret host patterns so far, all secrets together.
    let mut host_total = 0usize;
    for (i, s) in expect_array(v, "/secrets", what)?.iter().enumerate() {
        let ptr = format!("/secrets/{i}");
        if let Value::Object(_) = s {
            let o = expect_object(s, &ptr, "a bound secret { name, hosts }", &["name", "hosts"])?;
            let name_ptr = format!("{ptr}/name");
            let name_v =
                o.get("name").ok_or_else(|| ManifestError::new(&name_ptr, "a required 'name': a secret name"))?;
            let name = expect_name(name_v, &name_ptr, "a secret name")?;
            let hosts_ptr = format!("{ptr}/hosts");
            let hosts_v = o.get("hosts").ok_or_else(|| {
                ManifestError::new(&hosts_ptr, "a required 'hosts': a non-empty array of fetch patterns")
            })?;
            let list = expect_array(hosts_v, &hosts_ptr, "fetch pattern strings")?;
            if list.is_empty() {
                return Err(ManifestError::new(&hosts_ptr, "a non-empty array of fetch patterns"));
            }
            // The hosts before the cap are parsed (an invalid one among them
            // reports first, in document order); the first one past it is the error.
            let room = MAX_BOUND_SECRET_HOSTS - host_total;
            let hosts = fetch_patterns_upto(list, &hosts_ptr, "a fetch pattern string", room, path_segments)?;
            if list.len() > room {
                return Err(ManifestError::new(
                    format!("{hosts_ptr}/{room}"),
                    format!(
                        "bound-secret hosts within the policy-wide cap of {MAX_BOUND_SECRET_HOSTS} patterns \
                         (all secrets together; this one takes it past)"
                    ),
                ));
            }
            host_total += hosts.len();
            if secrets.is_readable(name) || secrets.bound(name).is_some() {
                return Err(ManifestError::new(&name_ptr, "a bound secret name declared once (not also readable)"));
            }
            secrets.add_bound(name, BoundSecret::new(hosts));
        } else {
            let name = expect_name(s, &ptr, "a secret name or { name, hosts }")?;
            if secrets.bound(name).is_some() {
                return Err(ManifestError::new(&ptr, "a secret name not also declared bound"));
            }
            secrets.add_readable(name);
        }
    }
    Ok(secrets)
}

/// `events`: `{ publishes?, subscribes? }`, each a list of topic patterns.
fn events_section(v: &Value) -> Result<Events, ManifestError> {
    let o = expect_object(v, "/events", "an events object", &["publishes", "subscribes"])?;
    let list = |key: &str| -> Result<Option<Vec<TopicPattern>>, ManifestError> {
        let Some(a) = o.get(key) else { return Ok(None) };
        let ptr = format!("/events/{key}");
        let topics = expect_array(a, &ptr, "topic pattern strings")?;
        let mut out = Vec::with_capacity(topics.len());
        let mut tptr = String::new();
        for (i, t) in topics.iter().enumerate() {
            index_pointer(&mut tptr, &ptr, i);
            out.push(TopicPattern::parse_manifest(expect_str(t, &tptr, "a topic pattern string")?, &tptr)?);
        }
        Ok(Some(out))
    };
    Ok(Events { publishes: list("publishes")?, subscribes: list("subscribes")? })
}

/// `db`: `{ database }`.
fn db_section(v: &Value) -> Result<String, ManifestError> {
    let o = expect_object(v, "/db", "a db object { database }", &["database"])?;
    let d = o.get("database").ok_or_else(|| ManifestError::new("/db/database", "a required database name string"))?;
    Ok(expect_name(d, "/db/database", "a database name")?.to_owned())
}

/// Writes `{parent}/{i}` into `buf`, replacing what it held.
fn index_pointer(buf: &mut String, parent: &str, i: usize) {
    use std::fmt::Write as _;
    buf.clear();
    buf.push_str(parent);
    // Writing into a String cannot fail.
    let _ = write!(buf, "/{i}");
}

/// Checks an options string (the plugin id) like a manifest name: 1 to
/// [`MAX_NAME_BYTES`] bytes, no control characters.
pub(crate) fn is_valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME_BYTES && !s.chars().any(char::is_control)
}

impl Sections {
    /// The normalised manifest: fs grants as `{ path, mode }`, fetch patterns
    /// canonical, duplicates of secrets removed; exactly the sections present.
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        let strings = |l: &mut dyn Iterator<Item = String>| Value::Array(l.map(Value::String).collect());
        if let Some(grants) = &self.fs {
            let grants =
                grants.iter().map(|g| serde_json::json!({ "path": g.glob, "mode": g.mode.as_str() })).collect();
            m.insert("fs".into(), Value::Array(grants));
        }
        if let Some(pats) = &self.fetch {
            m.insert("fetch".into(), strings(&mut pats.iter().map(ToString::to_string)));
        }
        if let Some(budgets) = self.budgets {
            let mut b = Map::new();
            let mut budgets = budgets;
            for k in &BUDGET_KEYS {
                if let Some(x) = *(k.field)(&mut budgets) {
                    b.insert(k.key.into(), serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number));
                }
            }
            m.insert("budgets".into(), Value::Object(b));
        }
        let caps = &self.capabilities;
        if let Some(secrets) = &caps.secrets {
            let list = secrets
                .names()
                .iter()
                .map(|n| match secrets.bound(n) {
                    Some(b) => serde_json::json!({
                        "name": n,
                        "hosts": b.hosts().iter().map(ToString::to_string).collect::<Vec<_>>(),
                    }),
                    None => Value::String(n.clone()),
                })
                .collect();
            m.insert("secrets".into(), Value::Array(list));
        }
        if let Some(events) = &caps.events {
            let mut e = Map::new();
            for (key, list) in [("publishes", &events.publishes), ("subscribes", &events.subscribes)] {
                if let Some(list) = list {
                    e.insert(key.into(), strings(&mut list.iter().map(ToString::to_string)));
                }
            }
            m.insert("events".into(), Value::Object(e));
        }
        if let Some(d) = &caps.database {
            m.insert("db".into(), serde_json::json!({ "database": d }));
        }
        if let Some(deny) = &self.deny {
            let mut d = Map::new();
            if let Some(globs) = &deny.fs {
                d.insert("fs".into(), strings(&mut globs.iter().cloned()));
            }
            if let Some(rules) = &deny.fetch {
                d.insert("fetch".into(), strings(&mut rules.iter().map(ToString::to_string)));
            }
            m.insert("deny".into(), Value::Object(d));
        }
        Value::Object(m)
    }
}

/// Escapes a key for a JSON pointer (RFC 6901).
fn pointer_key(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expect_object<'a>(
    v: &'a Value,
    ptr: &str,
    what: &str,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, ManifestError> {
    let Value::Object(m) = v else {
        return Err(ManifestError::new(ptr, format!("{what}, got {}", type_name(v))));
    };
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(ManifestError::new(
                pointer_key(ptr, k),
                format!("no unknown keys; allowed here: {}", allowed.join(", ")),
            ));
        }
    }
    Ok(m)
}

fn expect_array<'a>(v: &'a Value, ptr: &str, what: &str) -> Result<&'a [Value], ManifestError> {
    let Value::Array(a) = v else {
        return Err(ManifestError::new(ptr, format!("an array of {what}, got {}", type_name(v))));
    };
    if a.len() > MAX_PATTERNS {
        return Err(ManifestError::new(ptr, format!("at most {MAX_PATTERNS} entries")));
    }
    Ok(a)
}

fn expect_str<'a>(v: &'a Value, ptr: &str, what: &str) -> Result<&'a str, ManifestError> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(ManifestError::new(ptr, format!("{what}, got {}", type_name(v)))),
    }
}

fn expect_name<'a>(v: &'a Value, ptr: &str, what: &str) -> Result<&'a str, ManifestError> {
    let s = expect_str(v, ptr, what)?;
    if !is_valid_name(s) {
        return Err(ManifestError::new(
            ptr,
            format!("{what} of 1 to {MAX_NAME_BYTES} bytes without control characters"),
        ));
    }
    Ok(s)
}

fn expect_budget(v: &Value, ptr: &str, unit: &str) -> Result<f64, ManifestError> {
    let what = format!("a finite number greater than 0 ({unit})");
    match v.as_f64() {
        Some(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(ManifestError::new(
            ptr,
            match v {
                Value::Number(_) => what,
                other => format!("{what}, got {}", type_name(other)),
            },
        )),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn path_scope_segments_are_capped_over_every_list() {
        use serde_json::json;
        let per = 256usize;
        let long = |host: &str| format!("https://{host}/{}b", "a/".repeat(per - 1));
        let whole = MAX_POLICY_PATH_SEGMENTS / per;
        let fetch: Vec<String> = (0..whole).map(|i| long(&format!("h{i}.x"))).collect();
        compile(&json!({ "fetch": fetch }), Platform::Posix).expect("exactly at the cap");
        let err = |m: serde_json::Value| compile(&m, Platform::Posix).unwrap_err();
        let mut more = fetch.clone();
        more.push("https://one.more/z".into());
        assert_eq!(err(json!({ "fetch": more })).pointer, format!("/fetch/{whole}"));
        let fewer = &fetch[..whole - 1];
        let e = err(json!({ "fetch": fewer, "deny": { "fetch": ["10.0.0.0/8", long("d.x"), "https://d2.x/z"] } }));
        assert_eq!(e.pointer, "/deny/fetch/2");
        let e = err(json!({ "fetch": fewer, "secrets": [{ "name": "K", "hosts": [long("s.x"), "https://s2.x/z"] }] }));
        assert_eq!(e.pointer, "/secrets/0/hosts/1");
        // Host-only patterns and CIDR blocks count nothing.
        let ok = json!({ "fetch": fetch, "deny": { "fetch": ["10.0.0.0/8", "https://d.x"] }, "secrets": [{ "name": "K", "hosts": ["s.x"] }] });
        assert!(compile(&ok, Platform::Posix).is_ok());
    }
    use serde_json::json;

    use super::*;

    fn error(m: Value) -> (String, String) {
        let e = compile(&m, Platform::Posix).expect_err("invalid");
        (e.pointer, e.expected)
    }

    #[test]
    fn the_sections_present_are_the_sections_written_back() {
        for m in [
            json!({}),
            json!({ "events": {} }),
            json!({ "events": { "subscribes": [] } }),
            json!({ "deny": {} }),
            json!({ "deny": { "fetch": [] } }),
            json!({ "budgets": {} }),
            json!({ "budgets": { "memoryMb": 64.5 } }),
            json!({ "secrets": [] }),
            json!({ "fs": [], "fetch": [], "db": { "database": "d" } }),
        ] {
            assert_eq!(compile(&m, Platform::Posix).unwrap().sections.to_json(), m, "{m}");
        }
    }

    #[test]
    fn every_budget_key_parses_and_writes_back() {
        let m = json!({ "budgets": { "cpuPercent": 50.5, "memoryMb": 64, "wallClockMs": 1000 } });
        let s = compile(&m, Platform::Posix).unwrap().sections;
        let b = s.budgets.unwrap();
        assert_eq!((b.cpu_percent, b.memory_mb, b.wall_clock_ms), (Some(50.5), Some(64.0), Some(1000.0)));
        assert_eq!(s.to_json()["budgets"], json!({ "cpuPercent": 50.5, "memoryMb": 64.0, "wallClockMs": 1000.0 }));
        for k in &BUDGET_KEYS {
            let (ptr, msg) = error(json!({ "budgets": { k.key: 0 } }));
            assert_eq!(ptr, format!("/budgets/{}", k.key));
            assert_eq!(msg, format!("a finite number greater than 0 ({})", k.unit));
        }
        let (ptr, msg) = error(json!({ "budgets": { "cpu": 1 } }));
        assert_eq!(
            (ptr.as_str(), msg.as_str()),
            ("/budgets/cpu", "no unknown keys; allowed here: cpuPercent, memoryMb, wallClockMs")
        );
    }

    #[test]
    fn with_several_errors_the_first_section_in_order_reports() {
        // fs before fetch before deny before budgets before secrets before events before db.
        let order = [
            ("fs", json!(["rel"]), "/fs/0"),
            ("fetch", json!([1]), "/fetch/0"),
            ("deny", json!({ "fs": [1] }), "/deny/fs/0"),
            ("budgets", json!({ "memoryMb": -1 }), "/budgets/memoryMb"),
            ("secrets", json!([""]), "/secrets/0"),
            ("events", json!({ "publishes": ["a..b"] }), "/events/publishes/0"),
            ("db", json!({}), "/db/database"),
        ];
        for first in 0..order.len() {
            let mut m = Map::new();
            for (key, v, _) in &order[first..] {
                m.insert((*key).into(), v.clone());
            }
            assert_eq!(error(Value::Object(m)).0, order[first].2);
        }
    }

    #[test]
    fn secrets_are_readable_or_bound_never_both() {
        let (ptr, msg) = error(json!({ "secrets": ["k", { "name": "k", "hosts": ["a.example"] }] }));
        assert_eq!(
            (ptr.as_str(), msg.as_str()),
            ("/secrets/1/name", "a bound secret name declared once (not also readable)")
        );
        let (ptr, msg) = error(json!({ "secrets": [{ "name": "k", "hosts": ["a.example"] }, "k"] }));
        assert_eq!((ptr.as_str(), msg.as_str()), ("/secrets/1", "a secret name not also declared bound"));
        let (ptr, _) = error(json!({ "secrets": [{ "name": "k", "hosts": [] }] }));
        assert_eq!(ptr, "/secrets/0/hosts");
        let s = compile(&json!({ "secrets": ["a", "a", "b"] }), Platform::Posix).unwrap().sections;
        assert_eq!(s.capabilities.secret_names(), ["a", "b"]);
    }

    #[test]
    fn bound_secret_hosts_share_one_policy_wide_cap() {
        let hosts = |n: usize, first: Value| {
            let mut v = vec![first];
            v.extend(std::iter::repeat_n(json!("b.example.com"), n - 1));
            Value::Array(v)
        };
        // At the cap: valid.
        let m = json!({ "secrets": [{ "name": "A", "hosts": hosts(4000, json!("a.example.com")) },
                                    { "name": "B", "hosts": hosts(MAX_BOUND_SECRET_HOSTS - 4000, json!("a.example.com")) }] });
        assert!(compile(&m, Platform::Posix).is_ok());
        // One past it: the first host over the cap, in the second secret.
        let m = json!({ "secrets": [{ "name": "A", "hosts": hosts(4001, json!("a.example.com")) },
                                    { "name": "B", "hosts": hosts(MAX_BOUND_SECRET_HOSTS - 4000, json!("a.example.com")) }] });
        let (ptr, msg) = error(m);
        assert_eq!(ptr, format!("/secrets/1/hosts/{}", MAX_BOUND_SECRET_HOSTS - 4001));
        assert!(msg.starts_with("bound-secret hosts within the policy-wide cap of 10000 patterns"), "{msg}");
        // An invalid host before the cap reports first (document order).
        let m = json!({ "secrets": [{ "name": "A", "hosts": hosts(4001, json!("a.example.com")) },
                                    { "name": "B", "hosts": hosts(MAX_BOUND_SECRET_HOSTS, json!(7)) }] });
        assert_eq!(error(m).0, "/secrets/1/hosts/0");
    }
}
