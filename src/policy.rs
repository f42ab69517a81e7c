//! `PermissionPolicy`: the only way in is [`PermissionPolicy::from_manifest`],
//! which validates the whole manifest (SPEC §1, one parser per section in
//! `manifest.rs`) and compiles every matcher once. The checks are thin
//! entry points into the files named after their concept: fs ([`crate::fs`]),
//! fetch ([`crate::fetch`]), secrets, events and db ([`crate::capability`]).
//! `explain` and `lint` ([`crate::explain`], [`crate::lint`]) are further
//! `impl PermissionPolicy` blocks that read a policy through its accessors.

use serde_json::Value;

pub use crate::capability::BoundSecret;
use crate::capability::Gate;
use crate::error::{Capability, Decision, DenyReason, ManifestError};
use crate::fetch::{AllowedUrl, DenyFetch, FetchMatcher, FetchPattern, NetTarget, NetUse};
use crate::fs::{FsGrant, FsMatcher, FsMode};
use crate::manifest::{self, Compiled, Sections};
pub use crate::manifest::{Budgets, MAX_NAME_BYTES, MAX_PATTERNS, MAX_POLICY_PATH_SEGMENTS};
/// Re-exported: the path flavour lives in [`crate::platform`]; this path keeps working.
pub use crate::platform::Platform;
use crate::topic::TopicPattern;

/// Options of [`PermissionPolicy::from_manifest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOptions {
    /// The plugin id: the `plugin` metric label and error detail. Required, 1-256 bytes, no control characters.
    pub plugin: String,
    /// Path flavour for fs checks. Default: the host's (`Posix` except on Windows).
    pub platform: Platform,
}

impl PolicyOptions {
    /// Options for the plugin `plugin`, on the host's platform.
    pub fn new(plugin: impl Into<String>) -> Self {
        Self { plugin: plugin.into(), platform: Platform::default() }
    }

    /// The same options with another path flavour.
    #[must_use]
    pub fn platform(mut self, platform: Platform) -> Self {
        self.platform = platform;
        self
    }
}

