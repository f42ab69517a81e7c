//! Path scopes of fetch patterns (SPEC §11): the restricted URLPattern
//! pathname subset, the request path as compared (WHATWG-parsed, split into
//! percent-decoded segments), and the per-host segment trie that keeps a
//! check flat in the number of grants.
//!
//! Grammar: `/`-separated segments, each a literal, `*` (exactly one whole,
//! non-empty segment) or, last, `**` (one or more segments: `/v1/**` covers
//! `/v1/` and `/v1/a/b`, never `/v1`). Every other URLPattern construct
//! (`:name`, `(regex)`, `{...}`, `?`, `+`, `*` inside a segment, `\` escapes)
//! is rejected, and so is a literal that percent-decodes to `/`, `\`, `%`, a
//! control character, non-UTF-8, `.` or `..`, and an empty segment anywhere
//! but last (`/v1//x`: servers that collapse slashes read another path).
//!
//! Literals and request segments are compared decoded to decoded, exactly
//! (case-sensitive): `/caf%C3%A9`, `/café` and a request for `/caf%c3%a9`
//! are one segment.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::bestfit_table::BEST_FIT;

/// The literal children of a trie node: a short list compared in order
/// while there are few (most nodes have one or two: no hashing on the hot
/// path), a hash map (std's keyed hasher) past [`FEW`]. The short list holds
/// [`Lit`]s: a literal's length and first 8 bytes inline, the whole text in
/// the trie's arena, so a lookup reads the list, skips a literal of another
/// length or head without touching its text, and reads the arena only for
/// the tail of a literal longer than 8 bytes.
#[derive(Debug, Clone, Default)]
enum Children {
    #[default]
    None,
    Few(Vec<Lit>),
    Many(HashMap<String, u32>),
}

/// One literal child in a short list.
#[derive(Debug, Clone, Copy)]
struct Lit {
    /// The first 8 bytes of the literal, zero-padded ([`head`]).
    head: u64,
    off: u32,
    len: u32,
    child: u32,
}

/// The first 8 bytes of `k` as a little-endian `u64`, zero-padded: with the
/// length, equal heads mean equal literals of up to 8 bytes.
fn head(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[..n].copy_from_slice(&k[..n]);
    u64::from_le_bytes(b)
}

const FEW: usize = 16;

impl Children {
    fn get(&self, arena: &str, k: &str) -> Option<u32> {
        match self {
            Children::None => None,
            Children::Few(v) => {
                let kb = k.as_bytes();
                let h = head(kb);
                let ab = arena.as_bytes();
                v.iter()
                    .find(|l| {
                        l.len as usize == kb.len()
                            && l.head == h
                            && (kb.len() <= 8 || ab[l.off as usize + 8..(l.off + l.len) as usize] == kb[8..])
                    })
                    .map(|l| l.child)
            }
            Children::Many(m) => m.get(k).copied(),
        }
    }
    fn insert(&mut self, arena: &mut String, k: &str, n: u32) {
        match self {
            Children::Few(v) if v.len() >= FEW => {
                let mut m: HashMap<String, u32> =
                    v.iter().map(|l| (arena[l.off as usize..(l.off + l.len) as usize].to_owned(), l.child)).collect();
                m.insert(k.to_owned(), n);
                *self = Children::Many(m);
            }
            Children::Many(m) => {
                m.insert(k.to_owned(), n);
            }
            _ => {
                let off = arena.len() as u32;
                arena.push_str(k);
                let e = Lit { head: head(k.as_bytes()), off, len: k.len() as u32, child: n };
                match self {
                    Children::Few(v) => v.push(e),
                    _ => *self = Children::Few(vec![e]),
                }
            }
        }
    }
}

/// One segment of a path pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSeg {
    /// A literal segment, percent-decoded.
    Lit(String),
    /// `*`: exactly one non-empty segment.
    One,
    /// `**`, last only: one or more segments.
    Rest,
}

/// A parsed path scope (`/v1/repos/*/issues`, SPEC §11): what
/// [`FetchPattern::path`](crate::fetch::FetchPattern::path) returns. Its
/// `Display` is the canonical form (literals percent-encoded where needed).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PathPattern {
    pub(crate) segs: Vec<PathSeg>,
}

