//! Explanations (which grant matched, or why none did) and lint warnings for
//! over-broad grants: the data behind the `explain` and `lint` CLI commands.

use serde_json::{json, Value};
use url::Url;

use crate::error::{Capability, Decision, DenyReason};
use crate::fetch::{is_special_address, DenyFetch, FetchPattern, Host, HostPattern, PortRule, Scheme};
use crate::fs::{deny_matches, grant_matches, normalize, FsMode, GrantMode};
use crate::policy::{PermissionPolicy, Platform};
use crate::topic::{Segment, TopicPattern};
use crate::urlpath::{grant_path_matches, RequestPath};

fn decision_json(d: Decision) -> Value {
    match d {
        Decision::Allowed => json!({ "allowed": true }),
        Decision::Denied(x) => {
            json!({ "allowed": false, "capability": x.capability.as_str(), "reason": x.reason.as_str() })
        }
    }
}

/// Domains whose subdomains belong to unrelated parties but which the Public
/// Suffix List does not list as suffixes (checked against the `psl` crate
/// this crate builds with): AWS lists only its service subdomains, GitHub
/// Codespaces serve `*.app.github.dev`, Glitch projects were `*.glitch.me`.
const SHARED_PARENTS: &[&str] = &["amazonaws.com", "github.dev", "glitch.me"];

/// Whether a `*.suffix` grant covers names owned by unrelated parties: a
/// single label (a TLD), a suffix of the full Public Suffix List (ICANN and
/// private sections, through the maintained `psl` crate), or one of
/// [`SHARED_PARENTS`].
fn is_public_suffix(suffix: &str) -> bool {
    let s = suffix.strip_suffix('.').unwrap_or(suffix);
    if !s.contains('.') || SHARED_PARENTS.contains(&s) {
        return true;
    }
    matches!(psl::suffix(s.as_bytes()), Some(found) if found.is_known() && found.as_bytes() == s.as_bytes())
}

impl PermissionPolicy {
    /// `explain fs`: the decision, the normalised path, and every grant matching it.
    pub fn explain_fs(&self, path: &str, mode: FsMode) -> Value {
        let decision = self.check_fs(path, mode);
        let normalized = normalize(path, self.platform());
        let mut matched = Vec::new();
        if let Ok(n) = &normalized {
            for (i, g) in self.fs_grants().iter().enumerate() {
                if grant_matches(&g.glob, &n.path, self.platform()) {
                    matched.push(json!({ "index": i, "pointer": format!("/fs/{i}"), "path": g.glob, "mode": g.mode.as_str(), "grantsMode": g.mode.allows(mode) }));
                }
            }
        }
        let why = match decision.reason() {
            None => "a grant matches the normalised path for this mode".to_owned(),
            Some(DenyReason::InvalidPath) => {
                "the path is empty, relative, too long, has NUL, or is a form this platform rejects".into()
            }
            Some(DenyReason::PathTraversal) => "a '..' climbs above the root or out of every grant".into(),
            Some(DenyReason::ModeNotGranted) => "a grant matches the path, but none grants this mode".into(),
            Some(DenyReason::NotAllowlisted) => "no grant matches the normalised path".into(),
            Some(DenyReason::ExplicitlyDenied) => {
                "a deny rule matches the normalised path; deny wins over every grant".into()
            }
            Some(r) => r.as_str().into(),
        };
        let denied_by = match &normalized {
            Ok(n) if decision.reason() == Some(DenyReason::ExplicitlyDenied) => self
                .deny_fs()
                .iter()
                .enumerate()
                .find(|(_, g)| deny_matches(g, &n.path, self.platform()))
                .map(|(i, g)| json!({ "index": i, "pointer": format!("/deny/fs/{i}"), "path": g })),
            _ => None,
        };
        json!({
            "query": { "kind": "fs", "mode": if mode == FsMode::Read { "read" } else { "write" } },
            "decision": decision_json(decision),
            "normalized": normalized.ok().map(|n| n.path),
            "matchedGrants": matched,
            "deniedBy": denied_by,
            "why": why,
        })
    }

