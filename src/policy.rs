//! `PermissionPolicy`: the only way in is [`PermissionPolicy::from_manifest`],
//! which validates the whole manifest (SPEC §1) and compiles every matcher once.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::capability::{TopicPattern, MAX_PAYLOAD_STRING_BYTES};
use crate::error::{Capability, Decision, DenyReason, ManifestError};
use crate::fetch::{AllowedUrl, DenyFetch, FetchMatcher, FetchPattern};
use crate::fs::{self, FsGrant, FsMatcher, FsMode, GrantMode};

/// Most entries one manifest list (`fs`, `fetch`, `secrets`, `events.publishes`,
/// `events.subscribes`) may hold.
pub const MAX_PATTERNS: usize = 10_000;
/// Longest secret name, database name or plugin id, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// Which path flavour fs checks use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Platform {
    /// `/`-separated, case-sensitive; `\` is an ordinary character. Default on non-Windows hosts.
    #[cfg_attr(not(windows), default)]
    Posix,
    /// `\` and `/` separate, drive-absolute paths only, case-insensitive. Default on Windows hosts.
    #[cfg_attr(windows, default)]
    Win32,
}

impl Platform {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "posix" => Some(Platform::Posix),
            "win32" => Some(Platform::Win32),
            _ => None,
        }
    }
    pub const fn as_str(self) -> &'static str {
        match self {
            Platform::Posix => "posix",
            Platform::Win32 => "win32",
        }
    }
}

/// Options of [`PermissionPolicy::from_manifest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOptions {
    /// The plugin id: the `plugin` metric label and error detail. Required, 1-256 bytes, no control characters.
    pub plugin: String,
    /// Path flavour for fs checks. Default: the host's (`Posix` except on Windows).
    pub platform: Platform,
}

impl PolicyOptions {
    pub fn new(plugin: impl Into<String>) -> Self {
        Self { plugin: plugin.into(), platform: Platform::default() }
    }
    pub fn platform(mut self, platform: Platform) -> Self {
        self.platform = platform;
        self
    }
}

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

/// The validated, compiled permissions of one plugin. Immutable.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    plugin: String,
    platform: Platform,
    present: Present,
    fs_grants: Vec<FsGrant>,
    fs: FsMatcher,
    fetch_patterns: Vec<FetchPattern>,
    fetch: FetchMatcher,
    /// `deny.fs` globs, normalised (SPEC §10).
    deny_fs: Vec<String>,
    /// `deny.fetch` rules (SPEC §10).
    deny_fetch: Vec<DenyFetch>,
    budgets: Budgets,
    /// Every declared secret name, readable and bound, in manifest order.
    secrets: Vec<String>,
    /// The readable ones (`secrets.get`).
    secret_set: HashSet<String>,
    /// The destination-bound ones (SPEC §13): name -> its hosts.
    bound: HashMap<String, BoundSecret>,
    publishes: Vec<TopicPattern>,
    subscribes: Vec<TopicPattern>,
    has_events: bool,
    has_publishes: bool,
    has_subscribes: bool,
    database: Option<String>,
}

/// A destination-bound secret: its `hosts` patterns (fetch grammar, paths
/// included) and their matcher.
#[derive(Debug, Clone)]
pub struct BoundSecret {
    pub hosts: Vec<FetchPattern>,
    matcher: FetchMatcher,
}

impl BoundSecret {
    /// Whether `url` matches one of the hosts patterns (scheme, host, port and path).
    pub fn matches(&self, url: &str) -> bool {
        self.matcher.check(url).is_ok()
    }
}

