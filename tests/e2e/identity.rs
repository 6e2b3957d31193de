//! Authentication through the real gateway: every refusal with its exact
//! status, challenge and JSON-RPC body; RFC 9728 metadata; sessions bound to
//! the principal; and upstreams that receive a brokered credential, never
//! the caller's token.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::json;
use tollgate_e2e::audit_support::metric;
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

fn b64(v: &serde_json::Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

/// Swap the payload of a signed token (the signature no longer matches).
fn tampered(token: &str, claims: &serde_json::Value) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    format!("{}.{}.{}", parts[0], b64(claims), parts[2])
}

#[tokio::test]
async fn hostile_tokens_over_http_get_401_with_invalid_token() {
    let stub = Stub::spawn().await;
    let issuer = TestIssuer::new();
    let stranger = TestIssuer::new();
    let gw = TestGateway::spawn(&format!(
        "{}\n[[servers]]\nname = \"a\"\nurl = \"{}/json\"\n",
        issuer.config(),
        stub.base
    ))
    .await;
    let now = issuer.claims("alice", "", &["a"])["iat"].as_u64().unwrap();
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut c = issuer.claims("alice", "", &["a"]);
        f(&mut c);
        c
    };
    let good = issuer.sign(&issuer.claims("alice", "", &["a"]));
    let cases: Vec<(&str, String)> = vec![
        ("expired", issuer.sign(&with(&|c| c["exp"] = json!(now - 3600)))),
        ("not yet valid", issuer.sign(&with(&|c| c["nbf"] = json!(now + 3600)))),
        (
            "wrong issuer",
            issuer.sign(&with(&|c| c["iss"] = json!("https://evil.example"))),
        ),
        (
            "token for another route",
            issuer.sign(&with(&|c| c["aud"] = json!([format!("{TEST_BASE_URL}/mcp/b")]))),
        ),
        (
            "token for another service",
            issuer.sign(&with(&|c| c["aud"] = json!("https://api.example.com"))),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": "at+jwt"})),
                b64(&issuer.claims("alice", "", &["a"]))
            ),
        ),
        ("HS256", {
            let header = json!({"alg": "HS256", "typ": "at+jwt"});
            format!("{}.{}.AAAA", b64(&header), b64(&issuer.claims("alice", "", &["a"])))
        }),
        (
            "tampered payload",
            tampered(&good, &with(&|c| c["sub"] = json!("admin"))),
        ),
        ("unknown key", stranger.sign(&issuer.claims("alice", "", &["a"]))),
        ("malformed", "eyJhbGciOi.not-base64!.x".to_owned()),
    ];
    for (name, token) in cases {
        let res = post(gw.url("a"), Some(&token)).body(INIT).send().await.unwrap();
        assert_eq!(res.status(), 401, "{name}");
        let c = challenge(&res);
        assert!(c.starts_with("Bearer error=\"invalid_token\""), "{name}: {c}");
        assert_rpc_error(res, 401, -32000, json!(null)).await;
    }
    let res = post(gw.url("a"), Some(&good)).body(INIT).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(stub.seen().await.len(), 1, "a refused token reached the upstream");
}

#[tokio::test]
async fn an_unreachable_issuer_means_not_ready_and_503_not_a_crash() {
    let stub = Stub::spawn().await;
    let closed = tollgate_e2e::children::free_port();
    let gw = TestGateway::spawn(&format!(
        "[auth]\npublic_base_url = \"{TEST_BASE_URL}\"\n[[auth.issuers]]\nissuer = \"http://127.0.0.1:{closed}\"\njwks_uri = \"http://127.0.0.1:{closed}/jwks\"\nallow_insecure_http = true\n\n[[servers]]\nname = \"a\"\nurl = \"{}/json\"\n",
        stub.base
    ))
    .await;
    let ready = http().get(format!("{}/readyz", gw.admin)).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let metrics = gw.metrics().await;
    let down = format!("http://127.0.0.1:{closed}");
    let value = |name: &str, labels: &[(&str, &str)]| metric(&metrics, name, labels);
    let issuer_label = [("issuer", down.as_str())];
    assert_eq!(value("tollgate_auth_keys_ready", &[]), 0.0);
    assert_eq!(value("tollgate_auth_jwks_keys", &issuer_label), 0.0);
    assert_eq!(value("tollgate_auth_jwks_last_fetch_success", &issuer_label), 0.0);
    let failed = [("issuer", down.as_str()), ("result", "failed")];
    assert!(value("tollgate_auth_jwks_fetches_total", &failed) >= 1.0, "{metrics}");
    assert_eq!(
        http()
            .get(format!("{}/healthz", gw.admin))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let issuer = TestIssuer::new();
    let mut claims = issuer.claims("alice", "", &["a"]);
    claims["iss"] = json!(format!("http://127.0.0.1:{closed}"));
    let res = post(gw.url("a"), Some(&issuer.sign(&claims)))
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["retry-after"], "1");
    assert_rpc_error(res, 503, -32000, json!(null)).await;
}
