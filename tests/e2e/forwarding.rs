//! Forwarding behaviour against a recording stub upstream: what reaches the
//! upstream, sealed sessions, streaming without buffering, cancellation,
//! upstream failures, load shedding and graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{TestGateway, assert_rpc_error, http, modern_body, modern_call};

async fn gateway(stub: &Stub, extra: &str) -> TestGateway {
    let mut cfg = format!("{extra}\n");
    for (name, path, trust) in [
        ("json", "json", "verify"),
        ("raw", "json", "upstream"),
        ("other", "json", "verify"),
        ("slow", "slow", "verify"),
        ("sse", "sse", "verify"),
    ] {
        cfg.push_str(&format!(
            "[[servers]]\nname = \"{name}\"\nurl = \"{}/{path}\"\nheader_trust = \"{trust}\"\n",
            stub.base
        ));
        if name == "slow" {
            cfg.push_str("timeouts = { first_byte = \"300ms\" }\n");
        }
    }
    // `hold` answers after two seconds, within the default deadline.
    cfg.push_str(&format!("[[servers]]\nname = \"hold\"\nurl = \"{}/slow\"\n", stub.base));
    TestGateway::spawn(&cfg).await
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn legacy(url: String) -> reqwest::RequestBuilder {
    http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

#[tokio::test]
async fn upstream_sees_its_own_host_no_client_token_no_hop_by_hop() {
    let stub = Stub::spawn().await;
    let gw = gateway(&stub, "").await;
    let res = legacy(gw.url("json"))
        .header("authorization", "Bearer client-secret-token")
        .header("connection", "x-client-private")
        .header("x-client-private", "hop")
        .header("mcp-param-region", "eu")
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers().get("x-upstream-private").is_none(),
        "hop-by-hop response header leaked"
    );
    assert!(res.headers().get("x-request-id").is_some());
    let seen = &stub.seen().await[0];
    assert!(
        seen.headers.get("authorization").is_none(),
        "client token reached the upstream"
    );
    assert!(seen.headers.get("x-client-private").is_none());
    assert_eq!(seen.headers["host"], stub.base.trim_start_matches("http://"));
    assert_eq!(seen.headers["mcp-param-region"], "eu");
    assert!(seen.headers.get("x-request-id").is_some());
    assert_eq!(&seen.body[..], INIT.as_bytes());
}

#[tokio::test]
async fn upstream_trust_forwards_the_body_unread_and_byte_identical() {
    let stub = Stub::spawn().await;
    let gw = gateway(&stub, "").await;
    // The headers name `echo`; the body says something else. With
    // header_trust = "upstream" the gateway does not read the body: the
    // upstream gets it unchanged and must enforce agreement itself.
    let body = modern_body(9, "tools/call", json!({"name": "not-echo"}));
    let res = modern_call(gw.url("raw"), "tools/call", Some("echo"), body.clone()).await;
    assert_eq!(res.status(), 200);
    let seen = &stub.seen().await[0];
    assert_eq!(&seen.body[..], body.as_bytes());
    assert_eq!(seen.headers["mcp-name"], "echo");
    // The same request on a verify route never reaches the upstream.
    let res = modern_call(gw.url("json"), "tools/call", Some("echo"), body).await;
    assert_rpc_error(res, 400, -32020, json!(9)).await;
    assert_eq!(stub.seen().await.len(), 1);
}

#[tokio::test]
async fn sessions_are_sealed_bound_to_the_route_and_unsealed_upstream() {
    let stub = Stub::spawn().await;
    let gw = gateway(&stub, "").await;
    let res = legacy(gw.url("json")).body(INIT).send().await.unwrap();
    let sealed = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert!(sealed.starts_with("tg1."), "{sealed}");
    assert!(!sealed.contains("upstream-session-1"));
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let res = legacy(gw.url("json"))
        .header("mcp-session-id", &sealed)
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(stub.seen().await[1].headers["mcp-session-id"], "upstream-session-1");
    // Forged, and valid-but-foreign (another route), are both 404.
    let res = legacy(gw.url("json"))
        .header("mcp-session-id", "upstream-session-1")
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 404, -32000, json!(2)).await;
    let res = legacy(gw.url("other"))
        .header("mcp-session-id", &sealed)
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 404, -32000, json!(2)).await;
    let res = http()
        .delete(gw.url("other"))
        .header("mcp-session-id", &sealed)
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 404, -32000, json!(null)).await;
    assert_eq!(stub.seen().await.len(), 2);
}

