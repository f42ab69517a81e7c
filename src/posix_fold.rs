//! The fold `deny.fs` globs and paths are compared under on posix (SPEC §10:
//! a deny is never narrower than it reads). A posix policy may guard a
//! case- and normalisation-insensitive volume (APFS and HFS+ by default,
//! CIFS/SMB mounts, NTFS through a driver), where `SECRETS` and `secrets`,
//! or `café` in NFC and NFD, name one file. So a deny also matches every
//! spelling that differs only in case or Unicode normalisation; grants stay
//! exact (stricter than they look, a deny broader: both fail closed).
//!
//! The fold: the characters HFS+ ignores in names dropped (U+200C-200F,
//! U+202A-202E, U+206A-206F, U+FEFF: the units Apple's TN1150 lower-case
//! table maps to zero, [`HFS_IGNORABLE`]), Unicode NFC, then each character
//! replaced by the full lower case of its full upper case until stable (`ſ`,
//! `K` (Kelvin), `ẞ` and `ß` → `ss`, `ς` → `σ`, `ı` → `i`), then the few
//! characters HFS+ case-folds together that Unicode keeps apart merged
//! ([`hfs_merges`]: Georgian capitals `Ⴀ` (U+10A0) and `ა` (U+10D0) are one
//! name on HFS+, while Unicode pairs `Ⴀ` with `ⴀ` (U+2D00)), then NFC again.
//! It only ever merges spellings: two strings equal as written are equal
//! folded, and so are two names HFS+ compares equal (its table's every
//! mapping is checked in the tests). The index matches the folded deny
//! globs against the folded path besides the exact ones against the path as
//! given, so a glob never matches less than it did unfolded.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

use crate::hfsplus_table::{HFS_IGNORABLE, HFS_LOWER};

/// Whether HFS+ ignores `c` in names ([`HFS_IGNORABLE`]).
fn is_hfs_ignorable(c: char) -> bool {
    c >= HFS_IGNORABLE[0] && HFS_IGNORABLE.binary_search(&c).is_ok()
}

/// `s` without the characters HFS+ ignores (borrowed when it has none).
pub fn without_ignorables(s: &str) -> Cow<'_, str> {
    if s.chars().any(is_hfs_ignorable) {
        Cow::Owned(s.chars().filter(|&c| !is_hfs_ignorable(c)).collect())
    } else {
        Cow::Borrowed(s)
    }
}

/// The fold of a whole string (a path, or a literal run of a deny glob).
pub fn fold(s: &str) -> String {
    fold_with(s, true)
}

/// [`fold`], with or without the HFS+ merges (without: what the merges are
/// computed from).
fn fold_with(s: &str, merge: bool) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    let s = without_ignorables(s);
    let mut mid = case_map(s.nfc(), merge);
    // Until stable (`ẞ` → `ß` → `ss`); two more rounds settle every character.
    for _ in 0..2 {
        let next = case_map(mid.chars(), merge);
        if next == mid {
            break;
        }
        mid = next;
    }
    mid.nfc().collect()
}

/// A fold that keeps every character one character (HFS+ ignorables
/// dropped, NFC, then each character's simple lower case of its simple upper
/// case where both are single characters, else its single-character lower
/// case, else itself, then the HFS+ merges): `Bß` → `bß` where [`fold`]
/// gives `bss`. A deny's `?` and classes match one character, so a path is
/// also matched in this form, which keeps the characters where the glob's
/// wildcards stand.
pub fn simple_fold(s: &str) -> String {
    fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
        let c = it.next()?;
        it.next().is_none().then_some(c)
    }
    let mapped: String = without_ignorables(s)
        .nfc()
        .map(|c| {
            let c = single(c.to_uppercase())
                .and_then(|u| single(u.to_lowercase()))
                .or_else(|| single(c.to_lowercase()))
                .unwrap_or(c);
            hfs_merge(c)
        })
        .collect();
    mapped.nfc().collect()
}

/// [`fold`] in NFD: how a volume that stores names decomposed (HFS+) spells
/// them, where a deny's `?`, class or `*` may stand on a base letter or a
/// combining mark alone (`/a?` matches the `a\u{301}` of `á`).
pub fn fold_nfd(s: &str) -> String {
    fold(s).nfd().collect()
}

/// [`simple_fold`] in NFD (see [`fold_nfd`]).
pub fn simple_fold_nfd(s: &str) -> String {
    simple_fold(s).nfd().collect()
}

/// The spellings besides [`fold`] a posix path is also matched in, each
/// against the deny globs under the same function (SPEC §16: a deny is never
/// narrower than on any volume): the one-character fold, and both folds
/// decomposed. [`other_spellings`] writes a path in them, in this order.
pub const OTHER_FORMS: [fn(&str) -> String; 3] = [simple_fold, fold_nfd, simple_fold_nfd];