/// Bytes a literal keeps as they are in the canonical (`toJSON`) form: the
/// RFC 3986 unreserved characters and the sub-delimiters that are not
/// URLPattern syntax. Everything else is percent-encoded, so the canonical
/// form re-parses to the same pattern.
fn keep_raw(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b',' | b';' | b'=' | b'@')
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.segs {
            f.write_str("/")?;
            match s {
                PathSeg::One => f.write_str("*")?,
                PathSeg::Rest => f.write_str("**")?,
                PathSeg::Lit(l) => {
                    for &b in l.as_bytes() {
                        if keep_raw(b) {
                            write!(f, "{}", b as char)?;
                        } else {
                            write!(f, "%{b:02X}")?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `s` (a `%` not followed by two hex digits stays as it is,
/// as WHATWG's percent-decode does); borrows when there is nothing to decode.
pub fn percent_decode(s: &str) -> Cow<'_, [u8]> {
    if !s.as_bytes().contains(&b'%') {
        return Cow::Borrowed(s.as_bytes());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    Cow::Owned(out)
}

/// Whether a decoded segment can never match a path-scoped grant: it holds a
/// control character, or [`reads_as_dots`] (which covers `/`, `\\` and `%`:
/// servers decode `%2F` differently, and a `%` is a double-encoded escape a
/// second decode would turn into anything).
fn is_bad_decoded(s: &str) -> bool {
    s.chars().any(char::is_control) || reads_as_dots(s)
}

/// The byte Windows "best fit" turns `c` into, when that byte is one the
/// reading treats specially (`.`, `/`, `\\`, `:`, `;`, `%`, ASCII white
/// space): `WideCharToMultiByte` without `WC_NO_BEST_FIT_CHARS`, as in the
/// ANSI file APIs and CGI environments, on any code page Microsoft published
/// a best-fit table for ([`BEST_FIT`], generated from those tables by
/// `scripts/gen-bestfit.js`; U+FF0F `／`, U+2215 `∕`, U+00A5 `¥` on 932,
/// U+20A9 `₩` on 949, U+FF0E `．`, U+FF1A `：`, ...). The code pages are read
/// as one (a character is read as its byte if any page maps it so: a server
/// uses one code page, the check does not know which).
fn best_fit(c: char) -> Option<char> {
    if c < BEST_FIT[0].0 {
        return None;
    }
    BEST_FIT.binary_search_by_key(&c, |&(k, _)| k).ok().map(|i| BEST_FIT[i].1 as char)
}

/// The name a server may read in a decoded segment: the part before the
/// first `;` (servlet path parameters) or `:` (NTFS alternate data streams),
/// with trailing dots, white space and default-ignorable characters trimmed
/// (Windows and IIS drop trailing dots and spaces; ignorables are dropped by
/// normalisers). Shared by the grant reading ([`reads_as_dots`]) and the
/// deny reading ([`deny_fold`]).
fn name_part(s: &str) -> &str {
    let head = &s[..s.find([';', ':']).unwrap_or(s.len())];
    head.trim_end_matches(|c: char| c == '.' || c.is_whitespace() || is_ignorable(c))
}

/// Whether one reading of a non-empty segment is a dot segment or a
/// separator: [`name_part`] is empty (the name is only dots, white space and
/// ignorables before the first `;` or `:`), or it holds `/`, `\\` or `%`.
fn reading_is_bad(r: &str) -> bool {
    name_part(r).is_empty() || r.contains(['/', '\\', '%'])
}

/// The readings of a decoded segment some server may act on: the segment
/// itself, its NFKC form (servers and frameworks that normalise), and each
/// of those through Windows best fit ([`best_fit`]): `½` is `1⁄2` to NFKC
/// and `1/2` to best fit after it. Only a non-ASCII segment has more than one.
fn readings(s: &str, mut each: impl FnMut(&str) -> bool) -> bool {
    if each(s) {
        return true;
    }
    if s.is_ascii() {
        return false;
    }
    let nfkc: Cow<'_, str> = match is_nfkc_quick(s.chars()) {
        IsNormalized::Yes => Cow::Borrowed(s),
        _ => Cow::Owned(s.nfkc().collect()),
    };
    if nfkc != s && each(&nfkc) {
        return true;
    }
    let fitted = |r: &str| -> Option<String> {
        r.chars().any(|c| best_fit(c).is_some()).then(|| r.chars().map(|c| best_fit(c).unwrap_or(c)).collect())
    };
    if fitted(s).is_some_and(|m| each(&m)) {
        return true;
    }
    nfkc != s && fitted(&nfkc).is_some_and(|m| each(&m))
}

/// Whether a decoded segment is a dot segment or a separator to some server,
/// so it never matches a grant's literal, `*` or `**`, and every path-scoped
/// deny of its host denies it: it is not empty, and one of its [`readings`]
/// (as written, NFKC, best fit) has a [`name_part`] that is empty or only
/// dots once default-ignorables are dropped (`..`, `.`, `...`, `..;x`, `;x`,
/// `..:x`, `..%20`, `..\u{200B}`, `.\u{200B}.`, `\u{2025}`, `．．`,
/// `..\u{FF1A}x`), or holds `/`, `\\` or `%` (`a\u{FF0F}b`, `a\u{2215}b`,
/// `\u{2100}`, `\u{BD}`). Tomcat, Jetty and Spring cut `;params` and then
/// resolve `..`, so `/public/..;/admin` is `/admin` to them; Windows and IIS
/// read `..%20`, `...` and `..::$DATA` as `..`; best fit reads
/// `..%EF%BC%8F` as `../`, NFKC reads `\u{2025}` as `..`.
fn reads_as_dots(s: &str) -> bool {
    !s.is_empty() && readings(s, reading_is_bad)
}

/// Decodes one segment; `None` when it is not UTF-8 or [`is_bad_decoded`].
pub fn decode_segment(raw: &str) -> Option<Cow<'_, str>> {
    // Fast path: an ASCII segment without '%' (what WHATWG serialises for
    // plain paths) decodes to itself; one byte loop decides it.
    let b = raw.as_bytes();
    if b.iter().all(|&c| c > 0x20 && c < 0x7f && c != b'%' && c != b'\\' && c != b'/') {
        return (!reads_as_dots(raw)).then_some(Cow::Borrowed(raw));
    }
    let s = match percent_decode(raw) {
        Cow::Borrowed(_) => Cow::Borrowed(raw),
        Cow::Owned(v) => Cow::Owned(String::from_utf8(v).ok()?),
    };
    (!is_bad_decoded(&s)).then_some(s)
}

const PATH_GRAMMAR: &str = "a path of '/'-separated segments, each a literal, '*' (one whole segment) or, last, '**' (one or more segments); no ':name', '(regex)', '{...}', '?', '+', '\\\\', '*' inside a segment, empty segments but a trailing '/', or literals that decode to '/', '\\\\', '%', '.', '..', a '.', '..' or nothing before a ';', control characters or non-UTF-8";

impl PathPattern {
    /// Parses the path part of a fetch pattern (`raw` starts with `/`).
    /// The error text says what would be valid (never echoes the input).
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let err = |why: &str| format!("{PATH_GRAMMAR} ({why})");
        let Some(body) = raw.strip_prefix('/') else { return Err(err("it must start with '/'")) };
        let parts: Vec<&str> = body.split('/').collect();
        let mut segs = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let seg = match *p {
                "*" => PathSeg::One,
                "**" if last => PathSeg::Rest,
                "**" => return Err(err("'**' only as the last segment")),
                "" if last => PathSeg::Lit(String::new()),
                "" => return Err(err("no empty segments ('//') but a trailing '/'")),
                lit => {
                    if lit.chars().any(|c| {
                        matches!(
                            c,
                            ':' | '('
                                | ')'
                                | '{'
                                | '}'
                                | '?'
                                | '+'
                                | '*'
                                | '\\'
                                | '#'
                                | '"'
                                | '<'
                                | '>'
                                | '`'
                                | '^'
                                | '|'
                        ) || c.is_whitespace()
                            || c.is_control()
                    }) {
                        return Err(err("URLPattern syntax, or a character to percent-encode"));
                    }
                    let b = lit.as_bytes();
                    for (j, _) in lit.match_indices('%') {
                        if j + 2 >= b.len() || hex(b[j + 1]).is_none() || hex(b[j + 2]).is_none() {
                            return Err(err("'%' must start a percent-escape '%XX'"));
                        }
                    }
                    let decoded = String::from_utf8(percent_decode(lit).into_owned())
                        .map_err(|_| err("a literal that decodes to non-UTF-8"))?;
                    if is_bad_decoded(&decoded) || decoded.is_empty() {
                        return Err(err(
                            "a literal that is, or decodes to, '.', '..', '/', '\\\\', '%', a control character, or '.', '..' or nothing before a ';'; dots or spaces before ';'/':'; or any of those as NFKC or Windows best fit read it",
                        ));
                    }
                    PathSeg::Lit(decoded)
                }
            };
            segs.push(seg);
        }
        Ok(PathPattern { segs })
    }

    /// Whether the pattern is only literals (no `*` or `**`).
    pub fn is_literal(&self) -> bool {
        self.segs.iter().all(|s| matches!(s, PathSeg::Lit(_)))
    }
}

/// A request path as compared: its decoded segments, or why none can match.
#[derive(Debug)]
pub struct RequestPath<'a> {
    /// The decoded segments after the leading `/` (`/v1/` is `["v1", ""]`).
    pub segs: Vec<Cow<'a, str>>,
    /// A segment is not UTF-8 or [`is_bad_decoded`]: no path-scoped grant matches.
    pub bad: bool,
    /// An opaque path (a URL that cannot be a base): no path-scoped grant matches.
    pub opaque: bool,
}

impl<'a> RequestPath<'a> {
    /// Splits a WHATWG-serialised path (`url.path()`; dot segments already removed).
    pub fn of(path: &'a str, opaque: bool) -> Self {
        let mut rp = RequestPath { segs: Vec::new(), bad: false, opaque };
        let Some(body) = path.strip_prefix('/').filter(|_| !opaque) else {
            rp.opaque = true;
            return rp;
        };
        for raw in body.split('/') {
            match decode_segment(raw) {
                Some(s) => rp.segs.push(s),
                None => {
                    rp.bad = true;
                    return rp;
                }
            }
        }
        rp
    }
}

/// Matches one pattern against a request path with the grant semantics
/// (used by explain and the deny rules' exact part; the checker uses [`PathTrie`]).
pub fn grant_path_matches(p: &PathPattern, req: &RequestPath<'_>) -> bool {
    if req.bad || req.opaque {
        return false;
    }
    let n = p.segs.len();
    for (i, s) in p.segs.iter().enumerate() {
        match s {
            PathSeg::Rest => return req.segs.len() > i,
            PathSeg::One => {
                if !matches!(req.segs.get(i), Some(r) if !r.is_empty()) {
                    return false;
                }
            }
            PathSeg::Lit(l) => {
                if !matches!(req.segs.get(i), Some(r) if r.as_ref() == l.as_str()) {
                    return false;
                }
            }
        }
    }
    req.segs.len() == n
}

/// The Unicode `Default_Ignorable_Code_Point` set (DerivedCoreProperties.txt,
/// identical in Unicode 15.0, 15.1 and 16.0, and in 17.0; the JS tests read
/// the set from `\p{Default_Ignorable_Code_Point}`), as inclusive ranges:
/// soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul
/// fillers, Khmer inherent vowels, Mongolian variation selectors and vowel
/// separator, zero-width space and joiners, LRM/RLM, bidi embeddings and
/// overrides, word joiner, invisible operators, bidi isolates and deprecated
/// format controls, variation selectors, BOM, half-width Hangul filler,
/// unassigned U+FFF0..U+FFF8, shorthand format controls, musical symbol
/// format controls, and the tag and variation-selector supplement block
/// E0000..E0FFF. Servers, normalisers and file systems may drop them.
pub(crate) const DEFAULT_IGNORABLE: [(u32, u32); 17] = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Whether `c` is a default-ignorable code point ([`DEFAULT_IGNORABLE`]).
fn is_ignorable(c: char) -> bool {
    let c = c as u32;
    if c < 0xAD {
        return false;
    }
    let i = DEFAULT_IGNORABLE.partition_point(|&(_, hi)| hi < c);
    DEFAULT_IGNORABLE.get(i).is_some_and(|&(lo, _)| lo <= c)
}

/// The deny form of one decoded segment, read broadly (a deny is never
/// narrower than it reads; used for deny rules only, never for grants): the
/// segment as a normalising server reads it (NFKC, then Windows best fit:
/// `ａｄｍｉｎ` is `admin`, `admin．` is `admin.`, `admin\u{FF1A}x` is
/// `admin:x`), then [`name_part`] (cut at the first `;` or `:`,
/// `admin::$DATA`; trailing dots, white space and default-ignorables
/// trimmed), default-ignorables dropped everywhere, then case-folded beyond
/// ASCII: each character through upper case and back to lower case (`ı` and
/// `ſ` reach `i` and `s` as Java's `equalsIgnoreCase` has them, Kelvin `K`
/// reaches `k`, `ß` reaches `ss`), `İ` to `i`. Every step is a function of
/// the segment, so it only merges names, and a deny matches more. `None`
/// when the segment [`reads_as_dots`] (a dot segment or a separator to some
/// server: the path is bad, and every path-scoped deny of the host denies
/// it); `Some("")` for an empty segment (dropped).
pub fn deny_fold(seg: &str) -> Option<String> {
    if reads_as_dots(seg) {
        return None;
    }
    let read: Cow<'_, str> = if seg.is_ascii() {
        Cow::Borrowed(seg)
    } else {
        Cow::Owned(seg.nfkc().map(|c| best_fit(c).unwrap_or(c)).collect())
    };
    let t = name_part(&read);
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        if is_ignorable(c) {
            continue;
        }
        let c = match c {
            '\u{0130}' | '\u{0131}' => 'i',
            _ => c,
        };
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            for u in c.to_uppercase() {
                out.extend(u.to_lowercase());
            }
        }
    }
    Some(out)
}

