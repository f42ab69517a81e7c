//! Filesystem checks: lexical path normalisation and compiled glob grants (SPEC §2).

use std::path::{Path, PathBuf};

use crate::error::{Capability, Decision, DenyReason, ManifestError};
use crate::glob::{self, GlobIndex, Modes};
use crate::platform::Platform;

/// Longest path (in UTF-8 bytes) a check accepts, and longest fs glob a manifest may hold.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most `{` groups one fs glob may hold.
pub const MAX_BRACE_GROUPS: usize = 8;
/// Most alternatives (commas inside braces, plus one per group) one fs glob may hold.
pub const MAX_BRACE_ALTERNATIVES: usize = 64;
/// Most brace variants all the fs globs of one policy may expand to together
/// (counted before identical variants are merged).
pub const MAX_POLICY_GLOB_VARIANTS: usize = 16_384;
/// Largest compiled size of all the fs globs of one policy together, in
/// elements: one per literal-prefix byte, segment, pattern character,
/// wildcard and class range of every brace variant.
pub const MAX_POLICY_GLOB_SIZE: usize = 1 << 20;

/// The access a request wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FsMode {
    /// Read a file or list a directory: [`Capability::FsRead`].
    Read,
    /// Create, write, rename or remove: [`Capability::FsWrite`].
    Write,
}

impl FsMode {
    /// `"read"` or `"write"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(FsMode::Read),
            "write" => Some(FsMode::Write),
            _ => None,
        }
    }
    /// The capability a request in this mode is about.
    pub const fn capability(self) -> Capability {
        match self {
            FsMode::Read => Capability::FsRead,
            FsMode::Write => Capability::FsWrite,
        }
    }
}

/// The access a grant gives. Default: `Read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum GrantMode {
    /// `"read"`: [`FsMode::Read`] only.
    #[default]
    Read,
    /// `"write"`: [`FsMode::Write`] only.
    Write,
    /// `"readwrite"`: both.
    ReadWrite,
}

impl GrantMode {
    /// `"read"`, `"write"` or `"readwrite"`, as a manifest spells it.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(GrantMode::Read),
            "write" => Some(GrantMode::Write),
            "readwrite" => Some(GrantMode::ReadWrite),
            _ => None,
        }
    }
    /// Its manifest spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            GrantMode::Read => "read",
            GrantMode::Write => "write",
            GrantMode::ReadWrite => "readwrite",
        }
    }
    /// Whether it grants a request in `mode`.
    #[must_use]
    pub const fn allows(self, mode: FsMode) -> bool {
        matches!(
            (self, mode),
            (GrantMode::ReadWrite, _) | (GrantMode::Read, FsMode::Read) | (GrantMode::Write, FsMode::Write)
        )
    }
}

/// One fs grant after validation: its normalised glob (always `/`-separated) and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrant {
    pub(crate) glob: String,
    pub(crate) mode: GrantMode,
}

/// A path after lexical normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalPath {
    /// `/`-separated, no empty, `.` or `..` segments; win32 as `C:/a/b` with an upper-case drive.
    pub(crate) path: String,
    /// The raw path had a `..` segment.
    pub(crate) had_dotdot: bool,
}

impl FsGrant {
    /// The normalised glob: `/`-separated, absolute (`/…`, or `C:/…` on win32).
    pub fn glob(&self) -> &str {
        &self.glob
    }
    /// The modes it grants.
    pub fn mode(&self) -> GrantMode {
        self.mode
    }
}

impl NormalPath {
    /// The normalised path: `/`-separated, no empty, `.` or `..` segments;
    /// win32 as `C:/a/b` with an upper-case drive letter.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// Whether the raw path had a `..` segment (a denial of such a path is `path_traversal`).
    pub fn had_dotdot(&self) -> bool {
        self.had_dotdot
    }
    /// The normalised path, owned.
    pub fn into_path(self) -> String {
        self.path
    }
}

fn is_win32_sep(c: char) -> bool {
    c == '/' || c == '\\'
}

/// A win32 drive-absolute prefix `X:\` or `X:/`.
fn win32_drive(raw: &str) -> Option<char> {
    let b = raw.as_bytes();
    if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'/' || b[2] == b'\\') {
        Some(b[0].to_ascii_uppercase() as char)
    } else {
        None
    }
}

/// Reserved DOS device names, which Windows opens as devices in any directory.
fn is_win32_device_name(segment: &str) -> bool {
    let base = segment.split('.').next().unwrap_or("").trim_end_matches(' ');
    let upper = base.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        _ => {
            // Byte-safe: a name starting with a multi-byte char is never a device.
            let (Some(head), Some(tail)) = (upper.get(..3), upper.get(3..)) else { return false };
            (head == "COM" || head == "LPT")
                && matches!(tail, "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "¹" | "²" | "³")
        }
    }
}

