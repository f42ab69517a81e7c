//! Explanations: which grant matched a request, or why none did, with the
//! JSON pointers of the declarations that decided it. The data behind the
//! `explain` CLI command; tooling, not a hot path. (`lint` is in
//! [`crate::lint`].)

use serde_json::{json, Value};
use url::Url;

use crate::error::{Capability, Decision, DenyReason};
use crate::fetch::Scheme;
use crate::fs::{deny_matches, grant_matches, normalize, FsMode};
use crate::policy::PermissionPolicy;
use crate::topic::TopicPattern;
use crate::urlpath::{grant_path_matches, RequestPath};

/// One sentence on why a check of `cap` decided as it did (`None`: allowed).
fn why(cap: Capability, reason: Option<DenyReason>) -> &'static str {
    use DenyReason as R;
    let fs = matches!(cap, Capability::FsRead | Capability::FsWrite);
    match reason {
        None if fs => "a grant matches the normalised path for this mode",
        None => "a declaration in the manifest allows it",
        Some(R::InvalidPath) => "the path is empty, relative, too long, has NUL, or is a form this platform rejects",
        Some(R::PathTraversal) => "a '..' climbs above the root or out of every grant",
        Some(R::ModeNotGranted) => "a grant matches the path, but none grants this mode",
        Some(R::NotAllowlisted) => "no grant matches the normalised path",
        Some(R::ExplicitlyDenied) if fs => "a deny rule matches the normalised path; deny wins over every grant",
        Some(R::ExplicitlyDenied) => "a deny rule matches the URL; deny wins over every grant",
        Some(R::SymlinkEscape) => "the real path, symlinks resolved, is outside every grant",
        Some(R::InvalidUrl) => "the URL does not parse as an absolute URL, or has an IPv6 zone id",
        Some(R::SchemeNotAllowed) => "a pattern matches the host, but none grants this scheme",
        Some(R::PortNotAllowed) => "a pattern matches the host and scheme, but none grants this port",
        Some(R::HostNotAllowlisted) => "no fetch pattern matches the host",
        Some(R::CredentialsInUrl) => "the URL carries a username or password, which is never allowed",
        Some(R::AddressNotAllowed) => {
            "the resolved address is loopback, private, link-local or reserved, and no grant names it"
        }
        Some(R::PathNotAllowed) => {
            "a pattern matches scheme, host and port, but none of the patterns for this host covers the URL's path"
        }
        Some(R::SecretNotDeclared) => "the secret is not declared in `secrets`",
        Some(R::SecretNotReadable) => {
            "the secret is bound to destinations: it can be sent with secrets.use, never read"
        }
        Some(R::SecretDestinationNotAllowed) => {
            "the URL fails the fetch check or matches none of the secret's `hosts` (or the secret is not bound)"
        }
        Some(R::TopicNotDeclared) => "no declared topic pattern covers the topic",
        Some(R::DatabaseNotDeclared) => "the database is not the one declared in `db`",
        Some(R::UnknownCapability) => "the capability id is not one this package knows",
        Some(R::InvalidPayload) => "the payload has the wrong shape or an over-long string",
    }
}

fn decision_json(d: Decision) -> Value {
    match d {
        Decision::Allowed => json!({ "allowed": true }),
        Decision::Denied(x) => {
            json!({ "allowed": false, "capability": x.capability.as_str(), "reason": x.reason.as_str() })
        }
    }
}

/// Most match steps `explain fs` lets its one-by-one matching of grants
/// and deny rules cost together (about a tenth of a second).
pub const EXPLAIN_MAX_STEPS: u64 = 50_000_000;