    /// `explain fetch`: the decision, the parsed URL parts, and each pattern whose host matches.
    pub fn explain_fetch(&self, url: &str) -> Value {
        let decision = self.check_fetch(url);
        let parsed = Url::parse(url).ok();
        let mut parts = Value::Null;
        let mut matched = Vec::new();
        if let Some(u) = &parsed {
            let host = u.host().map(crate::fetch::Host::from_url_host);
            let port = u.port_or_known_default();
            parts = json!({
                "canonical": u.as_str(),
                "scheme": u.scheme(),
                "host": host.as_ref().map(|h| h.to_string()),
                "port": port,
                "hasCredentials": !u.username().is_empty() || u.password().is_some(),
            });
            if let (Some(h), Some(port)) = (host, port) {
                let scheme = Scheme::parse(u.scheme());
                let req = RequestPath::of(u.path(), u.cannot_be_a_base());
                for (i, p) in self.fetch_patterns().iter().enumerate() {
                    if p.host_matches(&h) {
                        matched.push(json!({
                            "index": i,
                            "pointer": format!("/fetch/{i}"),
                            "pattern": p.to_string(),
                            "schemeOk": scheme.is_some_and(|s| p.scheme_ok(s)),
                            "portOk": scheme.is_some_and(|s| p.port_ok(s, port)),
                            "pathOk": p.path.as_ref().is_none_or_match(&req),
                        }));
                    }
                }
            }
        }
        let denied_by = parsed.as_ref().and_then(|u| self.fetch_denied_by(u, None)).map(|i| {
            json!({ "index": i, "pointer": format!("/deny/fetch/{i}"), "pattern": self.deny_fetch()[i].to_string() })
        });
        json!({
            "query": { "kind": "fetch" },
            "decision": decision_json(decision),
            "url": parts,
            "hostMatches": matched,
            "deniedBy": denied_by,
        })
    }

    /// `explain cap`: the decision and the declarations that decided it.
    pub fn explain_capability(&self, id: &str, field: Option<&str>) -> Value {
        let decision = self.check_capability_field(id, field);
        let cap = Capability::from_id(id);
        let mut matched = Vec::new();
        match (cap, field) {
            (Some(Capability::FsRead | Capability::FsWrite), Some(p)) => {
                let mode = if cap == Some(Capability::FsRead) { FsMode::Read } else { FsMode::Write };
                return json!({ "query": { "kind": "capability", "id": id }, "decision": decision_json(decision), "fs": self.explain_fs(p, mode) });
            }
            (Some(Capability::Fetch), Some(u)) => {
                return json!({ "query": { "kind": "capability", "id": id }, "decision": decision_json(decision), "fetch": self.explain_fetch(u) });
            }
            (Some(Capability::SecretsGet), Some(name)) => {
                if let Some(i) = self.secrets().iter().position(|s| s == name) {
                    matched.push(json!({ "pointer": format!("/secrets/{i}") }));
                }
            }
            (Some(c @ (Capability::EventsPublish | Capability::EventsSubscribe)), Some(t)) => {
                let (key, list) = if c == Capability::EventsPublish {
                    ("publishes", self.publishes())
                } else {
                    ("subscribes", self.subscribes())
                };
                if let Ok(req) = TopicPattern::parse(t) {
                    for (i, p) in list.iter().enumerate() {
                        if p.covers(&req) {
                            matched.push(json!({ "pointer": format!("/events/{key}/{i}"), "pattern": p.to_string() }));
                        }
                    }
                }
            }
            (Some(Capability::DbQuery), Some(d)) if self.database() == Some(d) => {
                matched.push(json!({ "pointer": "/db/database" }))
            }
            _ => {}
        }
        json!({ "query": { "kind": "capability", "id": id }, "decision": decision_json(decision), "matched": matched })
    }