/// A win32 path segment Windows would open as something other than its text:
/// reserved characters (`:` is an alternate data stream), control characters,
/// trailing dots or spaces (stripped by Windows), or a device name.
fn is_bad_win32_segment(segment: &str) -> bool {
    segment.chars().any(|c| matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*') || (c as u32) < 32)
        || segment.ends_with('.')
        || segment.ends_with(' ')
        || is_win32_device_name(segment)
}

/// Whether a posix path is already in normal form (absolute, no empty, `.`
/// or `..` segments, no trailing `/` unless it is the root, no NUL, within the
/// length limit), so the check can use it as it is, without a copy.
fn posix_is_normal(raw: &str) -> bool {
    let b = raw.as_bytes();
    if b.is_empty() || b[0] != b'/' || b.len() > MAX_PATH_BYTES || (cfg!(windows) && b.contains(&b'\\')) {
        return false;
    }
    if b.len() == 1 {
        return true;
    }
    let mut start = 1;
    for i in 1..=b.len() {
        if i == b.len() || b[i] == b'/' {
            let seg = &b[start..i];
            if seg.is_empty() || seg == b"." || seg == b".." {
                return false;
            }
            start = i + 1;
        } else if b[i] == 0 {
            return false;
        }
    }
    true
}

/// Whether every byte is ASCII and none is upper case (`A`-`Z`): the bytes
/// [`crate::posix_fold::fold`] leaves as they are. Eight bytes at a time: for
/// a word whose bytes are all below 0x80, adding 0x3F to each sets its high
/// bit exactly when it is at least `A`, adding 0x25 exactly when it is past
/// `Z`, and neither sum carries into the next byte.
fn ascii_without_upper(b: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const FROM_A: u64 = 0x3F3F_3F3F_3F3F_3F3F;
    const PAST_Z: u64 = 0x2525_2525_2525_2525;
    let plain = |w: u64| w & HIGH == 0 && w.wrapping_add(FROM_A) & !w.wrapping_add(PAST_Z) & HIGH == 0;
    if b.len() < 8 {
        return b.iter().all(|&c| c < 0x80 && !c.is_ascii_uppercase());
    }
    let word = |w: &[u8]| plain(u64::from_le_bytes(w.try_into().expect("8 bytes")));
    let mut words = b.chunks_exact(8);
    // The whole words, then the last eight bytes, overlapping words already
    // read: copying the remainder into a zeroed word instead cost a call to
    // memcpy and a stalled load (the word read back from bytes just stored)
    // on every check.
    words.all(word) && (words.remainder().is_empty() || word(&b[b.len() - 8..]))
}

/// Lexically normalises `raw` per SPEC §2 rules 1 and 2.
pub fn normalize(raw: &str, platform: Platform) -> Result<NormalPath, DenyReason> {
    if raw.is_empty() || raw.len() > MAX_PATH_BYTES || raw.contains('\0') {
        return Err(DenyReason::InvalidPath);
    }
    let mut out = String::with_capacity(raw.len() + 1);
    let mut had_dotdot = false;
    let (root_len, rest) = match platform {
        Platform::Posix => {
            if !raw.starts_with('/') {
                return Err(DenyReason::InvalidPath);
            }
            // On a Windows host `\` separates even in a "posix" path: deny
            // rather than check a different path than the one opened.
            if cfg!(windows) && raw.contains('\\') {
                return Err(DenyReason::InvalidPath);
            }
            (0, raw)
        }
        Platform::Win32 => {
            let drive = win32_drive(raw).ok_or(DenyReason::InvalidPath)?;
            out.push(drive);
            out.push(':');
            (2, &raw[2..])
        }
    };
    let segments: Box<dyn Iterator<Item = &str>> = match platform {
        Platform::Posix => Box::new(rest.split('/')),
        Platform::Win32 => Box::new(rest.split(is_win32_sep)),
    };
    for segment in segments {
        match segment {
            "" | "." => {}
            ".." => {
                had_dotdot = true;
                if out.len() == root_len {
                    return Err(DenyReason::PathTraversal);
                }
                let cut = out.rfind('/').unwrap_or(root_len);
                out.truncate(cut);
            }
            s => {
                out.push('/');
                out.push_str(s);
            }
        }
    }
    // The win32 segment rules apply to what remains after `..` is resolved
    // (as Windows resolves it): `C:\d\CON\..\y` is `C:\d\y`.
    if platform == Platform::Win32 && out[root_len..].split('/').skip(1).any(is_bad_win32_segment) {
        return Err(DenyReason::InvalidPath);
    }
    if out.len() == root_len {
        out.push('/');
    }
    Ok(NormalPath { path: out, had_dotdot })
}

/// Validates and normalises one fs grant glob (without compiling it).
/// `pointer` is where it sits in the manifest, for the error.
pub(crate) fn normalize_grant(raw: &str, platform: Platform, pointer: &str) -> Result<String, ManifestError> {
    let absolute = match platform {
        Platform::Posix => "an absolute posix glob starting with '/'",
        Platform::Win32 => "an absolute win32 glob starting with a drive like 'C:\\'",
    };
    if raw.is_empty() || raw.contains('\0') {
        return Err(ManifestError::new(pointer, format!("{absolute}, non-empty and without NUL")));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(ManifestError::new(pointer, format!("a glob of at most {MAX_PATH_BYTES} bytes")));
    }
    // The normalised glob is never longer than the raw one plus a root '/'.
    let mut out = String::with_capacity(raw.len() + 1);
    let rest = match platform {
        Platform::Posix if raw.starts_with('/') => raw,
        Platform::Win32 => match win32_drive(raw) {
            Some(d) => {
                out.push(d);
                out.push(':');
                &raw[2..]
            }
            None => return Err(ManifestError::new(pointer, absolute)),
        },
        Platform::Posix => return Err(ManifestError::new(pointer, absolute)),
    };
    let root_len = out.len();
    let segs = rest.split(|c: char| match platform {
        Platform::Posix => c == '/',
        Platform::Win32 => is_win32_sep(c),
    });
    for s in segs {
        match s {
            "" => {}
            "." | ".." => {
                return Err(ManifestError::new(
                    pointer,
                    "a normalised glob: no '.' or '..' segments (write the directory it means)",
                ))
            }
            s => {
                out.push('/');
                out.push_str(s);
            }
        }
    }
    if out.len() == root_len {
        out.push('/');
    }
    let groups = out.matches('{').count();
    let alternatives = groups + out.matches(',').count();
    if groups > MAX_BRACE_GROUPS || alternatives > MAX_BRACE_ALTERNATIVES {
        return Err(ManifestError::new(
            pointer,
            format!(
                "at most {MAX_BRACE_GROUPS} '{{...}}' groups and {MAX_BRACE_ALTERNATIVES} alternatives in one glob"
            ),
        ));
    }
    Ok(out)
}

/// Whether one normalised grant glob matches a normalised path (for explain
/// and lint; the checker uses the compiled index).
pub(crate) fn grant_matches(glob: &str, path: &str, platform: Platform) -> bool {
    let g = FsGrant { glob: glob.to_owned(), mode: GrantMode::ReadWrite };
    FsMatcher::compile(std::slice::from_ref(&g), platform).is_ok_and(|m| m.index.modes(path, 3) != 0)
}

fn parse_glob(glob: &str, platform: Platform) -> Result<Vec<glob::ParsedGlob>, glob::GlobError> {
    glob::parse(glob, if platform == Platform::Win32 { glob::Syntax::WIN32 } else { glob::Syntax::POSIX })
}

/// The compiled fs grants of a policy: one index (see [`crate::glob`]), built once.
#[derive(Debug, Clone)]
pub(crate) struct FsMatcher {
    platform: Platform,
    index: GlobIndex,
    /// `deny.fs` beyond what `index` holds: `None` without deny globs (most
    /// policies), so their parts take no room in a policy that has none.
    deny: Option<Box<FsDeny>>,
    /// Brace variants and compiled size added so far (for the policy-wide caps).
    variants: usize,
    size: usize,
}

/// The `deny.fs` parts of an [`FsMatcher`] (its deny globs themselves are in
/// its `index`, mode bit [`glob::DENY`], SPEC §10, matched in the same walk
/// as the grants).
#[derive(Debug, Clone)]
struct FsDeny {
    /// win32: the deny variants, for the 8.3 alias walk.
    variants: Vec<glob::ParsedGlob>,
    /// posix: the deny variants under [`crate::posix_fold`], matched against
    /// the folded path besides the exact ones in `index` (SPEC §10: a deny
    /// is never narrower than it reads, on a case- or
    /// normalisation-insensitive volume too).
    folded: GlobIndex,
    /// posix: by [`crate::posix_fold::OTHER_FORMS`] (the one-character fold,
    /// and both folds decomposed), the deny variants whose spelling in that
    /// form differs from their fold (a literal `ß`, `ﬁ`, `İ`, `é`...), in that
    /// form; the path in the same form is matched against these and `folded`.
    /// There a `?` or a class stands on the characters it stood on in that
    /// spelling, and so does the glob's literal text.
    forms: [GlobIndex; 3],
    /// posix: whether some deny variant changes under [`glob::fold_posix`]. When
    /// none does, an ASCII path without upper case (which the fold leaves as
    /// it is) gets the same answer from `folded` as from `index`, so the
    /// second walk is skipped.
    fold_differs: bool,
}

/// win32: whether a glob's text spells or aims at the `~N` of an 8.3 short
/// name (`PROGRA~1`, `PROGRA~12`, `SECRET~?.TXT`, `X~[0-9]`). A `~*` (`~*.tmp`,
/// names starting with `~`) is a pattern over names like any other.
fn names_short_name(glob: &str) -> bool {
    glob.as_bytes().windows(2).any(|w| w[0] == b'~' && (w[1].is_ascii_digit() || w[1] == b'?' || w[1] == b'['))
}

/// win32: whether a brace variant has a literal segment shaped like an 8.3
/// short name (`A~{1,2}` expands to `A~1`, `A~2`).
fn spells_short_name(g: &glob::ParsedGlob) -> bool {
    g.prefix.split('/').any(glob::is_short_name_shape)
        || g.rest
            .iter()
            .any(|s| matches!(s, glob::Seg::Pat(p) if p.is_literal() && glob::is_short_name_shape(&p.literal())))
}

const fn mode_bit(mode: FsMode) -> Modes {
    match mode {
        FsMode::Read => 1,
        FsMode::Write => 2,
    }
}

const fn grant_bits(mode: GrantMode) -> Modes {
    match mode {
        GrantMode::Read => 1,
        GrantMode::Write => 2,
        GrantMode::ReadWrite => 3,
    }
}

impl FsMatcher {
    /// A matcher with no grants (it denies everything).
    pub fn new(platform: Platform) -> Self {
        let root_len = if platform == Platform::Win32 { 2 } else { 0 };
        Self {
            platform,
            index: GlobIndex::new(
                if platform == Platform::Win32 { glob::Case::Ntfs } else { glob::Case::Exact },
                root_len,
            ),
            deny: None,
            variants: 0,
            size: 0,
        }
    }

    /// Parses one normalised `deny.fs` glob and adds it; a bad glob is an
    /// error at `pointer`. Deny globs count toward the policy-wide caps.
    pub fn add_deny(&mut self, glob: &str, pointer: &str) -> Result<(), ManifestError> {
        let variants = self.parse_counted(glob, pointer)?;
        if self.platform == Platform::Win32 && (names_short_name(glob) || variants.iter().any(spells_short_name)) {
            // The long name an 8.3 name stands for is the volume's to choose
            // (any long name can take it), so such a deny cannot be held to
            // what it reads (SPEC §10); a deny of the long name covers its
            // short aliases (the path side of the 8.3 rule).
            return Err(ManifestError::new(
                pointer,
                "a deny glob without an 8.3 short name (a literal segment shaped like `NAME~1.EXT`, or a `~` \
                 followed by a digit, `?` or `[`): a short name can stand for any long name; deny the long name, \
                 which denies its short aliases too",
            ));
        }
        let deny = self.deny.get_or_insert_with(|| {
            Box::new(FsDeny {
                variants: Vec::new(),
                folded: GlobIndex::new(glob::Case::Exact, 0),
                forms: std::array::from_fn(|_| GlobIndex::new(glob::Case::Exact, 0)),
                fold_differs: false,
            })
        });
        for v in variants.into_iter().flat_map(glob::deny_variants) {
            match self.platform {
                Platform::Win32 => deny.variants.push(v.clone()),
                Platform::Posix => {
                    let folded = glob::fold_posix(&v);
                    deny.fold_differs |= folded != v;
                    // ASCII literal text is spelled alike in every form (its classes are kept as written).
                    let forms = if v.literal_text_is_ascii() { &[][..] } else { &crate::posix_fold::OTHER_FORMS[..] };
                    for (form, index) in forms.iter().zip(&mut deny.forms) {
                        // No bearing on `fold_differs`: the fast path's paths (ASCII, no upper case) read alike in every form.
                        let other = glob::fold_posix_by(&v, *form);
                        if other != folded {
                            index.add(other, glob::DENY);
                        }
                    }
                    deny.folded.add(folded, glob::DENY);
                }
            }
            self.index.add(v, glob::DENY);
        }
        Ok(())
    }

    /// Whether a `deny.fs` glob matches the normalised path.
    pub fn denied(&self, path: &str) -> bool {
        self.deny.as_deref().is_some_and(|d| self.index.decide(path, 1, &d.variants).1 || self.denied_folded(d, path))
    }

    /// posix: whether a folded deny glob matches the folded path.
    fn denied_folded(&self, deny: &FsDeny, path: &str) -> bool {
        if self.platform != Platform::Posix {
            return false;
        }
        if !deny.fold_differs && ascii_without_upper(path.as_bytes()) {
            // The fold is the identity on both sides: `index` already answered.
            return false;
        }
        let full = crate::posix_fold::fold(path);
        if deny.folded.decide(&full, 1, &[]).1 {
            return true;
        }
        if path.is_ascii() {
            return false;
        }
        // The path as written but for what HFS+ ignores in names, against the
        // deny globs as written: a deny matches every spelling of a path it
        // matched unfolded (`[\u{100}-\u{212A}]` holds `ẞ`, so `ẞ\u{202A}`).
        let bare = crate::posix_fold::without_ignorables(path);
        if bare != path && self.index.decide(&bare, 1, &deny.variants).1 {
            return true;
        }
        // A length-changing fold (`ß` → `ss`) moves characters away from the
        // glob's `?` and classes, and so does a decomposition (`á` is
        // `a\u{301}` on a volume that stores names decomposed): match the
        // path's other spellings too, each against the globs in the same
        // spelling (a glob whose literal text holds `ß` is `ß` in the
        // one-character fold, not `ss`).
        crate::posix_fold::other_spellings(path, &full).iter().zip(&deny.forms).any(|(other, index)| {
            *other != full && (deny.folded.decide(other, 1, &[]).1 || index.decide(other, 1, &[]).1)
        })
    }

    /// Whether a `deny.fs` glob may match `dir` or a path below it, read on
    /// the compiled deny globs under every spelling [`Self::denied`] matches
    /// a path in (SPEC §17: what a directory rename moves). A host that
    /// renames or replaces a directory asks it for both names: every path
    /// below moves with the directory, into or out of a deny's reach.
    /// Generous where unsure (fail closed): a pattern segment past `dir` is
    /// taken to match some name; a `dir` that does not normalise reaches;
    /// on win32 a `dir` holding an 8.3-shaped segment (it may alias any
    /// long name) reaches whenever a deny exists.
    pub fn deny_reaches(&self, dir: &str) -> bool {
        let Some(deny) = self.deny.as_deref() else { return false };
        let Ok(n) = normalize(dir, self.platform) else { return true };
        let d = n.path.as_str();
        if self.index.reaches(d, glob::DENY) {
            return true;
        }
        match self.platform {
            Platform::Win32 => d[2..].split('/').any(glob::is_short_name_shape),
            Platform::Posix => {
                // The spellings `denied_folded` matches a path in, each
                // against the same globs (every one folds `dir/rest` to
                // `fold(dir)/fold(rest)`: `/` is kept and never composes).
                let full = crate::posix_fold::fold(d);
                if deny.folded.reaches(&full, glob::DENY) {
                    return true;
                }
                let bare = crate::posix_fold::without_ignorables(d);
                if bare != d && self.index.reaches(&bare, glob::DENY) {
                    return true;
                }
                crate::posix_fold::other_spellings(d, &full)
                    .iter()
                    .zip(&deny.forms)
                    .any(|(other, index)| deny.folded.reaches(other, glob::DENY) || index.reaches(other, glob::DENY))
            }
        }
    }

    /// Parses one normalised grant and adds it; a bad glob is an error at `pointer`.
    pub fn add(&mut self, grant: &FsGrant, pointer: &str) -> Result<(), ManifestError> {
        let variants = self.parse_counted(&grant.glob, pointer)?;
        for v in variants {
            self.index.add(v, grant_bits(grant.mode));
        }
        Ok(())
    }

    /// Parses a glob, checks it against the policy-wide caps and counts it.
    fn parse_counted(&mut self, glob: &str, pointer: &str) -> Result<Vec<glob::ParsedGlob>, ManifestError> {
        let variants = parse_glob(glob, self.platform).map_err(|e| {
            ManifestError::new(
                pointer,
                format!(
                    "a valid glob ({e}); `*` `?` `[...]` `{{a,b}}` and whole-segment `**` are special, write `[*]` for a literal '*'"
                ),
            )
        })?;
        let size: usize = variants.iter().map(glob::ParsedGlob::size).sum();
        if self.variants + variants.len() > MAX_POLICY_GLOB_VARIANTS || self.size + size > MAX_POLICY_GLOB_SIZE {
            return Err(ManifestError::new(
                pointer,
                format!(
                    "fs globs within the policy-wide cap of {MAX_POLICY_GLOB_VARIANTS} brace variants and \
                     {MAX_POLICY_GLOB_SIZE} compiled elements (all globs together; this one takes it past)"
                ),
            ));
        }
        self.variants += variants.len();
        self.size += size;
        Ok(variants)
    }

    /// Compiles validated grants. Errors carry the pointer `/fs/<i>`.
    pub fn compile(grants: &[FsGrant], platform: Platform) -> Result<Self, ManifestError> {
        let mut m = Self::new(platform);
        for (i, g) in grants.iter().enumerate() {
            m.add(g, &format!("/fs/{i}"))?;
        }
        Ok(m)
    }

    /// The end of the deepest literal directory prefix `path[..n]` of a grant
    /// that gives the normalised `path` one of `modes` (`path.len()` when a
    /// grant names `path` exactly): the directory a checked open starts
    /// beneath ([`crate::open`]). `None` when no grant gives one. Deny globs
    /// play no part: the caller has already checked `path`.
    pub(crate) fn granting_prefix(&self, path: &str, modes: &[FsMode]) -> Option<usize> {
        self.index.granting_prefix(path, modes.iter().fold(0, |m, x| m | mode_bit(*x)))
    }

    /// Matches an already-normalised path (rule 3 of SPEC §2).
    pub fn match_normal(&self, path: &NormalPath, mode: FsMode) -> Decision {
        self.match_str(&path.path, path.had_dotdot, mode)
    }

    fn match_str(&self, path: &str, had_dotdot: bool, mode: FsMode) -> Decision {
        let cap = mode.capability();
        let modes = if let Some(deny) = self.deny.as_deref() {
            // Deny wins (SPEC §10), whatever the grants say, in every mode.
            let (modes, denied) = self.index.decide(path, mode_bit(mode), &deny.variants);
            if denied || self.denied_folded(deny, path) {
                return Decision::deny(cap, DenyReason::ExplicitlyDenied);
            }
            modes
        } else {
            self.index.modes(path, mode_bit(mode))
        };
        if modes & mode_bit(mode) != 0 {
            return Decision::Allowed;
        }
        if modes != 0 {
            Decision::deny(cap, DenyReason::ModeNotGranted)
        } else if had_dotdot {
            Decision::deny(cap, DenyReason::PathTraversal)
        } else {
            Decision::deny(cap, DenyReason::NotAllowlisted)
        }
    }

    /// The lexical check of SPEC §2.
    pub fn check(&self, raw: &str, mode: FsMode) -> Decision {
        if self.platform == Platform::Posix && posix_is_normal(raw) {
            return self.match_str(raw, false, mode);
        }
        match normalize(raw, self.platform) {
            Ok(p) => self.match_normal(&p, mode),
            Err(reason) => Decision::deny(mode.capability(), reason),
        }
    }

    /// The lexical check, then the same check on the real path: a real path
    /// outside the grants is `symlink_escape` (SPEC §2 "Symlinks"). See
    /// [`FsMatcher::authorize`] for how the real path is found.
    pub fn check_resolved(&self, raw: &str, mode: FsMode) -> Decision {
        match self.authorize(raw, mode, true) {
            Ok(_) => Decision::Allowed,
            Err(reason) => Decision::deny(mode.capability(), reason),
        }
    }

    /// The check, returning the path the host must open when it allows: the
    /// normalised path, or with `resolve` the real path.
    ///
    /// With `resolve`, both the normalised path and the real path must be
    /// inside the grants. The real path is what `open(2)` would reach from
    /// the RAW path (see [`real_path`]): components left to right, so a `..`
    /// after a symlink climbs from the link's target, never from the link.
    /// Fails closed: when the real path cannot be determined (a link loop or
    /// more than [`MAX_SYMLINK_HOPS`] links, an I/O error, a non-directory or
    /// a missing directory followed by `..`, a non-UTF-8 target, a real path
    /// over [`MAX_PATH_BYTES`], or a policy platform that is not this host's)
    /// the answer is `symlink_escape`.
    pub fn authorize(&self, raw: &str, mode: FsMode, resolve: bool) -> Result<String, DenyReason> {
        let lexical = normalize(raw, self.platform)?;
        if let Some(reason) = self.match_normal(&lexical, mode).reason() {
            return Err(reason);
        }
        if !resolve {
            return Ok(lexical.path);
        }
        let host_platform = if cfg!(windows) { Platform::Win32 } else { Platform::Posix };
        if self.platform != host_platform {
            return Err(DenyReason::SymlinkEscape);
        }
        // What the kernel resolves: on posix the raw path itself (`..` after
        // a link climbs from its target); on Windows the Win32 layer
        // collapses `..` lexically before any link is followed, so the
        // normalised path.
        let walk = if cfg!(windows) { lexical.path.as_str() } else { raw };
        let real = real_path(Path::new(walk)).map_err(|_| DenyReason::SymlinkEscape)?;
        let real = real.to_str().ok_or(DenyReason::SymlinkEscape)?;
        let real = normalize(real, self.platform).map_err(|_| DenyReason::SymlinkEscape)?;
        match self.match_normal(&real, mode) {
            Decision::Allowed => Ok(real.path),
            Decision::Denied(d) => Err(match d.reason {
                DenyReason::NotAllowlisted | DenyReason::PathTraversal => DenyReason::SymlinkEscape,
                other => other,
            }),
        }
    }
}

/// Most symlinks followed while resolving one path (Linux's `MAXSYMLINKS`);
/// one more is a loop (`ELOOP`) and denies.
pub const MAX_SYMLINK_HOPS: usize = 40;

fn unresolvable(why: &str) -> std::io::Error {
    std::io::Error::other(format!("real path undetermined: {why}"))
}

/// The real path `open(2)` reaches from an absolute path, following every
/// symlink including the final one (a dangling final link resolves to the
/// path it names, which `O_CREAT` would create).
///
/// On unix the path is walked as the kernel walks it: components left to
/// right from `/`; a symlink's target (relative to the link's directory, or
/// absolute) replaces the link and is walked the same way, so a `..` after a
/// link climbs from the link's target; `..` at `/` stays at `/`. Once a
/// component does not exist, the rest is appended lexically (what a create
/// would name).
///
/// Errors (every one means "deny"): more than [`MAX_SYMLINK_HOPS`] links
/// (`ELOOP`); a component that is not a directory but is followed by more of
/// the path (`ENOTDIR`); a `..` after a missing component (the kernel fails
/// with `ENOENT`; allowing it would guess what a later-created link means);
/// a result longer than [`MAX_PATH_BYTES`]; any I/O error but "not found".
/// `.`, repeated `/` and a trailing `/` are no-ops (a trailing `/` on a
/// non-directory is `ENOTDIR`).
///
/// On Windows the Win32 layer collapses `..` lexically before it reaches the
/// filesystem, so callers pass the normalised path; links are followed the
/// same way.
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    #[cfg(unix)]
    {
        real_path_unix(path)
    }
    #[cfg(not(unix))]
    {
        real_path_components(path)
    }
}

