//! The one table of error codes, deny reasons and capabilities.
//!
//! Everything a host can observe by name (error codes, `SAND_PERM_*` ids,
//! message templates, deny reasons, capability ids, budget reasons) is
//! declared here once and exported to JS as data by the binding. Codes are
//! never deleted: a retired code stays in the table with a deprecation note.

use std::fmt;

/// Declares a closed, string-named enum with `as_str`, `ALL` and `parse`.
macro_rules! closed_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $s:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        ///
        /// Non-exhaustive: later versions append values (never reorder or remove one),
        /// so a `match` needs a wildcard arm.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The stable wire name (metric label value, JS string).
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $s ),+ }
            }

            /// The value with this wire name, if any. Exact and case-sensitive.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $( $s => Some($name::$variant), )+ _ => None }
            }

            /// Index in [`Self::ALL`]; stable within a release, used as a compact code by the binding.
            pub const fn index(self) -> u32 { self as u32 }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

closed_enum! {
    /// Why a capability call was denied. A closed set: these strings are the
    /// only values of the `reason` metric label for permission denials.
    pub enum DenyReason {
        /// fs: empty, relative, NUL, over 4096 bytes, or a win32 form that is not a plain drive path.
        InvalidPath => "invalid_path",
        /// fs: a `..` climbs above the root, or a path with `..` matched no grant.
        PathTraversal => "path_traversal",
        /// fs: no grant matches the normalised path.
        NotAllowlisted => "not_allowlisted",
        /// fs: a grant matches the path, but none grants this mode.
        ModeNotGranted => "mode_not_granted",
        /// fs (`resolveSymlinks`): the real path leaves the grants.
        SymlinkEscape => "symlink_escape",
        /// fetch: unparseable, relative, or an IPv6 zone id.
        InvalidUrl => "invalid_url",
        /// fetch: the scheme is not granted.
        SchemeNotAllowed => "scheme_not_allowed",
        /// fetch: the host is granted, but not on this port.
        PortNotAllowed => "port_not_allowed",
        /// fetch: no pattern matches the host.
        HostNotAllowlisted => "host_not_allowlisted",
        /// fetch: the URL carries a username or password.
        CredentialsInUrl => "credentials_in_url",
        /// fetch (`checkFetchAddress`): the resolved address is loopback, private,
        /// link-local, unspecified, multicast or reserved, and no grant names it.
        AddressNotAllowed => "address_not_allowed",
        /// secrets.get: the name is not declared.
        SecretNotDeclared => "secret_not_declared",
        /// events.*: the topic is not covered by a declared pattern.
        TopicNotDeclared => "topic_not_declared",
        /// db.query: the database is not the declared one.
        DatabaseNotDeclared => "database_not_declared",
        /// The capability id is not one this package knows.
        UnknownCapability => "unknown_capability",
        /// The payload has the wrong shape or an over-long string.
        InvalidPayload => "invalid_payload",
        /// fs, fetch: a `deny` rule matches the request (SPEC §10); deny wins over every grant.
        /// Appended: the reasons before it keep their index (and decision code).
        ExplicitlyDenied => "explicitly_denied",
        /// fetch: a grant matches scheme, host and port, but none of the grants
        /// for that host covers the request's path (SPEC §11).
        PathNotAllowed => "path_not_allowed",
        /// secrets.get: the secret is bound to destinations (SPEC §13); the
        /// plugin can only send it (`secrets.use`), never read it. Appended.
        SecretNotReadable => "secret_not_readable",
        /// secrets.use: the URL fails `checkFetch` or matches none of the
        /// secret's `hosts` patterns (or the secret is readable, not bound). Appended.
        SecretDestinationNotAllowed => "secret_destination_not_allowed",
    }
}

