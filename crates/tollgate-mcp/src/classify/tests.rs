use http::{HeaderMap, HeaderValue};

use super::*;
use crate::scan;

fn headers(pairs: &[(&'static str, &str)]) -> StandardHeaders {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    StandardHeaders::read(&h)
}

const MODERN_CALL: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

fn classify(h: &[(&'static str, &str)], body: &str) -> Result<Call> {
    classify_post(&headers(h), &scan(body.as_bytes()).unwrap(), Versions::all())
}

#[test]
fn modern_call_with_agreeing_headers_passes() {
    let call = classify(&[V, ("mcp-method", "tools/call"), ("mcp-name", "echo")], MODERN_CALL).unwrap();
    assert_eq!(call.era, Era::Modern);
    assert_eq!(call.messages[0].name.as_deref(), Some("echo"));
}

#[test]
fn modern_mismatches_are_header_errors_echoing_the_id() {
    for h in [
        vec![V, ("mcp-method", "tools/call"), ("mcp-name", "other")],
        vec![V, ("mcp-method", "tools/list"), ("mcp-name", "echo")],
        vec![V, ("mcp-method", "TOOLS/CALL"), ("mcp-name", "echo")],
        vec![V, ("mcp-method", "tools/call")],
        vec![V, ("mcp-name", "echo")],
        vec![V, ("mcp-method", "tools/call"), ("mcp-name", "=?base64?ZWNobw?=")],
    ] {
        let e = classify(&h, MODERN_CALL).unwrap_err();
        assert_eq!(e.kind, ErrorKind::HeaderMismatch, "{h:?}");
        assert_eq!(e.id.unwrap().as_json(), "3");
    }
}

#[test]
fn sentinel_names_match_after_decoding() {
    let body = MODERN_CALL.replace("\"echo\"", "\"grüße\"");
    let name = "=?base64?Z3LDvMOfZQ==?=";
    let call = classify(&[V, ("mcp-method", "tools/call"), ("mcp-name", name)], &body).unwrap();
    assert_eq!(call.messages[0].name.as_deref(), Some("grüße"));
}

#[test]
fn unsupported_versions_name_what_is_supported() {
    let e = classify(&[("mcp-protocol-version", "2030-01-01")], MODERN_CALL).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnsupportedProtocolVersion);
    let data = e.data.unwrap();
    assert_eq!(data["requested"], "2030-01-01");
    assert!(data["supported"].as_array().unwrap().iter().any(|v| v == "2026-07-28"));
    let e = classify_post(
        &headers(&[("mcp-protocol-version", "2025-06-18")]),
        &scan(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap(),
        Versions::modern_only(),
    )
    .unwrap_err();
    assert_eq!(e.data.unwrap()["supported"], serde_json::json!(["2026-07-28"]));
    // A legacy call without a version header on a modern-only route.
    let e = classify_post(
        &headers(&[]),
        &scan(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).unwrap(),
        Versions::modern_only(),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnsupportedProtocolVersion);
    assert_eq!(e.id.unwrap().as_json(), "4");
    assert_eq!(e.data.unwrap()["requested"], "unknown");
}

/// A route whose upstream announced 2025-06-18 and 2025-11-25 only.
fn announced_route() -> Versions {
    Versions::all().intersect(Versions::from_announced(["2025-06-18", "2025-11-25"]))
}

#[test]
fn a_route_serves_only_what_its_upstream_announced() {
    let h = headers(&[V, ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
    let e = classify_post(&h, &scan(MODERN_CALL.as_bytes()).unwrap(), announced_route()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnsupportedProtocolVersion);
    assert_eq!(e.id.unwrap().as_json(), "3");
    let data = e.data.unwrap();
    assert_eq!(data["supported"], serde_json::json!(["2025-06-18", "2025-11-25"]));
    assert_eq!(data["requested"], "2026-07-28");
    // The header-only plan refuses it the same way.
    let e = CallPlan::from_headers(&h, true, announced_route()).unwrap_err();
    assert_eq!(
        e.data.unwrap()["supported"],
        serde_json::json!(["2025-06-18", "2025-11-25"])
    );
    // An older legacy revision is outside the set too; an announced one passes.
    let ping = scan(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
    let old = headers(&[("mcp-protocol-version", "2025-03-26")]);
    assert_eq!(
        classify_post(&old, &ping, announced_route()).unwrap_err().kind,
        ErrorKind::UnsupportedProtocolVersion
    );
    let ok = headers(&[("mcp-protocol-version", "2025-11-25")]);
    assert_eq!(classify_post(&ok, &ping, announced_route()).unwrap().era, Era::Legacy);
    assert_eq!(
        classify_post(&headers(&[]), &ping, announced_route()).unwrap().era,
        Era::Legacy
    );
}

#[test]
fn a_route_with_no_common_version_serves_nothing() {
    let none = Versions::modern_only().intersect(Versions::from_announced(["2025-06-18"]));
    let ping = scan(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
    for h in [vec![], vec![("mcp-protocol-version", "2025-06-18")], vec![V]] {
        let e = classify_post(&headers(&h), &ping, none).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnsupportedProtocolVersion, "{h:?}");
        assert_eq!(e.data.unwrap()["supported"], serde_json::json!([]));
    }
}

#[test]
fn modern_body_without_meta_or_header_is_rejected() {
    let no_meta = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    assert_eq!(
        classify(&[V, ("mcp-method", "tools/list")], no_meta).unwrap_err().kind,
        ErrorKind::MissingMeta
    );
    assert_eq!(classify(&[], MODERN_CALL).unwrap_err().kind, ErrorKind::HeaderMismatch);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    assert_eq!(
        classify(&[V, ("mcp-method", "initialize")], init).unwrap_err().kind,
        ErrorKind::HeaderMismatch
    );
}

#[test]
fn legacy_traffic_and_batches() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
    assert_eq!(classify(&[], init).unwrap().era, Era::Legacy);
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    assert_eq!(classify(&[], batch).unwrap().messages.len(), 2);
    assert_eq!(
        classify(&[("mcp-protocol-version", "2025-03-26")], batch).unwrap().era,
        Era::Legacy
    );
    assert_eq!(
        classify(&[("mcp-protocol-version", "2025-06-18")], batch)
            .unwrap_err()
            .kind,
        ErrorKind::InvalidRequest
    );
    assert_eq!(classify(&[V], batch).unwrap_err().kind, ErrorKind::InvalidRequest);
}

#[test]
fn header_plan_trusts_only_complete_modern_headers() {
    let plan = |h: &[(&'static str, &str)], trust| CallPlan::from_headers(&headers(h), trust, Versions::all());
    assert!(matches!(
        plan(&[V, ("mcp-method", "tools/call"), ("mcp-name", "x")], true).unwrap(),
        CallPlan::HeadersOnly(_)
    ));
    assert!(matches!(
        plan(&[V, ("mcp-method", "tools/call"), ("mcp-name", "x")], false).unwrap(),
        CallPlan::ScanBody
    ));
    assert!(matches!(
        plan(&[("mcp-method", "tools/call")], true).unwrap(),
        CallPlan::ScanBody
    ));
    assert!(matches!(plan(&[V], true).unwrap(), CallPlan::ScanBody));
    assert_eq!(
        plan(&[V, ("mcp-method", "tools/call")], true).unwrap_err().kind,
        ErrorKind::HeaderMismatch
    );
    assert_eq!(
        plan(&[("mcp-protocol-version", "x")], true).unwrap_err().kind,
        ErrorKind::UnsupportedProtocolVersion
    );
}

#[test]
fn a_refused_initialize_names_the_version_it_offered() {
    let init = scan(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
    )
    .unwrap();
    let e = classify_post(&headers(&[]), &init, Versions::modern_only()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnsupportedProtocolVersion);
    assert_eq!(e.data.unwrap()["requested"], "2025-11-25");
    // The header, when present, is what the request carried.
    let h = headers(&[("mcp-protocol-version", "2025-06-18")]);
    let e = classify_post(&h, &init, Versions::modern_only()).unwrap_err();
    assert_eq!(e.data.unwrap()["requested"], "2025-06-18");
}

#[test]
fn a_request_method_without_an_id_is_not_a_notification() {
    for body in [
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"x"}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"p"}}]"#,
    ] {
        let e = classify_post(&headers(&[]), &scan(body.as_bytes()).unwrap(), Versions::all()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidRequest, "{body}");
    }
    let note = scan(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    assert!(classify_post(&headers(&[]), &note, Versions::all()).is_ok());
}