/// `path` in each of [`OTHER_FORMS`], in that order, given its [`fold`]
/// (`full`): each fold is computed once, the decomposed spellings from them.
pub fn other_spellings(path: &str, full: &str) -> [String; 3] {
    let simple = simple_fold(path);
    let simple_nfd = simple.nfd().collect();
    [simple, full.nfd().collect(), simple_nfd]
}

/// Each character replaced by the full lower case of its full upper case
/// (and, with `merge`, through [`hfs_merge`]).
fn case_map(chars: impl Iterator<Item = char>, merge: bool) -> String {
    let mut out = String::new();
    for c in chars {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            for u in c.to_uppercase() {
                for l in u.to_lowercase() {
                    out.push(if merge { hfs_merge(l) } else { l });
                }
            }
        }
    }
    out
}

/// The merges HFS+ needs beyond the Unicode fold: for every mapping `u → l`
/// of its lower-case table ([`HFS_LOWER`]) whose two sides fold apart
/// without merges, the two folds are one class, and each member of a class
/// maps to its least member (itself a fold, so the fold stays stable).
/// Derived from the table when first used; sorted by the character mapped.
fn hfs_merges() -> &'static [(char, char)] {
    static MERGES: OnceLock<Vec<(char, char)>> = OnceLock::new();
    MERGES.get_or_init(|| {
        let mut parent: HashMap<char, char> = HashMap::new();
        fn root(parent: &HashMap<char, char>, mut c: char) -> char {
            while let Some(&p) = parent.get(&c) {
                c = p;
            }
            c
        }
        let one = |c: char| {
            let f = fold_with(c.encode_utf8(&mut [0u8; 4]), false);
            let mut it = f.chars();
            match (it.next(), it.next()) {
                (Some(x), None) => Some(x),
                _ => None,
            }
        };
        for &(u, l) in &HFS_LOWER {
            // A side whose fold is not one character is left to the tests,
            // which check every mapping folds together.
            let (Some(a), Some(b)) = (one(u), one(l)) else { continue };
            let (ra, rb) = (root(&parent, a), root(&parent, b));
            if ra != rb {
                let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
                parent.insert(hi, lo);
            }
        }
        let mut v: Vec<(char, char)> = parent.keys().map(|&c| (c, root(&parent, c))).collect();
        v.sort_unstable();
        v
    })
}

/// `c` through [`hfs_merges`].
fn hfs_merge(c: char) -> char {
    let m = hfs_merges();
    match m.first() {
        Some(&(lo, _)) if c >= lo => m.binary_search_by_key(&c, |&(k, _)| k).map_or(c, |i| m[i].1),
        _ => c,
    }
}

/// Highest code point whose fold can differ from itself (case mappings end
/// in the Adlam block, NFC singletons in the CJK compatibility supplement).
const LAST_FOLDING: u32 = 0x2_FFFF;

/// Every character whose fold, or whose one-character fold
/// ([`simple_fold`]: `ẞ` → `ß` where [`fold`] gives `ss`), is another single
/// character, by that fold.
fn preimages() -> &'static HashMap<char, Vec<char>> {
    static TABLE: OnceLock<HashMap<char, Vec<char>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: HashMap<char, Vec<char>> = HashMap::new();
        let mut buf = [0u8; 4];
        for d in (0x80..=LAST_FOLDING).filter_map(char::from_u32) {
            let s = d.encode_utf8(&mut buf);
            for f in [fold(s), simple_fold(s)] {
                let mut it = f.chars();
                if let (Some(c), None) = (it.next(), it.next()) {
                    if c != d && !t.get(&c).is_some_and(|v| v.contains(&d)) {
                        t.entry(c).or_default().push(d);
                    }
                }
            }
        }
        for d in 'A'..='Z' {
            t.entry(d.to_ascii_lowercase()).or_default().push(d);
        }
        t
    })
}