/// A deny path scope in the deny form: each literal through [`deny_fold`],
/// empty literals dropped (servers that collapse `//`). A literal that folds
/// to a dot segment becomes one no request segment equals (a request holding
/// such a segment is bad, and denied by every path-scoped deny of its host).
pub fn deny_pattern(p: &PathPattern) -> PathPattern {
    let segs = p
        .segs
        .iter()
        .filter_map(|s| match s {
            PathSeg::Lit(l) => match deny_fold(l) {
                Some(f) if f.is_empty() => None,
                Some(f) => Some(PathSeg::Lit(f)),
                None => Some(PathSeg::Lit("\u{0}".to_owned())),
            },
            other => Some(other.clone()),
        })
        .collect();
    PathPattern { segs }
}

/// The request path in the deny form: the decoded segments through
/// [`deny_fold`], empty ones dropped; `None` when the path is bad (a segment
/// no grant could match, or one that folds to a dot segment) or opaque:
/// every path-scoped deny of the host then denies it (fail closed).
pub fn deny_segments(path: &str, opaque: bool) -> Option<Vec<String>> {
    let rp = RequestPath::of(path, opaque);
    if rp.bad || rp.opaque {
        return None;
    }
    let mut out = Vec::with_capacity(rp.segs.len());
    for s in &rp.segs {
        match deny_fold(s) {
            None => return None,
            Some(f) if f.is_empty() => {}
            Some(f) => out.push(f),
        }
    }
    Some(out)
}

