//! Shared helpers for the HTTP tests: start `tollgate-demo` on port 0, send
//! raw HTTP requests with hyper, and decode JSON or SSE bodies into JSON-RPC
//! messages.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};

/// Upper bound for any single exchange, so a hung stream fails the test.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// The 2026-07-28 revision string.
pub(crate) const MODERN: &str = "2026-07-28";

/// A running demo server with a shutdown handle.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    pub(crate) url: String,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    /// Binds 127.0.0.1:0 and serves the demo with default settings.
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(tollgate_demo::serve(listener, async move {
            let _ = signal.await;
        }));
        Self {
            addr,
            url: format!("http://{addr}/mcp"),
            shutdown,
            task,
        }
    }

    /// Triggers shutdown and asserts the server stops cleanly and promptly.
    pub(crate) async fn stop(self) {
        self.shutdown.send(()).unwrap();
        let joined = tokio::time::timeout(Duration::from_secs(3), self.task)
            .await
            .expect("server did not stop within 3 s");
        joined.unwrap().unwrap();
    }
}

/// One HTTP exchange, with the body decoded into JSON-RPC messages.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) content_type: String,
    pub(crate) messages: Vec<Value>,
    pub(crate) raw: String,
}

impl Reply {
    /// The last message, which is the JSON-RPC response on a request stream.
    pub(crate) fn last(&self) -> &Value {
        self.messages
            .last()
            .unwrap_or_else(|| panic!("no messages in {self:?}"))
    }

    /// Text of the first content block of a `tools/call` result.
    pub(crate) fn tool_text(&self) -> &str {
        self.last()["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no tool text in {self:?}"))
    }
}

/// Sends one request and returns as soon as the response head arrives.
pub(crate) async fn open(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Response<Incoming> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let request = request.body(Full::new(Bytes::from(payload))).unwrap();
    tokio::time::timeout(TIMEOUT, client.request(request))
        .await
        .expect("no response head in time")
        .unwrap()
}

/// Reads a whole response body and decodes it.
pub(crate) async fn read(response: Response<Incoming>) -> Reply {
    let (parts, body) = response.into_parts();
    let bytes = tokio::time::timeout(TIMEOUT, body.collect())
        .await
        .expect("body did not end in time")
        .unwrap()
        .to_bytes();
    let raw = String::from_utf8(bytes.to_vec()).unwrap();
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let messages = decode(&content_type, &raw);
    Reply {
        status: parts.status,
        headers: parts.headers,
        content_type,
        messages,
        raw,
    }
}

/// Sends one request and reads the whole response body.
pub(crate) async fn send(method: Method, url: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Reply {
    read(open(method, url, headers, body).await).await
}

fn decode(content_type: &str, raw: &str) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        return sse_messages(raw);
    }
    if content_type.starts_with("application/json") {
        return vec![serde_json::from_str(raw).unwrap()];
    }
    Vec::new()
}

/// Parses the `data:` payloads of an SSE body, skipping empty priming events.
pub(crate) fn sse_messages(raw: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    let mut data = String::new();
    for line in raw.lines().chain(std::iter::once("")) {
        if let Some(chunk) = line.strip_prefix("data:") {
            data.push_str(chunk.trim_start());
        } else if line.is_empty() && !data.trim().is_empty() {
            messages.push(serde_json::from_str(&data).unwrap());
            data.clear();
        } else if line.is_empty() {
            data.clear();
        }
    }
    messages
}

/// Headers every POST needs.
pub(crate) const POST_HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// The `_meta` object a 2026-07-28 request must carry.
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tollgate-demo-test", "version": "1"}
    })
}

/// POSTs a 2026-07-28 request with the standard headers (`Mcp-Name` when given).
pub(crate) async fn modern_call(server: &TestServer, method: &str, name: Option<&str>, mut params: Value) -> Reply {
    params["_meta"] = match params.get("_meta") {
        Some(extra) => {
            let mut meta = modern_meta();
            for (key, value) in extra.as_object().unwrap() {
                meta[key] = value.clone();
            }
            meta
        }
        None => modern_meta(),
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = POST_HEADERS.to_vec();
    headers.push(("mcp-protocol-version", MODERN));
    headers.push(("mcp-method", method));
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    send(Method::POST, &server.url, &headers, Some(&body)).await
}
