//! The fs glob engine: one parser for validation and matching, and an index
//! that keeps a check flat in the number of grants.
//!
//! A glob is split into its literal directory prefix `L` (the segments before
//! the first wildcard) and the rest `R`. Grants are filed under `L` in one
//! hash map, by shape: `R` empty (an exact path), `R = **` (everything below
//! `L`), `R` one segment pattern (a name in directory `L`, e.g. `*.json`), or
//! anything else (matched segment by segment). A check looks up the path and
//! each of its ancestors: O(depth) hash lookups, whatever the grant count.
//!
//! Matching never backtracks exponentially: a segment pattern is matched by
//! the two-pointer wildcard algorithm (O(pattern × name)), segments by a
//! position-set walk (O(pattern segments × path segments)).

use std::collections::HashMap;

/// Most brace-expanded variants one glob may produce.
pub const MAX_BRACE_VARIANTS: usize = 256;

/// One element of a segment pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Char(char),
    /// `?`: one character.
    Any,
    /// `*`: any run of characters within the segment.
    Star,
    /// `[...]`: inclusive ranges, maybe negated.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// A pattern for one path segment (no separators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegPattern(Vec<Atom>);

impl SegPattern {
    fn is_literal(&self) -> bool {
        self.0.iter().all(|a| matches!(a, Atom::Char(_)))
    }

    fn literal(&self) -> String {
        self.0.iter().filter_map(|a| if let Atom::Char(c) = a { Some(*c) } else { None }).collect()
    }

    /// Two-pointer wildcard match over chars; backtracks only to the last `*`.
    pub fn matches(&self, name: &str) -> bool {
        let atoms = &self.0;
        let text: &[u8] = name.as_bytes();
        let (mut p, mut s) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        let char_at = |i: usize| -> (char, usize) {
            let c = name[i..].chars().next().unwrap_or('\0');
            (c, c.len_utf8())
        };
        while s < text.len() {
            if p < atoms.len() {
                let (c, len) = char_at(s);
                let ok = match &atoms[p] {
                    Atom::Char(x) => *x == c,
                    Atom::Any => true,
                    Atom::Class { negated, ranges } => ranges.iter().any(|(a, b)| (*a..=*b).contains(&c)) != *negated,
                    Atom::Star => {
                        star = Some((p, s));
                        p += 1;
                        continue;
                    }
                };
                if ok {
                    p += 1;
                    s += len;
                    continue;
                }
            }
            match star {
                Some((sp, ss)) => {
                    let (_, len) = char_at(ss);
                    star = Some((sp, ss + len));
                    p = sp + 1;
                    s = ss + len;
                }
                None => return false,
            }
        }
        atoms[p..].iter().all(|a| *a == Atom::Star)
    }
}

/// A glob segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// `**`: any number of segments (at least one when it is last).
    Rec,
    Pat(SegPattern),
}

/// Why a glob does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobError(pub &'static str);

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Calls `visit(i, c)` for each character at index `i >= from` of `chars`
/// that is outside a `[...]` class and not escaped, until it returns false.
/// A `]` right after `[` or `[!` is literal, as in the segment parser.
fn scan_structural(chars: &[(usize, char)], from: usize, escapes: bool, mut visit: impl FnMut(usize, char) -> bool) {
    let mut i = from;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i].1;
        if escapes && c == '\\' {
            i += 2;
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
        } else if c == '[' {
            in_class = true;
            if i + 1 < chars.len() && matches!(chars[i + 1].1, '!' | '^') {
                i += 1;
            }
            if i + 1 < chars.len() && chars[i + 1].1 == ']' {
                i += 1;
            }
        } else if !visit(i, c) {
            return;
        }
        i += 1;
    }
}

