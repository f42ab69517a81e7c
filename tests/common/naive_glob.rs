//! The naive glob reference model the fast fs matcher is checked against
//! (tests/fs.rs): braces expanded first, then segment by segment with plain
//! recursion for `*` and `**`, written from SPEC §2 and sharing no code with
//! `src/glob.rs`. One home: every test that needs a reference glob matcher
//! includes this file (`#[path = "common/naive_glob.rs"] mod naive_glob;`).

fn expand_braces(p: &str) -> Vec<String> {
    let Some(open) = p.find('{') else { return vec![p.to_owned()] };
    let close = open + p[open..].find('}').unwrap();
    let (head, body, tail) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
    body.split(',').flat_map(|alt| expand_braces(&format!("{head}{alt}{tail}"))).collect()
}

fn class_match(class: &str, c: char, fold: bool) -> bool {
    let (neg, body) = match class.strip_prefix('!').or_else(|| class.strip_prefix('^')) {
        Some(b) => (true, b),
        None => (false, class),
    };
    let chars: Vec<char> = body.chars().collect();
    let mut hit = false;
    let mut i = 0;
    let eq = |a: char, b: char| if fold { a.to_lowercase().eq(b.to_lowercase()) } else { a == b };
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            if (chars[i]..=chars[i + 2]).contains(&c) {
                hit = true;
            }
            i += 3;
        } else {
            if eq(chars[i], c) {
                hit = true;
            }
            i += 1;
        }
    }
    hit != neg
}

fn seg_match(p: &[char], s: &[char], fold: bool) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len()).any(|k| seg_match(&p[1..], &s[k..], fold)),
        Some('?') => !s.is_empty() && seg_match(&p[1..], &s[1..], fold),
        Some('[') => {
            let end = p.iter().skip(2).position(|&c| c == ']').map(|x| x + 2).unwrap();
            let class: String = p[1..end].iter().collect();
            !s.is_empty() && class_match(&class, s[0], fold) && seg_match(&p[end + 1..], &s[1..], fold)
        }
        Some(&c) => {
            let eq = if fold {
                s.first().is_some_and(|&x| x.to_lowercase().eq(c.to_lowercase()))
            } else {
                s.first() == Some(&c)
            };
            eq && seg_match(&p[1..], &s[1..], fold)
        }
    }
}

fn segs_match(p: &[&str], s: &[&str], fold: bool) -> bool {
    match p.first() {
        None => s.is_empty(),
        // A trailing `**` needs at least one segment; an inner one may match none.
        Some(&"**") if p.len() == 1 => !s.is_empty(),
        Some(&"**") => (0..=s.len()).any(|k| segs_match(&p[1..], &s[k..], fold)),
        Some(ps) => {
            !s.is_empty() && {
                let pc: Vec<char> = ps.chars().collect();
                let sc: Vec<char> = s[0].chars().collect();
                seg_match(&pc, &sc, fold) && segs_match(&p[1..], &s[1..], fold)
            }
        }
    }
}

/// Whether `pattern` (a posix-style glob, `/` separated, no drive) matches the
/// normalised `path`; `fold` compares characters case-insensitively (win32).
pub fn matches(pattern: &str, path: &str, fold: bool) -> bool {
    expand_braces(pattern).iter().any(|p| {
        let ps: Vec<&str> = p.split('/').skip(1).collect();
        let ss: Vec<&str> = if path == "/" { vec![] } else { path.split('/').skip(1).collect() };
        segs_match(&ps, &ss, fold)
    })
}
