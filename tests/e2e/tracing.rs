//! Traces through the real gateway: with `[tracing]` on, a call carrying a
//! W3C `traceparent` produces a server span (child of the caller's span)
//! and a client span for the upstream call, exported over OTLP/HTTP to a
//! real receiver; the upstream gets the client span's context and the audit
//! record carries the trace id.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::json;
use tollgate_e2e::audit_support::{metric, scrape_until, try_metric};
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{TestGateway, http, modern_body, modern_headers};

const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

type Received = Arc<Mutex<Vec<Span>>>;

async fn receive(State(spans): State<Received>, body: Bytes) -> &'static str {
    let req = ExportTraceServiceRequest::decode(body).unwrap();
    let mut spans = spans.lock().unwrap();
    for rs in req.resource_spans {
        for ss in rs.scope_spans {
            spans.extend(ss.spans);
        }
    }
    ""
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_traced_from_the_caller_through_the_gateway_to_the_upstream() {
    let received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let stub = Stub::spawn().await;
    let mut gw = TestGateway::spawn(&format!(
        "[tracing]\nenabled = true\nendpoint = \"{collector}\"\n\n[[servers]]\nname = \"tools\"\nurl = \"{}/json\"\n",
        stub.base
    ))
    .await;

    let mut headers = modern_headers("tools/call", Some("echo"));
    headers.insert("traceparent", CALLER.parse().unwrap());
    let body = modern_body(3, "tools/call", json!({"name": "echo", "arguments": {}}));
    let res = http()
        .post(gw.url("tools"))
        .headers(headers)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.bytes().await.unwrap();
    // The server and client spans ended and are queued for export.
    let ended = |t: &str| try_metric(t, "tollgate_trace_spans_total", &[("kind", "ended")]) == Some(2.0);
    let scraped = scrape_until(&gw.admin, ended).await;
    assert_eq!(
        metric(&scraped, "tollgate_trace_spans_total", &[("kind", "export_failed")]),
        0.0
    );
    gw.shutdown().await; // flushes the exporter and the audit trail

    let upstream_tp = stub.seen().await[0].headers["traceparent"].to_str().unwrap().to_owned();
    let spans = received.lock().unwrap().clone();
    let server = spans
        .iter()
        .find(|s| s.kind == SpanKind::Server as i32)
        .expect("a server span");
    let client = spans
        .iter()
        .find(|s| s.kind == SpanKind::Client as i32)
        .expect("a client span");
    assert_eq!(hex(&server.trace_id), TRACE);
    assert_eq!(hex(&server.parent_span_id), CALLER_SPAN);
    assert_eq!(server.name, "tools/call echo");
    assert_eq!(client.trace_id, server.trace_id);
    assert_eq!(client.parent_span_id, server.span_id);
    assert_eq!(upstream_tp, format!("00-{TRACE}-{}-01", hex(&client.span_id)));

    let mut records = tollgate_audit::query(&[gw.audit_dir()], tollgate_audit::Filter::default()).unwrap();
    let rec = records.next().unwrap().unwrap().record;
    assert_eq!(rec.trace_id.as_deref(), Some(TRACE));
}