/// Expands `{a,b}` alternatives (nested allowed) into plain globs.
fn expand_braces(glob: &str, escapes: bool, out: &mut Vec<String>) -> Result<(), GlobError> {
    let chars: Vec<(usize, char)> = glob.char_indices().collect();
    // The first top-level `{`; a `}` before any `{` is unmatched.
    let mut open = None;
    let mut unmatched = false;
    scan_structural(&chars, 0, escapes, |i, c| match c {
        '{' => {
            open = Some(i);
            false
        }
        '}' => {
            unmatched = true;
            false
        }
        _ => true,
    });
    if unmatched {
        return Err(GlobError("an unmatched '}' (write '[}]' for a literal one)"));
    }
    let Some(open) = open else {
        if out.len() >= MAX_BRACE_VARIANTS {
            return Err(GlobError("brace expansion past 256 variants"));
        }
        out.push(glob.to_owned());
        return Ok(());
    };
    // Split the group's body on top-level commas, up to its matching `}`.
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut start = open + 1;
    let mut close = None;
    scan_structural(&chars, open + 1, escapes, |j, c| {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                parts.push((start, j));
                close = Some(j);
                return false;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push((start, j));
                start = j + 1;
            }
            _ => {}
        }
        true
    });
    let Some(close) = close else {
        return Err(GlobError("an unclosed '{' (write '[{]' for a literal one)"));
    };
    let byte = |k: usize| chars.get(k).map_or(glob.len(), |x| x.0);
    let head = &glob[..byte(open)];
    let tail = &glob[byte(close + 1)..];
    for (a, b) in parts {
        let alt = &glob[byte(a)..byte(b)];
        if alt.is_empty() {
            return Err(GlobError("an empty '{...}' alternative"));
        }
        expand_braces(&format!("{head}{alt}{tail}"), escapes, out)?;
    }
    Ok(())
}

/// Parses one segment (no braces, no separators).
fn parse_segment(s: &str, escapes: bool, fold: bool) -> Result<Seg, GlobError> {
    if s == "**" {
        return Ok(Seg::Rec);
    }
    if s.contains("**") && !escapes_double_star(s, escapes) {
        return Err(GlobError("`**` only as a whole segment"));
    }
    let norm = |c: char| if fold { fold_char(c) } else { c };
    let chars: Vec<char> = s.chars().collect();
    let mut atoms = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if escapes => {
                let Some(&n) = chars.get(i + 1) else { return Err(GlobError("a trailing '\\' escapes nothing")) };
                atoms.push(Atom::Char(norm(n)));
                i += 2;
                continue;
            }
            '*' => {
                if atoms.last() != Some(&Atom::Star) {
                    atoms.push(Atom::Star);
                }
            }
            '?' => atoms.push(Atom::Any),
            '[' => {
                let mut j = i + 1;
                let negated = matches!(chars.get(j), Some('!' | '^'));
                if negated {
                    j += 1;
                }
                let mut ranges = Vec::new();
                let mut first = true;
                loop {
                    let Some(&x) = chars.get(j) else {
                        return Err(GlobError("an unclosed '[' (write '[[]' for a literal one)"));
                    };
                    if x == ']' && !first {
                        break;
                    }
                    first = false;
                    let (x, step) = if escapes && x == '\\' {
                        match chars.get(j + 1) {
                            Some(&e) => (e, 2),
                            None => return Err(GlobError("an unclosed '['")),
                        }
                    } else {
                        (x, 1)
                    };
                    j += step;
                    if chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|&y| y != ']') {
                        let y = chars[j + 1];
                        if y < x {
                            return Err(GlobError("a class range out of order"));
                        }
                        if fold {
                            push_folded_range(&mut ranges, x, y);
                        } else {
                            ranges.push((x, y));
                        }
                        j += 2;
                    } else if fold {
                        let f = fold_char(x);
                        ranges.push((f, f));
                    } else {
                        ranges.push((x, x));
                    }
                }
                atoms.push(Atom::Class { negated, ranges });
                i = j + 1;
                continue;
            }
            c => atoms.push(Atom::Char(norm(c))),
        }
        i += 1;
    }
    Ok(Seg::Pat(SegPattern(atoms)))
}

/// `a\*\*` is two escaped stars, not `**`.
fn escapes_double_star(s: &str, escapes: bool) -> bool {
    if !escapes {
        return false;
    }
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'*' && b.get(i + 1) == Some(&b'*') {
            return false;
        }
        i += 1;
    }
    true
}

/// Case folding for win32 matching: simple lower-case mapping, one char to one char.
pub fn fold_char(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

/// Folds a whole string with [`fold_char`].
pub fn fold_str(s: &str) -> String {
    s.chars().map(fold_char).collect()
}

fn push_folded_range(ranges: &mut Vec<(char, char)>, a: char, b: char) {
    ranges.push((a, b));
    // Add the folded form of every character of small ranges; large ranges
    // keep their bounds plus the folded bounds.
    if (b as u32) - (a as u32) <= 512 {
        for c in a..=b {
            let f = fold_char(c);
            if f != c {
                ranges.push((f, f));
            }
        }
    } else {
        ranges.push((fold_char(a), fold_char(b)).min((fold_char(b), fold_char(a))));
    }
}

/// A parsed, brace-free glob: its literal directory prefix and the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedGlob {
    /// Literal prefix without a trailing `/` (`""` for the posix root, `c:` for a win32 drive root).
    pub prefix: String,
    pub rest: Vec<Seg>,
}

