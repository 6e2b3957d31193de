use proptest::prelude::*;

use super::*;

fn single(body: &str) -> Message {
    match scan(body.as_bytes()).unwrap() {
        Scanned::Single(m) => m,
        Scanned::Batch(_) => panic!("expected a single message"),
    }
}

#[test]
fn reads_method_name_and_meta_skipping_the_rest() {
    let m = single(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"name":"decoy","deep":[[[{"uri":"x"}]]]},"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-abc-def-01","other":{}}}}"#,
    );
    assert_eq!(m.kind, MessageKind::Request);
    assert_eq!(m.id.unwrap().as_json(), "7");
    assert_eq!(m.method, "tools/call");
    assert_eq!(m.name.as_deref(), Some("echo"));
    assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(m.traceparent.as_deref(), Some("00-abc-def-01"));
}

#[test]
fn typical_methods_and_names_are_stored_inline() {
    // Up to 23 bytes, e.g. `notifications/cancelled`, needs no heap.
    let m = single(
        r#"{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{"name":"a_23_byte_tool_name_xyz","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
    );
    assert!(!m.method.is_heap_allocated());
    assert!(!m.name.as_ref().unwrap().is_heap_allocated());
    assert!(!m.protocol_version.as_ref().unwrap().is_heap_allocated());
    let long = "n".repeat(100);
    let m = single(&format!(
        r#"{{"id":1,"method":"tools/call","params":{{"name":"{long}"}}}}"#
    ));
    assert_eq!(m.name.as_deref(), Some(long.as_str()));
}

#[test]
fn resources_are_named_by_uri_and_escapes_are_decoded() {
    let m = single(
        r#"{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"name":"n","uri":"file:///a\u0020b"}}"#,
    );
    assert_eq!(m.name.as_deref(), Some("file:///a b"));
    assert_eq!(m.id.unwrap().as_json(), r#""r1""#);
}

#[test]
fn classifies_notifications_responses_and_batches() {
    assert_eq!(
        single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).kind,
        MessageKind::Notification
    );
    assert_eq!(
        single(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).kind,
        MessageKind::Response
    );
    let Scanned::Batch(v) = scan(br#" [{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}}]"#).unwrap() else {
        panic!("expected batch")
    };
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].name.as_deref(), Some("a"));
}

