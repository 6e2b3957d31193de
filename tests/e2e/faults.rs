//! Failures a gateway meets in production, against a real `tollgate serve`
//! process on loopback: each test asserts what the clients see and that
//! the gateway stays up and serves the next call.
//!
//! - Slow-header clients (slowloris) are cut off after
//!   `[limits] header_read_timeout` while other clients are served.
//! - A burst far above `[limits] max_concurrent_requests` is shed with 503
//!   and the JSON-RPC overload error, and the gateway serves normally
//!   right after.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tollgate_e2e::audit_support::modern;
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{Demo, modern_body};

fn config(demo: &Demo, limits: &str) -> String {
    format!(
        "[limits]\n{limits}\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        demo.url
    )
}

async fn echo(gw: &ChildGateway, id: u64) -> u16 {
    let body = modern_body(id, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    modern(gw.url("demo"), None, "tools/call", Some("echo"), body)
        .await
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_clients_are_cut_off_while_others_are_served() {
    let demo = Demo::spawn().await;
    let gw = ChildGateway::spawn(&config(&demo, "header_read_timeout = \"1s\"")).await;
    let addr = gw.base.trim_start_matches("http://").to_owned();

    // 50 clients send a request line and then one header byte a while.
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"POST /mcp/demo HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    for id in 0..5 {
        assert_eq!(echo(&gw, id).await, 200, "served while slow clients hold connections");
    }
    // Each slow connection is answered (408) or closed once its time is up,
    // however it keeps dribbling.
    for mut s in slow {
        let mut buf = [0u8; 256];
        let cut = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if s.write_all(b"a").await.is_err() {
                    return;
                }
                match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
                    Ok(Ok(0) | Err(_)) => return,
                    Ok(Ok(n)) if buf[..n].starts_with(b"HTTP/1.1 408") => return,
                    _ => {}
                }
            }
        })
        .await;
        assert!(cut.is_ok(), "a slow client kept its connection");
    }
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(echo(&gw, 9).await, 200, "the gateway serves after the slow clients");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_far_above_the_concurrency_limit_is_shed_then_served() {
    let demo = Demo::spawn().await;
    let gw = ChildGateway::spawn(&config(&demo, "max_concurrent_requests = 4")).await;
    // 40 calls at once, each holding its place ~300 ms upstream.
    let slow = json!({"n": 3, "delay_ms": 100});
    let calls: Vec<_> = (0..40)
        .map(|id| {
            let url = gw.url("demo");
            let body = modern_body(id, "tools/call", json!({"name": "countdown", "arguments": slow}));
            tokio::spawn(async move {
                let ex = modern(url, None, "tools/call", Some("countdown"), body).await;
                (ex.status, ex.message())
            })
        })
        .collect();
    let mut shed = 0;
    let mut served = 0;
    for c in calls {
        let (status, message) = c.await.unwrap();
        match status {
            200 => served += 1,
            503 => {
                assert_eq!(message["error"]["code"], -32000, "{message}");
                shed += 1;
            }
            other => panic!("unexpected {other}: {message}"),
        }
    }
    assert!(served >= 4, "the limit's worth is served: {served}");
    assert!(shed >= 20, "the rest is shed at once: {shed}");
    for id in 100..110 {
        assert_eq!(echo(&gw, id).await, 200, "full recovery after the burst");
    }
}
