use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;

use super::*;

fn map(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_bytes(v).unwrap());
    }
    h
}

#[test]
fn sentinel_decodes_exact_form_only() {
    assert_eq!(
        decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
        "Hello, 世界"
    );
    // Upper-case sentinel and missing suffix are literals.
    assert_eq!(
        decode_header_value("=?BASE64?SGVsbG8=?=").unwrap(),
        "=?BASE64?SGVsbG8=?="
    );
    assert_eq!(decode_header_value("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
    // Bad padding, bad alphabet, bad UTF-8 are errors.
    assert!(decode_header_value("=?base64?SGVsbG8?=").is_err());
    assert!(decode_header_value("=?base64?SGV-bG8=?=").is_err());
    assert!(decode_header_value("=?base64?/w==?=").is_err());
}

#[test]
fn trims_whitespace_and_keeps_case() {
    let h = map(&[
        ("mcp-protocol-version", b" 2026-07-28\t"),
        ("mcp-method", b"TOOLS/CALL"),
        ("mcp-name", b"  my tool  "),
    ]);
    let s = StandardHeaders::read(&h);
    assert_eq!(s.version.unwrap().unwrap(), ProtocolVersion::V2026_07_28);
    assert_eq!(s.method.unwrap().unwrap(), "TOOLS/CALL");
    let name = s.name.unwrap().unwrap();
    assert_eq!(name, "my tool");
    assert!(!name.is_heap_allocated());
}

#[test]
fn rejects_control_and_non_ascii_bytes() {
    let h = map(&[("mcp-name", b"a\tb"), ("mcp-method", "tëst".as_bytes())]);
    let s = StandardHeaders::read(&h);
    assert!(s.name.unwrap().is_err());
    assert!(s.method.unwrap().is_err());
}

#[test]
fn rejects_repeated_headers_and_unknown_versions() {
    let h = map(&[
        ("mcp-name", b"a"),
        ("mcp-name", b"b"),
        ("mcp-protocol-version", b"2099-01-01"),
    ]);
    let s = StandardHeaders::read(&h);
    assert!(s.name.unwrap().is_err());
    assert_eq!(s.version.unwrap().unwrap_err(), "2099-01-01");
}

proptest! {
    #[test]
    fn sentinel_round_trips_any_string(s in "\\PC*") {
        let encoded = format!("=?base64?{}?=", STANDARD.encode(s.as_bytes()));
        prop_assert_eq!(decode_header_value(&encoded).unwrap(), s);
    }

    #[test]
    fn plain_values_are_never_altered(s in "[!-~]([ -~]*[!-~])?") {
        prop_assume!(!(s.starts_with("=?base64?") && s.ends_with("?=")));
        prop_assert_eq!(decode_header_value(&s).unwrap(), s);
    }

    #[test]
    fn reading_arbitrary_bytes_never_panics(v in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(value) = HeaderValue::from_bytes(&v) {
            let mut h = HeaderMap::new();
            h.insert("mcp-name", value);
            let _ = StandardHeaders::read(&h);
        }
    }
}