closed_enum! {
    /// The capability a check is about. `Unknown` labels calls with an unknown id,
    /// so that label values stay in a closed set.
    pub enum Capability {
        /// `{ path }`: read a file or list a directory (SPEC §2).
        FsRead => "fs.read",
        /// `{ path }`: create, write, rename or remove (SPEC §2).
        FsWrite => "fs.write",
        /// `{ url }`: an outbound request (SPEC §3).
        Fetch => "fetch",
        /// `{ name }`: read a declared secret (SPEC §4).
        SecretsGet => "secrets.get",
        /// `{ topic }`: publish on a declared topic (SPEC §4).
        EventsPublish => "events.publish",
        /// `{ topic }`: subscribe to a declared topic pattern (SPEC §4).
        EventsSubscribe => "events.subscribe",
        /// `{ database }`: query the declared database (SPEC §4).
        DbQuery => "db.query",
        /// The label of a call whose capability id is not one of these.
        Unknown => "unknown",
        /// `{ name, url }`: send a destination-bound secret (SPEC §13). Appended
        /// after `Unknown` so every earlier decision code keeps its value.
        SecretsUse => "secrets.use",
    }
}

impl Capability {
    /// The payload field this capability reads (`None` for `Unknown`).
    pub const fn payload_field(self) -> Option<&'static str> {
        match self {
            Capability::FsRead | Capability::FsWrite => Some("path"),
            Capability::Fetch => Some("url"),
            Capability::SecretsGet => Some("name"),
            Capability::EventsPublish | Capability::EventsSubscribe => Some("topic"),
            Capability::DbQuery => Some("database"),
            Capability::SecretsUse => Some("name"),
            Capability::Unknown => None,
        }
    }

    /// The second payload field, for the one capability with two (`secrets.use`: `url`).
    pub const fn second_payload_field(self) -> Option<&'static str> {
        match self {
            Capability::SecretsUse => Some("url"),
            _ => None,
        }
    }

    /// A known capability by id. Prototype keys and anything else are `None`.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::parse(id).filter(|c| *c != Capability::Unknown)
    }
}

closed_enum! {
    /// Which budget a breach is about; `as_str` is the `budget` field of a status.
    pub enum BudgetKind {
        /// CPU time over elapsed wall-clock time, in percent, after a grace window.
        CpuPercent => "cpuPercent",
        /// Resident memory, in MB (the latest sample).
        MemoryMb => "memoryMb",
        /// Elapsed wall-clock time, in ms (monotonic).
        WallClockMs => "wallClockMs",
    }
}

impl BudgetKind {
    /// The `reason` label of `plugin.budget_exceeded_total`: `cpu`, `memory`, `wall_clock`.
    pub const fn reason(self) -> &'static str {
        match self {
            BudgetKind::CpuPercent => "cpu",
            BudgetKind::MemoryMb => "memory",
            BudgetKind::WallClockMs => "wall_clock",
        }
    }
}

/// One entry of the error registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorSpec {
    /// Short code set as `error.code` (`PERMISSION_DENIED`).
    pub code: &'static str,
    /// Registry id (`SAND_PERM_001`), stable forever.
    pub id: &'static str,
    /// Message template; `{name}` placeholders are filled from `details`.
    pub message: &'static str,
    /// Set when the code is retired; kept so old ids stay resolvable.
    pub deprecated: Option<&'static str>,
}

