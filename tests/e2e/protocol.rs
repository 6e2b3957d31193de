//! Protocol rejections through the real gateway in front of the demo
//! upstream: every status and JSON-RPC body the gateway itself emits.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::json;
use tollgate_e2e::{Demo, TestGateway, assert_rpc_error, http, modern_body, modern_call, modern_headers};

async fn gateway(extra: &str) -> (Demo, TestGateway) {
    let demo = Demo::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "{extra}\n[[servers]]\nname = \"demo\"\nurl = \"{url}\"\n\n[[servers]]\nname = \"modern\"\nurl = \"{url}\"\nlegacy = false\n",
        url = demo.url
    ))
    .await;
    (demo, gw)
}

fn echo_body(id: u64) -> String {
    modern_body(id, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}))
}

#[tokio::test]
async fn modern_call_with_agreeing_headers_is_forwarded() {
    let (_d, gw) = gateway("").await;
    let res = modern_call(gw.url("demo"), "tools/call", Some("echo"), echo_body(1)).await;
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "hi", "{body}");
}

#[tokio::test]
async fn header_problems_are_400_32020_echoing_the_id() {
    let (_d, gw) = gateway("").await;
    let cases: Vec<(&str, Option<&str>)> = vec![
        ("tools/call", Some("other")),             // name disagrees
        ("tools/list", Some("echo")),              // method disagrees
        ("TOOLS/CALL", Some("echo")),              // values are case-sensitive
        ("tools/call", None),                      // Mcp-Name missing
        ("tools/call", Some("=?base64?ZWNobw?=")), // bad sentinel padding
        ("tools/call", Some("=?base64?ZWNobw==")), // no suffix: a literal, so a mismatch
    ];
    for (method, name) in cases {
        let res = modern_call(gw.url("demo"), method, name, echo_body(42)).await;
        assert_rpc_error(res, 400, -32020, json!(42)).await;
    }
    let mut h = modern_headers("tools/call", Some("echo"));
    h.remove("mcp-method");
    let res = http()
        .post(gw.url("demo"))
        .headers(h)
        .body(echo_body(43))
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 400, -32020, json!(43)).await;
}

