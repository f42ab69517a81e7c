//! Per-capability gating (SPEC §4, §13): which secrets a plugin may read or
//! send, which topics it may publish or subscribe to, which database it may
//! query, and `checkCapability`'s dispatch from a capability id and its
//! payload field to the check that decides it. The topic grammar is in
//! [`crate::topic`]; fs and fetch checks are in [`crate::fs`] and
//! [`crate::fetch`], reached from here through their compiled matchers.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::error::{Capability, Decision, DenyReason};
use crate::fetch::{decision_of, FetchMatcher, FetchPattern};
use crate::fs::{FsMatcher, FsMode};
/// Re-exported: the topic grammar lives in [`crate::topic`]; these paths keep working.
pub use crate::topic::{Segment, TopicError, TopicPattern, MAX_TOPIC_SEGMENTS};

/// Longest string field a payload may carry, in bytes (longer is `invalid_payload`).
pub const MAX_PAYLOAD_STRING_BYTES: usize = 4096;
const _: () = assert!(crate::topic::MAX_TOPIC_BYTES == MAX_PAYLOAD_STRING_BYTES);

/// A destination-bound secret: its `hosts` patterns (fetch grammar, paths
/// included) and their matcher.
#[derive(Debug, Clone)]
pub struct BoundSecret {
    hosts: Vec<FetchPattern>,
    matcher: FetchMatcher,
}

impl BoundSecret {
    /// A bound secret sendable to `hosts` (compiled once, here).
    pub(crate) fn new(hosts: Vec<FetchPattern>) -> Self {
        let matcher = FetchMatcher::compile(&hosts);
        Self { hosts, matcher }
    }

    /// The `hosts` patterns, as parsed (canonical when displayed). Read-only:
    /// the matcher is compiled from them.
    #[must_use]
    pub fn hosts(&self) -> &[FetchPattern] {
        &self.hosts
    }

    /// Whether `url` matches one of the hosts patterns (scheme, host, port and path).
    #[must_use]
    pub fn matches(&self, url: &str) -> bool {
        self.matcher.check(url).is_ok()
    }
}

/// The manifest's `secrets` section: every declared name in manifest order,
/// the readable ones (`secrets.get`) and the destination-bound ones
/// (`secrets.use`, SPEC §13). A name is one or the other, never both.
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    names: Vec<String>,
    readable: HashSet<String>,
    bound: HashMap<String, BoundSecret>,
}

impl Secrets {
    /// Declares a readable secret; a repeated name is kept once.
    pub(crate) fn add_readable(&mut self, name: &str) {
        if self.readable.insert(name.to_owned()) {
            self.names.push(name.to_owned());
        }
    }

    /// Declares a bound secret (the caller has checked the name is new).
    pub(crate) fn add_bound(&mut self, name: &str, secret: BoundSecret) {
        self.bound.insert(name.to_owned(), secret);
        self.names.push(name.to_owned());
    }

    /// Whether `name` is declared readable.
    pub(crate) fn is_readable(&self, name: &str) -> bool {
        self.readable.contains(name)
    }

    /// Every declared name, readable and bound, in manifest order.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The bound secret named `name`, if any.
    pub(crate) fn bound(&self, name: &str) -> Option<&BoundSecret> {
        self.bound.get(name)
    }
}

/// The manifest's `events` section: each list `None` when its key is absent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Events {
    /// `events.publishes`.
    pub(crate) publishes: Option<Vec<TopicPattern>>,
    /// `events.subscribes`.
    pub(crate) subscribes: Option<Vec<TopicPattern>>,
}

/// The grants of the payload-gated capabilities: the manifest's `secrets`,
/// `events` and `db` sections, each `None` when the manifest lacks it (then
/// nothing of it is granted).
#[derive(Debug, Clone, Default)]
pub(crate) struct CapabilityGrants {
    /// `secrets`.
    pub(crate) secrets: Option<Box<Secrets>>,
    /// `events`.
    pub(crate) events: Option<Box<Events>>,
    /// `db.database`.
    pub(crate) database: Option<String>,
}

