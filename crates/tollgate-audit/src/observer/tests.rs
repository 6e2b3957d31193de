use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use serde_json::json;
use tollgate_core::{Answer, Era, ErrorKind, Payload, Principal, PrincipalKind};

use super::*;
use crate::{CaptureSettings, RouteAuditSettings};

/// What the route captures: (arguments, results).
type Captures = (bool, bool);
const NOTHING: Captures = (false, false);
const ARGUMENTS: Captures = (true, false);
const RESULTS: Captures = (false, true);
const BOTH: Captures = (true, true);

/// The `github` route: a static credential, 4 bytes per token, capture
/// as given.
fn route((arguments, results): Captures) -> RouteAudit {
    RouteAudit::new(&RouteAuditSettings {
        route: "github".into(),
        upstream: "https://mcp.github.example.com/mcp".into(),
        server_version: Some("1.4.2".into()),
        approved_by: Some("alice".into()),
        credential: CredentialKind::Static,
        capture: CaptureSettings {
            arguments,
            results,
            max_bytes: 4096,
            redact_keys: tollgate_config::DEFAULT_REDACT_KEYS.map(str::to_owned).to_vec(),
        },
        bytes_per_token: 4.0,
    })
}

fn observer(capture: Captures) -> AuditObserver {
    AuditObserver::new(AuditHandle::disabled(), route(capture))
}

fn principal() -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://sso.example.com".into(),
        subject: "alice".into(),
        client_id: Some("claude-desktop".into()),
        token_id: Some("jti-1".into()),
        audience: vec!["https://gw.example.com/mcp/github".into()],
        groups: vec![],
        team: Some("payments".into()),
        cost_center: None,
        scopes: vec![],
        expires_at: 2_000_000_000,
        kind: PrincipalKind::User,
    })
}

fn element(id: &str, method: &str, name: Option<&str>) -> CallElement {
    CallElement {
        jsonrpc_id: Some(id.into()),
        method: method.into(),
        family: McpMethod::from_name(method),
        name: name.map(Into::into),
        policy: None,
        definition: None,
        catalog: None,
        rpc_error: None,
    }
}

fn verdict(allowed: bool, enforced: bool, reason: &'static str) -> PolicyVerdict {
    PolicyVerdict {
        allowed,
        enforced,
        reason,
        policies: Arc::from([Arc::<str>::from("payments-may-file-issues")]),
    }
}

const RECEIVED: Duration = Duration::from_secs(1_800_000_000);

/// A complete, allowed and forwarded `tools/call`.
fn tools_call() -> CallSummary {
    let mut e = element("7", "tools/call", Some("create_issue"));
    e.policy = Some(verdict(true, true, "allow"));
    e.definition = Some(Arc::from("sha256:3b1f"));
    CallSummary {
        principal: Some(principal()),
        era: Some(Era::Modern),
        protocol_version: Some("2026-07-28"),
        elements: vec![e],
        trace_id: Some(Arc::from("4bf92f3577b34da6a3ce929d0e0e4736")),
        forwarded: true,
        bytes_in: 300,
        answer: Answer {
            status: 200,
            bytes_out: 4001,
            tokens: 1001,
            ttfb: Some(Duration::from_micros(850)),
            duration: Duration::from_micros(1200),
            ..Answer::default()
        },
        ..CallSummary::new(
            "req-1",
            "github",
            SystemTime::UNIX_EPOCH + RECEIVED,
            McpMethod::ToolsCall,
        )
    }
}

#[test]
fn a_single_call_is_one_complete_record() {
    let o = observer(NOTHING);
    let got = o.records(&tools_call());
    let mut want = CallRecord::new(SystemTime::UNIX_EPOCH + RECEIVED, "req-1", Arc::from("github"));
    want.upstream = Some(Arc::from("https://mcp.github.example.com/mcp"));
    want.server_version = Some(Arc::from("1.4.2"));
    want.approved_by = Some(Arc::from("alice"));
    want.jsonrpc_id = Some("7".into());
    want.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
    want.principal = Some(principal());
    want.era = Some(Era::Modern);
    want.protocol_version = Some("2026-07-28".into());
    want.method = Some("tools/call".into());
    want.name = Some("create_issue".into());
    want.definition_hash = Some(Arc::from("sha256:3b1f"));
    want.decision = Decision {
        outcome: Outcome::Allow,
        mode: PolicyMode::Enforce,
        policies: vec![Arc::from("payments-may-file-issues")],
        reason: Some("allow".into()),
    };
    want.credential = CredentialKind::Static;
    want.status = Some(200);
    want.bytes_in = 300;
    want.bytes_out = 4001;
    want.tokens = 1001;
    want.ttfb_us = Some(850);
    want.duration_us = 1200;
    assert_eq!(got, [want]);
}

