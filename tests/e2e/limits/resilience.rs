//! Upstream resilience through the real gateway: an upstream that keeps
//! failing opens its circuit breaker (503 with `Retry-After`, visible in
//! `/readyz` and the metrics) and closes it once a probe succeeds; a
//! concurrency cap refuses calls past it while the upstream is slow.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tollgate_e2e::audit_support::{Exchange, metric, modern};
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{TestGateway, http, modern_body};

/// An MCP upstream answering 500 while `failing` is set.
async fn flaky(failing: Arc<AtomicBool>) -> String {
    let app = Router::new().route(
        "/mcp",
        post(move || {
            let failing = failing.clone();
            async move {
                if failing.load(Ordering::Acquire) {
                    return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response();
                }
                let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
                let res: Response = ([(header::CONTENT_TYPE, "application/json")], ok).into_response();
                res
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn call(gw: &TestGateway, route: &str, id: u64) -> Exchange {
    let body = modern_body(id, "tools/call", json!({"name": "echo", "arguments": {}}));
    modern(gw.url(route), None, "tools/call", Some("echo"), body).await
}

async fn detail(gw: &TestGateway) -> Value {
    let url = format!("{}/readyz?detail", gw.admin);
    http().get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_failing_upstream_opens_its_breaker_and_a_good_probe_closes_it() {
    let failing = Arc::new(AtomicBool::new(true));
    let url = flaky(failing.clone()).await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"flaky\"\nurl = \"{url}\"\n\
         resilience = {{ breaker = {{ consecutive_failures = 3, open_for = \"1s\" }} }}\n"
    ))
    .await;
    for i in 0..3 {
        assert_eq!(call(&gw, "flaky", i).await.status, 500, "the upstream's own answer");
    }
    let ex = call(&gw, "flaky", 9).await;
    assert_eq!(ex.status, 503, "{ex:?}");
    let m = ex.message();
    assert_eq!(m["error"]["code"], -32001, "{m}");
    assert_eq!(m["error"]["message"], "Upstream unavailable: circuit open");
    assert_eq!(m["error"]["data"]["retryAfter"], 1);
    assert_eq!(detail(&gw).await["upstreams"]["flaky"]["breaker"], "open");
    let labels = [("route", "flaky")];
    assert_eq!(
        metric(&gw.metrics().await, "tollgate_upstream_breaker_state", &labels),
        2.0
    );
    assert_eq!(
        metric(&gw.metrics().await, "tollgate_upstream_breaker_opened_total", &labels),
        1.0
    );

    // The upstream recovers; after open_for one probe goes through and
    // closes the breaker.
    failing.store(false, Ordering::Release);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let ex = call(&gw, "flaky", 10).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(detail(&gw).await["upstreams"]["flaky"]["breaker"], "closed");
    assert_eq!(call(&gw, "flaky", 11).await.status, 200);
    assert_eq!(
        metric(&gw.metrics().await, "tollgate_upstream_breaker_state", &labels),
        0.0
    );
}

#[tokio::test]
async fn a_concurrency_cap_refuses_calls_past_it_while_the_upstream_is_slow() {
    let stub = Stub::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"slow\"\nurl = \"{}/slow\"\nresilience = {{ max_concurrent = 1 }}\n",
        stub.base
    ))
    .await;
    let first = tokio::spawn({
        let url = gw.url("slow");
        async move {
            let body = modern_body(1, "tools/call", json!({"name": "echo", "arguments": {}}));
            modern(url, None, "tools/call", Some("echo"), body).await
        }
    });
    // Wait until the first call is at the upstream.
    for _ in 0..100 {
        if !stub.seen().await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(detail(&gw).await["upstreams"]["slow"]["in_flight"], 1);
    let ex = call(&gw, "slow", 2).await;
    assert_eq!(ex.status, 503, "{ex:?}");
    assert_eq!(
        ex.message()["error"]["message"],
        "Upstream busy: at its concurrency limit"
    );
    assert_eq!(first.await.unwrap().status, 200);
    assert_eq!(
        metric(
            &gw.metrics().await,
            "tollgate_upstream_shed_total",
            &[("route", "slow")]
        ),
        1.0
    );
    assert_eq!(
        call(&gw, "slow", 3).await.status,
        200,
        "room again once the first answered"
    );
}