/// Whether a deny path scope matches, read broadly: the naive walk of one
/// pattern over the deny forms (the reference the deny trie is tested
/// against; the checker uses [`PathTrie::deny_first`]). A trailing `**` also
/// covers the directory itself, and a bad path is always denied.
#[cfg(test)]
pub fn deny_path_matches(p: &PathPattern, path: &str, opaque: bool) -> bool {
    let Some(segs) = deny_segments(path, opaque) else { return true };
    let pat = deny_pattern(p);
    for (i, s) in pat.segs.iter().enumerate() {
        match s {
            PathSeg::Rest => return true,
            PathSeg::One => {
                if segs.get(i).is_none() {
                    return false;
                }
            }
            PathSeg::Lit(l) => {
                if !matches!(segs.get(i), Some(r) if r == l) {
                    return false;
                }
            }
        }
    }
    segs.len() == pat.segs.len()
}

trait AllGood {
    fn is_none_or_all_good(&self) -> bool;
}

impl AllGood for Option<&str> {
    /// Every `/`-separated segment of the rest of a path decodes to a good segment.
    fn is_none_or_all_good(&self) -> bool {
        match self {
            None => true,
            Some(t) => t.split('/').all(|x| decode_segment(x).is_some()),
        }
    }
}

/// One node of a [`PathTrie`]: literal children, the `*` child, and the rule
/// sets of patterns ending here (`end`) or with a `**` here (`rest`).
#[derive(Debug, Clone, Default)]
struct Node<R> {
    lit: Children,
    one: Option<u32>,
    end: Vec<R>,
    rest: Vec<R>,
}

/// The path scopes of one host's grants, as a segment trie: a request walks
/// it once, following the literal child and the `*` child of each live node,
/// so a check costs O(path segments × live nodes), not O(patterns).
#[derive(Debug, Clone)]
pub struct PathTrie<R> {
    nodes: Vec<Node<R>>,
    /// The literals of the short child lists, back to back.
    text: String,
}

impl<R: PartialEq + Clone> Default for PathTrie<R> {
    fn default() -> Self {
        Self {
            nodes: vec![Node { lit: Children::None, one: None, end: Vec::new(), rest: Vec::new() }],
            text: String::new(),
        }
    }
}

impl<R: PartialEq + Clone> PathTrie<R> {
    /// Drops the spare capacity insertion left (called once it is built).
    pub fn shrink(&mut self) {
        self.nodes.shrink_to_fit();
        self.text.shrink_to_fit();
        for n in &mut self.nodes {
            n.end.shrink_to_fit();
            n.rest.shrink_to_fit();
            if let Children::Few(v) = &mut n.lit {
                v.shrink_to_fit();
            }
        }
    }

    /// Capacity beyond the length, over every list of the trie (tests).
    #[cfg(test)]
    pub(crate) fn spare(&self) -> usize {
        let few = |c: &Children| if let Children::Few(v) = c { v.capacity() - v.len() } else { 0 };
        self.nodes.capacity() - self.nodes.len() + self.text.capacity() - self.text.len()
            + self
                .nodes
                .iter()
                .map(|n| n.end.capacity() - n.end.len() + n.rest.capacity() - n.rest.len() + few(&n.lit))
                .sum::<usize>()
    }

    pub fn insert(&mut self, p: &PathPattern, rule: R) {
        let mut at = 0usize;
        for s in &p.segs {
            let next = match s {
                PathSeg::Rest => {
                    let list = &mut self.nodes[at].rest;
                    if !list.contains(&rule) {
                        list.push(rule);
                    }
                    return;
                }
                PathSeg::One => self.nodes[at].one,
                PathSeg::Lit(l) => self.nodes[at].lit.get(&self.text, l),
            };
            at = match next {
                Some(n) => n as usize,
                None => {
                    let n = self.nodes.len() as u32;
                    self.nodes.push(Node { lit: Children::None, one: None, end: Vec::new(), rest: Vec::new() });
                    match s {
                        PathSeg::One => self.nodes[at].one = Some(n),
                        PathSeg::Lit(l) => {
                            self.nodes[at].lit.insert(&mut self.text, l, n);
                        }
                        PathSeg::Rest => unreachable!(),
                    }
                    n as usize
                }
            };
        }
        let list = &mut self.nodes[at].end;
        if !list.contains(&rule) {
            list.push(rule);
        }
    }

    /// Whether some pattern matching the WHATWG-serialised `path` has a rule
    /// for which `ok` holds: the segments are decoded as the walk reaches
    /// them (no allocation unless one holds a `%`), and the live node sets
    /// stay on the stack while they are small.
    pub fn any_path(&self, path: &str, opaque: bool, ok: impl Fn(&R) -> bool) -> bool {
        self.walk(path, opaque, false, ok)
    }

