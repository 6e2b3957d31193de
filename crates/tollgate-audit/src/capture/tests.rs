use serde_json::json;
use tollgate_config::DEFAULT_REDACT_KEYS;

use super::*;

/// Capture of arguments and results up to `max` bytes, redacting the
/// default keys and `extra` ones.
fn policy(max: usize, extra: &[&str]) -> CapturePolicy {
    CapturePolicy::new(&CaptureSettings {
        arguments: true,
        results: true,
        max_bytes: max,
        redact_keys: DEFAULT_REDACT_KEYS
            .iter()
            .chain(extra)
            .map(|k| (*k).to_owned())
            .collect(),
    })
}

#[test]
fn arguments_are_redacted_at_any_depth() {
    let p = policy(4096, &["ssn"]);
    let req = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":
        {"amount":5,"X-Api-Key":"k","nested":[{"client_secret":"s","SSN":"1"}],"github_token":"t","note":"ok"}}}"#;
    let (v, cut) = p.arguments(req).unwrap();
    assert!(!cut);
    assert_eq!(
        v,
        json!({"amount":5,"X-Api-Key":REDACTED,"nested":[{"client_secret":REDACTED,"SSN":REDACTED}],
               "github_token":REDACTED,"note":"ok"})
    );
}

#[test]
fn large_values_are_cut_after_redaction() {
    let p = policy(20, &[]);
    let req =
        br#"{"method":"tools/call","params":{"arguments":{"password":"hunter2hunter2hunter2","a":"bbbbbbbbbbbb"}}}"#;
    let (v, cut) = p.arguments(req).unwrap();
    assert!(cut);
    let text = v.as_str().unwrap();
    assert_eq!(text.len(), 20);
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn unparseable_or_partial_messages_are_never_stored_as_text() {
    let p = policy(4096, &[]);
    let (v, cut) = p.arguments(b"{\"params\":{\"password\":\"x\"").unwrap();
    assert!(cut);
    assert_eq!(v, json!("[not captured: 25 bytes]"));
    let (v, _) = p.result(b"{\"result\":{}}", false).unwrap();
    assert_eq!(v, json!("[not captured: 13 bytes]"));
}

#[test]
fn results_come_from_json_or_the_last_sse_response() {
    let p = policy(4096, &[]);
    let (v, _) = p
        .result(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"token":"t"}}"#,
            true,
        )
        .unwrap();
    assert_eq!(v["token"], REDACTED);
    let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}\n\n";
    let (v, _) = p.result(sse, true).unwrap();
    assert_eq!(v["message"], "no");
}

#[test]
fn nothing_is_captured_unless_the_route_opts_in() {
    let p = CapturePolicy::new(&CaptureSettings {
        arguments: false,
        results: false,
        max_bytes: 4096,
        redact_keys: DEFAULT_REDACT_KEYS.map(str::to_owned).to_vec(),
    });
    assert!(!p.captures_arguments() && !p.captures_results());
    assert_eq!(p.arguments(b"{\"params\":{}}"), None);
    assert_eq!(p.result(b"{\"result\":{}}", true), None);
    assert_eq!(p.tee_limit(), 64 * 1024);
}