/// Parses a normalised glob (`/`-separated; win32 globs start `X:`) into its variants.
pub fn parse(glob: &str, escapes: bool, fold: bool) -> Result<Vec<ParsedGlob>, GlobError> {
    let mut variants = Vec::new();
    expand_braces(glob, escapes, &mut variants)?;
    let mut out = Vec::with_capacity(variants.len());
    for v in variants {
        let (root, body) = match v.find('/') {
            Some(i) => (&v[..i], &v[i..]),
            None => return Err(GlobError("an absolute glob")),
        };
        let mut prefix = if fold { fold_str(root) } else { root.to_owned() };
        let mut rest = Vec::new();
        for s in body.split('/').skip(1) {
            if s.is_empty() {
                if body == "/" {
                    break;
                }
                return Err(GlobError("no empty segments (a '{...}' alternative left '//')"));
            }
            if matches!(s, "." | "..") {
                return Err(GlobError("no '.' or '..' segments"));
            }
            let seg = parse_segment(s, escapes, fold)?;
            match (&seg, rest.is_empty()) {
                (Seg::Pat(p), true) if p.is_literal() => {
                    prefix.push('/');
                    prefix.push_str(&p.literal());
                }
                _ => rest.push(seg),
            }
        }
        out.push(ParsedGlob { prefix, rest });
    }
    Ok(out)
}