/// One step of the walk: a name, `..`, or a separator-only step (`.`, an
/// empty segment) that only says "the component before me is a directory".
#[cfg(unix)]
enum Step {
    Name(Vec<u8>),
    Parent,
    Dir,
}

#[cfg(unix)]
fn steps_of(bytes: &[u8], out: &mut std::collections::VecDeque<Step>) {
    let mut steps: Vec<Step> = Vec::new();
    for seg in bytes.split(|b| *b == b'/') {
        steps.push(match seg {
            b"" | b"." => Step::Dir,
            b".." => Step::Parent,
            s => Step::Name(s.to_vec()),
        });
    }
    for s in steps.into_iter().rev() {
        out.push_front(s);
    }
}

/// The directory the walk has reached: an open handle, so each lookup hands
/// the kernel one name and the walk stays linear in the path's length (a
/// lookup by the whole resolved path would walk its prefix again per
/// component). `None` where this process may search a directory but not
/// open it (no `O_PATH` outside Linux, and a search-only directory): its
/// lookups then go by the resolved path, as `lstat` would.
#[cfg(unix)]
struct WalkDir(Option<rustix::fd::OwnedFd>);

#[cfg(unix)]
impl WalkDir {
    /// What `O_PATH` is where the platform has it: a handle that only names
    /// the directory (the permission a lookup needs, search, is all it asks).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const FLAGS: rustix::fs::OFlags = rustix::fs::OFlags::PATH
        .union(rustix::fs::OFlags::DIRECTORY)
        .union(rustix::fs::OFlags::NOFOLLOW)
        .union(rustix::fs::OFlags::CLOEXEC);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const FLAGS: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
        .union(rustix::fs::OFlags::DIRECTORY)
        .union(rustix::fs::OFlags::NOFOLLOW)
        .union(rustix::fs::OFlags::CLOEXEC);

