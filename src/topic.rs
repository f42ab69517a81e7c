//! The topic grammar of `events.publish` and `events.subscribe` (SPEC §4):
//! dot-separated segments, `*` for exactly one segment, a final `**` for one
//! or more, and the covering relation a subscription is checked with.

use std::fmt;

use crate::error::ManifestError;

/// Longest topic or topic pattern, in bytes: the payload string limit
/// ([`crate::capability::MAX_PAYLOAD_STRING_BYTES`], asserted equal there).
pub const MAX_TOPIC_BYTES: usize = 4096;
/// Most segments one topic or topic pattern may have.
pub const MAX_TOPIC_SEGMENTS: usize = 64;

/// One segment of a topic pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// A name, compared exactly (case-sensitive).
    Literal(String),
    /// `*`: exactly one segment.
    One,
    /// `**`, only last: one or more remaining segments.
    ///
    /// # Security
    /// A pattern ending in `**` covers every topic under its prefix, including future ones.
    Rest,
}

/// A dot-separated topic pattern (`orders.*.created`, `audit.**`). A concrete
/// topic is a pattern without wildcards.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicPattern(Vec<Segment>);

/// Why a topic string does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicError(&'static str);

impl std::error::Error for TopicError {}

impl fmt::Display for TopicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

pub(crate) const TOPIC_GRAMMAR: &str = "a topic pattern: dot-separated non-empty segments without whitespace or control characters, `*` for exactly one segment, and a final `**` for one or more";

impl TopicPattern {
    /// Parses a topic or topic pattern.
    ///
    /// ```
    /// use api_sandbox_permissions::topic::TopicPattern;
    /// let declared = TopicPattern::parse("orders.*").unwrap();
    /// assert!(declared.covers(&TopicPattern::parse("orders.created").unwrap()));
    /// assert!(TopicPattern::parse("orders..created").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, TopicError> {
        if s.is_empty() || s.len() > MAX_TOPIC_BYTES {
            return Err(TopicError("1 to 4096 bytes"));
        }
        let mut segs = Vec::new();
        let mut parts = s.split('.').peekable();
        while let Some(p) = parts.next() {
            if segs.len() >= MAX_TOPIC_SEGMENTS {
                return Err(TopicError("at most 64 segments"));
            }
            let seg = match p {
                "" => return Err(TopicError("no empty segments")),
                "*" => Segment::One,
                "**" if parts.peek().is_none() => Segment::Rest,
                "**" => return Err(TopicError("`**` only as the last segment")),
                lit => {
                    if lit.chars().any(|c| c == '*' || c.is_whitespace() || c.is_control()) {
                        return Err(TopicError("`*` only as a whole segment; no whitespace or control characters"));
                    }
                    Segment::Literal(lit.to_owned())
                }
            };
            segs.push(seg);
        }
        segs.shrink_to_fit();
        Ok(TopicPattern(segs))
    }

    /// Parses a manifest pattern, with the pointer in the error.
    pub fn parse_manifest(s: &str, pointer: &str) -> Result<Self, ManifestError> {
        Self::parse(s).map_err(|e| ManifestError::new(pointer, format!("{TOPIC_GRAMMAR} ({e})")))
    }

    /// No wildcards.
    #[must_use]
    pub fn is_concrete(&self) -> bool {
        self.0.iter().all(|s| matches!(s, Segment::Literal(_)))
    }

    /// Its segments, in order.
    #[must_use]
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// Whether every topic `requested` can match is also matched by `self`.
    /// For a concrete `requested` this is plain matching.
    #[must_use]
    pub fn covers(&self, requested: &TopicPattern) -> bool {
        let (d, r) = (&self.0, &requested.0);
        for (i, ds) in d.iter().enumerate() {
            match ds {
                // `**` is last and matches one or more: covers any non-empty rest.
                Segment::Rest => return i < r.len(),
                Segment::One => match r.get(i) {
                    Some(Segment::Literal(_)) | Some(Segment::One) => {}
                    Some(Segment::Rest) | None => return false,
                },
                Segment::Literal(a) => match r.get(i) {
                    Some(Segment::Literal(b)) if a == b => {}
                    _ => return false,
                },
            }
        }
        d.len() == r.len()
    }
}