macro_rules! registry {
    ( $( $variant:ident => ($code:literal, $id:literal, $msg:literal) ),+ $(,)? ) => {
        closed_enum! {
            /// Error codes. The registry entry for each is [`ErrorCode::spec`].
            pub enum ErrorCode { $( #[doc = concat!("`", $code, "` (`", $id, "`): \"", $msg, "\".")] $variant => $code ),+ }
        }
        impl ErrorCode {
            /// The registry entry for this code.
            pub const fn spec(self) -> ErrorSpec {
                match self { $( ErrorCode::$variant => ErrorSpec { code: $code, id: $id, message: $msg, deprecated: None } ),+ }
            }
        }
        /// The whole registry, in declaration order.
        pub const ERROR_REGISTRY: &[ErrorSpec] = &[ $( ErrorSpec { code: $code, id: $id, message: $msg, deprecated: None } ),+ ];
    };
}

registry! {
    PermissionDenied => ("PERMISSION_DENIED", "SAND_PERM_001", "permission denied: {capability} ({reason})"),
    BudgetExceeded => ("BUDGET_EXCEEDED", "SAND_PERM_002", "budget exceeded: {budget} observed {observed} over limit {limit}"),
    InvalidManifest => ("INVALID_MANIFEST", "SAND_PERM_003", "invalid manifest at {pointer}: expected {expected}"),
    InvalidSample => ("INVALID_SAMPLE", "SAND_PERM_004", "invalid sample: {field} must be a finite, non-negative number"),
    UnsupportedPlatform => ("ERR_UNSUPPORTED_PLATFORM", "SAND_PERM_005", "{feature} is not supported on {platform}"),
    LockdownRefused => ("LOCKDOWN_REFUSED", "SAND_PERM_006", "lockdown refused: {reason}"),
    LockdownFailed => ("LOCKDOWN_FAILED", "SAND_PERM_007", "lockdown failed: {reason}"),
}

/// A denial: what was asked for and why it was refused. Holds no request data,
/// so it is safe to log as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Denial {
    /// The capability asked for.
    pub capability: Capability,
    /// Why it was refused.
    pub reason: DenyReason,
}

/// The outcome of a check: perform the call only when it is [`Decision::Allowed`].
///
/// `#[must_use]`: a check whose decision is dropped enforces nothing, so it
/// does not compile silently.
///
/// ```
/// use api_sandbox_permissions::{Capability, Decision, DenyReason, FsMode, PermissionPolicy, PolicyOptions};
/// use api_sandbox_permissions::serde_json::json;
///
/// let policy = PermissionPolicy::from_manifest(&json!({ "fs": ["/data/**"] }), PolicyOptions::new("my-plugin"))?;
/// assert_eq!(policy.check_fs("/data/a.txt", FsMode::Read), Decision::Allowed);
///
/// let d = policy.check_fs("/data/a.txt", FsMode::Write);
/// assert_eq!(d, Decision::deny(Capability::FsWrite, DenyReason::ModeNotGranted));
/// match d {
///     Decision::Allowed => unreachable!(),
///     Decision::Denied(denial) => assert_eq!(denial.reason.as_str(), "mode_not_granted"),
/// }
/// # Ok::<(), api_sandbox_permissions::ManifestError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a Decision that is not acted on enforces nothing: perform the call only when it is Allowed"]
pub enum Decision {
    /// The call may go ahead.
    Allowed,
    /// The call must not be made; the denial says which capability and why.
    Denied(Denial),
}

impl Decision {
    /// A denial of `capability` for `reason`.
    pub const fn deny(capability: Capability, reason: DenyReason) -> Self {
        Decision::Denied(Denial { capability, reason })
    }
    /// Whether the call may go ahead.
    #[must_use]
    pub const fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed)
    }
    /// The deny reason, or `None` when allowed.
    #[must_use]
    pub const fn reason(&self) -> Option<DenyReason> {
        match self {
            Decision::Allowed => None,
            Decision::Denied(d) => Some(d.reason),
        }
    }
    /// A compact code for the binding: 0 allowed, else `1 + capability * 64 + reason`.
    #[must_use]
    pub const fn code(&self) -> u32 {
        match self {
            Decision::Allowed => 0,
            Decision::Denied(d) => 1 + d.capability.index() * 64 + d.reason.index(),
        }
    }
}