#[test]
fn rejects_bad_bodies_with_the_right_class() {
    let kind = |b: &str| scan(b.as_bytes()).unwrap_err().kind;
    assert_eq!(kind(""), ErrorKind::ParseError);
    assert_eq!(kind("{"), ErrorKind::ParseError);
    assert_eq!(kind("[]"), ErrorKind::InvalidRequest);
    assert_eq!(kind("42"), ErrorKind::InvalidRequest);
    assert_eq!(kind(r#"{"id":1}"#), ErrorKind::InvalidRequest);
    assert_eq!(kind(r#"{"id":{},"method":"x"}"#), ErrorKind::InvalidRequest);
    // A second `method` or `name` must not let the body say two things.
    assert_eq!(
        kind(r#"{"id":1,"method":"ping","method":"tools/call"}"#),
        ErrorKind::InvalidRequest
    );
    assert_eq!(
        kind(r#"{"id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#),
        ErrorKind::InvalidRequest
    );
}

/// `depth` nested arrays around `1`.
fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn skipped_values_are_validated_within_the_nesting_limit() {
    let kind = |b: &str| scan(b.as_bytes()).err().map(|e| e.kind);
    for deep in [nested(10_000), nested(129)] {
        for body in [
            format!(r#"{{"id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{deep}}}}}}}"#),
            format!(r#"{{"id":1,"method":"tools/call","params":{{"name":"echo","other":{deep}}}}}"#),
            format!(r#"{{"id":1,"method":"x","params":{{"_meta":{{"k":{deep}}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","extra":{deep},"id":1,"method":"x"}}"#),
            format!(r#"{{"id":1,"result":{deep}}}"#),
            format!(r#"{{"id":1,"error":{deep}}}"#),
            format!(r#"{{"id":{deep},"method":"x"}}"#),
            format!(r#"[{{"id":1,"method":"ping"}},{{"id":2,"method":"x","params":{{"arguments":{deep}}}}}]"#),
            format!(r#"[{{"id":{deep},"method":"ping"}}]"#),
            deep.clone(),
        ] {
            assert_eq!(kind(&body), Some(ErrorKind::ParseError), "{}", &body[..60]);
        }
    }
    // 100 levels of arguments are fine, in a single message and in a batch.
    let body = format!(
        r#"{{"id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{}}}}}}}"#,
        nested(100)
    );
    assert_eq!(single(&body).name.as_deref(), Some("echo"));
    let batch = format!(
        r#"[{{"id":1,"method":"ping"}},{{"id":2,"method":"x","params":{{"a":{}}}}}]"#,
        nested(100)
    );
    assert!(matches!(scan(batch.as_bytes()), Ok(Scanned::Batch(v)) if v.len() == 2));
    // An id nested within the limit is only the wrong shape.
    assert_eq!(
        kind(&format!(r#"{{"id":{},"method":"x"}}"#, nested(3))),
        Some(ErrorKind::InvalidRequest)
    );
}

#[test]
fn the_whole_body_must_be_json_even_after_a_shape_error() {
    let kind = |b: &[u8]| scan(b).err().map(|e| e.kind);
    // The shape error comes first; the syntax error after it still counts.
    assert_eq!(kind(br#"{"id":1,"method":5,"params":{"#), Some(ErrorKind::ParseError));
    assert_eq!(kind(br#"[1, {"#), Some(ErrorKind::ParseError));
    assert_eq!(kind(br#"[1, 2]"#), Some(ErrorKind::InvalidRequest));
    assert_eq!(kind(br#""text" x"#), Some(ErrorKind::ParseError));
    // Invalid UTF-8, lone surrogates and out-of-range numbers in skipped
    // values (serde_json's IgnoredAny lets all three through).
    assert_eq!(
        kind(br#"{"id":1,"method":"x","params":{"a":"\ud800"}}"#),
        Some(ErrorKind::ParseError)
    );
    assert_eq!(
        kind(b"{\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}"),
        Some(ErrorKind::ParseError)
    );
    assert_eq!(
        kind(br#"{"id":1,"method":"x","params":{"a":1e400}}"#),
        Some(ErrorKind::ParseError)
    );
    assert_eq!(
        kind(br#"{"id":1,"method":"x","params":{"a":[1e-400,-0.5,18446744073709551616]}}"#),
        None
    );
}

#[test]
fn objects_are_objects_and_escaped_keys_are_keys() {
    let kind = |b: &str| scan(b.as_bytes()).err().map(|e| e.kind);
    // Positional params must not be read as a tool name.
    assert_eq!(
        kind(r#"{"id":1,"method":"tools/call","params":["echo"]}"#),
        Some(ErrorKind::InvalidRequest)
    );
    assert_eq!(
        kind(r#"{"id":1,"method":"x","params":{"_meta":["v"]}}"#),
        Some(ErrorKind::InvalidRequest)
    );
    // An escaped key is the same key to the upstream.
    assert_eq!(
        kind(r#"{"id":1,"method":"ping","method":"tools/call"}"#),
        Some(ErrorKind::InvalidRequest)
    );
    let m = single(r#"{"id":1,"method":"tools/call","params":{"name":"echo","_meta":null},"result":null}"#);
    assert_eq!(
        (m.kind, m.method.as_str(), m.name.as_deref()),
        (MessageKind::Request, "tools/call", Some("echo"))
    );
    // A null counts as a copy of the key.
    assert_eq!(
        kind(r#"{"id":null,"id":1,"method":"x"}"#),
        Some(ErrorKind::InvalidRequest)
    );
}

#[test]
fn keeps_the_id_on_invalid_requests() {
    let e = scan(br#"{"id":5,"result":1,"method":"x"}"#).unwrap_err();
    assert_eq!(e.id.unwrap().as_json(), "5");
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = scan(&b);
    }

    #[test]
    fn finds_any_tool_name(name in "\\PC{0,40}", pad in "[a-z]{0,20}") {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"arguments": {"x": pad}, "name": name}
        });
        let m = single(&body.to_string());
        prop_assert_eq!(m.name.as_deref(), Some(name.as_str()));
    }

    /// The scan calls a body a parse error exactly when serde_json cannot
    /// read it as a document (same syntax, same nesting limit).
    #[test]
    fn parse_errors_agree_with_a_full_parse(args in json_or_noise(), depth in 0usize..140) {
        let body = format!(
            r#"{{"id":1,"method":"tools/call","params":{{"name":"t","arguments":{}{args}{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let full = serde_json::from_str::<serde_json::Value>(&body).is_ok();
        let scanned = scan(body.as_bytes()).map_or_else(|e| e.kind != ErrorKind::ParseError, |_| true);
        prop_assert_eq!(scanned, full, "{}", body);
    }
}

/// JSON text (nested up to about 8 levels) or JSON-like noise.
fn json_or_noise() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "\\PC{0,8}".prop_map(serde_json::Value::from),
    ];
    let json = leaf
        .prop_recursive(8, 64, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
        .prop_map(|v| v.to_string());
    prop_oneof![json, "[\\[\\]{}\",:0-9a-z\\\\ .eE+-]{0,40}"]
}

#[test]
fn reads_the_version_an_initialize_offers() {
    let m = single(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    assert_eq!(m.offered_version.as_deref(), Some("2025-11-25"));
    assert_eq!(m.protocol_version, None);
    // Another method's `protocolVersion` is not an offer; a value that is
    // not a string is skipped, not refused.
    let other = single(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"protocolVersion":"2025-11-25"}}"#);
    assert_eq!(other.offered_version, None);
    let odd = single(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":{"v":[1]}}}"#);
    assert_eq!(odd.offered_version, None);
    // Read once only, like every key the scan reads.
    let twice =
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"a","protocolVersion":"b"}}"#;
    assert_eq!(scan(twice.as_bytes()).unwrap_err().kind, ErrorKind::InvalidRequest);
}
