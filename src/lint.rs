//! `lint`: warnings for grants that widen authority more than they likely
//! mean to, and for deny rules and bound secrets that decide nothing. Tooling
//! (the `lint` CLI command), not a hot path. fs grants are read through the
//! glob parser's own output (the crate-private `glob` module), never re-derived from text, so
//! an escaped `\*` is a name and a brace alternative is a variant.

use serde_json::{json, Value};

use crate::fetch::{ip_deny_denies, is_special_address, DenyFetch, FetchPattern, Host, HostPattern, PortRule, Scheme};
use crate::fs::GrantMode;
use crate::glob::VariantShape;
use crate::platform::Platform;
use crate::policy::PermissionPolicy;
use crate::topic::Segment;

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
    /// Warnings for grants that widen authority more than they likely mean to.
    /// Each is `{ pointer, code, message }`.
    #[must_use]
    pub fn lint(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut warn = |pointer: String, code: &str, message: String| {
            out.push(json!({ "pointer": pointer, "code": code, "message": message }))
        };
        for (i, g) in self.fs_grants().iter().enumerate() {
            let shapes = self.shapes(&g.glob);
            // Literal directories below the root before the first wildcard, and whether one follows.
            let depth = |v: &VariantShape| v.literal.len() - 1;
            let wild = |v: &VariantShape| !v.recursive.is_empty();
            let root_wild: Vec<&VariantShape> = shapes.iter().filter(|v| depth(v) == 0 && wild(v)).collect();
            if !root_wild.is_empty() {
                let below = root_wild.iter().any(|v| v.recursive.contains(&true));
                warn(
                    format!("/fs/{i}"),
                    "fs-root-wildcard",
                    format!(
                        "'{}' grants names at the filesystem root{}",
                        g.glob,
                        if below { " and everything below it" } else { "" }
                    ),
                );
            } else if shapes.iter().any(|v| depth(v) == 1 && v.recursive.last() == Some(&true)) {
                warn(
                    format!("/fs/{i}"),
                    "fs-top-level-recursive",
                    format!("'{}' grants everything under a top-level directory", g.glob),
                );
            }
            // The root itself, or a wildcard at or just below it.
            if g.mode != GrantMode::Read && shapes.iter().any(|v| depth(v) == 0 || (depth(v) == 1 && wild(v))) {
                warn(
                    format!("/fs/{i}/mode"),
                    "fs-write-near-root",
                    format!("'{}' grants {} access at or just below a root", g.glob, g.mode.as_str()),
                );
            }
        }
        for i in crate::diff::covered_fs_grants(self) {
            let g = &self.fs_grants()[i];
            warn(
                format!("/fs/{i}"),
                "fs-grant-covered",
                format!(
                    "every path '{}' grants ({}) is already granted by the other fs grants: it adds nothing",
                    g.glob,
                    g.mode.as_str()
                ),
            );
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
    !schemes.is_empty() && ports && (hosts_overlap(&d.host, &g.host) || loopback || ip_reaches(&d.host, &g.host))
}

/// Whether an IP deny host decides a request the grant host allows, as the
/// compiled deny does: an IP grant whose address (or an IPv4 address it
/// embeds) the deny names, in any embedding form, or a name grant, which may
/// resolve to the denied address (`checkFetchAddress`).
fn ip_reaches(d: &HostPattern, g: &HostPattern) -> bool {
    let ip = |h: &Host| match h {
        Host::Ipv4(a) => Some(std::net::IpAddr::V4(*a)),
        Host::Ipv6(a) => Some(std::net::IpAddr::V6(*a)),
        Host::Domain(_) => None,
    };
    let HostPattern::Exact(dh) = d else { return false };
    let Some(deny) = ip(dh) else { return false };
    match g {
        HostPattern::Exact(gh) => ip(gh).is_none_or(|a| ip_deny_denies(deny, a)),
        HostPattern::Suffix(_) => true,
    }
}

/// The schemes the grants of one host key name (`None`: any scheme), deduplicated.
#[derive(Default)]
struct Schemes(Vec<Option<Scheme>>);

impl Schemes {
    fn add(&mut self, s: Option<Scheme>) {
        if !self.0.contains(&s) {
            self.0.push(s);
        }
    }
    /// Whether a grant here covers a pattern naming `scheme`: a grant without a scheme covers any.
    fn cover(&self, scheme: Option<Scheme>) -> bool {
        self.0.iter().any(|s| s.is_none() || *s == scheme)
    }
}

/// One node of the `*.suffix` trie: labels right to left.
#[derive(Default)]
struct SuffixNode<'a> {
    children: std::collections::HashMap<&'a str, SuffixNode<'a>>,
    /// Schemes of the `*.suffix` grants whose suffix ends at this node.
    schemes: Schemes,
}

