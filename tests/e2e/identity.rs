//! Authentication through the real gateway: every refusal with its exact
//! status, challenge and JSON-RPC body; RFC 9728 metadata; sessions bound to
//! the principal; and upstreams that receive a brokered credential, never
//! the caller's token.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::json;
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{TEST_BASE_URL, TestGateway, TestIssuer, assert_rpc_error, http, modern_body};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn post(url: String, token: Option<&str>) -> reqwest::RequestBuilder {
    let req = http().post(url).header("content-type", "application/json");
    match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

fn challenge(res: &reqwest::Response) -> String {
    res.headers()["www-authenticate"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn every_refusal_has_its_status_challenge_and_json_rpc_body() {
    let stub = Stub::spawn().await;
    let issuer = TestIssuer::new();
    let gw = TestGateway::spawn(&format!(
        "{}\n[[servers]]\nname = \"a\"\nurl = \"{base}/json\"\nauth = {{ scopes = [\"mcp:tools\"] }}\n\n[[servers]]\nname = \"b\"\nurl = \"{base}/json\"\n",
        issuer.config(),
        base = stub.base
    ))
    .await;
    let metadata = format!("resource_metadata=\"{TEST_BASE_URL}/.well-known/oauth-protected-resource/mcp/a\"");

    let res = post(gw.url("a"), None).body(INIT).send().await.unwrap();
    assert_eq!(challenge(&res), format!("Bearer {metadata}, scope=\"mcp:tools\""));
    assert_rpc_error(res, 401, -32000, json!(null)).await;

    for bad in ["not-a-jwt", "a.b.c", &issuer.token("alice", &["mcp:tools"], &["b"])] {
        let res = post(gw.url("a"), Some(bad)).body(INIT).send().await.unwrap();
        let c = challenge(&res);
        assert!(c.starts_with("Bearer error=\"invalid_token\""), "{c}");
        assert!(c.contains(&metadata), "{c}");
        assert_rpc_error(res, 401, -32000, json!(null)).await;
    }

    let res = post(gw.url("a"), Some(&issuer.token("alice", &["mcp:read"], &["a"])))
        .body(INIT)
        .send()
        .await
        .unwrap();
    let c = challenge(&res);
    assert!(c.starts_with("Bearer error=\"insufficient_scope\""), "{c}");
    assert!(c.ends_with("scope=\"mcp:tools\""), "{c}");
    assert_rpc_error(res, 403, -32000, json!(null)).await;

    let good = issuer.token("alice", &["mcp:tools"], &["a"]);
    let res = post(format!("{}?access_token={good}", gw.url("a")), Some(&good))
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 400, -32600, json!(null)).await;

    let res = post(gw.url("a"), Some(&good)).body(INIT).send().await.unwrap();
    assert_eq!(res.status(), 200);
    // Refused calls never reached the upstream.
    assert_eq!(stub.seen().await.len(), 1);

    let prm: serde_json::Value = http()
        .get(format!("{}/.well-known/oauth-protected-resource/mcp/a", gw.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["resource"], format!("{TEST_BASE_URL}/mcp/a"));
    assert_eq!(prm["authorization_servers"], json!([tollgate_e2e::TEST_ISSUER]));
    assert_eq!(prm["scopes_supported"], json!(["mcp:tools"]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
}

#[tokio::test]
async fn sessions_are_bound_to_the_principal() {
    let stub = Stub::spawn().await;
    let issuer = TestIssuer::new();
    let gw = TestGateway::spawn(&format!(
        "{}\n[[servers]]\nname = \"a\"\nurl = \"{}/json\"\n",
        issuer.config(),
        stub.base
    ))
    .await;
    let (alice, bob) = (issuer.token("alice", &[], &["a"]), issuer.token("bob", &[], &["a"]));
    let res = post(gw.url("a"), Some(&alice)).body(INIT).send().await.unwrap();
    let sealed = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let res = post(gw.url("a"), Some(&alice))
        .header("mcp-session-id", &sealed)
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = post(gw.url("a"), Some(&bob))
        .header("mcp-session-id", &sealed)
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 404, -32000, json!(2)).await;
}

#[tokio::test]
async fn upstreams_get_brokered_credentials_never_the_callers_token() {
    let stub = Stub::spawn().await;
    let issuer = TestIssuer::new();
    let secret = issuer.secret_file("client-secret", "s3cret\n");
    let static_value = issuer.secret_file("static", "upstream-static-key\n");
    let oauth = format!(
        "token_endpoint = \"{base}/token\"\nclient_id = \"tollgate\"\nclient_secret = {{ file = \"{secret}\" }}\n",
        base = stub.base
    );
    let gw = TestGateway::spawn(&format!(
        "{cfg}\n[[servers]]\nname = \"static\"\nurl = \"{base}/json\"\n[servers.credential]\nkind = \"static\"\nscheme = \"Bearer\"\nvalue = {{ file = \"{static_value}\" }}\n\n\
         [[servers]]\nname = \"cc\"\nurl = \"{base}/json\"\n[servers.credential]\nkind = \"client_credentials\"\n{oauth}\n\
         [[servers]]\nname = \"tx\"\nurl = \"{base}/json\"\n[servers.credential]\nkind = \"token_exchange\"\n{oauth}",
        cfg = issuer.config(),
        base = stub.base
    ))
    .await;
    let caller = issuer.token("alice", &[], &["static", "cc", "tx"]);
    for route in ["static", "cc", "tx"] {
        let body = modern_body(1, "tools/list", json!({}));
        let res = post(gw.url(route), Some(&caller))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "route {route}");
    }
    let seen = stub.seen().await;
    let upstream_auth: Vec<String> = seen
        .iter()
        .filter(|s| s.headers.get("mcp-method").is_some())
        .map(|s| s.headers["authorization"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(upstream_auth.len(), 3);
    assert_eq!(upstream_auth[0], "Bearer upstream-static-key");
    assert!(upstream_auth[1].starts_with("Bearer brokered-"), "{upstream_auth:?}");
    assert!(upstream_auth[2].starts_with("Bearer brokered-"), "{upstream_auth:?}");
    for s in &seen {
        let all = format!("{:?} {}", s.headers, String::from_utf8_lossy(&s.body));
        let is_exchange = all.contains("token-exchange");
        // Only the token exchange request carries the caller's token, as its
        // subject_token, to the token endpoint.
        assert_eq!(
            all.contains(&caller),
            is_exchange,
            "caller token seen where it must not be: {all}"
        );
    }
    let forms: Vec<String> = seen
        .iter()
        .map(|s| String::from_utf8_lossy(&s.body).into_owned())
        .collect();
    assert!(
        forms.iter().any(|f| f.contains("grant_type=client_credentials")),
        "{forms:?}"
    );
    assert!(forms.iter().any(|f| f.contains("subject_token=")), "{forms:?}");
}