#[test]
fn a_batch_shares_sizes_out_and_estimates_each_share() {
    let mut s = tools_call();
    s.family = McpMethod::ToolsCall;
    let mut failed = element("\"b\"", "tools/call", Some("delete_repo"));
    failed.rpc_error = Some(-32602);
    let mut list = element("9", "tools/list", None);
    list.definition = Some(Arc::from("sha256:not-for-lists"));
    s.elements.extend([failed, list]);
    (s.bytes_in, s.answer.bytes_out) = (10, 11);
    let recs = observer(NOTHING).records(&s);
    let got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r.batch_index,
                r.jsonrpc_id.as_deref(),
                r.bytes_in,
                r.bytes_out,
                r.tokens,
            )
        })
        .collect();
    // 10 = 4 + 3 + 3 and 11 = 5 + 3 + 3; tokens of each share at 4 bytes.
    assert_eq!(
        got,
        [
            (Some(0), Some("7"), 4, 5, 2),
            (Some(1), Some("\"b\""), 3, 3, 1),
            (Some(2), Some("9"), 3, 3, 1)
        ]
    );
    assert_eq!(recs[1].rpc_error, Some(-32602));
    assert_eq!(recs[0].rpc_error, None);
    assert_eq!(recs[1].decision, Decision::default(), "no verdict: not evaluated");
    assert!(recs[2].catalog && !recs[0].catalog);
    assert_eq!(recs[2].definition_hash, None, "only a tools/call has a definition");
    assert!(recs.iter().all(|r| r.request_id == "req-1" && r.status == Some(200)));
}

#[test]
fn denials_are_recorded_with_mode_policies_and_reason() {
    let o = observer(NOTHING);
    let mut s = tools_call();
    s.elements[0].policy = Some(verdict(false, true, "deny_missing_scope"));
    s.forwarded = false;
    s.answer = Answer {
        status: 403,
        error: Some(ErrorKind::PolicyDenied),
        bytes_out: 120,
        duration: Duration::from_micros(90),
        ..Answer::default()
    };
    s.elements[0].rpc_error = Some(-32602);
    let rec = &o.records(&s)[0];
    assert_eq!(
        rec.decision,
        Decision {
            outcome: Outcome::Deny,
            mode: PolicyMode::Enforce,
            policies: vec![Arc::from("payments-may-file-issues")],
            reason: Some("deny_missing_scope".into()),
        }
    );
    assert_eq!(rec.credential, CredentialKind::None, "not forwarded");
    assert_eq!((rec.status, rec.rpc_error), (Some(403), Some(-32602)));
    assert_eq!(rec.error.as_deref(), Some("policy_denied"));
    assert_eq!((rec.ttfb_us, rec.duration_us, rec.tokens), (None, 90, 30));

    s.elements[0].policy = Some(verdict(false, false, "deny"));
    s.forwarded = true;
    let rec = &o.records(&s)[0];
    assert_eq!(
        (rec.decision.outcome, rec.decision.mode),
        (Outcome::ObserveDeny, PolicyMode::Observe)
    );
    assert_eq!(rec.credential, CredentialKind::Static);
}