/// Whether a class written as `hit` (one character as written → matched)
/// matches the folded path character `c`: when `c` or any character that
/// folds to `c` is matched as written. A folded class so matches the fold of
/// every character it held (a negated one too: `[!a]` then matches `a`,
/// the fold of `A`).
pub fn class_hit(c: char, hit: impl Fn(char) -> bool) -> bool {
    hit(c) || preimages().get(&c).is_some_and(|v| v.iter().any(|&d| hit(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_normalisation_spellings_fold_together() {
        for (a, b) in [
            ("/Users/me/app/SECRETS", "/users/me/app/secrets"),
            ("caf\u{e9}", "cafe\u{301}"),
            ("CAF\u{c9}", "cafe\u{301}"),
            ("\u{212a}ey", "key"),
            ("\u{17f}ecret", "SECRET"),
            ("stra\u{df}e", "STRASSE"),
            ("\u{1e9e}", "ss"),
            ("\u{3a3}\u{3c2}", "\u{3c3}\u{3c3}"),
            ("\u{212b}", "\u{e5}"),
        ] {
            assert_eq!(fold(a), fold(b), "{a:?} ~ {b:?}");
        }
        assert_ne!(fold("secret"), fold("secrets"));
    }

    /// Every pair of names HFS+ compares equal folds equal (the generated
    /// table's every mapping, both folds), and its ignorables are dropped
    /// anywhere in a name. The merges beyond Unicode are exactly the classes
    /// the table joins (Georgian capitals and their Mkhedruli letters).
    #[test]
    fn names_hfs_plus_compares_equal_fold_equal() {
        let s = |c: char| c.to_string();
        for &(u, l) in &HFS_LOWER {
            assert_eq!(fold(&s(u)), fold(&s(l)), "U+{:04X} ~ U+{:04X}", u as u32, l as u32);
            assert_eq!(simple_fold(&s(u)), simple_fold(&s(l)), "U+{:04X} ~ U+{:04X}", u as u32, l as u32);
            assert_eq!(fold(&format!("x{u}y")), fold(&format!("X{l}Y")));
        }
        for &c in &HFS_IGNORABLE {
            for (a, b) in [
                (format!("secr{c}ets"), "secrets"),
                (format!("{c}SECRETS{c}"), "secrets"),
                (format!("cafe{c}\u{301}"), "caf\u{e9}"),
            ] {
                assert_eq!(fold(&a), fold(b), "U+{:04X}", c as u32);
                assert_eq!(simple_fold(&a), simple_fold(b), "U+{:04X}", c as u32);
            }
        }
        // Characters next to the ignorable ranges stay (they make another name).
        for c in ['\u{200B}', '\u{2029}', '\u{202F}', '\u{2069}', '\u{FEFE}', '\u{AD}'] {
            assert_ne!(fold(&format!("a{c}b")), fold("ab"), "U+{:04X}", c as u32);
        }
        let m = hfs_merges();
        assert!(!m.is_empty());
        for &(from, to) in m {
            // Each member maps to the least member of its class, itself a fold.
            assert!(to < from && fold_with(&s(to), false) == s(to), "U+{:04X} -> U+{:04X}", from as u32, to as u32);
        }
        assert_eq!(fold("\u{10A0}"), fold("\u{10D0}"));
        assert_eq!(fold("\u{2D00}"), fold("\u{1C90}"));
    }

    /// The one-character fold keeps each character one character, drops
    /// the HFS+ ignorables and applies the HFS+ merges (found by `cargo
    /// mutants`: a `simple_fold` that returned nothing was not noticed here).
    #[test]
    fn the_simple_fold_keeps_characters() {
        for (a, b) in [
            ("B\u{df}", "b\u{df}"),
            ("B\u{1e9e}", "b\u{df}"),
            ("SECR\u{200c}ETS", "secrets"),
            ("\u{feff}K\u{212a}", "kk"),
            ("\u{10a0}", "\u{10d0}"),
            ("CAFE\u{301}", "caf\u{e9}"),
        ] {
            assert_eq!(simple_fold(a), b, "{a:?}");
        }
    }

    #[test]
    fn other_spellings_are_the_other_forms() {
        for p in [
            "/srv/stra\u{df}e/B\u{df}",
            "/d/\u{e1}",
            "/d/A\u{301}",
            "/D/\u{203}X",
            "/\u{fb01}/\u{130}",
            "/ascii/Only",
            "",
        ] {
            assert_eq!(other_spellings(p, &fold(p)), OTHER_FORMS.map(|f| f(p)), "{p:?}");
        }
    }

    #[test]
    fn the_fold_is_stable() {
        let mut buf = [0u8; 4];
        for d in (0..=LAST_FOLDING + 0x100).filter_map(char::from_u32) {
            let f = fold(d.encode_utf8(&mut buf));
            assert_eq!(fold(&f), f, "{d:?}");
        }
    }

    #[test]
    fn classes_match_the_fold_of_every_character_they_held() {
        let az = |d: char| d.is_ascii_lowercase();
        assert!(class_hit('k', az));
        // `[A-Z]` holds `K`, whose fold is `k`; `[\u212A]` (Kelvin) holds the fold `k` too.
        assert!(class_hit('k', |d| d.is_ascii_uppercase()));
        assert!(class_hit('k', |d| d == '\u{212a}'));
        // A negated class: `[!a]` held `A`, folded `a`.
        assert!(class_hit('a', |d| d != 'a'));
        assert!(!class_hit('b', |d| d == 'a' || d == 'A'));
        // `[\u{100}-\u{212A}]` holds `ẞ`, whose one-character fold is `ß` (found by
        // the glob oracle, seed 991027376: `/ß` and `/ẞ\u{202A}` past a deny of `/[Ā-K]`).
        assert!(class_hit('\u{df}', |d| ('\u{100}'..='\u{212a}').contains(&d)));
    }
}
