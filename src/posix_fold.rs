//! The fold `deny.fs` globs and paths are compared under on posix (SPEC §10:
//! a deny is never narrower than it reads). A posix policy may guard a
//! case- and normalisation-insensitive volume (APFS and HFS+ by default,
//! CIFS/SMB mounts, NTFS through a driver), where `SECRETS` and `secrets`,
//! or `café` in NFC and NFD, name one file. So a deny also matches every
//! spelling that differs only in case or Unicode normalisation; grants stay
//! exact (stricter than they look, a deny broader: both fail closed).
//!
//! The fold: Unicode NFC, then each character replaced by the full lower
//! case of its full upper case until stable (`ſ`, `K` (Kelvin), `ẞ` and `ß` → `ss`, `ς` → `σ`,
//! `ı` → `i`), then NFC again. It only ever merges spellings: two strings
//! equal as written are equal folded. The index matches the folded deny
//! globs against the folded path besides the exact ones against the path as
//! given, so a glob never matches less than it did unfolded.

use std::collections::HashMap;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

/// The fold of a whole string (a path, or a literal run of a deny glob).
pub fn fold(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    let mut mid = case_map(s.nfc());
    // Until stable (`ẞ` → `ß` → `ss`); two more rounds settle every character.
    for _ in 0..2 {
        let next = case_map(mid.chars());
        if next == mid {
            break;
        }
        mid = next;
    }
    mid.nfc().collect()
}

/// A fold that keeps every character one character (NFC, then each
/// character's simple lower case of its simple upper case where both are
/// single characters, else its single-character lower case, else itself):
/// `Bß` → `bß` where [`fold`] gives `bss`. A deny's `?` and classes match
/// one character, so a path is also matched in this form, which keeps the
/// characters where the glob's wildcards stand.
pub fn simple_fold(s: &str) -> String {
    fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
        let c = it.next()?;
        it.next().is_none().then_some(c)
    }
    let mapped: String = s
        .nfc()
        .map(|c| {
            single(c.to_uppercase())
                .and_then(|u| single(u.to_lowercase()))
                .or_else(|| single(c.to_lowercase()))
                .unwrap_or(c)
        })
        .collect();
    mapped.nfc().collect()
}

/// Each character replaced by the full lower case of its full upper case.
fn case_map(chars: impl Iterator<Item = char>) -> String {
    let mut out = String::new();
    for c in chars {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            for u in c.to_uppercase() {
                out.extend(u.to_lowercase());
            }
        }
    }
    out
}

/// Highest code point whose fold can differ from itself (case mappings end
/// in the Adlam block, NFC singletons in the CJK compatibility supplement).
const LAST_FOLDING: u32 = 0x2_FFFF;

/// Every character whose fold is another single character, by that fold.
fn preimages() -> &'static HashMap<char, Vec<char>> {
    static TABLE: OnceLock<HashMap<char, Vec<char>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: HashMap<char, Vec<char>> = HashMap::new();
        let mut buf = [0u8; 4];
        for d in (0x80..=LAST_FOLDING).filter_map(char::from_u32) {
            let f = fold(d.encode_utf8(&mut buf));
            let mut it = f.chars();
            if let (Some(c), None) = (it.next(), it.next()) {
                if c != d {
                    t.entry(c).or_default().push(d);
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
    }
}