/// Which top-level keys the manifest had, so `to_json` gives them back.
#[derive(Debug, Clone, Copy, Default)]
struct Present {
    fs: bool,
    fetch: bool,
    budgets: bool,
    secrets: bool,
    deny: bool,
    deny_fs: bool,
    deny_fetch: bool,
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
    if s.is_empty() || s.len() > MAX_NAME_BYTES || s.chars().any(char::is_control) {
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

impl PermissionPolicy {
    /// Validates a manifest and compiles it. Every invalid field is an error
    /// naming its JSON pointer; unknown keys are errors; nothing is dropped.
    pub fn from_manifest(manifest: &Value, options: PolicyOptions) -> Result<Self, ManifestError> {
        let PolicyOptions { plugin, platform } = options;
        if !Self::is_valid_plugin_id(&plugin) {
            return Err(ManifestError::new(
                "",
                "options.plugin: a plugin id of 1 to 256 bytes without control characters",
            ));
        }
        let top = expect_object(
            manifest,
            "",
            "a manifest object",
            &["fs", "fetch", "budgets", "secrets", "events", "db", "deny"],
        )?;
        let mut policy = PermissionPolicy {
            plugin,
            platform,
            present: Present::default(),
            fs_grants: Vec::new(),
            fs: FsMatcher::new(platform),
            fetch_patterns: Vec::new(),
            fetch: FetchMatcher::default(),
            deny_fs: Vec::new(),
            deny_fetch: Vec::new(),
            budgets: Budgets::default(),
            secrets: Vec::new(),
            secret_set: HashSet::new(),
            bound: HashMap::new(),
            publishes: Vec::new(),
            subscribes: Vec::new(),
            has_events: false,
            has_publishes: false,
            has_subscribes: false,
            database: None,
        };

        if let Some(v) = top.get("fs") {
            policy.present.fs = true;
            let what =
                "fs grants (an absolute glob string, or { path, mode? } with mode 'read', 'write' or 'readwrite')";
            for (i, g) in expect_array(v, "/fs", what)?.iter().enumerate() {
                let ptr = format!("/fs/{i}");
                let (path_v, path_ptr, mode) = match g {
                    Value::String(_) => (g, ptr.clone(), GrantMode::Read),
                    Value::Object(_) => {
                        let o = expect_object(g, &ptr, "an fs grant", &["path", "mode"])?;
                        let path_ptr = format!("{ptr}/path");
                        let path_v = o.get("path").ok_or_else(|| {
                            ManifestError::new(&path_ptr, "a required 'path': an absolute glob string")
                        })?;
                        let mode = match o.get("mode") {
                            None => GrantMode::Read,
                            Some(m) => {
                                let mptr = format!("{ptr}/mode");
                                let s = expect_str(m, &mptr, "'read', 'write' or 'readwrite'")?;
                                GrantMode::parse(s)
                                    .ok_or_else(|| ManifestError::new(&mptr, "'read', 'write' or 'readwrite'"))?
                            }
                        };
                        (path_v, path_ptr, mode)
                    }
                    other => return Err(ManifestError::new(&ptr, format!("{what}, got {}", type_name(other)))),
                };
                let raw = expect_str(path_v, &path_ptr, "an absolute glob string")?;
                let glob = fs::normalize_grant(raw, platform, &path_ptr)?;
                let grant = FsGrant { glob, mode };
                policy.fs.add(&grant, &path_ptr)?;
                policy.fs_grants.push(grant);
            }
        }

        if let Some(v) = top.get("fetch") {
            policy.present.fetch = true;
            for (i, p) in expect_array(v, "/fetch", "host pattern strings")?.iter().enumerate() {
                let ptr = format!("/fetch/{i}");
                let s = expect_str(p, &ptr, "a host pattern string")?;
                policy.fetch_patterns.push(FetchPattern::parse(s, &ptr)?);
            }
        }

        if let Some(v) = top.get("deny") {
            policy.present.deny = true;
            let o = expect_object(v, "/deny", "a deny object { fs?, fetch? }", &["fs", "fetch"])?;
            if let Some(a) = o.get("fs") {
                policy.present.deny_fs = true;
                for (i, g) in expect_array(a, "/deny/fs", "absolute glob strings")?.iter().enumerate() {
                    let ptr = format!("/deny/fs/{i}");
                    let raw = expect_str(g, &ptr, "an absolute glob string")?;
                    let glob = fs::normalize_grant(raw, platform, &ptr)?;
                    policy.fs.add_deny(&glob, &ptr)?;
                    policy.deny_fs.push(glob);
                }
            }
            if let Some(a) = o.get("fetch") {
                policy.present.deny_fetch = true;
                let what = "fetch pattern or CIDR strings";
                for (i, p) in expect_array(a, "/deny/fetch", what)?.iter().enumerate() {
                    let ptr = format!("/deny/fetch/{i}");
                    let s = expect_str(p, &ptr, "a fetch pattern or CIDR block string")?;
                    policy.deny_fetch.push(DenyFetch::parse(s, &ptr)?);
                }
            }
        }
        policy.fetch = FetchMatcher::compile_with_deny(&policy.fetch_patterns, &policy.deny_fetch);

        if let Some(v) = top.get("budgets") {
            policy.present.budgets = true;
            let o = expect_object(v, "/budgets", "a budgets object", &["cpuPercent", "memoryMb", "wallClockMs"])?;
            if let Some(x) = o.get("cpuPercent") {
                policy.budgets.cpu_percent = Some(expect_budget(x, "/budgets/cpuPercent", "percent of one core")?);
            }
            if let Some(x) = o.get("memoryMb") {
                policy.budgets.memory_mb = Some(expect_budget(x, "/budgets/memoryMb", "MB")?);
            }
            if let Some(x) = o.get("wallClockMs") {
                policy.budgets.wall_clock_ms = Some(expect_budget(x, "/budgets/wallClockMs", "ms")?);
            }
        }

        if let Some(v) = top.get("secrets") {
            policy.present.secrets = true;
            let what = "secrets (a secret name, or { name, hosts } for a destination-bound secret)";
            for (i, s) in expect_array(v, "/secrets", what)?.iter().enumerate() {
                let ptr = format!("/secrets/{i}");
                match s {
                    Value::Object(_) => {
                        let o = expect_object(s, &ptr, "a bound secret { name, hosts }", &["name", "hosts"])?;
                        let name_ptr = format!("{ptr}/name");
                        let name_v = o
                            .get("name")
                            .ok_or_else(|| ManifestError::new(&name_ptr, "a required 'name': a secret name"))?;
                        let name = expect_name(name_v, &name_ptr, "a secret name")?;
                        let hosts_ptr = format!("{ptr}/hosts");
                        let hosts_v = o.get("hosts").ok_or_else(|| {
                            ManifestError::new(&hosts_ptr, "a required 'hosts': a non-empty array of fetch patterns")
                        })?;
                        let list = expect_array(hosts_v, &hosts_ptr, "fetch pattern strings")?;
                        if list.is_empty() {
                            return Err(ManifestError::new(&hosts_ptr, "a non-empty array of fetch patterns"));
                        }
                        let mut hosts = Vec::with_capacity(list.len());
                        for (j, h) in list.iter().enumerate() {
                            let hptr = format!("{hosts_ptr}/{j}");
                            hosts.push(FetchPattern::parse(expect_str(h, &hptr, "a fetch pattern string")?, &hptr)?);
                        }
                        if policy.secret_set.contains(name) || policy.bound.contains_key(name) {
                            return Err(ManifestError::new(
                                &name_ptr,
                                "a bound secret name declared once (not also readable)",
                            ));
                        }
                        let matcher = FetchMatcher::compile(&hosts);
                        policy.bound.insert(name.to_owned(), BoundSecret { hosts, matcher });
                        policy.secrets.push(name.to_owned());
                    }
                    _ => {
                        let name = expect_name(s, &ptr, "a secret name or { name, hosts }")?;
                        if policy.bound.contains_key(name) {
                            return Err(ManifestError::new(&ptr, "a secret name not also declared bound"));
                        }
                        if policy.secret_set.insert(name.to_owned()) {
                            policy.secrets.push(name.to_owned());
                        }
                    }
                }
            }
        }

        if let Some(v) = top.get("events") {
            policy.has_events = true;
            let o = expect_object(v, "/events", "an events object", &["publishes", "subscribes"])?;
            for (key, list, flag) in [
                ("publishes", &mut policy.publishes, &mut policy.has_publishes),
                ("subscribes", &mut policy.subscribes, &mut policy.has_subscribes),
            ] {
                if let Some(a) = o.get(key) {
                    *flag = true;
                    let ptr = format!("/events/{key}");
                    for (i, t) in expect_array(a, &ptr, "topic pattern strings")?.iter().enumerate() {
                        let tptr = format!("{ptr}/{i}");
                        let s = expect_str(t, &tptr, "a topic pattern string")?;
                        list.push(TopicPattern::parse_manifest(s, &tptr)?);
                    }
                }
            }
        }

        if let Some(v) = top.get("db") {
            let o = expect_object(v, "/db", "a db object { database }", &["database"])?;
            let d = o
                .get("database")
                .ok_or_else(|| ManifestError::new("/db/database", "a required database name string"))?;
            policy.database = Some(expect_name(d, "/db/database", "a database name")?.to_owned());
        }
        Ok(policy)
    }

    /// Whether `id` is a valid plugin id: 1 to [`MAX_NAME_BYTES`] UTF-8 bytes
    /// without control characters. The one place that decides it (the JS
    /// binding throws its `TypeError` from this answer).
    pub fn is_valid_plugin_id(id: &str) -> bool {
        !id.is_empty() && id.len() <= MAX_NAME_BYTES && !id.chars().any(char::is_control)
    }

    /// Parses JSON text, then [`Self::from_manifest`]. A syntax error points at `""`.
    pub fn from_json(json: &str, options: PolicyOptions) -> Result<Self, ManifestError> {
        let v: Value = serde_json::from_str(json).map_err(|e| {
            ManifestError::new("", format!("a JSON object (syntax error at line {} column {})", e.line(), e.column()))
        })?;
        Self::from_manifest(&v, options)
    }

    pub fn plugin(&self) -> &str {
        &self.plugin
    }
    pub fn platform(&self) -> Platform {
        self.platform
    }
    pub fn budgets(&self) -> Budgets {
        self.budgets
    }
    pub fn fs_grants(&self) -> &[FsGrant] {
        &self.fs_grants
    }
    pub fn fetch_patterns(&self) -> &[FetchPattern] {
        &self.fetch_patterns
    }
    /// The `deny.fs` globs, normalised.
    pub fn deny_fs(&self) -> &[String] {
        &self.deny_fs
    }
    /// The `deny.fetch` rules.
    pub fn deny_fetch(&self) -> &[DenyFetch] {
        &self.deny_fetch
    }
    /// Whether a `deny.fs` glob matches this normalised path.
    pub fn fs_denied(&self, normalized: &str) -> bool {
        self.fs.denied(normalized)
    }
    /// The index of the `deny.fetch` rule that denies this URL (with
    /// `resolved`: this resolved address), if any.
    pub fn fetch_denied_by(&self, url: &url::Url, resolved: Option<std::net::IpAddr>) -> Option<usize> {
        self.fetch.denied_by(url, resolved)
    }
    /// Every declared secret name (readable and bound), in manifest order.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }
    /// The destination-bound secret with this name, if any.
    pub fn bound_secret(&self, name: &str) -> Option<&BoundSecret> {
        self.bound.get(name)
    }
    pub fn publishes(&self) -> &[TopicPattern] {
        &self.publishes
    }
    pub fn subscribes(&self) -> &[TopicPattern] {
        &self.subscribes
    }
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// The normalised manifest: fs grants as `{ path, mode }`, fetch patterns
    /// canonical (lower case, punycode, IPv4 dotted), duplicates of secrets removed.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.present.fs {
            let grants =
                self.fs_grants.iter().map(|g| serde_json::json!({ "path": g.glob, "mode": g.mode.as_str() })).collect();
            m.insert("fs".into(), Value::Array(grants));
        }
        if self.present.fetch {
            let pats = self.fetch_patterns.iter().map(|p| Value::String(p.to_string())).collect();
            m.insert("fetch".into(), Value::Array(pats));
        }
        if self.present.budgets {
            let mut b = Map::new();
            let num = |x: f64| serde_json::Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null);
            if let Some(x) = self.budgets.cpu_percent {
                b.insert("cpuPercent".into(), num(x));
            }
            if let Some(x) = self.budgets.memory_mb {
                b.insert("memoryMb".into(), num(x));
            }
            if let Some(x) = self.budgets.wall_clock_ms {
                b.insert("wallClockMs".into(), num(x));
            }
            m.insert("budgets".into(), Value::Object(b));
        }
        if self.present.secrets {
            let list = self
                .secrets
                .iter()
                .map(|n| match self.bound.get(n) {
                    Some(b) => serde_json::json!({
                        "name": n,
                        "hosts": b.hosts.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                    }),
                    None => Value::String(n.clone()),
                })
                .collect();
            m.insert("secrets".into(), Value::Array(list));
        }
        if self.has_events {
            let mut e = Map::new();
            let list = |l: &[TopicPattern]| Value::Array(l.iter().map(|t| Value::String(t.to_string())).collect());
            if self.has_publishes {
                e.insert("publishes".into(), list(&self.publishes));
            }
            if self.has_subscribes {
                e.insert("subscribes".into(), list(&self.subscribes));
            }
            m.insert("events".into(), Value::Object(e));
        }
        if let Some(d) = &self.database {
            m.insert("db".into(), serde_json::json!({ "database": d }));
        }
        if self.present.deny {
            let mut d = Map::new();
            if self.present.deny_fs {
                d.insert("fs".into(), Value::Array(self.deny_fs.iter().cloned().map(Value::String).collect()));
            }
            if self.present.deny_fetch {
                let list = self.deny_fetch.iter().map(|r| Value::String(r.to_string())).collect();
                d.insert("fetch".into(), Value::Array(list));
            }
            m.insert("deny".into(), Value::Object(d));
        }
        Value::Object(m)
    }

    /// `checkFs(path, mode)`: the lexical check of SPEC §2.
    pub fn check_fs(&self, path: &str, mode: FsMode) -> Decision {
        self.fs.check(path, mode)
    }

    /// `checkFs(path, mode, { resolveSymlinks: true })`: the lexical check, then
    /// the real path (what `open(2)` reaches from the raw path; see
    /// [`crate::fs::FsMatcher::authorize`]).
    pub fn check_fs_resolved(&self, path: &str, mode: FsMode) -> Decision {
        self.fs.check_resolved(path, mode)
    }

    /// `authorizeFs(path, mode, { resolveSymlinks })`: the check, and when it
    /// allows, the path the host must open: the normalised path, or with
    /// `resolve_symlinks` the real path. Open it without following a final
    /// symlink (`O_NOFOLLOW`), so what is opened is what was checked.
    pub fn authorize_fs(&self, path: &str, mode: FsMode, resolve_symlinks: bool) -> Result<String, DenyReason> {
        self.fs.authorize(path, mode, resolve_symlinks)
    }

    /// `checkFetch(url)` returning the decision only.
    pub fn check_fetch(&self, url: &str) -> Decision {
        crate::fetch::decision_of(&self.fetch.decide(url))
    }

    /// `checkFetch(url)` with the canonical URL the host must fetch when allowed.
    pub fn check_fetch_url(&self, url: &str) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check(url)
    }

    /// [`Self::check_fetch_url`] on a URL the caller already parsed (the
    /// binding keeps the parse to report the origin of a denial).
    pub fn check_fetch_parsed(&self, url: url::Url) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check_url(url)
    }

    /// `checkFetchAddress(url, resolvedIp)`: DNS-rebinding defence.
    pub fn check_fetch_address(&self, url: &str, resolved_ip: &str) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check_address(url, resolved_ip)
    }

    /// `secrets.get`: exact, case-sensitive.
    pub fn check_secret(&self, name: &str) -> Decision {
        if name.len() > MAX_PAYLOAD_STRING_BYTES {
            Decision::deny(Capability::SecretsGet, DenyReason::InvalidPayload)
        } else if self.secret_set.contains(name) {
            Decision::Allowed
        } else if self.bound.contains_key(name) {
            Decision::deny(Capability::SecretsGet, DenyReason::SecretNotReadable)
        } else {
            Decision::deny(Capability::SecretsGet, DenyReason::SecretNotDeclared)
        }
    }

    /// `secrets.use { name, url }` (SPEC §13): allowed only when `name` is a
    /// bound secret, `url` passes `checkFetch`, and `url` matches one of the
    /// secret's `hosts` patterns. An undeclared name is `secret_not_declared`;
    /// a readable (unbound) name, a URL `checkFetch` denies, or one outside the
    /// hosts is `secret_destination_not_allowed`.
    pub fn check_secret_use(&self, name: &str, url: &str) -> Decision {
        const CAP: Capability = Capability::SecretsUse;
        if name.len() > MAX_PAYLOAD_STRING_BYTES || url.len() > MAX_PAYLOAD_STRING_BYTES {
            return Decision::deny(CAP, DenyReason::InvalidPayload);
        }
        let Some(b) = self.bound.get(name) else {
            let reason = if self.secret_set.contains(name) {
                DenyReason::SecretDestinationNotAllowed
            } else {
                DenyReason::SecretNotDeclared
            };
            return Decision::deny(CAP, reason);
        };
        if self.fetch.check(url).is_ok() && b.matches(url) {
            Decision::Allowed
        } else {
            Decision::deny(CAP, DenyReason::SecretDestinationNotAllowed)
        }
    }

    /// `events.publish` (a concrete topic) and `events.subscribe` (a topic or pattern, which
    /// must be covered by a declared pattern).
    pub fn check_topic(&self, capability: Capability, topic: &str) -> Decision {
        let (patterns, must_be_concrete) = match capability {
            Capability::EventsPublish => (&self.publishes, true),
            Capability::EventsSubscribe => (&self.subscribes, false),
            other => return Decision::deny(other, DenyReason::UnknownCapability),
        };
        let Ok(requested) = TopicPattern::parse(topic) else {
            return Decision::deny(capability, DenyReason::InvalidPayload);
        };
        if must_be_concrete && !requested.is_concrete() {
            return Decision::deny(capability, DenyReason::InvalidPayload);
        }
        if patterns.iter().any(|p| p.covers(&requested)) {
            Decision::Allowed
        } else {
            Decision::deny(capability, DenyReason::TopicNotDeclared)
        }
    }

    /// `db.query`: the database equals the declared one, exactly.
    pub fn check_database(&self, database: &str) -> Decision {
        if database.len() > MAX_PAYLOAD_STRING_BYTES {
            Decision::deny(Capability::DbQuery, DenyReason::InvalidPayload)
        } else if self.database.as_deref() == Some(database) {
            Decision::Allowed
        } else {
            Decision::deny(Capability::DbQuery, DenyReason::DatabaseNotDeclared)
        }
    }

    /// `checkCapability(id, field)` where `field` is the payload's one string
    /// field for that capability (`path`, `url`, `name`, `topic`, `database`),
    /// or `None` when the payload lacks it or it is not a string.
    pub fn check_capability_field(&self, id: &str, field: Option<&str>) -> Decision {
        self.check_capability_fields(id, field, None)
    }

    /// `checkCapability(id, field, second)`: as [`Self::check_capability_field`],
    /// with the second payload field of a two-field capability (`secrets.use`:
    /// `url`); `None` when absent or not a string (then `invalid_payload`).
    /// Each field is at most 4096 bytes.
    pub fn check_capability_fields(&self, id: &str, field: Option<&str>, second: Option<&str>) -> Decision {
        let Some(cap) = Capability::from_id(id) else {
            return Decision::deny(Capability::Unknown, DenyReason::UnknownCapability);
        };
        let Some(field) = field else {
            return Decision::deny(cap, DenyReason::InvalidPayload);
        };
        if field.len() > MAX_PAYLOAD_STRING_BYTES {
            return Decision::deny(cap, DenyReason::InvalidPayload);
        }
        match cap {
            Capability::FsRead => self.check_fs(field, FsMode::Read),
            Capability::FsWrite => self.check_fs(field, FsMode::Write),
            Capability::Fetch => self.check_fetch(field),
            Capability::SecretsGet => self.check_secret(field),
            Capability::EventsPublish | Capability::EventsSubscribe => self.check_topic(cap, field),
            Capability::DbQuery => self.check_database(field),
            Capability::SecretsUse => match second {
                Some(url) => self.check_secret_use(field, url),
                None => Decision::deny(cap, DenyReason::InvalidPayload),
            },
            Capability::Unknown => Decision::deny(Capability::Unknown, DenyReason::UnknownCapability),
        }
    }

    /// `checkCapability(id, payload)` on a JSON payload: it must be an object
    /// whose field for the capability is a string of at most 4096 bytes.
    pub fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        let Some(cap) = Capability::from_id(id) else {
            return Decision::deny(Capability::Unknown, DenyReason::UnknownCapability);
        };
        let field = match (payload, cap.payload_field()) {
            (Value::Object(o), Some(key)) => o.get(key).and_then(Value::as_str),
            _ => None,
        };
        let second = match (payload, cap.second_payload_field()) {
            (Value::Object(o), Some(key)) => o.get(key).and_then(Value::as_str),
            _ => None,
        };
        self.check_capability_fields(id, field, second)
    }
}