    /// [`PathTrie::any_path`] for a path whose every segment is known to
    /// decode to itself and to be good (no `%`, `\\`, control, non-ASCII,
    /// `.` or `..` segment: what `fetch::fast_parts` accepts): the walk
    /// compares the raw segments and skips the decode scan.
    pub fn any_clean_path(&self, path: &str, ok: impl Fn(&R) -> bool) -> bool {
        debug_assert!(path.split('/').all(|x| decode_segment(x).is_some_and(|d| d == x)));
        let Some(mut body) = path.strip_prefix('/') else { return false };
        // While one node is live (literal scopes, or a `*` where no literal
        // sibling matches), follow it without the live-set bookkeeping.
        let mut at = 0usize;
        loop {
            let node = &self.nodes[at];
            if node.rest.iter().any(&ok) {
                return true;
            }
            let (seg, tail) = match body.bytes().position(|b| b == b'/') {
                Some(i) => (&body[..i], Some(&body[i + 1..])),
                None => (body, None),
            };
            let lit = node.lit.get(&self.text, seg);
            let one = node.one.filter(|_| !seg.is_empty());
            let c = match (lit, one) {
                (Some(c), None) | (None, Some(c)) => c,
                (None, None) => return false,
                // Two live nodes: the general walk, from the start.
                (Some(_), Some(_)) => return self.walk(path, false, true, ok),
            };
            at = c as usize;
            match tail {
                Some(t) => body = t,
                None => return self.nodes[at].end.iter().any(&ok),
            }
        }
    }

    fn walk(&self, path: &str, opaque: bool, clean: bool, ok: impl Fn(&R) -> bool) -> bool {
        const SMALL: usize = 8;
        let Some(body) = path.strip_prefix('/').filter(|_| !opaque) else { return false };
        let mut live = [0u32; SMALL];
        let mut next = [0u32; SMALL];
        let mut n_live = 1usize;
        // Once the rest of the path held a bad segment, every later rest
        // holds it too (the walk stops at it): decode each rest once at most.
        let mut tail_bad = false;
        let mut rest = Some(body);
        while let Some(r) = rest {
            let (raw, tail) = match r.bytes().position(|b| b == b'/') {
                Some(i) => (&r[..i], Some(&r[i + 1..])),
                None => (r, None),
            };
            rest = tail;
            let seg = if clean {
                Cow::Borrowed(raw)
            } else {
                match decode_segment(raw) {
                    Some(s) => s,
                    None => return false,
                }
            };
            let mut n_next = 0usize;
            for &at in &live[..n_live] {
                let node = &self.nodes[at as usize];
                // `**` covers this segment and every one after it: each must be good.
                if !tail_bad && node.rest.iter().any(&ok) {
                    if clean || tail.is_none_or_all_good() {
                        return true;
                    }
                    tail_bad = true;
                }
                for c in
                    [node.lit.get(&self.text, seg.as_ref()), node.one.filter(|_| !seg.is_empty())].into_iter().flatten()
                {
                    if n_next == SMALL {
                        // Many live nodes: the general walk.
                        return self.any(&RequestPath::of(path, opaque), ok);
                    }
                    next[n_next] = c;
                    n_next += 1;
                }
            }
            if n_next == 0 {
                return false;
            }
            std::mem::swap(&mut live, &mut next);
            n_live = n_next;
        }
        live[..n_live].iter().any(|&at| self.nodes[at as usize].end.iter().any(&ok))
    }

    /// Whether some pattern matching `req` has a rule for which `ok` holds.
    pub fn any(&self, req: &RequestPath<'_>, ok: impl Fn(&R) -> bool) -> bool {
        if req.bad || req.opaque {
            return false;
        }
        let mut live: Vec<u32> = vec![0];
        let mut next: Vec<u32> = Vec::new();
        let n = req.segs.len();
        for (i, seg) in req.segs.iter().enumerate() {
            next.clear();
            for &at in &live {
                let node = &self.nodes[at as usize];
                // `**` here covers segments i.. (one or more remain).
                if i < n && node.rest.iter().any(&ok) {
                    return true;
                }
                if let Some(c) = node.lit.get(&self.text, seg.as_ref()) {
                    next.push(c);
                }
                if let Some(c) = node.one.filter(|_| !seg.is_empty()) {
                    next.push(c);
                }
            }
            if next.is_empty() {
                return false;
            }
            std::mem::swap(&mut live, &mut next);
        }
        live.iter().any(|&at| self.nodes[at as usize].end.iter().any(&ok))
    }
}

impl<R: PartialEq + Clone + Ord> PathTrie<R> {
    /// The deny walk: `segs` are a request's [`deny_segments`], the trie
    /// holds [`deny_pattern`]s. Returns the least rule for which `ok` holds
    /// among the patterns that match (a `**` covers zero or more remaining
    /// segments), and the number of trie nodes visited. Each node can be live
    /// at one depth only, so the work is at most the path's segments plus
    /// the trie's nodes, and for literal patterns one lookup per segment:
    /// flat in the number of rules.
    pub fn deny_first(&self, segs: &[String], ok: impl Fn(&R) -> bool) -> (Option<R>, usize) {
        let mut best: Option<R> = None;
        let mut take = |list: &[R]| {
            for r in list.iter().filter(|r| ok(r)) {
                if best.as_ref().is_none_or(|b| r < b) {
                    best = Some(r.clone());
                }
            }
        };
        let mut live: Vec<u32> = vec![0];
        let mut next: Vec<u32> = Vec::new();
        let mut visits = 0usize;
        for seg in segs {
            next.clear();
            for &at in &live {
                visits += 1;
                let node = &self.nodes[at as usize];
                take(&node.rest);
                next.extend(node.lit.get(&self.text, seg));
                next.extend(node.one);
            }
            std::mem::swap(&mut live, &mut next);
            if live.is_empty() {
                return (best, visits);
            }
        }
        for &at in &live {
            visits += 1;
            let node = &self.nodes[at as usize];
            take(&node.rest);
            take(&node.end);
        }
        (best, visits)
    }
}