/// `INVALID_MANIFEST`: a field of the manifest is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid manifest at {}: expected {}",
    redact_string(.pointer, MAX_DETAIL_CHARS),
    redact_string(.expected, MAX_EXPECTED_CHARS)
)]
pub struct ManifestError {
    /// RFC 6901 JSON pointer of the bad field (`/fs/2`, `/budgets/memoryMb`; `""` is the whole manifest).
    /// Raw: it may hold the manifest's own keys. `Display` redacts it
    /// ([`redact_string`]), as the JS error's `details.pointer` does.
    pub pointer: String,
    /// What would be valid there. Never echoes the manifest's own values (they may name secrets).
    pub expected: String,
}

impl ManifestError {
    /// Its registry code: [`ErrorCode::InvalidManifest`].
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::InvalidManifest
    }
    /// An error at JSON pointer `pointer`, saying what would be valid there.
    pub fn new(pointer: impl Into<String>, expected: impl Into<String>) -> Self {
        Self { pointer: pointer.into(), expected: expected.into() }
    }
}

/// `PERMISSION_DENIED`, with redaction-safe details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permission denied: {} ({})", .denial.capability, .denial.reason)]
pub struct PermissionDenied {
    /// The plugin id of the policy that denied.
    pub plugin: String,
    /// The capability and the reason.
    pub denial: Denial,
    /// For fetch denials, `scheme://host:port` only; never userinfo, path, query or fragment.
    pub target: Option<String>,
}

impl PermissionDenied {
    /// Its registry code: [`ErrorCode::PermissionDenied`].
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::PermissionDenied
    }
}

/// `BUDGET_EXCEEDED`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("budget exceeded: {} observed {observed} over limit {limit}", .budget.as_str())]
pub struct BudgetExceeded {
    /// The plugin id of the policy whose budget it is.
    pub plugin: String,
    /// Which budget.
    pub budget: BudgetKind,
    /// Its limit, in the budget's unit.
    pub limit: f64,
    /// The value observed over it.
    pub observed: f64,
    /// Wall-clock time since the tracker started, ms.
    pub elapsed_ms: f64,
}

impl BudgetExceeded {
    /// Its registry code: [`ErrorCode::BudgetExceeded`].
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::BudgetExceeded
    }
}

/// `INVALID_SAMPLE`: a NaN, infinite or negative sample or clock reading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid sample: {field} must be a finite, non-negative number")]
pub struct InvalidSample {
    /// `now`, `cpuTimeMs` or `rssMb`.
    pub field: &'static str,
}

impl InvalidSample {
    /// Its registry code: [`ErrorCode::InvalidSample`].
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::InvalidSample
    }
}

/// A budget the tracker has no way to measure: no sampler for it, and the
/// host did not declare it measured elsewhere (`unmeasured`). Raised when the
/// tracker is built, so a budget is never silently unenforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "budget {} has no sampler ({}); pass one, or declare it in `unmeasured` if the host measures it elsewhere",
    .budget.as_str(),
    match .budget { BudgetKind::CpuPercent => "cpuTimeMs", BudgetKind::MemoryMb => "rssMb", BudgetKind::WallClockMs => "now" }
)]
pub struct UnmeasuredBudget {
    /// The budget with no way to measure it.
    pub budget: BudgetKind,
}

/// Whether an error detail escapes `c`: control characters (Cc), the line
/// and paragraph separators, and every Bidi_Control character (U+061C,
/// U+200E, U+200F, U+202A-202E, U+2066-2069), which could reorder or hide
/// the text around them in a log or a terminal. The same set as `redact` in
/// `lib/errors.js`.
#[must_use]
pub fn escaped_in_details(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Caps a string for an error detail and escapes [`escaped_in_details`]
/// characters as `\u{..}`, so a detail can be logged without letting
/// plugin- or manifest-chosen text forge, reorder or hide log lines.
#[must_use]
pub fn redact_string(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars + 8));
    let mut len = 0;
    for c in s.chars() {
        let escaped = escaped_in_details(c);
        let piece = if escaped { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() };
        let n = piece.chars().count();
        if len + n > max_chars {
            out.push('…');
            break;
        }
        len += n;
        out.push_str(&piece);
    }
    out
}

