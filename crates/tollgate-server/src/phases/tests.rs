//! Each phase of the request path through the whole public service
//! (`oneshot`): what it refuses, with which status, code and id, and that
//! every answer — refused or forwarded — is summarised exactly once.

use axum::body::Body;
use http::Request;
use serde_json::json;
use tollgate_core::{ErrorKind, McpMethod, Stage};

use crate::test_support::{Stub, TestGateway, legacy, modern, modern_body};

fn open_route(stub: &Stub, extra: &str) -> TestGateway {
    TestGateway::new(&format!("[[servers]]\nname = \"s\"\nurl = \"{}\"\n{extra}", stub.url))
}

#[tokio::test]
async fn admit_refuses_oversized_headers_and_foreign_origins() {
    let stub = Stub::spawn().await;
    let gw = TestGateway::new(&format!(
        "[limits]\nmax_header_bytes = 1024\n[[servers]]\nname = \"s\"\nurl = \"{}\"\n",
        stub.url
    ));
    let mut big = modern("/mcp/s", "ping", None, modern_body(1, "ping", json!({})));
    big.headers_mut().insert("x-big", "a".repeat(1100).parse().unwrap());
    let (status, _, body) = gw.send(big).await;
    assert_eq!((status.as_u16(), &body["error"]["code"]), (431, &json!(-32000)));
    let mut foreign = modern("/mcp/s", "ping", None, modern_body(1, "ping", json!({})));
    foreign
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    assert_eq!(gw.send(foreign).await.0.as_u16(), 403);
    gw.gateway.bound("127.0.0.1:8080".parse().unwrap());
    let mut own = modern("/mcp/s", "ping", None, modern_body(1, "ping", json!({})));
    own.headers_mut()
        .insert("origin", "http://localhost:8080".parse().unwrap());
    assert_eq!(gw.send(own).await.0.as_u16(), 200, "the gateway's own origin");
    assert!(
        stub.seen.lock().unwrap().len() == 1,
        "only the admitted call went upstream"
    );
}

#[tokio::test]
async fn route_an_unknown_path_is_404_and_not_summarised() {
    let stub = Stub::spawn().await;
    let gw = open_route(&stub, "");
    let (status, _, body) = gw
        .send(legacy(
            "/mcp/nope",
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        ))
        .await;
    assert_eq!((status.as_u16(), &body["error"]["code"]), (404, &json!(-32000)));
    assert!(gw.recorder.summaries().is_empty(), "no route, no call");
}

#[tokio::test]
async fn identify_refuses_bad_method_media_type_headers_versions_and_nesting() {
    let stub = Stub::spawn().await;
    let gw = open_route(&stub, "");
    let put = Request::put("/mcp/s").body(Body::empty()).unwrap();
    let (status, headers, _) = gw.send(put).await;
    assert_eq!(
        (status.as_u16(), &headers["allow"]),
        (405, &"POST".parse::<http::HeaderValue>().unwrap())
    );
    let mut text = modern("/mcp/s", "ping", None, modern_body(2, "ping", json!({})));
    text.headers_mut().insert("content-type", "text/plain".parse().unwrap());
    assert_eq!(gw.send(text).await.0.as_u16(), 415);
    let lie = modern(
        "/mcp/s",
        "tools/call",
        Some("other"),
        modern_body(7, "tools/call", json!({"name": "echo"})),
    );
    let (status, _, body) = gw.send(lie).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"], &body["id"]),
        (400, &json!(-32020), &json!(7))
    );
    let mut old = modern("/mcp/s", "ping", None, modern_body(3, "ping", json!({})));
    old.headers_mut()
        .insert("mcp-protocol-version", "2099-01-01".parse().unwrap());
    let (status, _, body) = gw.send(old).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"], &body["id"]),
        (400, &json!(-32022), &json!(3))
    );
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"echo","arguments":{{"x":{}{}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let req = modern("/mcp/s", "tools/call", Some("echo"), json!(null));
    let (parts, _) = req.into_parts();
    let (status, _, body) = gw.send(Request::from_parts(parts, Body::from(deep))).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32700)),
        "{body}"
    );
    assert!(stub.seen.lock().unwrap().is_empty(), "nothing refused was forwarded");
    let kinds: Vec<_> = gw.recorder.summaries().iter().map(|s| s.answer.error).collect();
    assert_eq!(kinds.len(), 5, "one summary per refusal");
    assert!(kinds.iter().all(Option::is_some));
}