    /// `explain cap` on a whole JSON payload: for `secrets.use` (two fields)
    /// the decision, the bound secret's `hosts` patterns that match the URL
    /// (by pointer), and the fetch explanation of the URL; for every other
    /// capability the same as [`Self::explain_capability`] on its field.
    pub fn explain_capability_payload(&self, id: &str, payload: &Value) -> Value {
        let cap = Capability::from_id(id);
        if cap != Some(Capability::SecretsUse) {
            let field = cap.and_then(|c| c.payload_field()).and_then(|k| payload.get(k)).and_then(Value::as_str);
            return self.explain_capability(id, field);
        }
        let decision = self.check_capability(id, payload);
        let query = json!({ "kind": "capability", "id": id });
        let (Some(name), Some(url)) =
            (payload.get("name").and_then(Value::as_str), payload.get("url").and_then(Value::as_str))
        else {
            return json!({ "query": query, "decision": decision_json(decision), "matched": [] });
        };
        let mut matched = Vec::new();
        if let Some(i) = self.secrets().iter().position(|s| s == name) {
            match self.bound_secret(name) {
                Some(b) => {
                    for (j, h) in b.hosts.iter().enumerate() {
                        if crate::fetch::FetchMatcher::compile(std::slice::from_ref(h)).check(url).is_ok() {
                            matched.push(
                                json!({ "pointer": format!("/secrets/{i}/hosts/{j}"), "pattern": h.to_string() }),
                            );
                        }
                    }
                }
                None => matched.push(json!({ "pointer": format!("/secrets/{i}"), "readable": true })),
            }
        }
        json!({ "query": query, "decision": decision_json(decision), "matched": matched, "fetch": self.explain_fetch(url) })
    }

    /// Warnings for grants that widen authority more than they likely mean to.
    /// Each is `{ pointer, code, message }`.
    pub fn lint(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut warn = |pointer: String, code: &str, message: String| {
            out.push(json!({ "pointer": pointer, "code": code, "message": message }))
        };
        let root_len = self.platform().root_len();
        for (i, g) in self.fs_grants().iter().enumerate() {
            let body = &g.glob[root_len..];
            // Literal segments before the first wildcard.
            let literal_depth = body
                .split('/')
                .skip(1)
                .take_while(|s| !s.contains(['*', '?', '[', '{']))
                .filter(|s| !s.is_empty())
                .count();
            let wild = body.contains(['*', '?', '[', '{']);
            if wild && literal_depth == 0 {
                warn(
                    format!("/fs/{i}"),
                    "fs-root-wildcard",
                    format!(
                        "'{}' grants names at the filesystem root{}",
                        g.glob,
                        if body.contains("**") { " and everything below it" } else { "" }
                    ),
                );
            } else if body.ends_with("/**") && literal_depth == 1 {
                warn(
                    format!("/fs/{i}"),
                    "fs-top-level-recursive",
                    format!("'{}' grants everything under a top-level directory", g.glob),
                );
            }
            if g.mode != GrantMode::Read && (literal_depth <= 1 && (wild || body == "/")) {
                warn(
                    format!("/fs/{i}/mode"),
                    "fs-write-near-root",
                    format!("'{}' grants {} access at or just below a root", g.glob, g.mode.as_str()),
                );
            }
        }
        for (i, p) in self.fetch_patterns().iter().enumerate() {
            let ptr = format!("/fetch/{i}");
            if let HostPattern::Suffix(s) = &p.host {
                if is_public_suffix(s) {
                    warn(
                        ptr.clone(),
                        "fetch-public-suffix",
                        format!("'*.{s}' is a public suffix: it grants hosts owned by anyone"),
                    );
                }
            }
            if p.port == PortRule::Any {
                warn(ptr.clone(), "fetch-any-port", format!("'{p}' grants every port of the host"));
            }
            if p.scheme.is_none() {
                warn(ptr.clone(), "fetch-plain-http", format!("'{p}' has no scheme, so it also grants plaintext http"));
            }
            if let HostPattern::Exact(h) = &p.host {
                let ip = match h {
                    crate::fetch::Host::Ipv4(a) => Some(std::net::IpAddr::V4(*a)),
                    crate::fetch::Host::Ipv6(a) => Some(std::net::IpAddr::V6(*a)),
                    crate::fetch::Host::Domain(d) if d == "localhost" => Some(std::net::Ipv4Addr::LOCALHOST.into()),
                    crate::fetch::Host::Domain(_) => None,
                };
                if ip.is_some_and(is_special_address) {
                    warn(
                        ptr.clone(),
                        "fetch-internal-address",
                        format!("'{p}' grants a loopback, private or link-local address"),
                    );
                }
            }
        }
        for (key, list) in [("publishes", self.publishes()), ("subscribes", self.subscribes())] {
            for (i, t) in list.iter().enumerate() {
                if matches!(t.segments().first(), Some(Segment::Rest | Segment::One))
                    && !t.segments().iter().any(|s| matches!(s, Segment::Literal(_)))
                {
                    warn(
                        format!("/events/{key}/{i}"),
                        "events-wildcard-only",
                        format!("'{t}' covers every topic of its length or more"),
                    );
                }
            }
        }
        self.lint_deny(&mut warn);
        self.lint_bound_secrets(&mut warn);
        let b = self.budgets();
        if b.wall_clock_ms.is_none() {
            warn(
                "/budgets/wallClockMs".into(),
                "budget-missing",
                "no wallClockMs budget: a runaway request is never stopped".into(),
            );
        }
        if b.cpu_percent.is_none() && b.memory_mb.is_none() {
            warn("/budgets".into(), "budget-missing", "no cpuPercent or memoryMb budget".into());
        }
        out
    }
}