/// The longest string (in chars, after escaping) an error detail carries.
pub const MAX_DETAIL_CHARS: usize = 256;
/// The longest `expected` of an `INVALID_MANIFEST` error (in chars, after escaping).
pub const MAX_EXPECTED_CHARS: usize = 511;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_sets_round_trip_and_reject_prototype_keys() {
        for r in DenyReason::ALL {
            assert_eq!(DenyReason::parse(r.as_str()), Some(*r));
        }
        for c in Capability::ALL {
            assert_eq!(Capability::parse(c.as_str()), Some(*c));
        }
        for bad in ["__proto__", "constructor", "toString", "FS.READ", "fs.read ", "", "unknown"] {
            assert_eq!(Capability::from_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn registry_ids_are_unique_and_well_formed() {
        let mut ids: Vec<_> = ERROR_REGISTRY.iter().map(|e| e.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), ERROR_REGISTRY.len());
        for e in ERROR_REGISTRY {
            assert!(e.id.starts_with("SAND_PERM_"));
            assert_eq!(ErrorCode::parse(e.code).unwrap().spec(), *e);
        }
        for c in ["PERMISSION_DENIED", "BUDGET_EXCEEDED", "INVALID_MANIFEST", "INVALID_SAMPLE"] {
            assert!(ErrorCode::parse(c).is_some(), "{c}");
        }
    }

    #[test]
    fn appended_reasons_keep_existing_codes() {
        // Decision codes are `1 + capability * 64 + reason index`: appending a
        // reason must never shift an existing one.
        assert_eq!(DenyReason::InvalidPayload.index(), 15);
        assert_eq!(DenyReason::ExplicitlyDenied.index(), 16);
        assert_eq!(DenyReason::PathNotAllowed.index(), 17);
        assert_eq!(DenyReason::SecretNotReadable.index(), 18);
        assert_eq!(DenyReason::SecretDestinationNotAllowed.index(), 19);
        assert_eq!(Capability::Unknown.index(), 7);
        assert_eq!(Capability::SecretsUse.index(), 8);
        assert!(DenyReason::ALL.len() < 64);
        assert_eq!(Decision::deny(Capability::Fetch, DenyReason::HostNotAllowlisted).code(), 1 + 2 * 64 + 8);
    }

    #[test]
    fn decision_codes_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(Decision::Allowed.code()));
        for c in Capability::ALL {
            for r in DenyReason::ALL {
                assert!(seen.insert(Decision::deny(*c, *r).code()));
            }
        }
    }

    #[test]
    fn redaction_caps_and_escapes() {
        assert_eq!(redact_string("a\nb\u{1b}", 20), "a\\u{a}b\\u{1b}");
        assert_eq!(redact_string("abcdef", 3), "abc…");
        assert_eq!(redact_string("x\u{202e}y", 10), "x\\u{202e}y");
        for c in
            ['\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{2028}', '\u{85}']
        {
            assert_eq!(redact_string(&format!("a{c}b"), 20), format!("a\\u{{{:x}}}b", c as u32), "{c:?}");
        }
        // Neighbours of the Bidi_Control set stay as they are.
        for c in ['\u{061b}', '\u{061d}', '\u{200d}', '\u{2010}', '\u{202f}', '\u{2065}', '\u{206a}'] {
            assert_eq!(redact_string(&format!("a{c}b"), 20), format!("a{c}b"), "{c:?}");
        }
        // A manifest key in a pointer cannot reorder or break the message.
        let e = ManifestError::new("/fs/\u{202e}evil\n", "x\u{2067}");
        assert_eq!(e.to_string(), "invalid manifest at /fs/\\u{202e}evil\\u{a}: expected x\\u{2067}");
        assert_eq!(redact_string("\n\n\n", 12), "\\u{a}\\u{a}…");
    }
}