impl CapabilityGrants {
    /// Every declared secret name, in manifest order.
    pub(crate) fn secret_names(&self) -> &[String] {
        self.secrets.as_deref().map_or(&[], Secrets::names)
    }

    /// The bound secret named `name`, if any.
    pub(crate) fn bound_secret(&self, name: &str) -> Option<&BoundSecret> {
        self.secrets.as_ref().and_then(|s| s.bound(name))
    }

    fn is_readable(&self, name: &str) -> bool {
        self.secrets.as_ref().is_some_and(|s| s.is_readable(name))
    }

    /// The declared `events.publishes` patterns (empty when absent).
    pub(crate) fn publishes(&self) -> &[TopicPattern] {
        self.events.as_ref().and_then(|e| e.publishes.as_deref()).unwrap_or(&[])
    }

    /// The declared `events.subscribes` patterns (empty when absent).
    pub(crate) fn subscribes(&self) -> &[TopicPattern] {
        self.events.as_ref().and_then(|e| e.subscribes.as_deref()).unwrap_or(&[])
    }

    /// `secrets.get`: exact, case-sensitive; a bound secret is not readable.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub(crate) fn check_secret(&self, name: &str) -> Decision {
        if name.len() > MAX_PAYLOAD_STRING_BYTES {
            Decision::deny(Capability::SecretsGet, DenyReason::InvalidPayload)
        } else if self.is_readable(name) {
            Decision::Allowed
        } else if self.bound_secret(name).is_some() {
            Decision::deny(Capability::SecretsGet, DenyReason::SecretNotReadable)
        } else {
            Decision::deny(Capability::SecretsGet, DenyReason::SecretNotDeclared)
        }
    }

    /// `secrets.use { name, url }` (SPEC §13): allowed only when `name` is a
    /// bound secret, `fetch` allows `url`, and `url` matches one of the
    /// secret's `hosts` patterns. An undeclared name is `secret_not_declared`;
    /// a readable (unbound) name, a URL `fetch` denies, or one outside the
    /// hosts is `secret_destination_not_allowed`.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub(crate) fn check_secret_use(&self, fetch: &FetchMatcher, name: &str, url: &str) -> Decision {
        const CAP: Capability = Capability::SecretsUse;
        if name.len() > MAX_PAYLOAD_STRING_BYTES || url.len() > MAX_PAYLOAD_STRING_BYTES {
            return Decision::deny(CAP, DenyReason::InvalidPayload);
        }
        let Some(b) = self.bound_secret(name) else {
            let reason = if self.is_readable(name) {
                DenyReason::SecretDestinationNotAllowed
            } else {
                DenyReason::SecretNotDeclared
            };
            return Decision::deny(CAP, reason);
        };
        if fetch.check(url).is_ok() && b.matches(url) {
            Decision::Allowed
        } else {
            Decision::deny(CAP, DenyReason::SecretDestinationNotAllowed)
        }
    }

    /// `events.publish` (a concrete topic) and `events.subscribe` (a topic or
    /// pattern, which must be covered by a declared pattern). Any other
    /// capability is `unknown_capability`.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub(crate) fn check_topic(&self, capability: Capability, topic: &str) -> Decision {
        let (patterns, must_be_concrete) = match capability {
            Capability::EventsPublish => (self.publishes(), true),
            Capability::EventsSubscribe => (self.subscribes(), false),
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
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub(crate) fn check_database(&self, database: &str) -> Decision {
        if database.len() > MAX_PAYLOAD_STRING_BYTES {
            Decision::deny(Capability::DbQuery, DenyReason::InvalidPayload)
        } else if self.database.as_deref() == Some(database) {
            Decision::Allowed
        } else {
            Decision::deny(Capability::DbQuery, DenyReason::DatabaseNotDeclared)
        }
    }
}

/// What `checkCapability` decides with: the compiled fs and fetch grants and
/// the payload-gated ones, borrowed from one policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gate<'a> {
    /// The policy's fs matcher (grants and `deny.fs`).
    pub(crate) fs: &'a FsMatcher,
    /// The policy's fetch matcher (grants and `deny.fetch`).
    pub(crate) fetch: &'a FetchMatcher,
    /// Secrets, events, db.
    pub(crate) grants: &'a CapabilityGrants,
}