    /// The directory `name` below this one (`resolved`: its path, name included).
    fn open(&self, name: &[u8], resolved: &[u8]) -> std::io::Result<WalkDir> {
        count_walk_bytes(name.len());
        let r = match &self.0 {
            Some(fd) => rustix::fs::openat(fd, name, Self::FLAGS, rustix::fs::Mode::empty()),
            None => rustix::fs::openat(rustix::fs::CWD, resolved, Self::FLAGS, rustix::fs::Mode::empty()),
        };
        match r {
            Ok(fd) => Ok(WalkDir(Some(fd))),
            // Searchable, not openable: looked up by path from here on.
            Err(rustix::io::Errno::ACCESS) => Ok(WalkDir(None)),
            Err(e) => Err(e.into()),
        }
    }

    /// `lstat` of `name` in this directory (`resolved`: the path, name included).
    fn lstat(&self, name: &[u8], resolved: &[u8]) -> std::io::Result<rustix::fs::Stat> {
        count_walk_bytes(name.len());
        let nofollow = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
        Ok(match &self.0 {
            Some(fd) => rustix::fs::statat(fd, name, nofollow)?,
            None => rustix::fs::statat(rustix::fs::CWD, resolved, nofollow)?,
        })
    }

    /// The target of the symlink `name` in this directory.
    fn read_link(&self, name: &[u8], resolved: &[u8]) -> std::io::Result<Vec<u8>> {
        count_walk_bytes(name.len());
        let target = match &self.0 {
            Some(fd) => rustix::fs::readlinkat(fd, name, Vec::new())?,
            None => rustix::fs::readlinkat(rustix::fs::CWD, resolved, Vec::new())?,
        };
        Ok(target.into_bytes())
    }
}