/// The fetch grants' hosts for the bound-secret lint: exact hosts in a hash
/// map, `*.suffix` grants in a trie of labels read right to left, so a
/// pattern is covered-or-not in one walk of its own labels (linear in its
/// length, whatever the number of grants).
struct GrantHosts<'a> {
    exact: std::collections::HashMap<&'a Host, Schemes>,
    suffix: SuffixNode<'a>,
}

impl<'a> GrantHosts<'a> {
    fn new(grants: &'a [FetchPattern]) -> Self {
        let mut g = GrantHosts { exact: std::collections::HashMap::new(), suffix: SuffixNode::default() };
        for p in grants {
            match &p.host {
                HostPattern::Exact(h) => g.exact.entry(h).or_default().add(p.scheme),
                HostPattern::Suffix(s) => {
                    let node = s.rsplit('.').fold(&mut g.suffix, |n, label| n.children.entry(label).or_default());
                    node.schemes.add(p.scheme);
                }
            }
        }
        g
    }

    /// Whether some grant covers `h` (scheme and host): an exact grant of the
    /// same host; `*.s` covers a name ending in `.s` and the patterns `*.s`
    /// and `*.x.s`.
    fn covers(&self, h: &FetchPattern) -> bool {
        let (name, exact) = match &h.host {
            HostPattern::Exact(host) => {
                if self.exact.get(host).is_some_and(|s| s.cover(h.scheme)) {
                    return true;
                }
                let Host::Domain(d) = host else { return false };
                (d.as_str(), true)
            }
            HostPattern::Suffix(t) => (t.as_str(), false),
        };
        // Walk the name's labels right to left; a suffix grant ending after k
        // labels covers it when labels remain (a name under it), or, for a
        // `*.t` pattern, also when none remain (`*.t` itself).
        let labels: Vec<&str> = name.rsplit('.').collect();
        let mut node = &self.suffix;
        for (k, label) in labels.iter().enumerate() {
            let Some(next) = node.children.get(label) else { return false };
            node = next;
            let remaining = labels.len() - k - 1;
            if (remaining > 0 || !exact) && node.schemes.cover(h.scheme) {
                return true;
            }
        }
        false
    }
}

impl PermissionPolicy {
    /// The brace variants of a normalised glob of this policy, as the glob
    /// parser reads them (escapes resolved, braces expanded, win32 folded).
    /// Every glob of a policy parsed when it was built.
    fn shapes(&self, glob: &str) -> Vec<VariantShape> {
        let platform = self.platform();
        crate::glob::variant_shapes(
            glob,
            if platform == Platform::Win32 { crate::glob::Syntax::WIN32 } else { crate::glob::Syntax::POSIX },
        )
        .unwrap_or_default()
    }

    /// Per brace variant: the literal directory segments before the first
    /// wildcard, the root first, compared as the deny index compares them
    /// (NTFS upper case on win32, the posix deny fold on posix).
    fn literal_dirs(&self, glob: &str) -> Vec<Vec<String>> {
        let posix = self.platform() == Platform::Posix;
        self.shapes(glob)
            .into_iter()
            .map(|v| v.literal.into_iter().map(|s| if posix { crate::posix_fold::fold(&s) } else { s }).collect())
            .collect()
    }

    /// SPEC §13: a bound secret's hosts pattern that no fetch grant covers
    /// (scheme and host; ports and paths are not compared) can never be sent.
    /// The grants are indexed once ([`GrantHosts`]), so each secret host is one
    /// walk of its own labels, not a pass over every grant.
    fn lint_bound_secrets(&self, warn: &mut impl FnMut(String, &str, String)) {
        let grants = GrantHosts::new(self.fetch_patterns());
        for (i, name) in self.secrets().iter().enumerate() {
            let Some(b) = self.bound_secret(name) else { continue };
            for (j, h) in b.hosts().iter().enumerate() {
                if !grants.covers(h) {
                    warn(
                        format!("/secrets/{i}/hosts/{j}"),
                        "secret-host-not-granted",
                        format!("no fetch grant covers '{h}': the bound secret can never be sent there"),
                    );
                }
            }
        }
    }