impl Gate<'_> {
    /// `checkCapability(id, field, second)`: `field` is the payload's string
    /// field for the capability (`path`, `url`, `name`, `topic`,
    /// `database`), `second` the second field of a two-field capability
    /// (`secrets.use`: `url`); `None` when absent or not a string (then
    /// `invalid_payload`). Each field is at most 4096 bytes.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub(crate) fn check_fields(self, id: &str, field: Option<&str>, second: Option<&str>) -> Decision {
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
            Capability::FsRead => self.fs.check(field, FsMode::Read),
            Capability::FsWrite => self.fs.check(field, FsMode::Write),
            Capability::Fetch => decision_of(&self.fetch.decide(field)),
            Capability::SecretsGet => self.grants.check_secret(field),
            Capability::EventsPublish | Capability::EventsSubscribe => self.grants.check_topic(cap, field),
            Capability::DbQuery => self.grants.check_database(field),
            Capability::SecretsUse => match second {
                Some(url) => self.grants.check_secret_use(self.fetch, field, url),
                None => Decision::deny(cap, DenyReason::InvalidPayload),
            },
            Capability::Unknown => Decision::deny(Capability::Unknown, DenyReason::UnknownCapability),
        }
    }

    /// `checkCapability(id, payload)` on a JSON payload: it must be an object
    /// whose field for the capability is a string of at most 4096 bytes.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub(crate) fn check_payload(self, id: &str, payload: &Value) -> Decision {
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
        self.check_fields(id, field, second)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::platform::Platform;

    #[test]
    fn the_dispatch_reaches_each_gate_and_checks_the_payload_first() {
        let grants = CapabilityGrants {
            secrets: Some({
                let mut s = Box::<Secrets>::default();
                s.add_readable("token");
                s
            }),
            events: Some(Box::new(Events {
                publishes: Some(vec![TopicPattern::parse("a.*").unwrap()]),
                subscribes: None,
            })),
            database: Some("main".into()),
        };
        let (fs, fetch) = (FsMatcher::new(Platform::Posix), FetchMatcher::default());
        let gate = Gate { fs: &fs, fetch: &fetch, grants: &grants };
        let reason = |id: &str, payload: Value| gate.check_payload(id, &payload).reason();
        assert_eq!(reason("secrets.get", json!({ "name": "token" })), None);
        assert_eq!(reason("events.publish", json!({ "topic": "a.b" })), None);
        assert_eq!(reason("events.publish", json!({ "topic": "a.*" })), Some(DenyReason::InvalidPayload));
        assert_eq!(reason("events.subscribe", json!({ "topic": "a.b" })), Some(DenyReason::TopicNotDeclared));
        assert_eq!(reason("db.query", json!({ "database": "main" })), None);
        assert_eq!(reason("db.query", json!({ "database": "Main" })), Some(DenyReason::DatabaseNotDeclared));
        assert_eq!(
            reason("secrets.use", json!({ "name": "token", "url": "https://a.example" })),
            Some(DenyReason::SecretDestinationNotAllowed)
        );
        assert_eq!(reason("secrets.use", json!({ "name": "token" })), Some(DenyReason::InvalidPayload));
        assert_eq!(reason("fs.read", json!({ "path": "/x" })), Some(DenyReason::NotAllowlisted));
        assert_eq!(reason("db.query", json!({ "database": 1 })), Some(DenyReason::InvalidPayload));
        assert_eq!(
            reason("db.query", json!({ "database": "x".repeat(MAX_PAYLOAD_STRING_BYTES + 1) })),
            Some(DenyReason::InvalidPayload)
        );
        assert_eq!(reason("nope", json!({})), Some(DenyReason::UnknownCapability));
        // An absent section grants nothing of it.
        let none = CapabilityGrants::default();
        assert_eq!(none.check_secret("token").reason(), Some(DenyReason::SecretNotDeclared));
        assert_eq!(none.check_topic(Capability::EventsSubscribe, "a").reason(), Some(DenyReason::TopicNotDeclared));
    }
}
