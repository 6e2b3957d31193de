//! Real MCP clients through the real gateway to real MCP servers: the
//! answers through Tollgate must equal the answers direct.
//!
//! - TypeScript SDK client (legacy era, sessions, SSE progress) against
//!   `@modelcontextprotocol/server-everything`;
//! - Python SDK client in auto mode (2026-07-28 era, standard headers, the
//!   base64 sentinel for non-ASCII names) against the Python SDK server, with
//!   the route in `verify` and in `upstream` header trust.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use tollgate_e2e::TestGateway;
use tollgate_e2e::children::{everything_server, python_client, python_modern_server, ts_client};

fn route(name: &str, url: &str, trust: &str) -> String {
    format!("[[servers]]\nname = \"{name}\"\nurl = \"{url}\"\nheader_trust = \"{trust}\"\n")
}

#[tokio::test]
async fn typescript_sdk_through_tollgate_equals_direct() {
    let upstream = everything_server().await;
    let gw = TestGateway::spawn(&route("everything", &upstream.url, "verify")).await;
    let direct = ts_client(&upstream.url, "full", &[], &[]).await;
    let via = ts_client(&gw.url("everything"), "full", &[], &[]).await;
    assert_eq!(direct, via, "answers through Tollgate differ from direct");
    // The scenario really exercised progress over SSE and an image result.
    let text = via.to_string();
    assert!(text.contains("image/png"), "{text}");
    assert!(text.contains("progress"), "{text}");
}

#[tokio::test]
async fn python_modern_client_through_tollgate_in_both_trust_modes() {
    let upstream = python_modern_server().await;
    let gw = TestGateway::spawn(&format!(
        "{}{}",
        route("verify", &upstream.url, "verify"),
        route("trusted", &upstream.url, "upstream")
    ))
    .await;
    let mut direct = python_client(&upstream.url, &[], &[]).await;
    assert_eq!(direct["protocolVersion"], "2026-07-28", "{direct}");
    for name in ["verify", "trusted"] {
        let mut via = python_client(&gw.url(name), &["Authorization: Bearer never-forwarded"], &[]).await;
        let whoami = via["whoami"].take();
        direct["whoami"] = serde_json::Value::Null;
        via["whoami"] = serde_json::Value::Null;
        assert_eq!(direct, via, "route {name}: answers differ from direct");
        let seen = whoami.to_string();
        assert!(
            seen.contains("2026-07-28"),
            "route {name}: upstream saw no modern version header: {seen}"
        );
        assert!(
            seen.contains("whoami"),
            "route {name}: upstream saw no Mcp-Name: {seen}"
        );
        assert!(
            !seen.contains("never-forwarded"),
            "route {name}: client token reached the upstream: {seen}"
        );
    }
}

#[tokio::test]
async fn typescript_sdk_with_a_bearer_token_through_an_authenticated_route() {
    let upstream = everything_server().await;
    let issuer = tollgate_e2e::TestIssuer::new();
    let gw = TestGateway::spawn(&format!(
        "{}{}auth = {{ scopes = [\"mcp:tools\"] }}\n",
        issuer.config(),
        route("everything", &upstream.url, "verify")
    ))
    .await;
    let token = issuer.token("alice", &["mcp:tools"], &["everything"]);
    let header = format!("Authorization: Bearer {token}");
    let direct = ts_client(&upstream.url, "minimal", &[], &[]).await;
    let via = ts_client(&gw.url("everything"), "minimal", &[&header], &[]).await;
    assert_eq!(direct, via);
}