/// The validated, compiled permissions of one plugin. Immutable.
///
/// Built from manifest JSON text; a `deny.fs` glob wins over every grant:
///
/// ```
/// use api_sandbox_permissions::{DenyReason, FsMode, PermissionPolicy, Platform, PolicyOptions};
///
/// let json = r#"{ "fs": ["/srv/app/**"], "deny": { "fs": ["/srv/app/.env"] } }"#;
/// let policy = PermissionPolicy::from_json(json, PolicyOptions::new("my-plugin").platform(Platform::Posix))?;
/// assert!(policy.check_fs("/srv/app/index.html", FsMode::Read).is_allowed());
/// assert_eq!(policy.check_fs("/srv/app/.env", FsMode::Read).reason(), Some(DenyReason::ExplicitlyDenied));
/// assert_eq!(policy.check_fs("/srv/other", FsMode::Read).reason(), Some(DenyReason::NotAllowlisted));
/// # Ok::<(), api_sandbox_permissions::ManifestError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    plugin: String,
    platform: Platform,
    /// The manifest as validated: each section `None` when absent.
    sections: Sections,
    /// The fs grants and `deny.fs`, compiled.
    fs: FsMatcher,
    /// The fetch grants and `deny.fetch`, compiled.
    fetch: FetchMatcher,
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
        let Compiled { sections, fs, fetch } = manifest::compile(manifest, platform)?;
        Ok(PermissionPolicy { plugin, platform, sections, fs, fetch })
    }

    /// Whether `id` is a valid plugin id: 1 to [`MAX_NAME_BYTES`] UTF-8 bytes
    /// without control characters. The one place that decides it (the JS
    /// binding throws its `TypeError` from this answer).
    #[must_use]
    pub fn is_valid_plugin_id(id: &str) -> bool {
        manifest::is_valid_name(id)
    }

    /// Parses JSON text, then [`Self::from_manifest`]. A syntax error points at `""`.
    pub fn from_json(json: &str, options: PolicyOptions) -> Result<Self, ManifestError> {
        let v: Value = serde_json::from_str(json).map_err(|e| {
            ManifestError::new("", format!("a JSON object (syntax error at line {} column {})", e.line(), e.column()))
        })?;
        Self::from_manifest(&v, options)
    }

    /// The plugin id (the `plugin` metric label).
    #[must_use]
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// The path flavour fs checks use.
    #[must_use]
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// The per-request budgets (all `None` when the manifest has no `budgets`).
    #[must_use]
    pub fn budgets(&self) -> Budgets {
        self.sections.budgets.unwrap_or_default()
    }

    /// The `fs` grants, normalised, in manifest order.
    #[must_use]
    pub fn fs_grants(&self) -> &[FsGrant] {
        self.sections.fs.as_deref().unwrap_or_default()
    }

    /// The `fetch` patterns, in manifest order.
    #[must_use]
    pub fn fetch_patterns(&self) -> &[FetchPattern] {
        self.sections.fetch.as_deref().unwrap_or_default()
    }

    /// The compiled fs grants and denies ([`crate::open`] asks them for a grant's literal root).
    pub(crate) fn fs_matcher(&self) -> &FsMatcher {
        &self.fs
    }

    /// The `deny.fs` globs, normalised.
    #[must_use]
    pub fn deny_fs(&self) -> &[String] {
        self.sections.deny.as_ref().and_then(|d| d.fs.as_deref()).unwrap_or_default()
    }

    /// The `deny.fetch` rules.
    #[must_use]
    pub fn deny_fetch(&self) -> &[DenyFetch] {
        self.sections.deny.as_ref().and_then(|d| d.fetch.as_deref()).unwrap_or_default()
    }

    /// Whether a `deny.fs` glob matches this normalised path.
    #[must_use]
    pub fn fs_denied(&self, normalized: &str) -> bool {
        self.fs.denied(normalized)
    }

    /// The index of the `deny.fetch` rule that denies this URL (with
    /// `resolved`: this resolved address), if any.
    #[must_use]
    pub fn fetch_denied_by(&self, url: &url::Url, resolved: Option<std::net::IpAddr>) -> Option<usize> {
        self.fetch.denied_by(url, resolved)
    }

    /// Every declared secret name (readable and bound), in manifest order.
    #[must_use]
    pub fn secrets(&self) -> &[String] {
        self.sections.capabilities.secret_names()
    }

    /// The destination-bound secret with this name, if any.
    #[must_use]
    pub fn bound_secret(&self, name: &str) -> Option<&BoundSecret> {
        self.sections.capabilities.bound_secret(name)
    }

    /// The `events.publishes` patterns (empty when absent).
    #[must_use]
    pub fn publishes(&self) -> &[TopicPattern] {
        self.sections.capabilities.publishes()
    }

    /// The `events.subscribes` patterns (empty when absent).
    #[must_use]
    pub fn subscribes(&self) -> &[TopicPattern] {
        self.sections.capabilities.subscribes()
    }

    /// The declared `db.database`, if any.
    #[must_use]
    pub fn database(&self) -> Option<&str> {
        self.sections.capabilities.database.as_deref()
    }

    /// The normalised manifest: fs grants as `{ path, mode }`, fetch patterns
    /// canonical (lower case, punycode, IPv4 dotted), duplicates of secrets removed.
    #[must_use]
    pub fn to_json(&self) -> Value {
        self.sections.to_json()
    }

    /// `checkFs(path, mode)`: the lexical check of SPEC §2.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_fs(&self, path: &str, mode: FsMode) -> Decision {
        self.fs.check(path, mode)
    }

    /// `checkFs(path, mode, { resolveSymlinks: true })`: the lexical check, then
    /// the real path (what `open(2)` reaches from the raw path; see
    /// [`crate::fs::real_path`]).
    #[must_use = "a check decides nothing unless its Decision is read"]
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

    /// Whether a `deny.fs` rule may match `dir` or anything below it, on the
    /// compiled deny globs, under every spelling the deny check matches a
    /// path in (generous where unsure: a pattern segment past `dir` is taken
    /// to match some name): what a host asks before a directory is renamed
    /// or replaced, for both of its names ([`crate::wasi`] does).
    #[must_use]
    pub fn fs_deny_reaches(&self, dir: &str) -> bool {
        self.fs.deny_reaches(dir)
    }

    /// `checkFetch(url)` returning the decision only.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_fetch(&self, url: &str) -> Decision {
        crate::fetch::decision_of(&self.fetch.decide(url))
    }

    /// `checkFetch(url)` with the canonical URL the host must fetch when allowed.
    pub fn check_fetch_url(&self, url: &str) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check(url)
    }

    /// [`Self::check_fetch_url`] on a URL the caller already parsed (the
    /// binding keeps the parse to report the origin of a denial).
    #[must_use = "a check decides nothing unless its result is read"]
    pub fn check_fetch_parsed(&self, url: url::Url) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check_url(url)
    }

    /// `checkFetchAddress(url, resolvedIp)`: DNS-rebinding defence.
    pub fn check_fetch_address(&self, url: &str, resolved_ip: &str) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check_address(url, resolved_ip)
    }

    /// [`Self::check_fetch_address`] on a URL the caller already parsed (the
    /// binding keeps the parse to report the origin of a denial).
    #[must_use = "a check decides nothing unless its result is read"]
    pub fn check_fetch_address_parsed(&self, url: url::Url, resolved_ip: &str) -> Result<AllowedUrl, DenyReason> {
        self.fetch.check_address_url(url, resolved_ip)
    }

    /// A raw connection to `target` (SPEC §15, §17: Deno's `net` with
    /// [`NetUse::Connect`], `import` with [`NetUse::Import`]), which names a
    /// host and a port and is then followed by requests for any path:
    /// allowed only where a grant without a path scope admits the host with
    /// a scheme of `use_` whose port rule admits the port, and no deny rule
    /// of the host (any scheme, any path scope, any CIDR block holding it)
    /// denies that port. A target without a port asks for every port (an
    /// `import`: its `https` default). Denials are capability `fetch`.
    ///
    /// ```
    /// use api_sandbox_permissions::fetch::{NetTarget, NetUse};
    /// use api_sandbox_permissions::{DenyReason, PermissionPolicy, PolicyOptions};
    ///
    /// let json = r#"{ "fetch": ["api.example.com", "https://docs.example.com/"] }"#;
    /// let policy = PermissionPolicy::from_json(json, PolicyOptions::new("deno-plugin"))?;
    /// let net = |t: &str| policy.check_net(&NetTarget::parse(t).unwrap(), NetUse::Connect);
    /// assert!(net("api.example.com:443").is_allowed());
    /// assert_eq!(net("api.example.com:8443").reason(), Some(DenyReason::PortNotAllowed));
    /// // A grant of `/` only: Deno would go on to fetch any path.
    /// assert_eq!(net("docs.example.com:443").reason(), Some(DenyReason::PathNotAllowed));
    /// # Ok::<(), api_sandbox_permissions::ManifestError>(())
    /// ```
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_net(&self, target: &NetTarget, use_: NetUse) -> Decision {
        crate::fetch::decision_of(&self.fetch.check_net(target, use_))
    }

    /// What `checkCapability` decides with, borrowed from this policy.
    fn gate(&self) -> Gate<'_> {
        Gate { fs: &self.fs, fetch: &self.fetch, grants: &self.sections.capabilities }
    }

    /// `secrets.get`: exact, case-sensitive (see [`crate::capability`]).
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_secret(&self, name: &str) -> Decision {
        self.sections.capabilities.check_secret(name)
    }

    /// `secrets.use { name, url }` (SPEC §13): allowed only when `name` is a
    /// bound secret, `url` passes `checkFetch`, and `url` matches one of the
    /// secret's `hosts` patterns. An undeclared name is `secret_not_declared`;
    /// a readable (unbound) name, a URL `checkFetch` denies, or one outside the
    /// hosts is `secret_destination_not_allowed`.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_secret_use(&self, name: &str, url: &str) -> Decision {
        self.sections.capabilities.check_secret_use(&self.fetch, name, url)
    }

    /// `events.publish` (a concrete topic) and `events.subscribe` (a topic or pattern, which
    /// must be covered by a declared pattern).
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_topic(&self, capability: Capability, topic: &str) -> Decision {
        self.sections.capabilities.check_topic(capability, topic)
    }

    /// `db.query`: the database equals the declared one, exactly.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_database(&self, database: &str) -> Decision {
        self.sections.capabilities.check_database(database)
    }

    /// `checkCapability(id, field)` where `field` is the payload's one string
    /// field for that capability (`path`, `url`, `name`, `topic`, `database`),
    /// or `None` when the payload lacks it or it is not a string.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_capability_field(&self, id: &str, field: Option<&str>) -> Decision {
        self.gate().check_fields(id, field, None)
    }

    /// `checkCapability(id, field, second)`: as [`Self::check_capability_field`],
    /// with the second payload field of a two-field capability (`secrets.use`:
    /// `url`); `None` when absent or not a string (then `invalid_payload`).
    /// Each field is at most 4096 bytes.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_capability_fields(&self, id: &str, field: Option<&str>, second: Option<&str>) -> Decision {
        self.gate().check_fields(id, field, second)
    }

    /// `checkCapability(id, payload)` on a JSON payload: it must be an object
    /// whose field for the capability is a string of at most 4096 bytes.
    #[must_use = "a check decides nothing unless its Decision is read"]
    pub fn check_capability(&self, id: &str, payload: &Value) -> Decision {
        self.gate().check_payload(id, payload)
    }
}
