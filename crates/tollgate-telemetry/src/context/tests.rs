#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_is_read() {
    let p = RemoteParent::parse(GOOD).unwrap();
    assert_eq!(p.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(p.span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
    assert!(p.sampled);
    let unsampled = RemoteParent::parse(&GOOD.replace("-01", "-00")).unwrap();
    assert!(!unsampled.sampled);
    assert!(RemoteParent::parse(&format!(" {GOOD}\t")).is_some());
}

#[test]
fn only_the_sampled_bit_of_the_flags_counts() {
    assert!(RemoteParent::parse(&GOOD.replace("-01", "-03")).unwrap().sampled);
    assert!(!RemoteParent::parse(&GOOD.replace("-01", "-02")).unwrap().sampled);
}

#[test]
fn later_versions_may_append_fields() {
    let v1 = GOOD.replacen("00-", "01-", 1);
    assert!(RemoteParent::parse(&v1).is_some());
    assert!(RemoteParent::parse(&format!("{v1}-what-ever")).is_some());
    assert!(RemoteParent::parse(&format!("{v1}x")).is_none());
}

#[test]
fn invalid_traceparents_are_ignored() {
    for bad in [
        "",
        "00",
        &GOOD[..54],
        &format!("{GOOD}-extra"),
        &GOOD.replacen("00-", "ff-", 1),
        &GOOD.replacen("00-", "0g-", 1),
        &GOOD.to_uppercase(),
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
        "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-01",
    ] {
        assert_eq!(RemoteParent::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn a_context_round_trips_through_the_header() {
    let parent = RemoteParent::parse(GOOD).unwrap();
    let header = Traceparent::from_span_context(&parent.span_context()).unwrap();
    assert_eq!(header.as_str(), GOOD);
    assert_eq!(header.to_string(), GOOD);
    assert_eq!(header.header_value().to_str().unwrap(), GOOD);
    assert_eq!(header.trace_id(), parent.trace_id());
    let unsampled = RemoteParent::parse(&GOOD.replace("-01", "-00")).unwrap();
    let header = Traceparent::from_span_context(&unsampled.span_context()).unwrap();
    assert!(header.as_str().ends_with("-00"));
}

#[test]
fn an_invalid_context_has_no_header() {
    assert_eq!(Traceparent::from_span_context(&SpanContext::empty_context()), None);
}