#[tokio::test]
async fn a_body_declared_too_large_is_refused_by_the_layer() {
    let stub = Stub::spawn().await;
    let gw = TestGateway::new(&format!(
        "[limits]\nmax_body_bytes = 64\n[[servers]]\nname = \"s\"\nurl = \"{}\"\n",
        stub.url
    ));
    let big = modern(
        "/mcp/s",
        "tools/call",
        Some("echo"),
        modern_body(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"t": "x".repeat(100)}}),
        ),
    );
    let (status, _, body) = gw.send(big).await;
    assert_eq!((status.as_u16(), &body["error"]["code"]), (413, &json!(-32000)));
}

#[tokio::test]
async fn forward_and_respond_summarise_a_call_once_with_its_facts() {
    let stub = Stub::spawn().await;
    let gw = open_route(&stub, "");
    let req = modern(
        "/mcp/s",
        "tools/call",
        Some("echo"),
        modern_body(5, "tools/call", json!({"name": "echo"})),
    );
    let (status, headers, body) = gw.send(req).await;
    assert_eq!(
        (status.as_u16(), &body["result"]["method"]),
        (200, &json!("tools/call"))
    );
    assert!(headers.contains_key("x-request-id"));
    let summaries = gw.recorder.summaries();
    assert_eq!(summaries.len(), 1);
    let s = &summaries[0];
    assert_eq!(
        (s.stage, s.family, s.forwarded),
        (Stage::Complete, McpMethod::ToolsCall, true)
    );
    assert_eq!(&*s.request_id, headers["x-request-id"].to_str().unwrap());
    assert_eq!(s.elements[0].jsonrpc_id.as_deref(), Some("5"));
    assert_eq!(s.elements[0].name.as_deref(), Some("echo"));
    assert!(s.answer.ttfb.is_some() && s.answer.bytes_out > 0 && s.answer.error.is_none());
}

#[tokio::test]
async fn forward_reports_an_unreachable_upstream_as_502_with_the_id() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let gw = TestGateway::new(&format!("[[servers]]\nname = \"s\"\nurl = \"{url}\"\n"));
    let req = modern(
        "/mcp/s",
        "tools/call",
        Some("echo"),
        modern_body(6, "tools/call", json!({"name": "echo"})),
    );
    let (status, _, body) = gw.send(req).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"], &body["id"]),
        (502, &json!(-32001), &json!(6))
    );
    let s = &gw.recorder.summaries()[0];
    assert_eq!(
        (s.answer.error, s.elements[0].rpc_error),
        (Some(ErrorKind::UpstreamUnavailable), Some(-32001))
    );
}

#[tokio::test]
async fn credential_seals_the_upstream_session_and_refuses_a_forged_one() {
    let stub = Stub::spawn().await;
    let gw = open_route(&stub, "");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, headers, _) = gw.send(legacy("/mcp/s", init)).await;
    assert_eq!(status.as_u16(), 200);
    let sealed = headers["mcp-session-id"].to_str().unwrap().to_owned();
    assert!(sealed.starts_with("tg1.") && !sealed.contains("upstream-session-1"));
    let mut forged = legacy("/mcp/s", json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    forged
        .headers_mut()
        .insert("mcp-session-id", "tg1.forged".parse().unwrap());
    let (status, _, body) = gw.send(forged).await;
    assert_eq!((status.as_u16(), &body["id"]), (404, &json!(2)));
    let mut ok = legacy("/mcp/s", json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    ok.headers_mut().insert("mcp-session-id", sealed.parse().unwrap());
    assert_eq!(gw.send(ok).await.0.as_u16(), 200);
}

#[tokio::test]
async fn a_version_error_names_what_the_upstream_announced() {
    let stub = Stub::spawn().await;
    let gw = open_route(&stub, "");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(gw.send(legacy("/mcp/s", init)).await.0.as_u16(), 200);
    let mut req = modern("/mcp/s", "ping", None, modern_body(4, "ping", json!({})));
    req.headers_mut()
        .insert("mcp-protocol-version", "2030-01-01".parse().unwrap());
    let (_, _, body) = gw.send(req).await;
    assert_eq!(body["error"]["data"]["supported"], json!(["2025-06-18"]), "{body}");
}

#[tokio::test]
async fn authenticate_refuses_a_call_without_a_token_with_a_challenge() {
    let stub = Stub::spawn().await;
    let policies = policy_dir();
    let gw = with_policies_in(&stub, policies.path());
    let req = modern(
        "/mcp/s",
        "tools/call",
        Some("echo"),
        modern_body(1, "tools/call", json!({"name": "echo"})),
    );
    let (status, headers, body) = gw.send(req).await;
    assert_eq!((status.as_u16(), &body["error"]["code"]), (401, &json!(-32000)));
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("resource_metadata=")
    );
    let s = &gw.recorder.summaries()[0];
    assert!(
        s.elements.is_empty() && s.principal.is_none(),
        "refused before the body was read"
    );
    assert_eq!(s.answer.rpc_error, Some(-32000));
}