#[tokio::test]
async fn sentinel_encoded_names_and_padded_values_pass() {
    let (_d, gw) = gateway("").await;
    let mut h = modern_headers("tools/call", Some("=?base64?ZWNobw==?="));
    h.insert("mcp-method", "  tools/call ".parse().unwrap());
    let res = http()
        .post(gw.url("demo"))
        .headers(h)
        .body(echo_body(1))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn unsupported_version_is_400_32022_with_data() {
    let (_d, gw) = gateway("").await;
    let mut h = modern_headers("tools/call", Some("echo"));
    h.insert("mcp-protocol-version", "2099-01-01".parse().unwrap());
    let res = http()
        .post(gw.url("demo"))
        .headers(h)
        .body(echo_body(7))
        .send()
        .await
        .unwrap();
    let body = assert_rpc_error(res, 400, -32022, json!(7)).await;
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
    assert!(
        body["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
}

#[tokio::test]
async fn missing_meta_version_is_400_32602() {
    let (_d, gw) = gateway("").await;
    let body = json!({"jsonrpc":"2.0","id":"m","method":"tools/list","params":{}}).to_string();
    let res = modern_call(gw.url("demo"), "tools/list", None, body).await;
    assert_rpc_error(res, 400, -32602, json!("m")).await;
}

#[tokio::test]
async fn malformed_bodies_are_parse_and_invalid_request_errors() {
    let (_d, gw) = gateway("").await;
    let post = |body: &'static str| {
        http()
            .post(gw.url("demo"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    assert_rpc_error(post("{not json").await.unwrap(), 400, -32700, json!(null)).await;
    assert_rpc_error(post("[]").await.unwrap(), 400, -32600, json!(null)).await;
    let res = http()
        .post(gw.url("demo"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 415, -32000, json!(null)).await;
}

#[tokio::test]
async fn modern_only_route_refuses_legacy_traffic() {
    let (_d, gw) = gateway("").await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let res = http().request(method, gw.url("modern")).send().await.unwrap();
        assert_eq!(res.headers()["allow"], "POST");
        assert_rpc_error(res, 405, -32000, json!(null)).await;
    }
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let res = http()
        .post(gw.url("modern"))
        .header("content-type", "application/json")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let body = assert_rpc_error(res, 400, -32022, json!(1)).await;
    assert_eq!(body["error"]["data"]["supported"], json!(["2026-07-28"]));
    // Modern traffic still flows on that route.
    let res = modern_call(gw.url("modern"), "tools/call", Some("echo"), echo_body(2)).await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn oversized_headers_and_bodies_are_refused() {
    let (_d, gw) = gateway("[limits]\nmax_body_bytes = 2048\nmax_header_bytes = 4096\n").await;
    let mut h = modern_headers("tools/call", Some("echo"));
    h.insert("x-padding", "a".repeat(5000).parse().unwrap());
    let res = http()
        .post(gw.url("demo"))
        .headers(h)
        .body(echo_body(1))
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 431, -32000, json!(null)).await;
    let big = modern_body(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x".repeat(4000)}}),
    );
    let res = modern_call(gw.url("demo"), "tools/call", Some("echo"), big.clone()).await;
    assert_rpc_error(res, 413, -32000, json!(null)).await;
    // Chunked (no Content-Length) is cut off by the same limit.
    let stream = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(big.into_bytes())]);
    let res = modern_call(
        gw.url("demo"),
        "tools/call",
        Some("echo"),
        reqwest::Body::wrap_stream(stream),
    )
    .await;
    assert_rpc_error(res, 413, -32000, json!(null)).await;
}

#[tokio::test]
async fn origins_not_on_the_allowlist_are_403() {
    let (_d, gw) = gateway("[security]\nallowed_origins = [\"https://app.example.com\"]\n").await;
    let send = |origin: Option<&'static str>| {
        let mut req = http()
            .post(gw.url("demo"))
            .headers(modern_headers("tools/call", Some("echo")))
            .body(echo_body(5));
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    assert_rpc_error(
        send(Some("https://evil.example")).await.unwrap(),
        403,
        -32000,
        json!(null),
    )
    .await;
    assert_eq!(send(Some("https://app.example.com")).await.unwrap().status(), 200);
    assert_eq!(send(None).await.unwrap().status(), 200);
}

#[tokio::test]
async fn unknown_routes_are_404_with_a_json_rpc_body() {
    let (_d, gw) = gateway("").await;
    let res = http()
        .post(gw.url("nope"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 404, -32000, json!(null)).await;
}

#[tokio::test]
async fn admin_endpoints_report_health_readiness_and_metrics() {
    let (_d, gw) = gateway("").await;
    let res = modern_call(gw.url("demo"), "tools/call", Some("echo"), echo_body(1)).await;
    res.bytes().await.unwrap();
    let res = modern_call(gw.url("demo"), "tools/call", Some("x"), echo_body(1)).await;
    res.bytes().await.unwrap();
    assert_eq!(
        http()
            .get(format!("{}/healthz", gw.admin))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http()
            .get(format!("{}/readyz", gw.admin))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // The last request is recorded when its response body is released:
    // poll the scrape briefly instead of racing it.
    let mut metrics = String::new();
    for _ in 0..50 {
        metrics = http()
            .get(format!("{}/metrics", gw.admin))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if metrics.contains("tollgate_requests_in_flight 0") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        metrics.contains(r#"tollgate_requests_total{method="tools/call",route="demo",status="200"} 1"#),
        "{metrics}"
    );
    assert!(
        // The refused call is labelled with the method its body named.
        metrics.contains(r#"tollgate_requests_total{method="tools/call",route="demo",status="400"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"tollgate_request_duration_seconds_count{method="tools/call",route="demo"} 2"#),
        "{metrics}"
    );
    assert!(metrics.contains("tollgate_requests_in_flight 0"), "{metrics}");
}