impl PermissionPolicy {
    /// `explain fs`: the decision, the normalised path, and every grant matching it.
    #[must_use]
    pub fn explain_fs(&self, path: &str, mode: FsMode) -> Value {
        let decision = self.check_fs(path, mode);
        let normalized = normalize(path, self.platform());
        let mut matched = Vec::new();
        // Grants (and deny rules) are matched one by one, each with a step
        // budget of its own: the listing stops where the steps they may
        // cost together pass EXPLAIN_MAX_STEPS (the decision is the check's,
        // whatever is listed).
        let mut steps = 0u64;
        let mut incomplete = false;
        let mut afford = |glob: &str, path: &str, deny: bool| {
            let cost = crate::diff::glob_check_steps(glob, self.platform(), path.len(), deny);
            steps = steps.saturating_add(cost);
            incomplete |= steps > EXPLAIN_MAX_STEPS;
            !incomplete
        };
        if let Ok(n) = &normalized {
            for (i, g) in self.fs_grants().iter().enumerate() {
                if !afford(&g.glob, &n.path, false) {
                    break;
                }
                if grant_matches(&g.glob, &n.path, self.platform()) {
                    matched.push(json!({ "index": i, "pointer": format!("/fs/{i}"), "path": g.glob, "mode": g.mode.as_str(), "grantsMode": g.mode.allows(mode) }));
                }
            }
        }
        let why = why(Capability::FsRead, decision.reason());
        let denied_by = match &normalized {
            Ok(n) if decision.reason() == Some(DenyReason::ExplicitlyDenied) => self
                .deny_fs()
                .iter()
                .enumerate()
                .take_while(|(_, g)| afford(g, &n.path, true))
                .find(|(_, g)| deny_matches(g, &n.path, self.platform()))
                .map(|(i, g)| json!({ "index": i, "pointer": format!("/deny/fs/{i}"), "path": g })),
            _ => None,
        };
        let mut out = json!({
            "query": { "kind": "fs", "mode": if mode == FsMode::Read { "read" } else { "write" } },
            "decision": decision_json(decision),
            "normalized": normalized.ok().map(|n| n.path),
            "matchedGrants": matched,
            "deniedBy": denied_by,
            "why": why,
        });
        if incomplete {
            out["incomplete"] = json!(format!(
                "the grants and deny rules were matched until their checks could pass {EXPLAIN_MAX_STEPS} match steps: \
                 the lists may be partial (the decision is the check's)"
            ));
        }
        out
    }

    /// `explain fetch`: the decision, the parsed URL parts, and each pattern whose host matches.
    #[must_use]
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
            "why": why(Capability::Fetch, decision.reason()),
        })
    }

    /// `explain cap`: the decision and the declarations that decided it.
    #[must_use]
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
        let why = why(cap.unwrap_or(Capability::Unknown), decision.reason());
        json!({ "query": { "kind": "capability", "id": id }, "decision": decision_json(decision), "matched": matched, "why": why })
    }

    /// `explain cap` on a whole JSON payload: for `secrets.use` (two fields)
    /// the decision, the bound secret's `hosts` patterns that match the URL
    /// (by pointer), and the fetch explanation of the URL; for every other
    /// capability the same as [`Self::explain_capability`] on its field.
    #[must_use]
    pub fn explain_capability_payload(&self, id: &str, payload: &Value) -> Value {
        let cap = Capability::from_id(id);
        if cap != Some(Capability::SecretsUse) {
            let field = cap.and_then(|c| c.payload_field()).and_then(|k| payload.get(k)).and_then(Value::as_str);
            return self.explain_capability(id, field);
        }
        let decision = self.check_capability(id, payload);
        let query = json!({ "kind": "capability", "id": id });
        let why = why(Capability::SecretsUse, decision.reason());
        let (Some(name), Some(url)) =
            (payload.get("name").and_then(Value::as_str), payload.get("url").and_then(Value::as_str))
        else {
            return json!({ "query": query, "decision": decision_json(decision), "matched": [], "why": why });
        };
        let mut matched = Vec::new();
        if let Some(i) = self.secrets().iter().position(|s| s == name) {
            match self.bound_secret(name) {
                Some(b) => {
                    for (j, h) in b.hosts().iter().enumerate() {
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
        json!({ "query": query, "decision": decision_json(decision), "matched": matched, "why": why, "fetch": self.explain_fetch(url) })
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::fs::FsMode;
    use crate::platform::Platform;
    use crate::policy::{PermissionPolicy, PolicyOptions};

    /// Thousands of hostile grants in one directory: the listing stops at
    /// its bound and says so; the decision is still the check's.
    #[test]
    fn explain_fs_is_bounded() {
        let hostile: Vec<String> = (0..2000).map(|i| format!("/a/*{}{i}*b*", "?".repeat(60))).collect();
        let m = json!({ "fs": hostile.iter().cloned().chain(["/a/*".to_owned()]).collect::<Vec<_>>() });
        let p = PermissionPolicy::from_manifest(&m, PolicyOptions::new("t").platform(Platform::Posix)).unwrap();
        let path = format!("/a/{}", "a".repeat(4000));
        let e = p.explain_fs(&path, FsMode::Read);
        assert_eq!(e["decision"]["allowed"], json!(p.check_fs(&path, FsMode::Read).is_allowed()));
        assert!(e["incomplete"].is_string(), "{}", e["incomplete"]);
        // A small policy is listed in full.
        let p = PermissionPolicy::from_manifest(
            &json!({ "fs": ["/a/*", "/a/**"] }),
            PolicyOptions::new("t").platform(Platform::Posix),
        )
        .unwrap();
        let e = p.explain_fs("/a/x", FsMode::Read);
        assert_eq!(e["matchedGrants"].as_array().unwrap().len(), 2);
        assert!(e.get("incomplete").is_none());
    }
}