impl fmt::Display for TopicPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            match s {
                Segment::Literal(l) => f.write_str(l)?,
                Segment::One => f.write_str("*")?,
                Segment::Rest => f.write_str("**")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> TopicPattern {
        TopicPattern::parse(s).unwrap()
    }

    /// The naive reference: enumerate concrete topics of small length over a
    /// tiny alphabet and compare sets.
    fn reference_covers(d: &TopicPattern, r: &TopicPattern) -> bool {
        fn matches(p: &[Segment], t: &[&str]) -> bool {
            match (p.first(), t.first()) {
                (None, None) => true,
                (Some(Segment::Rest), _) => !t.is_empty(),
                (Some(Segment::One), Some(_)) => matches(&p[1..], &t[1..]),
                (Some(Segment::Literal(l)), Some(x)) => l == x && matches(&p[1..], &t[1..]),
                _ => false,
            }
        }
        let mut alphabet: Vec<&str> = vec!["zz"];
        for seg in d.0.iter().chain(r.0.iter()) {
            if let Segment::Literal(l) = seg {
                alphabet.push(l);
            }
        }
        let mut topics: Vec<Vec<&str>> = vec![vec![]];
        let mut all = Vec::new();
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &topics {
                for &a in &alphabet {
                    let mut t2 = t.clone();
                    t2.push(a);
                    next.push(t2);
                }
            }
            all.extend(next.iter().cloned());
            topics = next;
        }
        all.iter().all(|t| !matches(&r.0, t) || matches(&d.0, t))
    }

    #[test]
    fn grammar() {
        for bad in ["", ".", "a.", ".a", "a..b", "a.**.b", "a*", "a.b*", "a b", "a.\n", "***"] {
            assert!(TopicPattern::parse(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "a.b", "a.*", "a.**", "*", "**", "*.b.**", "a-b_c:d"] {
            assert_eq!(p(good).to_string(), good);
        }
    }

    #[test]
    fn matching_and_covering() {
        let cases = [
            ("a.*", "a.b", true),
            ("a.*", "a", false),
            ("a.*", "a.b.c", false),
            ("a.**", "a", false),
            ("a.**", "a.b", true),
            ("a.**", "a.b.c", true),
            ("a.**", "a.*", true),
            ("a.**", "a.**", true),
            ("a.*", "a.**", false),
            ("a.*", "a.*", true),
            ("a.b", "a.*", false),
            ("*.b", "a.b", true),
            ("*.b", "*.b", true),
            ("*.**", "a.**", true),
            ("**", "a", true),
            ("**", "**", true),
            ("a", "A", false),
            ("a.b", "a.b", true),
        ];
        for (d, r, want) in cases {
            assert_eq!(p(d).covers(&p(r)), want, "{d} covers {r}");
            assert_eq!(reference_covers(&p(d), &p(r)), want, "reference {d} covers {r}");
        }
    }

    #[test]
    fn covering_agrees_with_reference_exhaustively() {
        let segs = ["a", "b", "*"];
        let mut pats = Vec::new();
        for len in 1..=3usize {
            let mut idx = vec![0usize; len];
            loop {
                let base: Vec<&str> = idx.iter().map(|&i| segs[i]).collect();
                pats.push(base.join("."));
                let mut with_rest = base.clone();
                *with_rest.last_mut().unwrap() = "**";
                pats.push(with_rest.join("."));
                let mut k = 0;
                while k < len {
                    idx[k] += 1;
                    if idx[k] < segs.len() {
                        break;
                    }
                    idx[k] = 0;
                    k += 1;
                }
                if k == len {
                    break;
                }
            }
        }
        for d in &pats {
            for r in &pats {
                assert_eq!(p(d).covers(&p(r)), reference_covers(&p(d), &p(r)), "{d} covers {r}");
            }
        }
    }
}