#[cfg(all(unix, test))]
thread_local! {
    /// Path bytes the real-path walk handed the kernel on this thread (tests bound it by the path's length).
    static WALK_BYTES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(unix)]
#[inline]
fn count_walk_bytes(_n: usize) {
    #[cfg(test)]
    WALK_BYTES.with(|w| w.set(w.get() + _n as u64 + 1));
}

#[cfg(unix)]
fn real_path_unix(path: &Path) -> std::io::Result<PathBuf> {
    use std::collections::VecDeque;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};

    let bytes = path.as_os_str().as_bytes();
    if bytes.first() != Some(&b'/') {
        return Err(unresolvable("not an absolute path"));
    }
    if bytes.len() > MAX_PATH_BYTES || bytes.contains(&0) {
        return Err(unresolvable("invalid path"));
    }
    let root = || WalkDir(None).open(b"/", b"/");
    // `resolved` never holds a symlink: each name is lstat-ed before it is
    // appended. `dir` is the directory it names while the walk goes on
    // below it (a `..` opens that directory's parent, which is `resolved`
    // without its last name: no component of it is a link).
    let mut resolved: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut dir = root()?;
    let mut pending: VecDeque<Step> = VecDeque::new();
    steps_of(bytes, &mut pending);
    let mut hops = 0usize;
    // Set once a name does not exist: the rest is appended lexically.
    let mut missing = false;
    // Whether the last appended name must be (and was checked to be) a directory.
    let mut last_is_dir = true;
    let pop = |resolved: &mut Vec<u8>| {
        let cut = resolved.iter().rposition(|b| *b == b'/').unwrap_or(0);
        resolved.truncate(cut);
    };
    while let Some(step) = pending.pop_front() {
        match step {
            Step::Dir => {
                if !last_is_dir && !missing {
                    return Err(unresolvable("a non-directory followed by '/'"));
                }
            }
            Step::Parent => {
                if missing {
                    return Err(unresolvable("'..' after a missing directory"));
                }
                if !last_is_dir {
                    return Err(unresolvable("'..' after a non-directory"));
                }
                pop(&mut resolved);
                dir = if resolved.is_empty() { root()? } else { dir.open(b"..", &resolved)? };
                last_is_dir = true;
            }
            Step::Name(name) => {
                if !missing && !last_is_dir {
                    return Err(unresolvable("a non-directory followed by more of the path"));
                }
                let base = resolved.len();
                resolved.push(b'/');
                resolved.extend_from_slice(&name);
                if resolved.len() > MAX_PATH_BYTES {
                    return Err(unresolvable("real path too long"));
                }
                if missing {
                    continue;
                }
                match dir.lstat(&name, &resolved) {
                    Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(unresolvable("too many levels of symbolic links"));
                        }
                        let target = dir.read_link(&name, &resolved)?;
                        if target.is_empty() || target.len() > MAX_PATH_BYTES {
                            return Err(unresolvable("an empty or oversized link target"));
                        }
                        // The link is replaced by its target: relative targets
                        // start from the link's directory, absolute ones from `/`.
                        resolved.truncate(base);
                        if target[0] == b'/' {
                            resolved.clear();
                            dir = root()?;
                        }
                        steps_of(&target, &mut pending);
                        last_is_dir = true;
                    }
                    Ok(st) => {
                        last_is_dir =
                            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory;
                        // The walk goes on below it only when more names or `..` follow.
                        let descends = pending
                            .iter()
                            .find(|s| !matches!(s, Step::Dir))
                            .is_some_and(|s| matches!(s, Step::Name(_) | Step::Parent));
                        if last_is_dir && descends {
                            dir = dir.open(&name, &resolved)?;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        missing = true;
                        last_is_dir = false;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    if resolved.is_empty() {
        resolved.push(b'/');
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(resolved)))
}

/// The walk over `Path` components (non-unix hosts), for an already
/// normalised path: no `..` is left for the walk to misplace, except those a
/// link target brings, which climb from the target like the kernel does.
#[cfg(not(unix))]
fn real_path_components(path: &Path) -> std::io::Result<PathBuf> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::path::Component;

    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::new();
    let push_components = |p: &Path, pending: &mut VecDeque<OsString>, resolved: &mut PathBuf| {
        let mut items = Vec::new();
        for c in p.components() {
            match c {
                Component::Prefix(pre) => *resolved = PathBuf::from(pre.as_os_str()),
                Component::RootDir => resolved.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => items.push(OsString::from("..")),
                Component::Normal(s) => items.push(s.to_owned()),
            }
        }
        for it in items.into_iter().rev() {
            pending.push_front(it);
        }
    };
    push_components(path, &mut pending, &mut resolved);
    let mut hops = 0;
    let mut missing = false;
    while let Some(c) = pending.pop_front() {
        if c == ".." {
            if missing {
                return Err(unresolvable("'..' after a missing directory"));
            }
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&c);
        if missing {
            resolved = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(unresolvable("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&candidate)?;
                push_components(&target, &mut pending, &mut resolved);
            }
            Ok(_) => resolved = candidate,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing = true;
                resolved = candidate;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(resolved)
}

/// Whether one normalised `deny.fs` glob matches a normalised path (for
/// explain and lint; the checker uses the compiled deny index).
pub(crate) fn deny_matches(glob: &str, path: &str, platform: Platform) -> bool {
    let mut m = FsMatcher::new(platform);
    m.add_deny(glob, "").is_ok() && m.denied(path)
}

#[cfg(test)]
mod tests {
    use super::{ascii_without_upper, names_short_name, FsMatcher};
    use crate::platform::Platform;

    #[test]
    fn win32_deny_globs_naming_short_names_are_refused() {
        for g in ["C:/d/PROGRA~1/**", "C:/d/X~?", "C:/d/X~[1]", "C:/d/X~{1,2}", "C:/d/{a,X~{1,2}.TXT}/**", "C:/~9"] {
            let err = FsMatcher::new(Platform::Win32).add_deny(g, "/deny/fs/3").unwrap_err();
            assert_eq!(err.pointer, "/deny/fs/3");
            assert!(FsMatcher::new(Platform::Posix).add_deny(&g[2..], "/deny/fs/3").is_ok(), "{g}");
        }
        for g in ["C:/d/backup~/**", "C:/d/~x", "C:/d/a~b.txt", "C:/d/~", "C:/d/x~.y", "C:/d/~*.tmp", "C:/d/X~*"] {
            assert!(!names_short_name(g), "{g}");
            assert!(FsMatcher::new(Platform::Win32).add_deny(g, "").is_ok(), "{g}");
        }
    }

    /// The real-path walk hands the kernel one name per lookup: the path
    /// bytes it passes are linear in the path (a lookup by the whole resolved
    /// path per component was quadratic: 293 ms for one 2,000-component path).
    #[cfg(unix)]
    #[test]
    fn the_real_path_walk_is_linear_in_the_path() {
        use std::os::unix::fs::symlink;
        let base = std::env::temp_dir().join(format!("asp-walk-linear-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let base = {
            std::fs::create_dir_all(&base).unwrap();
            std::fs::canonicalize(&base).unwrap()
        };
        // 1,500 nested directories, a link in the middle that climbs back up
        // (`..` after it climbs from its target), and one at the bottom.
        let mut deep = base.clone();
        for i in 0..1500 {
            deep.push(if i == 700 { "m" } else { "a" });
        }
        std::fs::create_dir_all(&deep).unwrap();
        let mut at_mid = base.clone();
        for _ in 0..700 {
            at_mid.push("a");
        }
        symlink("m/../m", at_mid.join("up")).unwrap();
        symlink("../a", deep.join("last")).unwrap();
        // The raw path goes through the link: `.../up/...` for `.../m/...`.
        let (mid, deep_s) = (at_mid.to_str().unwrap(), deep.to_str().unwrap());
        let raw_deep = deep_s.replace(&format!("{mid}/m/"), &format!("{mid}/up/"));
        for (raw, want) in [
            (format!("{raw_deep}/x"), format!("{}/x", deep.to_str().unwrap())),
            (format!("{raw_deep}/last"), format!("{}/a", deep.parent().unwrap().to_str().unwrap())),
            (format!("{raw_deep}/./.."), deep.parent().unwrap().to_str().unwrap().to_owned()),
        ] {
            assert!(raw.len() <= super::MAX_PATH_BYTES, "{}", raw.len());
            super::WALK_BYTES.with(|w| w.set(0));
            let real = super::real_path(std::path::Path::new(&raw)).unwrap();
            assert_eq!(real.to_str().unwrap(), want);
            let handed = super::WALK_BYTES.with(std::cell::Cell::get);
            // Each name at most three times (lstat, open, readlink), plus the
            // link targets' names: linear, whatever the depth.
            assert!(handed <= 4 * raw.len() as u64, "{handed} path bytes for a {}-byte path", raw.len());
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    fn naive(b: &[u8]) -> bool {
        b.iter().all(|&c| c.is_ascii() && !c.is_ascii_uppercase())
    }

    #[test]
    fn ascii_without_upper_is_exact_for_every_byte_at_every_position() {
        // Every byte value at every position of every length up to three
        // words, over lower-case, digit and punctuation backgrounds.
        for background in [b'a', b'z', b'0', b'/', b'@', b'[', b'`', b'{', b'\x7f', 0] {
            for len in 0..=24 {
                let mut v = vec![background; len];
                assert_eq!(ascii_without_upper(&v), naive(&v), "{background} {len}");
                for at in 0..len {
                    for byte in 0..=255u8 {
                        v[at] = byte;
                        assert_eq!(ascii_without_upper(&v), naive(&v), "{v:?}");
                    }
                    v[at] = background;
                }
            }
        }
    }

    /// A posix deny meets its `?` and classes in every spelling of the path
    /// (the fifth red team's cases): a literal that folds longer (`ß` to
    /// `ss`) beside a wildcard, and a wildcard on a decomposed character.
    #[test]
    fn posix_denies_meet_their_wildcards_in_every_spelling() {
        let mut m = FsMatcher::new(Platform::Posix);
        for g in ["/srv/straße/[a-c]?", "/srv/[a-c]?/straße", "/srv/ß/[ẞ]", "/srv/ßa?", "/d/a?", "/d/[!é][é-ж]"]
        {
            m.add_deny(g, "").unwrap();
        }
        for p in [
            "/srv/straße/Bß",
            "/srv/STRASSE/Bß",
            "/srv/Bß/straße",
            "/srv/ẞ/ẞ",
            "/srv/ẞAß",
            "/d/\u{e1}",
            "/d/a\u{301}",
            "/d/\u{c1}",
            "/d/\u{203}",
        ] {
            assert!(m.denied(p), "{p:?}");
        }
        for p in ["/srv/straße/dß", "/srv/zz", "/d/bb", "/d/xyz", "/d/\u{e9}x"] {
            assert!(!m.denied(p), "{p:?}");
        }
    }

    #[test]
    fn ascii_without_upper_over_paths() {
        for (p, want) in [
            ("/srv/app-1/data/dir-2/file-3.txt", true),
            ("/srv/app-1/data/dir-2/File-3.txt", false),
            ("/srv/app-1/data/dir-2/file-3.txZ", false),
            ("/Srv", false),
            ("/srv/é", false),
            ("/srv/\u{212A}", false),
            ("/[\\]^_`{|}~@?>=<;:", true),
            ("", true),
        ] {
            assert_eq!(ascii_without_upper(p.as_bytes()), want, "{p:?}");
        }
    }
}
