//! OTLP export: records reach a real OTLP/HTTP receiver as log records;
//! when the collector is down, exports are dropped and counted while the
//! file keeps every record.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use common::{call, principal, settings};
use tollgate_audit::{AuditSink, OtlpSettings, verify};

fn otlp(endpoint: String) -> OtlpSettings {
    OtlpSettings {
        endpoint,
        timeout: Duration::from_secs(2),
        queue_capacity: 1000,
        batch_records: 4,
        batch_interval: Duration::from_millis(20),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_arrive_as_otlp_log_records() {
    let received: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let sink = received.clone();
    let app = Router::new().route(
        "/v1/logs",
        post(move |body: String| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(serde_json::from_str(&body).unwrap());
                "{}"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.otlp = Some(otlp(format!("http://{addr}")));
    let (handle, worker) = AuditSink::start(s).unwrap();
    let alice = principal("alice", "payments");
    for i in 0..10 {
        let _ = handle.record(call(i, &alice, "create_issue"));
    }
    worker.close().await.unwrap();

    let requests = received.lock().unwrap().clone();
    let logs: Vec<&serde_json::Value> = requests
        .iter()
        .flat_map(|r| r["resourceLogs"][0]["scopeLogs"][0]["logRecords"].as_array().unwrap())
        .collect();
    assert_eq!(logs.len(), 10);
    assert!(requests.len() >= 3, "batches of at most 4");
    let first = logs[0];
    assert_eq!(first["eventName"], "tollgate.audit.call");
    assert_eq!(first["traceId"], format!("{:032x}", 0));
    let body: serde_json::Value = serde_json::from_str(first["body"]["stringValue"].as_str().unwrap()).unwrap();
    assert_eq!(body["request_id"], "req-0");
    let attr = |k: &str| {
        first["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == k)
            .map(|a| a["value"].clone())
    };
    assert_eq!(attr("gen_ai.tool.name").unwrap()["stringValue"], "create_issue");
    assert_eq!(attr("user.id").unwrap()["stringValue"], "alice");
    assert_eq!(attr("tollgate.audit.seq").unwrap()["intValue"], "1");
    assert_eq!(
        attr("tollgate.audit.hash").unwrap()["stringValue"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert_eq!(handle.stats().otlp_exported, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_collector_costs_exports_not_records() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.otlp = Some(otlp(format!("http://127.0.0.1:{port}")));
    let (handle, worker) = AuditSink::start(s).unwrap();
    let alice = principal("alice", "payments");
    for i in 0..10 {
        let _ = handle.record(call(i, &alice, "t"));
    }
    worker.close().await.unwrap();
    let stats = handle.stats();
    assert_eq!((stats.otlp_exported, stats.otlp_dropped), (0, 10));
    assert_eq!(verify(&[dir.path().to_owned()]).unwrap().records, 10);
}

#[test]
fn otlp_needs_a_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.otlp = Some(otlp("http://127.0.0.1:4318".into()));
    assert!(AuditSink::start(s).is_err());
}
