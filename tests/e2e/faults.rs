//! Failures a gateway meets in production, against a real `tollgate serve`
//! process on loopback: each test asserts what the clients see and that
//! the gateway stays up and serves the next call.
//!
//! - Slow-header clients (slowloris) are cut off after
//!   `[limits] header_read_timeout` while other clients are served.
//! - 10,000 idle keep-alive connections are held (memory per connection
//!   printed, bounded only as a leak check) while calls are served.
//! - A burst far above `[limits] max_concurrent_requests` is shed with 503
//!   and the JSON-RPC overload error, and the gateway serves normally
//!   right after.
//! - An upstream dies mid-stream: the client's stream ends with an error,
//!   not a clean end, and the call's record says it failed.
//! - An upstream accepts and never answers: 504 after the first-byte
//!   timeout, recorded, and the next call is served.
//! - `disk`: the audit disk fills up, in strict and in batch mode.
//! - `idp`: the identity provider goes down mid-run and comes back.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "faults/disk.rs"]
mod disk;
#[path = "faults/idp.rs"]
mod idp;

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

/// An upstream that answers every request with an SSE stream of two
/// progress events and then dies mid-stream (the connection dropped,
/// the chunked body never finished).
async fn dying_upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let _ = s.read(&mut buf).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let _ = s.write_all(head.as_bytes()).await;
                for n in 1..=2 {
                    let event = format!(
                        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"p\",\"progress\":{n}}}}}\n\n"
                    );
                    let _ = s
                        .write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())
                        .await;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                // Gone, without the final chunk.
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_dies_mid_stream_ends_the_clients_stream_and_the_gateway_serves_on() {
    let demo = Demo::spawn().await;
    let dying = dying_upstream().await;
    let gw = ChildGateway::spawn(&format!(
        "{}\n[[servers]]\nname = \"dying\"\nurl = \"{dying}\"\nlegacy = false\n",
        config(&demo, "")
    ))
    .await;
    let body = modern_body(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let res = tollgate_e2e::http()
        .post(gw.url("dying"))
        .headers(tollgate_e2e::modern_headers("tools/call", Some("echo")))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let request_id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    let mut res = res;
    let mut received = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match res.chunk().await {
                Ok(Some(chunk)) => received.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(None) => return "end",
                Err(_) => return "error",
            }
        }
    })
    .await
    .expect("the client's stream ends when the upstream dies");
    assert_eq!(ended, "error", "a cut stream is not passed off as complete: {received}");
    assert_eq!(received.matches("notifications/progress").count(), 2, "{received}");

    // The call's record says it failed; the gateway serves the next call.
    let mut rec = None;
    for _ in 0..100 {
        rec = tollgate_e2e::audit_support::records(&gw.audit_dir())
            .into_iter()
            .find(|r| r.request_id == request_id && r.phase == tollgate_audit::Phase::Complete);
        if rec.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rec = rec.expect("the cut call is recorded");
    assert_eq!(rec.error.as_deref(), Some("upstream_unavailable"), "{rec:?}");
    assert_eq!(echo(&gw, 2).await, 200);
}

/// An upstream that accepts connections, reads the request and never
/// answers.
async fn silent_upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 16 * 1024];
            let _ = s.read(&mut buf).await;
            held.push(s);
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_answers_gets_a_504_and_the_gateway_serves_on() {
    let demo = Demo::spawn().await;
    let silent = silent_upstream().await;
    let gw = ChildGateway::spawn(&format!(
        "{}\n[[servers]]\nname = \"silent\"\nurl = \"{silent}\"\nlegacy = false\ntimeouts = {{ first_byte = \"500ms\" }}\n",
        config(&demo, "")
    ))
    .await;
    let body = modern_body(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let started = Instant::now();
    let ex = modern(gw.url("silent"), None, "tools/call", Some("echo"), body).await;
    assert_eq!(ex.status, 504, "{}", String::from_utf8_lossy(&ex.body));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the first-byte timeout"
    );
    let rec = tollgate_e2e::audit_support::wait_record(&gw.audit_dir(), &ex).await;
    assert_eq!(rec.status, Some(504));
    assert!(rec.error.is_some(), "{rec:?}");
    assert_eq!(echo(&gw, 2).await, 200);
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_idle_keep_alive_connections_are_held_and_calls_still_served() {
    const CONNECTIONS: usize = 10_000;
    let demo = Demo::spawn().await;
    let gw = ChildGateway::spawn(&config(&demo, "header_read_timeout = \"60s\"")).await;
    let addr = gw.base.trim_start_matches("http://").to_owned();
    let pid = gw.child.id().unwrap();
    assert_eq!(echo(&gw, 1).await, 200);
    let before = rss_kib(pid);

    // Each connection makes one request, then stays open and idle.
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let mut held = Vec::with_capacity(CONNECTIONS / 100);
                for _ in 0..CONNECTIONS / 100 {
                    let mut s = TcpStream::connect(&addr).await.unwrap();
                    s.write_all(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
                    let mut buf = [0u8; 1024];
                    let n = s.read(&mut buf).await.unwrap();
                    assert!(
                        buf[..n].starts_with(b"HTTP/1.1 404"),
                        "{}",
                        String::from_utf8_lossy(&buf[..n])
                    );
                    held.push(s);
                }
                held
            })
        })
        .collect();
    let mut held = Vec::with_capacity(CONNECTIONS);
    for t in tasks {
        held.extend(t.await.unwrap());
    }
    let after = rss_kib(pid);
    let per_connection = (after.saturating_sub(before)) as f64 / CONNECTIONS as f64;
    eprintln!("{CONNECTIONS} idle connections: RSS {before} -> {after} KiB, {per_connection:.1} KiB each");
    // A leak check, not the memory target (that is `make bench`'s).
    assert!(per_connection < 128.0, "{per_connection:.1} KiB per idle connection");
    for id in 2..7 {
        assert_eq!(echo(&gw, id).await, 200, "served with {CONNECTIONS} connections open");
    }
    let detail = gw.ready_detail().await;
    assert_eq!(detail["ready"], true, "{detail}");
    drop(held);
    assert_eq!(echo(&gw, 9).await, 200);
}
