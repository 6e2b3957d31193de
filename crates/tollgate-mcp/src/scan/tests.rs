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
    let deep = format!(
        r#"{{"id":1,"method":"x","params":{{"a":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    // Skipped values are walked without recursion: deep nesting is bounded
    // by the body limit only and cannot overflow the stack.
    assert!(scan(deep.as_bytes()).is_ok());
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
}