    /// `deny-unreachable` warnings: deny rules that no grant could reach
    /// (a deny still denies; the warning says it decides nothing today).
    /// Each question is an index lookup (a trie of the grants' literal
    /// directories, the grants' addresses sorted), except a `deny.fetch`
    /// pattern, compared with the grants one by one for at most
    /// [`MAX_LINT_DENY_PAIRS`] pairs in all: a rule not decided within them
    /// gets no warning (it may be reachable).
    fn lint_deny(&self, warn: &mut impl FnMut(String, &str, String)) {
        // Reached when some variant of the deny and some variant of a grant
        // agree on the literal directories both spell out: one is a prefix
        // of the other.
        let mut trie = DirTrie::default();
        for g in self.fs_grants() {
            for dirs in self.literal_dirs(&g.glob) {
                trie.insert(&dirs);
            }
        }
        for (i, d) in self.deny_fs().iter().enumerate() {
            if !self.literal_dirs(d).iter().any(|dd| trie.meets(dd)) {
                warn(
                    format!("/deny/fs/{i}"),
                    "deny-unreachable",
                    format!("no fs grant could reach '{d}': the deny rule decides nothing"),
                );
            }
        }
        // A name can resolve to any address (checkFetchAddress): then every block is reached.
        let any_name =
            self.fetch_patterns().iter().any(|g| !matches!(&g.host, HostPattern::Exact(Host::Ipv4(_) | Host::Ipv6(_))));
        let addresses = GrantAddresses::new(self.fetch_patterns());
        let mut pairs = 0usize;
        for (i, d) in self.deny_fetch().iter().enumerate() {
            let reached = match d {
                DenyFetch::Cidr { net, len } => any_name || addresses.in_block(*net, *len),
                DenyFetch::Pattern(p) => {
                    let grants = self.fetch_patterns();
                    if pairs.saturating_add(grants.len()) > MAX_LINT_DENY_PAIRS {
                        continue;
                    }
                    pairs += grants.len();
                    grants.iter().any(|g| deny_reaches(p, g))
                }
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

/// Most (`deny.fetch` pattern, fetch grant) pairs one lint compares.
pub(crate) const MAX_LINT_DENY_PAIRS: usize = 4_000_000;

/// The grants' literal directory lists, as a trie of segments.
#[derive(Default)]
struct DirTrie {
    children: std::collections::HashMap<String, DirTrie>,
    /// A grant's list ends here.
    end: bool,
}

impl DirTrie {
    fn insert(&mut self, dirs: &[String]) {
        let node = dirs.iter().fold(self, |n, d| n.children.entry(d.clone()).or_default());
        node.end = true;
    }

    /// Whether some list and `dirs` agree as far as both go.
    fn meets(&self, dirs: &[String]) -> bool {
        let mut node = self;
        for d in dirs {
            if node.end {
                return true;
            }
            match node.children.get(d) {
                Some(n) => node = n,
                None => return false,
            }
        }
        // `dirs` ended at a node some list goes through or ends at.
        node.end || !node.children.is_empty()
    }
}

/// Every address the IP grants stand for, as the compiled deny compares
/// them ([`crate::fetch::ip_candidates`]: the address, its mapped form, the
/// IPv4 addresses it embeds), sorted per family for range queries.
struct GrantAddresses {
    v4: Vec<u128>,
    v6: Vec<u128>,
}

impl GrantAddresses {
    fn new(grants: &[FetchPattern]) -> Self {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for g in grants {
            let ip = match &g.host {
                HostPattern::Exact(Host::Ipv4(a)) => std::net::IpAddr::V4(*a),
                HostPattern::Exact(Host::Ipv6(a)) => std::net::IpAddr::V6(*a),
                _ => continue,
            };
            for c in crate::fetch::ip_candidates(ip) {
                match c {
                    std::net::IpAddr::V4(a) => v4.push(u128::from(u32::from(a))),
                    std::net::IpAddr::V6(a) => v6.push(u128::from(a)),
                }
            }
        }
        v4.sort_unstable();
        v6.sort_unstable();
        Self { v4, v6 }
    }

    /// Whether some address lies in a block the CIDR rule denies
    /// ([`crate::fetch::cidr_blocks`]: the block and its IPv4 projections).
    fn in_block(&self, net: std::net::IpAddr, len: u8) -> bool {
        crate::fetch::cidr_blocks(net, len).into_iter().any(|(n, l)| {
            let (list, base, bits) = match n {
                std::net::IpAddr::V4(a) => (&self.v4, u128::from(u32::from(a)), 32u32),
                std::net::IpAddr::V6(a) => (&self.v6, u128::from(a), 128u32),
            };
            let host = bits - u32::from(l).min(bits);
            let span = if host >= 128 { u128::MAX } else { (1u128 << host) - 1 };
            let lo = base & !span;
            let hi = lo | span;
            let at = list.partition_point(|&x| x < lo);
            list.get(at).is_some_and(|&x| x <= hi)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::is_public_suffix;
    use crate::fetch::{Host, HostPattern};
    use crate::platform::Platform;
    use crate::policy::{PermissionPolicy, PolicyOptions};

    #[test]
    fn fs_grants_covered_by_others() {
        let p = |m: serde_json::Value| {
            PermissionPolicy::from_manifest(&m, PolicyOptions::new("t").platform(Platform::Posix)).unwrap()
        };
        let covered = |m: serde_json::Value| {
            p(m).lint()
                .iter()
                .filter(|w| w["code"] == "fs-grant-covered")
                .map(|w| w["pointer"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(covered(json!({ "fs": ["/srv/**", "/srv/app/*.json", "/srv/{a,b}/x"] })), ["/fs/1", "/fs/2"]);
        // Covered together: `/d/*` is `[a-m]*` or `[!a-m]*`; the first grants reported can all go.
        assert_eq!(covered(json!({ "fs": ["/d/[a-m]*", "/d/[!a-m]*", "/d/*"] })), ["/fs/0", "/fs/1"]);
        assert_eq!(covered(json!({ "fs": ["/d/*", "/d/[a-m]*", "/d/[!a-m]*"] })), ["/fs/0"]);
        assert_eq!(covered(json!({ "fs": ["/d/[a-m]*", "/d/[!a-m]*", "/d/?*"] })), ["/fs/0", "/fs/1"]);
        // A mode the others do not give; duplicates keep the first.
        assert_eq!(
            covered(json!({ "fs": ["/srv/**", { "path": "/srv/x", "mode": "readwrite" }] })),
            Vec::<String>::new()
        );
        assert_eq!(covered(json!({ "fs": ["/a/**", "/a/**"] })), ["/fs/1"]);
    }

    /// `code@pointer` of every fs warning of a manifest (budgets set, so only fs and deny warn).
    fn fs_warnings(platform: Platform, manifest: serde_json::Value) -> Vec<String> {
        let mut m = manifest;
        m["budgets"] = json!({ "wallClockMs": 1000, "memoryMb": 64 });
        let p = PermissionPolicy::from_manifest(&m, PolicyOptions::new("t").platform(platform)).unwrap();
        p.lint().iter().map(|w| format!("{}@{}", w["code"].as_str().unwrap(), w["pointer"].as_str().unwrap())).collect()
    }

    fn grant(platform: Platform, glob: &str, mode: &str) -> Vec<String> {
        fs_warnings(platform, json!({ "fs": [{ "path": glob, "mode": mode }] }))
    }

    #[test]
    fn an_escaped_star_is_a_name_not_a_root_wildcard() {
        // posix `\*` is the file named `*`: the parser says so, lint follows.
        assert_eq!(grant(Platform::Posix, "/\\*", "read"), Vec::<String>::new());
        assert_eq!(grant(Platform::Posix, "/\\*\\*/x", "read"), Vec::<String>::new());
        assert_eq!(grant(Platform::Posix, "/*", "read"), ["fs-root-wildcard@/fs/0"]);
        // `/a/\*/**` is everything under the directory `/a/*`, two levels down; `/a/*/**` is under every `/a/x`.
        assert_eq!(grant(Platform::Posix, "/a/\\*/**", "read"), Vec::<String>::new());
        assert_eq!(grant(Platform::Posix, "/a/*/**", "read"), ["fs-top-level-recursive@/fs/0"]);
        // A write grant of the one name `*` at the root is like one of `/a`: no wildcard near the root.
        assert_eq!(grant(Platform::Posix, "/\\*", "write"), Vec::<String>::new());
        assert_eq!(grant(Platform::Posix, "/*", "write"), ["fs-root-wildcard@/fs/0", "fs-write-near-root@/fs/0/mode"]);
        assert_eq!(grant(Platform::Posix, "/srv/\\*", "write"), Vec::<String>::new());
    }

    #[test]
    fn braces_are_variants_and_classes_are_wildcards() {
        // Literal alternatives grant no wildcard at the root.
        assert_eq!(grant(Platform::Posix, "/{srv,opt}/app", "read"), Vec::<String>::new());
        assert_eq!(grant(Platform::Posix, "/{srv,opt}/**", "read"), ["fs-top-level-recursive@/fs/0"]);
        // One wildcard alternative is enough.
        assert_eq!(grant(Platform::Posix, "/{srv,*}/app", "read"), ["fs-root-wildcard@/fs/0"]);
        let w = fs_warnings(Platform::Posix, json!({ "fs": ["/{*,opt}/**"] }));
        assert_eq!(w, ["fs-root-wildcard@/fs/0"]);
        let p = PermissionPolicy::from_manifest(
            &json!({ "fs": ["/*/**"] }),
            PolicyOptions::new("t").platform(Platform::Posix),
        )
        .unwrap();
        assert!(p.lint()[0]["message"].as_str().unwrap().ends_with("at the filesystem root and everything below it"));
        // Classes and `?` are wildcards.
        assert_eq!(grant(Platform::Posix, "/[ab]", "read"), ["fs-root-wildcard@/fs/0"]);
        assert_eq!(grant(Platform::Posix, "/?/x", "read"), ["fs-root-wildcard@/fs/0"]);
        assert_eq!(grant(Platform::Posix, "/srv/[ab]*", "readwrite"), ["fs-write-near-root@/fs/0/mode"]);
        // The root itself, and win32's drive root.
        assert_eq!(grant(Platform::Posix, "/", "write"), ["fs-write-near-root@/fs/0/mode"]);
        assert_eq!(
            grant(Platform::Win32, "C:\\**", "write"),
            ["fs-root-wildcard@/fs/0", "fs-write-near-root@/fs/0/mode"]
        );
        assert_eq!(grant(Platform::Win32, "c:\\Users\\**", "read"), ["fs-top-level-recursive@/fs/0"]);
        assert_eq!(grant(Platform::Win32, "C:\\Users\\me\\**", "read"), Vec::<String>::new());
    }

    #[test]
    fn deny_reach_reads_variants_and_escapes() {
        let w = fs_warnings(
            Platform::Posix,
            json!({ "fs": ["/srv/a/**"], "deny": { "fs": ["/srv/\\*", "/{srv,etc}/a/x", "/{etc,opt}/x", "/srv/*/y"] } }),
        );
        // `/srv/\*` names the file `*` in /srv, which /srv/a/** never reaches; one brace variant reaching is enough.
        assert_eq!(w, ["deny-unreachable@/deny/fs/0", "deny-unreachable@/deny/fs/2"]);
        let w = fs_warnings(
            Platform::Win32,
            json!({ "fs": ["C:\\Data\\**"], "deny": { "fs": ["c:\\data\\x", "C:\\Other"] } }),
        );
        assert_eq!(w, ["fs-top-level-recursive@/fs/0", "deny-unreachable@/deny/fs/1"]);
    }

    #[test]
    fn ip_denies_reach_as_the_compiled_deny_decides() {
        let unreachable = |fetch: serde_json::Value, deny: serde_json::Value| -> Vec<String> {
            fs_warnings(Platform::Posix, json!({ "fetch": fetch, "deny": { "fetch": deny } }))
                .into_iter()
                .filter(|w| w.starts_with("deny-unreachable"))
                .collect()
        };
        // An IPv6 deny in an embedding form reaches a grant of the IPv4 address it carries, and the other way round.
        let deny =
            json!(["[64:ff9b::808:808]", "[2606:4700:10:20::5efe:808:808]", "[::ffff:808:800]/120", "[::808:800]/120"]);
        assert_eq!(unreachable(json!(["8.8.8.8"]), deny.clone()), Vec::<String>::new());
        assert_eq!(unreachable(json!(["[2002:808:808::1]"]), deny.clone()), Vec::<String>::new());
        // A name may resolve to the denied address (checkFetchAddress): reached.
        assert_eq!(unreachable(json!(["*.example.org"]), deny.clone()), Vec::<String>::new());
        assert_eq!(unreachable(json!(["api.example.org"]), json!(["10.0.0.1"])), Vec::<String>::new());
        // Another address is not reached.
        assert_eq!(
            unreachable(json!(["8.8.4.4"]), deny),
            [
                "deny-unreachable@/deny/fetch/0",
                "deny-unreachable@/deny/fetch/1",
                "deny-unreachable@/deny/fetch/2",
                "deny-unreachable@/deny/fetch/3"
            ]
        );
    }

    /// Thousands of grants and deny rules: each deny is one index lookup.
    /// The answers equal the pairwise definition (every pair compared) on a
    /// smaller mixed list.
    #[test]
    fn deny_reach_is_indexed() {
        let unreachable = |m: serde_json::Value| -> usize {
            fs_warnings(Platform::Posix, m).iter().filter(|w| w.starts_with("deny-unreachable")).count()
        };
        let n = 8_000;
        let m = json!({
            "fs": (0..n).map(|i| format!("/srv/g{i}/**")).collect::<Vec<_>>(),
            "deny": { "fs": (0..n).map(|i| format!("/other/d{i}/**")).collect::<Vec<_>>() },
        });
        assert_eq!(unreachable(m), n);
        let ips = |k: u32| format!("{}.{}.{}.1", 1 + (k >> 16), (k >> 8) & 255, k & 255);
        let m = json!({
            "fetch": (0..10_000).map(ips).collect::<Vec<_>>(),
            "deny": { "fetch": (0..10_000).map(|k: u32| format!("100.{}.{}.0/24", (k >> 8) & 255, k & 255)).collect::<Vec<_>>() },
        });
        assert_eq!(unreachable(m), 10_000);
        // The pairwise definition on a mixed list.
        let grants = ["/a/b/**", "/a/{c,d}/x", "/e/*", "/f/g", "/A/b/*"];
        let denies = ["/a/**", "/a/b/c", "/a/d/**", "/e/f/g", "/f", "/f/h", "/z/**", "/a/B/x", "/{a,z}/c/**"];
        let m = json!({ "fs": grants, "deny": { "fs": denies } });
        let p = PermissionPolicy::from_manifest(&m, PolicyOptions::new("t").platform(Platform::Posix)).unwrap();
        let pairwise: Vec<usize> = (0..denies.len())
            .filter(|&i| {
                !p.literal_dirs(denies[i]).iter().any(|dd| {
                    grants.iter().flat_map(|g| p.literal_dirs(g)).any(|g| {
                        let k = g.len().min(dd.len());
                        g[..k] == dd[..k]
                    })
                })
            })
            .collect();
        let got: Vec<usize> = p
            .lint()
            .iter()
            .filter_map(|w| w["pointer"].as_str().and_then(|s| s.strip_prefix("/deny/fs/")).map(|s| s.parse().unwrap()))
            .collect();
        assert_eq!(got, pairwise);
        let cidrs =
            ["8.8.8.0/24", "9.0.0.0/8", "[::ffff:808:800]/120", "[64:ff9b::]/96", "10.0.0.0/8", "[2001:db8::]/32"];
        let grants = ["8.8.8.8", "[64:ff9b::909:909]", "[2001:db8::1]", "1.1.1.1"];
        let m = json!({ "fetch": grants, "deny": { "fetch": cidrs } });
        let p = PermissionPolicy::from_manifest(&m, PolicyOptions::new("t").platform(Platform::Posix)).unwrap();
        let pairwise: Vec<usize> = (0..cidrs.len())
            .filter(|&i| {
                let d = &p.deny_fetch()[i];
                !p.fetch_patterns().iter().any(|g| match &g.host {
                    HostPattern::Exact(Host::Ipv4(a)) => d.contains(std::net::IpAddr::V4(*a)),
                    HostPattern::Exact(Host::Ipv6(a)) => d.contains(std::net::IpAddr::V6(*a)),
                    _ => true,
                })
            })
            .collect();
        let got: Vec<usize> = p
            .lint()
            .iter()
            .filter_map(|w| {
                w["pointer"].as_str().and_then(|s| s.strip_prefix("/deny/fetch/")).map(|s| s.parse().unwrap())
            })
            .collect();
        assert_eq!(got, pairwise);
        assert!(!got.is_empty() && got.len() < cidrs.len(), "{got:?}");
    }

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