#[test]
fn a_forwarding_summary_has_no_answer_yet() {
    let o = observer(ARGUMENTS);
    let mut s = tools_call();
    s.stage = Stage::Forwarding;
    s.forwarded = false;
    s.answer = Answer::default();
    s.payload = Some(Payload {
        request: Some(Bytes::from_static(br#"{"params":{"arguments":{"a":1}}}"#)),
        ..Payload::default()
    });
    let rec = &o.records(&s)[0];
    assert_eq!(rec.phase, Phase::Forwarding);
    assert_eq!(rec.credential, CredentialKind::Static, "about to be forwarded");
    assert_eq!(rec.bytes_in, 300);
    assert_eq!(
        (rec.status, rec.bytes_out, rec.tokens, rec.ttfb_us, rec.duration_us),
        (None, 0, 0, None, 0)
    );
    assert!(rec.capture.is_none() && rec.error.is_none());
    assert_eq!(rec.decision.outcome, Outcome::Allow);
}

#[test]
fn a_request_without_messages_is_one_bare_record() {
    let mut s = tools_call();
    s.elements.clear();
    s.family = McpMethod::Other;
    s.principal = None;
    s.forwarded = false;
    s.answer = Answer {
        status: 401,
        error: Some(ErrorKind::Unauthenticated),
        rpc_error: Some(-32000),
        bytes_out: 100,
        ..Answer::default()
    };
    let recs = observer(NOTHING).records(&s);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(
        (r.batch_index, r.method.as_deref(), r.name.as_deref()),
        (None, None, None)
    );
    assert_eq!(
        (r.decision.clone(), r.credential),
        (Decision::default(), CredentialKind::None)
    );
    assert_eq!((r.status, r.bytes_in, r.bytes_out), (Some(401), 300, 100));
    assert_eq!(r.error.as_deref(), Some("unauthenticated"));
    assert_eq!(r.rpc_error, Some(-32000), "the code the gateway answered");
}

#[test]
fn a_session_stream_is_recorded_under_its_http_method() {
    let mut s = tools_call();
    s.family = McpMethod::StreamGet;
    s.elements = vec![CallElement {
        jsonrpc_id: None,
        family: McpMethod::StreamGet,
        ..element("", "GET", None)
    }];
    let r = &observer(NOTHING).records(&s)[0];
    assert_eq!((r.method.as_deref(), r.jsonrpc_id.as_deref()), (Some("GET"), None));
}

fn captured(payload: Option<Payload>, capture: Captures) -> Option<Box<Capture>> {
    let mut s = tools_call();
    s.payload = payload;
    observer(capture).records(&s).remove(0).capture
}

#[test]
fn captures_take_arguments_and_results_from_the_payload() {
    let request = Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"bug","token":"t"}}}"#,
    );
    let response = Bytes::from_static(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#);
    let payload = |complete: bool| Payload {
        request: Some(request.clone()),
        response: Some(response.clone()),
        response_complete: complete,
    };
    let c = captured(Some(payload(true)), BOTH).unwrap();
    assert_eq!(c.arguments, Some(json!({"title": "bug", "token": "[redacted]"})));
    assert_eq!(c.result, Some(json!({"content": []})));
    assert!(!c.truncated);
    // Only the start of the answer was kept: not captured.
    let c = captured(Some(payload(false)), BOTH).unwrap();
    assert_eq!(
        c.result,
        Some(json!(format!("[not captured: {} bytes]", response.len())))
    );
    assert!(c.truncated);
    // Results only; a gateway answer left no response.
    let c = captured(Some(payload(true)), RESULTS).unwrap();
    assert_eq!((c.arguments, c.result.is_some()), (None, true));
    let no_response = Payload {
        response: None,
        ..payload(true)
    };
    assert_eq!(captured(Some(no_response), BOTH).unwrap().result, None);
    // Not captured: the route did not opt in, or the body was not kept.
    assert!(captured(Some(payload(true)), NOTHING).is_none());
    assert!(captured(None, BOTH).is_none());
    let unread = Payload {
        request: None,
        ..payload(true)
    };
    assert!(captured(Some(unread), BOTH).is_none());
}

#[test]
fn batches_and_lists_are_not_captured() {
    let o = observer(ARGUMENTS);
    let mut s = tools_call();
    s.payload = Some(Payload {
        request: Some(Bytes::from_static(br#"[{"params":{"arguments":{}}}]"#)),
        ..Payload::default()
    });
    s.elements.push(element("8", "tools/call", Some("x")));
    assert!(o.records(&s).iter().all(|r| r.capture.is_none()));
    s.elements = vec![element("9", "tools/list", None)];
    assert!(o.records(&s)[0].capture.is_none());
    for method in ["prompts/get", "resources/read", "tools/call"] {
        s.elements = vec![element("9", method, Some("x"))];
        assert!(o.records(&s)[0].capture.is_some(), "{method}");
    }
}

#[test]
fn a_governed_call_names_its_approved_revision_approver_and_verdict() {
    let mut s = tools_call();
    let approved_at = std::time::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
    s.elements[0].definition = Some(Arc::from("sha256:ab"));
    s.elements[0].catalog = Some(tollgate_core::CatalogVerdict {
        outcome: "blocked",
        enforced: true,
        approved_by: Some(Arc::from("alice@example.com")),
        approved_at: Some(approved_at),
    });
    let rec = &observer(NOTHING).records(&s)[0];
    assert_eq!(rec.definition_hash.as_deref(), Some("sha256:ab"));
    assert_eq!(rec.definition_approved_by.as_deref(), Some("alice@example.com"));
    assert_eq!(rec.definition_approved_at, Some(approved_at));
    let gate = rec.gate.as_ref().unwrap();
    assert_eq!((gate.outcome.as_ref(), gate.mode), ("blocked", PolicyMode::Enforce));
    let line = serde_json::to_string(rec).unwrap();
    assert!(
        line.contains(r#""gate":{"outcome":"blocked","mode":"enforce"}"#),
        "{line}"
    );
    assert!(line.contains(r#""definition_approved_at":"2026-"#), "{line}");
    let back: CallRecord = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (&back.gate, &back.definition_approved_by, back.definition_approved_at),
        (&rec.gate, &rec.definition_approved_by, rec.definition_approved_at)
    );
}

#[test]
fn task_ids_are_recorded_as_fingerprints() {
    assert_eq!(recorded_name("tools/call", "echo"), "echo");
    let f = recorded_name("tasks/get", "t-secret-1");
    assert!(f.starts_with("task:") && f.len() == 21 && !f.contains("secret"), "{f}");
    assert_eq!(f, task_fingerprint("t-secret-1"));
    assert_ne!(f, task_fingerprint("t-secret-2"));
}