#[tokio::test]
async fn batches_are_scanned_element_by_element() {
    let stub = Stub::spawn().await;
    let gw = gateway(&stub, "").await;
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","method":"notifications/progress"}]"#;
    let res = legacy(gw.url("json")).body(batch).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let res = legacy(gw.url("json"))
        .header("mcp-protocol-version", "2025-06-18")
        .body(batch)
        .send()
        .await
        .unwrap();
    assert_rpc_error(res, 400, -32600, json!(null)).await;
    let bad = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2}]"#;
    let res = legacy(gw.url("json")).body(bad).send().await.unwrap();
    assert_rpc_error(res, 400, -32600, json!(null)).await;
    assert_eq!(stub.seen().await.len(), 1);
}

#[tokio::test]
async fn sse_events_arrive_before_the_next_is_sent_and_disconnect_cancels_upstream() {
    let stub = Stub::spawn().await;
    let gw = gateway(&stub, "").await;
    let res = legacy(gw.url("sse")).body(INIT).send().await.unwrap();
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert_eq!(res.headers()["x-accel-buffering"], "no");
    let mut stream = res.bytes_stream();
    // The stub holds event 2 until released: event 1 must arrive on its own.
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("event 1 was buffered")
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b"data: {\"n\":1}\n\n");
    stub.release();
    let second = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&second[..], b"data: {\"n\":2}\n\n");
    // A second stream, abandoned after its first event: the upstream must
    // see its response stream dropped (cancellation).
    let res = legacy(gw.url("sse")).body(INIT).send().await.unwrap();
    let mut stream = res.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(stream);
    tokio::time::timeout(Duration::from_secs(5), stub.cancelled())
        .await
        .expect("upstream never saw the cancellation");
}

#[tokio::test]
async fn upstream_down_is_502_and_slow_is_504_with_the_request_id() {
    let stub = Stub::spawn().await;
    let closed = tollgate_e2e::children::free_port();
    let gw = gateway(
        &stub,
        &format!("[[servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:{closed}/mcp\"\n"),
    )
    .await;
    let res = legacy(gw.url("down")).body(INIT).send().await.unwrap();
    assert_rpc_error(res, 502, -32001, json!(1)).await;
    let started = std::time::Instant::now();
    let res = legacy(gw.url("slow")).body(INIT).send().await.unwrap();
    assert_rpc_error(res, 504, -32004, json!(1)).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "first-byte timeout did not fire"
    );
}

#[tokio::test]
async fn requests_past_the_concurrency_limit_are_shed_with_503() {
    let stub = Stub::spawn().await;
    let gw = gateway(&stub, "[limits]\nmax_concurrent_requests = 1\n").await;
    let url = gw.url("hold");
    let first = tokio::spawn(async move { legacy(url).body(INIT).send().await.unwrap().status() });
    while stub.seen().await.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let res = legacy(gw.url("json")).body(INIT).send().await.unwrap();
    assert_eq!(res.headers()["retry-after"], "1");
    assert_rpc_error(res, 503, -32000, json!(null)).await;
    assert_eq!(first.await.unwrap(), 200);
}

#[tokio::test]
async fn shutdown_drains_in_flight_requests_and_stops_accepting() {
    let stub = Stub::spawn().await;
    let mut gw = gateway(&stub, "[shutdown]\ngrace = \"10s\"\n").await;
    let url = gw.url("hold");
    let in_flight = tokio::spawn(async move { legacy(url).body(INIT).send().await.unwrap().status() });
    while stub.seen().await.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let base = gw.base.clone();
    gw.begin_shutdown();
    assert_eq!(in_flight.await.unwrap(), 200, "in-flight request was cut off");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        http().post(format!("{base}/mcp/json")).body(INIT).send().await.is_err(),
        "still accepting after shutdown"
    );
    gw.stop().await;
}

#[tokio::test]
async fn h2_on_both_sides() {
    let stub = Stub::spawn().await;
    let gw = gateway(
        &stub,
        &format!(
            "[[servers]]\nname = \"h2\"\nurl = \"{}/json\"\nhttp = \"http2\"\n",
            stub.base
        ),
    )
    .await;
    tollgate_e2e::install_crypto_provider();
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .no_proxy()
        .build()
        .unwrap();
    let res = client
        .post(gw.url("h2"))
        .header("content-type", "application/json")
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert_eq!(res.status(), 200);
    assert!(res.headers()["mcp-session-id"].to_str().unwrap().starts_with("tg1."));
    assert_eq!(&stub.seen().await[0].body[..], INIT.as_bytes());
}