#[tokio::test]
async fn authorize_answers_a_denial_like_an_unknown_tool_and_a_missing_scope_with_403_and_the_id() {
    let stub = Stub::spawn().await;
    let policies = policy_dir();
    let gw = with_policies_in(&stub, policies.path());
    let token = dev_token(&gw, "alice", &["mcp:tools"]);
    let mut denied = modern(
        "/mcp/s",
        "tools/call",
        Some("secret"),
        modern_body(3, "tools/call", json!({"name": "secret"})),
    );
    denied
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (status, _, body) = gw.send(denied).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"], &body["id"]),
        (200, &json!(-32602), &json!(3))
    );
    assert_eq!(body["error"]["message"], "Unknown tool: secret");
    let mut scoped = modern(
        "/mcp/s",
        "tools/call",
        Some("admin_op"),
        modern_body(4, "tools/call", json!({"name": "admin_op"})),
    );
    scoped
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (status, headers, body) = gw.send(scoped).await;
    assert_eq!(
        (status.as_u16(), &body["id"]),
        (403, &json!(4)),
        "the id of the request is echoed"
    );
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("insufficient_scope")
    );
    assert!(stub.seen.lock().unwrap().is_empty());
    let verdicts: Vec<_> = gw
        .recorder
        .summaries()
        .iter()
        .map(|s| s.elements[0].policy.clone())
        .collect();
    assert!(verdicts.iter().all(|v| v.as_ref().is_some_and(|v| !v.allowed)));
}

/// The schema and a policy set for [`with_policies_in`].
fn policy_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let schema = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/schema.cedarschema");
    std::fs::copy(schema, dir.path().join("schema.cedarschema")).unwrap();
    let policies = r#"
@id("plumbing") permit (principal, action == Tollgate::Action::"other_method", resource == Tollgate::Server::"s");
@id("lists") permit (principal, action in Tollgate::Action::"discover", resource == Tollgate::Server::"s");
@id("tools") permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"s")
when { resource.name != "secret" };
@id("admin") @scope("mcp:admin")
forbid (principal, action == Tollgate::Action::"call_tool", resource == Tollgate::Tool::"s/admin_op")
unless { context.scopes.contains("mcp:admin") };
"#;
    std::fs::write(dir.path().join("test.cedar"), policies).unwrap();
    dir
}

fn with_policies_in(stub: &Stub, policies: &std::path::Path) -> TestGateway {
    TestGateway::new(&format!(
        "[auth]\npublic_base_url = \"https://gw.test\"\n[dev_issuer]\nenabled = true\nkey_file = \"dev.pem\"\n\
         [policy]\ndir = \"{}\"\n[[servers]]\nname = \"s\"\nurl = \"{}\"\n",
        policies.display(),
        stub.url
    ))
}

/// A development token for `sub` valid on route `s`.
fn dev_token(gw: &TestGateway, sub: &str, scopes: &[&str]) -> String {
    let pem = std::fs::read(gw.dir.path().join("dev.pem")).unwrap();
    let dev = tollgate_auth::DevIssuer::from_pem("http://127.0.0.1:9090/dev-issuer", &pem).unwrap();
    let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
    let ttl = std::time::Duration::from_secs(600);
    dev.mint(
        sub,
        Some("payments"),
        &scopes,
        ttl,
        &["https://gw.test/mcp/s".to_owned()],
    )
    .unwrap()
}

#[tokio::test]
async fn respond_filters_lists_per_caller() {
    let stub = Stub::spawn().await;
    let policies = policy_dir();
    let gw = with_policies_in(&stub, policies.path());
    let token = dev_token(&gw, "alice", &["mcp:tools"]);
    let mut list = modern("/mcp/s", "tools/list", None, modern_body(8, "tools/list", json!({})));
    list.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (status, _, body) = gw.send(list).await;
    assert_eq!(status.as_u16(), 200);
    let names: Vec<_> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("echo")]);
    assert_eq!(body["result"]["cacheScope"], "private");
    let hidden = gw.recorder.summaries()[0].hidden.unwrap();
    assert_eq!((hidden.entries, hidden.enforced), (1, true));
}
