//! The trace pipeline against a real OTLP/HTTP receiver: spans are posted
//! as protobuf to `/v1/traces`, decoded here with `opentelemetry-proto`,
//! and checked for trace ids, parentage, kinds, attributes and resource.
//!
//! No test installs OpenTelemetry globals (`TracingGuard::new`), so each
//! builds its own pipeline and collector.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message as _;
use tollgate_core::Era;
use tollgate_telemetry::{McpCall, Spans, TracingGuard, TracingSettings};

const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const HEADER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

/// Export to the collector at `endpoint`, the service named `tollgate`,
/// every new trace sampled.
fn exporting_to(endpoint: &str, timeout: Duration) -> TracingSettings {
    TracingSettings {
        enabled: true,
        traces_url: format!("{endpoint}/v1/traces"),
        service_name: "tollgate".into(),
        sample_ratio: 1.0,
        timeout,
        queue_capacity: std::num::NonZeroUsize::new(2048).unwrap(),
    }
}

/// An OTLP/HTTP receiver on its own thread and runtime (the pipeline's
/// flush blocks the calling thread while it posts here).
struct Collector {
    endpoint: String,
    received: Received,
}

impl Collector {
    fn start() -> Collector {
        let received = Received::default();
        let state = received.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().route("/v1/traces", post(receive)).with_state(state);
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        Collector {
            endpoint: format!("http://{addr}"),
            received,
        }
    }

    fn settings(&self, sample_ratio: f64) -> TracingSettings {
        TracingSettings {
            service_name: "gw-test".into(),
            sample_ratio,
            ..exporting_to(&self.endpoint, Duration::from_secs(5))
        }
    }

    fn spans(&self) -> Vec<(Vec<KeyValue>, Span)> {
        let received = self.received.lock().unwrap();
        let mut out = Vec::new();
        for request in received.iter() {
            for rs in &request.resource_spans {
                let resource = rs.resource.clone().unwrap_or_default().attributes;
                for span in rs.scope_spans.iter().flat_map(|s| s.spans.iter()) {
                    out.push((resource.clone(), span.clone()));
                }
            }
        }
        out
    }
}