/// Matches segment patterns against path segments: a position-set walk.
fn segs_match(pattern: &[Seg], path: &[&str]) -> bool {
    // `cur[j]`: pattern prefix matched exactly path[..j].
    let n = path.len();
    let mut cur = vec![false; n + 1];
    cur[0] = true;
    for (k, seg) in pattern.iter().enumerate() {
        let last = k + 1 == pattern.len();
        let mut next = vec![false; n + 1];
        match seg {
            Seg::Rec => {
                // Zero or more segments; one or more when last.
                let Some(first) = cur.iter().position(|&b| b) else { return false };
                let from = if last { first + 1 } else { first };
                for x in next.iter_mut().skip(from) {
                    *x = true;
                }
            }
            Seg::Pat(p) => {
                for j in 0..n {
                    if cur[j] && p.matches(path[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        cur = next;
    }
    cur[n]
}

const fn depth_bit(d: usize) -> u128 {
    1u128 << if d > 127 { 127 } else { d }
}

/// Mode bits: 1 read, 2 write.
pub type Modes = u8;

#[derive(Debug, Clone, Default)]
struct Entry {
    exact: Modes,
    subtree: Modes,
    in_dir: Vec<(SegPattern, Modes)>,
    general: Vec<(Vec<Seg>, Modes)>,
}

/// The compiled fs grants of one policy.
#[derive(Debug, Clone, Default)]
pub struct GlobIndex {
    fold: bool,
    root_len: usize,
    by_prefix: HashMap<String, Entry>,
    /// Bit `d` set when some key of `by_prefix` has `d` separators (bit 127: 127 or more),
    /// so a check looks up only the ancestors at depths that can match.
    depths: u128,
    /// Exact root grants (`/`, `C:/`), folded on win32.
    roots: Vec<(String, Modes)>,
}

impl GlobIndex {
    pub fn new(fold: bool, root_len: usize) -> Self {
        Self { fold, root_len, ..Default::default() }
    }

    /// Adds one parsed glob with its modes.
    pub fn add(&mut self, g: ParsedGlob, modes: Modes) {
        let ParsedGlob { prefix, mut rest } = g;
        if rest.is_empty() && prefix.len() == self.root_len {
            // The root itself: only a literal root grant covers it.
            self.roots.push((format!("{prefix}/"), modes));
            return;
        }
        self.depths |= depth_bit(prefix.bytes().filter(|&b| b == b'/').count());
        let e = self.by_prefix.entry(prefix).or_default();
        match rest.len() {
            0 => e.exact |= modes,
            1 if rest[0] == Seg::Rec => e.subtree |= modes,
            1 => {
                let Some(Seg::Pat(p)) = rest.pop() else { unreachable!() };
                match e.in_dir.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, m)) => *m |= modes,
                    None => e.in_dir.push((p, modes)),
                }
            }
            _ => e.general.push((rest, modes)),
        }
    }

    /// The union of the modes of every grant matching `path` (normalised,
    /// `/`-separated, no trailing `/` except a root). Stops early once
    /// `wanted` is found.
    pub fn modes(&self, path: &str, wanted: Modes) -> Modes {
        let folded;
        let path = if self.fold {
            folded = fold_str(path);
            folded.as_str()
        } else {
            path
        };
        if path.ends_with('/') {
            return self.roots.iter().filter(|(r, _)| r == path).fold(0, |m, (_, x)| m | x);
        }
        let mut got: Modes = 0;
        let bytes = path.as_bytes();
        let full_depth = bytes.iter().filter(|&&b| b == b'/').count();
        if self.depths & depth_bit(full_depth) != 0 {
            if let Some(e) = self.by_prefix.get(path) {
                got |= e.exact;
                if got & wanted != 0 {
                    return got;
                }
            }
        }
        // Every ancestor directory: the root prefix, then each '/' boundary.
        let last_sep = path.rfind('/').unwrap_or(0);
        let mut at = self.root_len;
        let mut depth = 0usize;
        loop {
            let prefix = &path[..at];
            let wanted_depth = self.depths & depth_bit(depth) != 0;
            depth += 1;
            if let Some(e) = if wanted_depth { self.by_prefix.get(prefix) } else { None } {
                got |= e.subtree;
                if at == last_sep {
                    let name = &path[last_sep + 1..];
                    for (p, m) in &e.in_dir {
                        if *m & !got != 0 && p.matches(name) {
                            got |= m;
                        }
                    }
                }
                if !e.general.is_empty() {
                    let segs: Vec<&str> = path[at + 1..].split('/').collect();
                    for (g, m) in &e.general {
                        if *m & !got != 0 && segs_match(g, &segs) {
                            got |= m;
                        }
                    }
                }
                if got & wanted != 0 {
                    return got;
                }
            }
            if at >= last_sep {
                break;
            }
            at = match bytes[at + 1..].iter().position(|&b| b == b'/') {
                Some(i) => at + 1 + i,
                None => break,
            };
        }
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(p: &str) -> SegPattern {
        match parse_segment(p, true, false).unwrap() {
            Seg::Pat(p) => p,
            Seg::Rec => panic!(),
        }
    }

    #[test]
    fn segment_patterns() {
        for (p, s, want) in [
            ("*.json", "a.json", true),
            ("*.json", ".json", true),
            ("*.json", "a.jsonx", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("?", "é", true),
            ("?", "", false),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("[!a-c]x", "dx", true),
            ("[]]", "]", true),
            ("[!]]", "a", true),
            ("\\*", "*", true),
            ("\\*", "a", false),
            ("*", "", true),
            ("**a", "x", false),
        ] {
            if p == "**a" {
                assert!(parse_segment(p, true, false).is_err());
                continue;
            }
            assert_eq!(seg(p).matches(s), want, "{p} ~ {s:?}");
        }
    }

    #[test]
    fn pathological_patterns_stay_linear() {
        let p = seg(&"*a".repeat(200));
        let s = "a".repeat(4000) + "b";
        let t = std::time::Instant::now();
        assert!(!p.matches(&s));
        assert!(t.elapsed().as_secs() < 2);
    }

    #[test]
    fn braces_expand_with_limits() {
        // A class inside a group may hold a literal `]` or `,`.
        let v = parse("/a/{[]],[,]x}", true, false).unwrap();
        assert_eq!(v.len(), 2);
        let v = parse("/a/{b,c{d,e}}/f", true, false).unwrap();
        assert_eq!(v.iter().map(|g| g.prefix.clone()).collect::<Vec<_>>(), ["/a/b/f", "/a/cd/f", "/a/ce/f"]);
        assert!(parse("/a/{b,c", true, false).is_err());
        assert!(parse("/a/b}", true, false).is_err());
        assert!(parse("/a/{b,}", true, false).is_err());
        assert!(parse(&"/{a,b}".repeat(9), true, false).is_err(), "512 variants");
        assert_eq!(parse("/[{]x", true, false).unwrap()[0].rest.len(), 1);
    }
}
