//! What the server's unit tests share: a gateway built from configuration
//! text with a recording observer, its public service to call with
//! `oneshot`, a small upstream stub, and request builders.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::post;
use http::Request;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tollgate_core::{CallObserver, CallSummary};
use tower::ServiceExt as _;

use crate::Gateway;
use crate::stack::Public;

/// Keeps every summary it is handed.
#[derive(Default)]
pub(crate) struct Recorder(Mutex<Vec<CallSummary>>);

impl CallObserver for Recorder {
    fn observe(&self, summary: &CallSummary) {
        self.0.lock().unwrap().push(summary.clone());
    }
}

impl Recorder {
    /// The summaries so far.
    pub(crate) fn summaries(&self) -> Vec<CallSummary> {
        self.0.lock().unwrap().clone()
    }
}

/// A gateway under test.
pub(crate) struct TestGateway {
    pub(crate) gateway: Gateway,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) dir: tempfile::TempDir,
}

impl TestGateway {
    /// A gateway from configuration text (without `[listen]`); relative
    /// paths resolve in a fresh temporary directory, which also holds the
    /// audit trail (off unless the text turns it on).
    pub(crate) fn new(config: &str) -> TestGateway {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n[runtime]\nworker_threads = 1\n{config}"
        );
        let text = if text.contains("[audit]") {
            text
        } else {
            format!("{text}\n[audit]\nenabled = false\n")
        };
        let path = dir.path().join("test.toml");
        let loaded = tollgate_config::load_str(&path, &text, &tollgate_config::ProcessEnvironment)
            .unwrap_or_else(|e| panic!("test config is invalid:\n{e}"));
        let recorder = Arc::new(Recorder::default());
        let extra: Vec<Arc<dyn CallObserver>> = vec![recorder.clone()];
        let gateway = Gateway::with_observers(&loaded, prometheus::Registry::new(), extra).unwrap();
        TestGateway { gateway, recorder, dir }
    }

    /// The public service.
    pub(crate) fn service(&self) -> Public {
        self.gateway.public_service()
    }

    /// Send one request through every layer and phase; the answer's status,
    /// headers and body, read to the end (so the call is summarised).
    pub(crate) async fn send(&self, req: Request<Body>) -> (http::StatusCode, http::HeaderMap, Value) {
        let res: Response = self.service().oneshot(req).await.unwrap();
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes)));
        (parts.status, parts.headers, value)
    }
}

/// An upstream that answers every JSON-RPC request with a result naming
/// its method, a `tools/list` with two tools, and an `initialize` with a
/// session id; it keeps the bodies it received.
pub(crate) struct Stub {
    /// Its MCP endpoint.
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Value>>>,
}

impl Stub {
    pub(crate) async fn spawn() -> Stub {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        let app = Router::new().route(
            "/mcp",
            post(move |body: axum::body::Bytes| {
                let kept = kept.clone();
                async move { answer(&kept, &body) }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Stub { url, seen }
    }
}

fn answer(kept: &Mutex<Vec<Value>>, body: &[u8]) -> Response {
    let msg: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    kept.lock().unwrap().push(msg.clone());
    let result = match msg["method"].as_str() {
        Some("tools/list") => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}},
                                               {"name": "secret", "inputSchema": {"type": "object"}}]}),
        Some("initialize") => json!({"protocolVersion": "2025-06-18", "capabilities": {},
                                     "serverInfo": {"name": "stub", "version": "1"}}),
        Some(m) => json!({"method": m}),
        None => return Response::builder().status(202).body(Body::empty()).unwrap(),
    };
    let mut res = Response::new(Body::from(
        json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string(),
    ));
    res.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    if msg["method"] == "initialize" {
        res.headers_mut()
            .insert("mcp-session-id", "upstream-session-1".parse().unwrap());
    }
    res
}

/// A 2026-07-28 POST to `path` with the standard headers and `body`.
pub(crate) fn modern(path: &str, method: &str, name: Option<&str>, body: Value) -> Request<Body> {
    let mut b = Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        b = b.header("mcp-name", n);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

/// A 2026-07-28 JSON-RPC body.
pub(crate) fn modern_body(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A legacy POST (no standard headers) to `path` with `body`.
pub(crate) fn legacy(path: &str, body: Value) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(body.to_string()))
        .unwrap()
}