trait PathOk {
    fn is_none_or_match(&self, req: &RequestPath<'_>) -> bool;
}

impl PathOk for Option<&crate::urlpath::PathPattern> {
    fn is_none_or_match(&self, req: &RequestPath<'_>) -> bool {
        match self {
            None => true,
            Some(p) => grant_path_matches(p, req),
        }
    }
}

/// The literal directory segments of a normalised glob before its first
/// wildcard, folded like the matcher (win32: NTFS upper case).
fn literal_dirs(glob: &str, platform: Platform) -> Vec<String> {
    let root_len = if platform == Platform::Win32 { 2 } else { 0 };
    let body = &glob[root_len..];
    let mut out: Vec<String> = body
        .split('/')
        .skip(1)
        .take_while(|s| !s.contains(['*', '?', '[', '{', '\\']))
        .filter(|s| !s.is_empty())
        // Compared as the deny index compares: NTFS case on win32, the posix deny fold on posix.
        .map(|s| if platform == Platform::Win32 { crate::glob::fold_str(s) } else { crate::posix_fold::fold(s) })
        .collect();
    if platform == Platform::Win32 {
        out.insert(0, glob[..root_len].to_ascii_uppercase());
    }
    out
}

/// Whether two fetch hosts can name one host.
fn hosts_overlap(a: &HostPattern, b: &HostPattern) -> bool {
    let under =
        |d: &str, s: &str| d.len() > s.len() + 1 && d.ends_with(s) && d.as_bytes()[d.len() - s.len() - 1] == b'.';
    match (a, b) {
        (HostPattern::Exact(x), HostPattern::Exact(y)) => x == y,
        (HostPattern::Suffix(s), HostPattern::Exact(Host::Domain(d)))
        | (HostPattern::Exact(Host::Domain(d)), HostPattern::Suffix(s)) => under(d, s),
        (HostPattern::Suffix(s), HostPattern::Suffix(t)) => s == t || under(s, t) || under(t, s),
        _ => false,
    }
}

/// Whether a deny pattern and a grant can both match one request (scheme,
/// host and port; path scopes are assumed to overlap).
fn deny_reaches(d: &FetchPattern, g: &FetchPattern) -> bool {
    let grant_schemes: &[Scheme] = match &g.scheme {
        None => &[Scheme::Http, Scheme::Https],
        Some(s) => std::slice::from_ref(s),
    };
    let schemes: Vec<Scheme> =
        grant_schemes.iter().copied().filter(|s| d.scheme.is_none() || d.scheme == Some(*s)).collect();
    let ports = schemes.iter().any(|s| match (d.port, g.port) {
        (PortRule::Exact(x), PortRule::Exact(y)) => x == y,
        (PortRule::Exact(x), PortRule::Default) => x == s.default_port(),
        _ => true,
    });
    // A deny naming localhost or *.localhost also denies the loopback addresses.
    let loopback = matches!(&d.host, HostPattern::Exact(Host::Domain(h)) | HostPattern::Suffix(h) if h == "localhost")
        && (matches!(&g.host, HostPattern::Exact(Host::Ipv4(a)) if a.is_loopback())
            || matches!(&g.host, HostPattern::Exact(Host::Ipv6(a)) if a.is_loopback()));
    !schemes.is_empty() && ports && (hosts_overlap(&d.host, &g.host) || loopback)
}

impl PermissionPolicy {
    /// `deny-unreachable` warnings: deny rules that no grant could reach
    /// (a deny still denies; the warning says it decides nothing today).
    /// SPEC §13: a bound secret's hosts pattern that no fetch grant covers
    /// (scheme and host; ports and paths are not compared) can never be sent.
    fn lint_bound_secrets(&self, warn: &mut impl FnMut(String, &str, String)) {
        fn host_covers(g: &HostPattern, h: &HostPattern) -> bool {
            match (g, h) {
                (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
                (HostPattern::Suffix(s), HostPattern::Exact(Host::Domain(d))) => d.ends_with(&format!(".{s}")),
                (HostPattern::Suffix(s), HostPattern::Suffix(t)) => t == s || t.ends_with(&format!(".{s}")),
                _ => false,
            }
        }
        for (i, name) in self.secrets().iter().enumerate() {
            let Some(b) = self.bound_secret(name) else { continue };
            for (j, h) in b.hosts.iter().enumerate() {
                let covered = self
                    .fetch_patterns()
                    .iter()
                    .any(|g| (g.scheme.is_none() || g.scheme == h.scheme) && host_covers(&g.host, &h.host));
                if !covered {
                    warn(
                        format!("/secrets/{i}/hosts/{j}"),
                        "secret-host-not-granted",
                        format!("no fetch grant covers '{h}': the bound secret can never be sent there"),
                    );
                }
            }
        }
    }

    fn lint_deny(&self, warn: &mut impl FnMut(String, &str, String)) {
        let platform = self.platform();
        let grant_dirs: Vec<Vec<String>> = self.fs_grants().iter().map(|g| literal_dirs(&g.glob, platform)).collect();
        for (i, d) in self.deny_fs().iter().enumerate() {
            let dd = literal_dirs(d, platform);
            let reached = grant_dirs.iter().any(|g| {
                let n = g.len().min(dd.len());
                g[..n] == dd[..n]
            });
            if !reached {
                warn(
                    format!("/deny/fs/{i}"),
                    "deny-unreachable",
                    format!("no fs grant could reach '{d}': the deny rule decides nothing"),
                );
            }
        }
        for (i, d) in self.deny_fetch().iter().enumerate() {
            let reached = match d {
                DenyFetch::Cidr { net, len } => self.fetch_patterns().iter().any(|g| match &g.host {
                    HostPattern::Exact(Host::Ipv4(a)) => {
                        DenyFetch::Cidr { net: *net, len: *len }.contains(std::net::IpAddr::V4(*a))
                    }
                    HostPattern::Exact(Host::Ipv6(a)) => {
                        DenyFetch::Cidr { net: *net, len: *len }.contains(std::net::IpAddr::V6(*a))
                    }
                    // A name can resolve to any address (checkFetchAddress).
                    _ => true,
                }),
                DenyFetch::Pattern(p) => self.fetch_patterns().iter().any(|g| deny_reaches(p, g)),
            };
            if !reached {
                warn(
                    format!("/deny/fetch/{i}"),
                    "deny-unreachable",
                    format!("no fetch grant could reach '{d}': the deny rule decides nothing"),
                );
            }
        }
    }
}

#[cfg(test)]
mod public_suffix_tests {
    use super::is_public_suffix;

    #[test]
    fn the_full_list_private_section_included() {
        // Private-section entries a curated subset missed, and the one GitHub name the list lacks.
        for s in ["r2.dev", "deno.dev", "supabase.co", "github.dev"] {
            assert!(is_public_suffix(s), "{s}");
        }
        // ICANN entries, wildcard rules, single labels, the old curated entries.
        for s in [
            "com",
            "co.uk",
            "com.au",
            "github.io",
            "s3.amazonaws.com",
            "eu-west-1.compute.amazonaws.com",
            "amazonaws.com",
            "vercel.app",
            "localhost",
            "xn--p1ai",
        ] {
            assert!(is_public_suffix(s), "{s}");
        }
        // Registrable domains and names under them are not.
        for s in [
            "example.com",
            "api.example.co.uk",
            "bucket.s3.amazonaws.com",
            "cdn.example.net",
            "foo.internal",
            "my-project.r2.dev",
        ] {
            assert!(!is_public_suffix(s), "{s}");
        }
    }
}