async fn receive(State(received): State<Received>, body: Bytes) -> Vec<u8> {
    let request = ExportTraceServiceRequest::decode(body).unwrap();
    received.lock().unwrap().push(request);
    ExportTraceServiceResponse::default().encode_to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key) {
        Some(Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn int(attrs: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attrs, key) {
        Some(Value::IntValue(i)) => Some(*i),
        _ => None,
    }
}

fn tool_call<'a>() -> McpCall<'a> {
    McpCall {
        target: Some("echo"),
        protocol_version: Some("2026-07-28"),
        request_id: Some("\"req-7\""),
        meta_traceparent: Some(CALLER),
        header_traceparent: Some(HEADER),
        started: Some(SystemTime::now() - Duration::from_millis(5)),
        ..McpCall::new("demo", "tools/call", Era::Modern)
    }
}

#[test]
fn a_tools_call_exports_a_server_span_and_its_client_span() {
    let collector = Collector::start();
    let guard = TracingGuard::new(&collector.settings(1.0)).unwrap().unwrap();
    let spans = guard.spans();
    assert!(spans.is_enabled());

    let mut server = spans.server_span(&tool_call());
    assert_eq!(server.trace_id().unwrap().to_string(), CALLER_TRACE);
    assert!(server.is_recording());
    let upstream = "127.0.0.1:3001".parse().unwrap();
    let mut client = server.client_span(&upstream);
    let sent = client.traceparent().unwrap();
    assert_eq!(sent.trace_id().to_string(), CALLER_TRACE);
    assert!(
        sent.as_str().starts_with("00-") && sent.as_str().ends_with("-01"),
        "{sent}"
    );
    client.set_http_status(502);
    client.set_error("502", "Bad Gateway");
    client.end();
    server.set_http_status(200);
    server.set_jsonrpc_error(-32603, "Upstream failed");
    server.end();
    guard.force_flush().unwrap();
    let stats = guard.span_counts().stats();
    assert_eq!(
        (stats.ended, stats.exported, stats.failed, stats.unexported()),
        (2, 2, 0, 0)
    );

    let got = collector.spans();
    assert_eq!(got.len(), 2, "{got:#?}");
    let (resource, server) = got.iter().find(|(_, s)| s.kind == SpanKind::Server as i32).unwrap();
    let (_, client) = got.iter().find(|(_, s)| s.kind == SpanKind::Client as i32).unwrap();
    assert_eq!(text(resource, "service.name"), Some("gw-test"));

    // One trace, the caller's; caller → server span → client span.
    assert_eq!(hex(&server.trace_id), CALLER_TRACE);
    assert_eq!(hex(&client.trace_id), CALLER_TRACE);
    assert_eq!(hex(&server.parent_span_id), CALLER_SPAN);
    assert_eq!(client.parent_span_id, server.span_id);
    assert_eq!(sent.as_str(), format!("00-{CALLER_TRACE}-{}-01", hex(&client.span_id)));

    // The header's context is linked, not the parent.
    assert_eq!(server.links.len(), 1);
    assert_eq!(hex(&server.links[0].trace_id), "0af7651916cd43dd8448eb211c80319c");

    assert_eq!(server.name, "tools/call echo");
    let a = &server.attributes;
    assert_eq!(text(a, "mcp.method.name"), Some("tools/call"));
    assert_eq!(text(a, "gen_ai.tool.name"), Some("echo"));
    assert_eq!(text(a, "gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(text(a, "mcp.protocol.version"), Some("2026-07-28"));
    assert_eq!(text(a, "jsonrpc.request.id"), Some("req-7"));
    assert_eq!(text(a, "tollgate.route"), Some("demo"));
    assert_eq!(text(a, "tollgate.era"), Some("modern"));
    assert_eq!(text(a, "network.transport"), Some("tcp"));
    assert_eq!(int(a, "http.response.status_code"), Some(200));
    assert_eq!(text(a, "error.type"), Some("-32603"));
    assert_eq!(text(a, "rpc.response.status_code"), Some("-32603"));
    assert_eq!(attr(a, "mcp.session.id"), None);
    let status = server.status.clone().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert_eq!(status.message, "Upstream failed");
    assert!(server.start_time_unix_nano < client.start_time_unix_nano);

    assert_eq!(client.name, "tools/call echo");
    let a = &client.attributes;
    assert_eq!(text(a, "mcp.method.name"), Some("tools/call"));
    assert_eq!(text(a, "gen_ai.tool.name"), Some("echo"));
    assert_eq!(text(a, "server.address"), Some("127.0.0.1"));
    assert_eq!(int(a, "server.port"), Some(3001));
    assert_eq!(int(a, "http.response.status_code"), Some(502));
    assert_eq!(text(a, "error.type"), Some("502"));
    guard.shutdown().unwrap();
}

#[test]
fn a_resource_read_names_its_uri_only_in_an_attribute() {
    let collector = Collector::start();
    let guard = TracingGuard::new(&collector.settings(1.0)).unwrap().unwrap();
    let call = McpCall {
        target: Some("file:///etc/report.pdf"),
        request_id: Some("42"),
        header_traceparent: Some(HEADER),
        ..McpCall::new("files", "resources/read", Era::Legacy)
    };
    let server = guard.spans().server_span(&call);
    assert_eq!(
        server.trace_id().unwrap().to_string(),
        "0af7651916cd43dd8448eb211c80319c"
    );
    server.end();
    guard.force_flush().unwrap();

    let got = collector.spans();
    assert_eq!(got.len(), 1);
    let span = &got[0].1;
    assert_eq!(span.name, "resources/read");
    assert_eq!(hex(&span.parent_span_id), "b7ad6b7169203331");
    assert!(span.links.is_empty());
    let a = &span.attributes;
    assert_eq!(text(a, "mcp.resource.uri"), Some("file:///etc/report.pdf"));
    assert_eq!(text(a, "jsonrpc.request.id"), Some("42"));
    assert_eq!(text(a, "tollgate.era"), Some("legacy"));
    assert_eq!(attr(a, "gen_ai.tool.name"), None);
    assert_eq!(attr(a, "error.type"), None);
    assert_eq!(span.status.clone().unwrap_or_default().code, StatusCode::Unset as i32);
}

#[test]
fn ratio_zero_exports_no_new_trace_but_follows_a_sampled_caller() {
    let collector = Collector::start();
    let guard = TracingGuard::new(&collector.settings(0.0)).unwrap().unwrap();
    let spans = guard.spans();

    // A new trace: not sampled, yet it has an id and tells the upstream so.
    let root = spans.server_span(&McpCall::new("demo", "tools/list", Era::Modern));
    assert!(!root.is_recording());
    let root_trace = root.trace_id().unwrap();
    let upstream = "upstream.internal".parse().unwrap();
    let sent = root.client_span(&upstream).traceparent().unwrap();
    assert_eq!(sent.trace_id(), root_trace);
    assert!(sent.as_str().ends_with("-00"), "{sent}");

    // A caller that did not sample: not recorded either.
    let unsampled = HEADER.replace("-01", "-00");
    let call = McpCall {
        header_traceparent: Some(&unsampled),
        ..McpCall::new("demo", "ping", Era::Modern)
    };
    assert!(!spans.server_span(&call).is_recording());

    // A sampled caller is followed, and so is the upstream call.
    let followed = spans.server_span(&tool_call());
    assert!(followed.is_recording());
    followed.client_span(&upstream).end();
    drop(root);
    followed.end();
    guard.force_flush().unwrap();

    let got = collector.spans();
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(got.iter().all(|(_, s)| hex(&s.trace_id) == CALLER_TRACE));
}

#[test]
fn shutdown_from_inside_the_server_runtime_sends_the_last_spans() {
    let collector = Collector::start();
    let guard = TracingGuard::new(&collector.settings(1.0)).unwrap().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        guard.spans().server_span(&tool_call()).end();
        drop(guard);
    });
    assert_eq!(collector.spans().len(), 1);
}

#[test]
fn tracing_off_records_nothing_but_reports_the_callers_trace() {
    let settings = TracingSettings {
        enabled: false,
        ..exporting_to("http://127.0.0.1:4318", Duration::from_secs(5))
    };
    assert!(TracingGuard::new(&settings).unwrap().is_none());
    let spans = Spans::disabled();
    assert!(!spans.is_enabled());
    let mut server = spans.server_span(&tool_call());
    assert_eq!(server.trace_id().unwrap().to_string(), CALLER_TRACE);
    assert!(!server.is_recording());
    let client = server.client_span(&"127.0.0.1:3001".parse().unwrap());
    assert_eq!(client.traceparent(), None);
    server.set_jsonrpc_error(-32603, "ignored");
    server.end();
    let bare = spans.server_span(&McpCall::new("demo", "tools/list", Era::Modern));
    assert_eq!(bare.trace_id(), None);
}

#[test]
fn an_unreachable_collector_fails_the_flush_not_the_request() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = exporting_to(&format!("http://127.0.0.1:{port}"), Duration::from_millis(300));
    let guard = TracingGuard::new(&settings).unwrap().unwrap();
    guard.spans().server_span(&tool_call()).end();
    assert!(guard.force_flush().is_err());
    let stats = guard.span_counts().stats();
    assert_eq!(
        (stats.ended, stats.exported, stats.failed),
        (1, 0, 1),
        "the failed export is counted"
    );
    drop(guard);
}

#[test]
fn spans_travel_between_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<Spans>();
    send_sync::<tollgate_telemetry::ServerSpan>();
    send_sync::<tollgate_telemetry::ClientSpan>();
    send_sync::<TracingGuard>();
}