#[cfg(test)]
mod tests {
    /// The byte filter of `decode_segment`'s fast path admits only what the
    /// full decoding would return unchanged: every ASCII byte, alone and
    /// around a name and dots, decodes as a naive reading of the rule says
    /// (controls, DEL, '/', '\\' and a lone '%' refused; dot runs refused;
    /// everything else itself). Found by `cargo mutants`: a fast path that let
    /// DEL through was not noticed.
    #[test]
    fn fast_path_bytes_decode_as_the_rule_says() {
        for b in 0u8..0x80 {
            let c = b as char;
            for s in [c.to_string(), format!("a{c}"), format!("{c}a"), format!("a{c}b"), format!("..{c}")] {
                let naive_bad = c.is_ascii_control() || matches!(c, '/' | '\\' | '%');
                let trimmed =
                    s.split([';', ':']).next().unwrap().trim_end_matches(|x: char| x == '.' || x.is_whitespace());
                let want = if naive_bad || (!s.is_empty() && trimmed.is_empty()) { None } else { Some(s.clone()) };
                assert_eq!(super::decode_segment(&s).map(|d| d.into_owned()), want, "{s:?}");
            }
        }
    }

    use super::*;

    fn req(p: &str) -> RequestPath<'_> {
        RequestPath::of(p, false)
    }

    #[test]
    fn grammar() {
        for ok in
            ["/", "/v1", "/v1/", "/v1/*", "/v1/**", "/v1/repos/*/issues", "/caf%C3%A9", "/café", "/a%2A", "/*/x/**"]
        {
            assert!(PathPattern::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "v1", "/v1/:id", "/v1/(.*)", "/v1/{a}", "/v1/a?", "/v1/a+", "/v1/a*", "/v1/*a", "/v1/**/x", "/v1//x", "//",
            "/a%2Fb", "/a%2fb", "/a%5Cb", "/%2e", "/%2E%2e", "/.", "/..", "/a%", "/a%4", "/a%zz", "/a%00", "/a%ff",
            "/a b", "/a#b", "/a\\b", "/a%25b", "/***",
        ] {
            assert!(PathPattern::parse(bad).is_err(), "{bad}");
        }
        // Canonical form round-trips.
        for p in ["/caf%C3%A9", "/café", "/a%2A", "/v1/*/x/**", "/v1/", "/a%3Ab"] {
            let a = PathPattern::parse(p).unwrap();
            assert_eq!(PathPattern::parse(&a.to_string()).unwrap(), a, "{p}");
        }
        assert_eq!(PathPattern::parse("/café").unwrap(), PathPattern::parse("/caf%c3%a9").unwrap());
    }

    #[test]
    fn trie_matches_like_the_naive_walk() {
        let pats = ["/v1/repos/*/issues", "/public/**", "/v1/", "/", "/x/*", "/caf%C3%A9/*"];
        let mut t = PathTrie::default();
        for (i, p) in pats.iter().enumerate() {
            t.insert(&PathPattern::parse(p).unwrap(), i);
        }
        for (path, want) in [
            ("/v1/repos/acme/issues", Some(0)),
            ("/v1/repos//issues", None),
            ("/v1/repos/acme%2Fother/issues", None),
            ("/v1/repos/..%2f..%2fadmin/issues", None),
            ("/v1/repos/a/b/issues", None),
            ("/v1/repos/acme/issues/", None),
            ("/public", None),
            ("/public/", Some(1)),
            ("/public/a/b", Some(1)),
            ("/public/a%2fb", None),
            ("/public/x/a%2fb", None),
            ("/public/x/y/%ff", None),
            ("/public/x/y/%2e%2e%2f", None),
            ("/public/%25", None),
            ("/v1/", Some(2)),
            ("/v1", None),
            ("/", Some(3)),
            ("/x/", None),
            ("/x/y", Some(4)),
            ("/caf%C3%A9/x", Some(5)),
            ("/caf%c3%a9/x", Some(5)),
            ("/CAF%C3%A9/x", None),
            ("/caf%E9/x", None),
            ("/x/%01", None),
        ] {
            let r = req(path);
            for (i, p) in pats.iter().enumerate() {
                let pp = PathPattern::parse(p).unwrap();
                assert_eq!(t.any(&r, |&x| x == i), grant_path_matches(&pp, &r), "{path} vs {p}");
            }
            assert_eq!(want.is_some(), t.any(&r, |_| true), "{path}");
            assert_eq!(want.is_some(), t.any_path(path, false, |_| true), "{path}");
            if path.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'/') {
                assert_eq!(want.is_some(), t.any_clean_path(path, |_| true), "{path}");
            }
            if let Some(i) = want {
                assert!(t.any(&r, |&x| x == i), "{path}");
            }
        }
    }

    #[test]
    fn many_children_switch_to_a_map() {
        let mut t = PathTrie::default();
        for i in 0..40 {
            t.insert(&PathPattern::parse(&format!("/k{i}/*")).unwrap(), i);
        }
        for i in 0..40 {
            let p = format!("/k{i}/x");
            assert!(t.any_path(&p, false, |&r| r == i), "{p}");
            assert!(!t.any_path(&p, false, |&r| r != i), "{p}");
            assert!(t.any_clean_path(&p, |&r| r == i), "{p}");
            assert!(!t.any_clean_path(&p, |&r| r != i), "{p}");
        }
        assert!(!t.any_path("/k40/x", false, |_| true));
        assert!(!t.any_path("/k1", false, |_| true));
    }

    /// The clean walk (one live node followed without a live set) and the
    /// general walk agree on every clean path over a small alphabet, on a
    /// trie with literal and `*` siblings, `**` and ends at every depth.
    #[test]
    fn clean_walk_agrees_with_the_general_walk() {
        let pats = ["/a/*/b", "/a/b/*", "/a/**", "/*/a", "/b/", "/b", "/*/*/*", "/a/b/c/**", "/", "/b/a/b"];
        let mut t = PathTrie::default();
        for (i, p) in pats.iter().enumerate() {
            t.insert(&PathPattern::parse(p).unwrap(), i);
        }
        let alphabet = ["", "a", "b", "c"];
        let mut n = 0;
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let mut longer = Vec::new();
            for p in &paths {
                for a in alphabet {
                    longer.push(format!("{p}/{a}"));
                }
            }
            for p in &longer {
                for (i, pat) in pats.iter().enumerate() {
                    let clean = t.any_clean_path(p, |&r| r == i);
                    assert_eq!(clean, t.any_path(p, false, |&r| r == i), "{p} vs {pat}");
                    assert_eq!(clean, t.any(&req(p), |&r| r == i), "{p} vs {pat}");
                    n += 1;
                }
            }
            paths = longer;
        }
        assert!(n > 3000, "{n}");
    }

    #[test]
    fn deny_reads_broadly() {
        let d = PathPattern::parse("/admin/**").unwrap();
        let denied = |p: &str| deny_path_matches(&d, p, false);
        for p in [
            "/admin",
            "/admin/",
            "/admin/x",
            "//admin/x",
            "/ADMIN/x",
            "/admin;x=1/secret",
            "/a%2Fb",
            "/x/..%2f",
            "/x/..;/admin/users",
            "/x/%2e%2e;/admin",
            "/x/..%3B/admin",
            "/.;/admin/x",
            "/admin./x",
            "/admin%20/x",
            "/admin.%20./x",
            "/ADMIN::$DATA/x",
            "/admin:stream/x",
            "/adm%C4%B1n/x",
            "/adm%C4%B0n/x",
            "/%EF%BD%81dmin/x",
            "/admin%C2%A0/x",
            "/admin%E3%80%80/x",
            "/ADMIN%E2%80%8B/x",
            "/;x/admin/y",
            "/x/.../admin",
        ] {
            assert!(denied(p), "{p}");
        }
        for p in ["/public/x", "/administrator/x", "/adminx", "/x/admin"] {
            assert!(!denied(p), "{p}");
        }
        let e = PathPattern::parse("/admin").unwrap();
        assert!(deny_path_matches(&e, "/admin/", false));
        assert!(!deny_path_matches(&e, "/admin/x", false));
        // Kelvin sign and long s fold to their ASCII letters.
        let k = PathPattern::parse("/kas/**").unwrap();
        assert!(deny_path_matches(&k, "/%E2%84%AAa%C5%BF/x", false));
    }

    #[test]
    fn grants_refuse_dot_heads_before_a_semicolon() {
        let mut t = PathTrie::default();
        for (i, p) in ["/public/**", "/v1/repos/*/issues"].iter().enumerate() {
            t.insert(&PathPattern::parse(p).unwrap(), i);
        }
        for p in [
            "/public/..;/..;/admin",
            "/public/x/..;/y",
            "/public/.;/x",
            "/public/%2e%2e;/x",
            "/public/..%3B/x",
            "/public/;x/y",
            "/public/...;/x",
            "/v1/repos/..;/issues",
            "/v1/repos/.;x/issues",
        ] {
            assert!(!t.any_path(p, false, |_| true), "{p}");
            assert!(!t.any(&req(p), |_| true), "{p}");
        }
        for p in ["/public/a;b/x", "/public/a.;/x", "/public/a:b/x", "/v1/repos/acme;v=1/issues"] {
            assert!(t.any_path(p, false, |_| true), "{p}");
        }
        for bad in ["/..;", "/.;x", "/;x", "/%2e%2e;", "/a/..%3Bx"] {
            assert!(PathPattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn segments_read_as_dots_or_slashes_match_no_grant_and_every_deny() {
        let mut t = PathTrie::default();
        for (i, p) in ["/public/**", "/v1/*/x", "/v1/a/x"].iter().enumerate() {
            t.insert(&PathPattern::parse(p).unwrap(), i);
        }
        let deny = PathPattern::parse("/zzz").unwrap();
        let mut bad = vec![
            "..%20",
            "...",
            "..:",
            "..%3A",
            "..%EF%BC%8F",
            "%2e%2e%20",
            "%2E.%2e",
            "....",
            ".%20.%20",
            "..%E2%80%8B",
            ".%E2%80%8B.",
            "..%C2%A0",
            "..%E3%80%80",
            "%20",
            "%E2%80%8B",
            ":x",
            "..::$DATA",
            "..%F3%A0%80%81",
            "a%E2%88%95b",
        ];
        let slashes: Vec<String> = [
            0xA5u32, 0xB4, 0xBD, 0x2044, 0x20A9, 0x2100, 0x2101, 0x2105, 0x2106, 0x2215, 0x2216, 0xFE68, 0xFF0F,
            0xFF3C, 0xFF05, 0xFE6A, 0x66A,
        ]
        .iter()
        .map(|&u| format!("a{}b", char::from_u32(u).unwrap()))
        .collect();
        bad.extend(slashes.iter().map(String::as_str));
        for seg in bad {
            for p in [format!("/public/{seg}/admin"), format!("/v1/{seg}/x"), format!("/public/{seg}")] {
                assert!(!t.any_path(&p, false, |_| true), "{p}");
                assert!(!t.any(&req(&p), |_| true), "{p}");
                assert!(deny_segments(&p, false).is_none(), "{p}");
                assert!(deny_path_matches(&deny, &p, false), "{p}");
            }
        }
        for seg in ["a.", "a%20", "a.:x", ".a", "..a", "a..", "%E2%80%8Ba", "a%E2%80%8B"] {
            let p = format!("/public/{seg}/admin");
            assert!(t.any_path(&p, false, |_| true), "{p}");
            assert!(deny_segments(&p, false).is_some(), "{p}");
        }
        for lit in ["/...", "/..%20", "/a%EF%BC%8Fb", "/%3Ax", "/%E2%80%8B", "/..%3A"] {
            assert!(PathPattern::parse(lit).is_err(), "{lit}");
        }
        // The fast path leaves dot runs to the full parse.
        assert!(crate::fetch::fast_parts("https://a.com/public/.../x").is_none());
    }

    /// Every code point of the generated best-fit table, in a shape its byte
    /// makes a dot segment or a separator, never matches a grant and is denied
    /// by every path-scoped deny; the same shape with a letter in its place
    /// is a name.
    #[test]
    fn every_best_fit_code_point_is_read_as_its_byte() {
        let mut t = PathTrie::default();
        t.insert(&PathPattern::parse("/p/*/x").unwrap(), 0);
        let deny = deny_pattern(&PathPattern::parse("/zzz").unwrap());
        let mut d = PathTrie::default();
        d.insert(&deny, 0);
        let mut n = 0;
        for &(c, b) in &BEST_FIT {
            assert!(!c.is_ascii() && b.is_ascii(), "{c:?}");
            let shape = |x: char| match b {
                b'/' | b'\\' | b'%' => format!("a{x}b"),
                b'.' => format!("{x}{x}"),
                b':' | b';' => format!("..{x}x"),
                _ => format!("..{x}"),
            };
            let bad = shape(c);
            let enc: String = bad.bytes().map(|x| format!("%{x:02X}")).collect();
            for seg in [bad.clone(), enc] {
                let p = format!("/p/{seg}/x");
                assert!(!t.any_path(&p, false, |_| true), "{p} U+{:X}", c as u32);
                assert!(deny_segments(&p, false).is_none(), "{p}");
                n += 1;
            }
            assert!(PathPattern::parse(&format!("/{bad}")).is_err(), "{bad}");
            let good = shape('a');
            assert!(t.any_path(&format!("/p/{good}/x"), false, |_| true), "{good}");
        }
        assert_eq!(n, 2 * BEST_FIT.len());
    }

    /// NFKC readings: a segment NFKC turns into dots or a separator (U+2024
    /// one dot leader, U+2025, U+2026, U+FE52, U+FF0E, U+FE30, U+FE19, `½`
    /// through best fit after NFKC) never matches; one NFKC turns into a
    /// name (`⒈` is `1.`) does; a deny reads the NFKC form (`admin．`).
    #[test]
    fn nfkc_readings() {
        for seg in [
            "\u{2024}",
            "\u{2025}",
            "\u{2026}",
            "\u{FE52}",
            "\u{FF0E}\u{FF0E}",
            "\u{FE30}",
            "\u{FE19}",
            ".\u{2024}",
            "\u{2025};x",
            "\u{2025}\u{FE55}x",
            "..\u{FF1A}x",
            "..\u{FF1B}",
            "\u{2025}\u{3000}",
            "1\u{BD}",
            "a\u{2100}",
            "\u{FF05}2e",
        ] {
            let p = format!("/p/{seg}/x");
            assert!(RequestPath::of(&p, false).bad, "{seg:?}");
            assert!(decode_segment(seg).is_none(), "{seg:?}");
        }
        for seg in ["\u{2488}", "a\u{2024}b", "\u{2024}a", "\u{FF41}", "caf\u{E9}", "\u{2026}x"] {
            assert!(decode_segment(seg).is_some(), "{seg:?}");
        }
        let admin = deny_pattern(&PathPattern::parse("/admin/**").unwrap());
        let mut d = PathTrie::default();
        d.insert(&admin, 0);
        for p in ["/admin\u{FF0E}/x", "/\u{FF41}dmin/x", "/admin\u{FF1A}x/y", "/admin\u{2000}/x", "/admin\u{2236}s/x"] {
            let segs = deny_segments(p, false).unwrap();
            assert_eq!(d.deny_first(&segs, |_| true).0, Some(0), "{p}");
        }
    }

    #[test]
    fn ignorables_are_default_ignorable_code_points() {
        let mut last = 0;
        for &(lo, hi) in &DEFAULT_IGNORABLE {
            assert!(lo <= hi && (last == 0 || lo > last + 1), "{lo:X}: sorted, disjoint, merged");
            last = hi;
            for c in [lo, hi] {
                assert!(is_ignorable(char::from_u32(c).unwrap()), "{c:X}");
            }
            for c in [lo - 1, hi + 1] {
                assert!(!is_ignorable(char::from_u32(c).unwrap()), "{c:X}");
            }
        }
        for c in [
            '\u{34F}',
            '\u{2063}',
            '\u{180E}',
            '\u{FE0F}',
            '\u{E0001}',
            '\u{E0041}',
            '\u{200E}',
            '\u{202E}',
            '\u{2066}',
            '\u{AD}',
            '\u{3164}',
            '\u{E01EF}',
        ] {
            assert!(is_ignorable(c), "{c:?}");
        }
        for c in ['a', ' ', '.', '\u{AC}', '\u{2000}', '\u{FFFD}', '\u{10FFFF}'] {
            assert!(!is_ignorable(c), "{c:?}");
        }
    }

    #[test]
    fn deny_trie_agrees_with_the_naive_walk_and_stays_flat() {
        let pats = ["/admin/**", "/v1/*/secret", "/Ka/", "/x/**", "/", "/*/y/**", "/a;b/c"];
        let mut t = PathTrie::default();
        for (i, p) in pats.iter().enumerate() {
            t.insert(&deny_pattern(&PathPattern::parse(p).unwrap()), i);
        }
        for path in [
            "/admin",
            "/admin/x",
            "/ADMIN./q",
            "/v1/a/secret",
            "/v1/a/b/secret",
            "/ka",
            "/KA/",
            "/x",
            "/",
            "//",
            "/q/y",
            "/q/y/z",
            "/a/c",
            "/a;z/c",
            "/a/d",
            "/z",
        ] {
            let segs = deny_segments(path, false).unwrap();
            for (i, p) in pats.iter().enumerate() {
                let pp = PathPattern::parse(p).unwrap();
                let (hit, _) = t.deny_first(&segs, |&r| r == i);
                assert_eq!(hit.is_some(), deny_path_matches(&pp, path, false), "{path} vs {p}");
            }
            let first = pats.iter().position(|p| deny_path_matches(&PathPattern::parse(p).unwrap(), path, false));
            assert_eq!(t.deny_first(&segs, |_| true).0, first, "{path}");
        }
        // 10,000 path-scoped denies on one host, a request of 30,000 segments:
        // the walk visits at most one node per segment (plus the root), not
        // one per rule per segment.
        let mut big = PathTrie::default();
        for i in 0..10_000usize {
            big.insert(&deny_pattern(&PathPattern::parse(&format!("/d{i}/**")).unwrap()), i);
        }
        let path = format!("/{}", "a/".repeat(30_000));
        let segs = deny_segments(&path, false).unwrap();
        let (hit, visits) = big.deny_first(&segs, |_| true);
        assert_eq!(hit, None);
        assert!(visits <= 2, "{visits} nodes visited");
        let path = format!("/d9999/{}", "a/".repeat(30_000));
        let (hit, visits) = big.deny_first(&deny_segments(&path, false).unwrap(), |_| true);
        assert_eq!(hit, Some(9999));
        assert!(visits <= 3, "{visits} nodes visited");
    }
}
