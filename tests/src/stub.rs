//! A recording upstream stub for behaviour real MCP servers cannot be asked
//! for on demand: slowness, a held-open SSE stream, and a record of exactly
//! what arrived (headers and body bytes).
//!
//! Paths: `/json` answers a JSON-RPC result with an `Mcp-Session-Id`;
//! `/slow` answers after two seconds; `/sse` sends one event, waits for
//! [`Stub::release`], sends a second and ends; dropping the stream (the
//! gateway cancelling) is reported through [`Stub::cancelled`]; `/token`
//! is an OAuth token endpoint issuing `brokered-N` tokens.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use futures_util::StreamExt;
use http::HeaderMap;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, Notify};

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request headers.
    pub headers: HeaderMap,
    /// The request body bytes.
    pub body: Bytes,
}

#[derive(Default)]
struct StubState {
    seen: Mutex<Vec<Seen>>,
    release: Notify,
    cancelled: Notify,
    was_cancelled: AtomicBool,
}

/// A running stub.
#[derive(Clone)]
pub struct Stub {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<StubState>,
}

impl Stub {
    /// Start the stub on a loopback port.
    pub async fn spawn() -> Stub {
        let state = Arc::new(StubState::default());
        let app = Router::new()
            .route("/json", any(json))
            .route("/slow", any(slow))
            .route("/sse", any(sse))
            .route("/announce", any(announce))
            .route("/token", any(token))
            .with_state(state.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Stub { base, state }
    }

    /// Everything received so far.
    pub async fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().await.clone()
    }

    /// Let a held `/sse` stream send its second event.
    pub fn release(&self) {
        self.state.release.notify_one();
    }

    /// Wait until a `/sse` stream was dropped before it finished.
    pub async fn cancelled(&self) {
        if !self.state.was_cancelled.load(Ordering::Acquire) {
            self.state.cancelled.notified().await;
        }
    }
}

async fn record(state: &StubState, req: Request) {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    state.seen.lock().await.push(Seen {
        headers: parts.headers,
        body,
    });
}

async fn json(State(state): State<Arc<StubState>>, req: Request) -> Response {
    record(&state, req).await;
    Response::builder()
        .header("content-type", "application/json")
        .header("mcp-session-id", "upstream-session-1")
        .header("connection", "x-upstream-private")
        .header("x-upstream-private", "hop")
        .body(Body::from(r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#))
        .unwrap()
}

/// An SSE answer that announces a changed tool list before its result, as
/// a server whose tools changed during a call does.
async fn announce(State(state): State<Arc<StubState>>, req: Request) -> Response {
    record(&state, req).await;
    let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n\
                event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

/// An OAuth token endpoint: every grant gets a fresh, numbered token.
async fn token(State(state): State<Arc<StubState>>, req: Request) -> Response {
    record(&state, req).await;
    let n = state.seen.lock().await.len();
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(format!(
            r#"{{"access_token":"brokered-{n}","token_type":"Bearer","expires_in":300,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}}"#
        )))
        .unwrap()
}

async fn slow(State(state): State<Arc<StubState>>, req: Request) -> Response {
    record(&state, req).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    Response::new(Body::from(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#))
}

/// Flags cancellation when the stream is dropped before its end.
struct DropFlag {
    state: Arc<StubState>,
    finished: bool,
}

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.finished {
            self.state.was_cancelled.store(true, Ordering::Release);
            self.state.cancelled.notify_waiters();
        }
    }
}

async fn sse(State(state): State<Arc<StubState>>, req: Request) -> Response {
    record(&state, req).await;
    let guard = DropFlag {
        state: state.clone(),
        finished: false,
    };
    let stream = futures_util::stream::unfold((0u8, guard), |(step, mut guard)| async move {
        let event = match step {
            0 => "data: {\"n\":1}\n\n",
            1 => {
                guard.state.release.notified().await;
                "data: {\"n\":2}\n\n"
            }
            _ => {
                guard.finished = true;
                drop(guard);
                return None;
            }
        };
        Some((
            Ok::<_, std::convert::Infallible>(Bytes::from_static(event.as_bytes())),
            (step + 1, guard),
        ))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream.boxed()))
        .unwrap()
}
