//! After credential, for a legacy client that declared URL-mode
//! elicitation (MCP 2025-11-25) and whose call needs a grant it lacks:
//! instead of the `-32042` error, the call's own answer becomes an SSE
//! stream that asks the client — an `elicitation/create` request in URL
//! mode — and stays open while the user connects. Once the vault holds
//! the grant, `notifications/elicitation/complete` follows and the call is
//! served again from the top of the request path (the same head and body,
//! so every phase decides it afresh), its answer relayed on the stream.
//! The client closing the stream, or the connect link expiring, ends the
//! wait. The client's answer to the gateway's own request (an id the
//! gateway minted) is taken here with `202` and never forwarded.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderValue, Request};
use http_body_util::{BodyExt as _, Limited};
use serde_json::json;
use tokio::sync::mpsc;
use tollgate_core::{ErrorKind, Principal};
use tollgate_mcp::{Message, MessageKind};

use super::respond::{metered, rendered};
use crate::rescue::{Rejection, UrlElicitation};
use crate::route::Route;
use crate::stage::{Identified, Stage, Stop};

/// Ids of the gateway's own requests to clients start so.
const OURS: &str = "tollgate-connect-";
/// How long a call waits for its user to connect: the connect link's life.
const WAIT: Duration = Duration::from_secs(900);
/// How often the vault is asked meanwhile.
const POLL: Duration = Duration::from_millis(500);
/// The largest JSON answer of the served call relayed as one event.
const MAX_ANSWER: usize = 16 << 20;

type Tx = mpsc::Sender<Bytes>;

/// How a call is served again from the top of the request path (the
/// request path's own entry, handed in: this phase does not name it).
pub(crate) type ServeAgain = fn(Arc<Route>, Request<Body>) -> BoxFuture<'static, Response>;

/// The answer to `stop` (a call whose caller is asked to connect by an
/// `elicitation/create` request): an SSE stream, recorded as the call's
/// answer, that serves the call once the user has connected.
pub(crate) fn ask(route: &Arc<Route>, mut stop: Stop, (parts, body): (Parts, Body), again: ServeAgain) -> Response {
    let Some(elicit) = stop.rejection.elicit.take() else {
        return super::respond::refuse(route, stop);
    };
    // Not an error on the wire: the record keeps the class, no JSON-RPC code.
    stop.rejection.result = Some(Box::new(json!({"elicitation": "url"})));
    let principal = stop.facts.principal.clone();
    let (facts, rejection, _) = rendered(stop);
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let first = event(
        &json!({"jsonrpc": "2.0", "id": format!("{OURS}{}", elicit.id), "method": "elicitation/create",
        "params": {"mode": "url", "elicitationId": elicit.id, "url": elicit.url, "message": elicit.message}}),
    );
    // The channel is empty: the first event always fits.
    let _ = tx.try_send(first);
    tokio::spawn(wait_then_serve(
        Arc::clone(route),
        principal,
        elicit,
        (parts, body),
        (tx, again),
    ));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    let mut res = Response::new(Body::from_stream(stream));
    let headers = res.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    metered(route, facts, res, Some(rejection))
}

/// One SSE event carrying `message`.
fn event(message: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// Wait for the grant, say so, then serve the call and relay its answer.
async fn wait_then_serve(
    route: Arc<Route>,
    principal: Option<Arc<Principal>>,
    elicit: Box<UrlElicitation>,
    (parts, body): (Parts, Body),
    (tx, again): (Tx, ServeAgain),
) {
    if !connected(&route, principal.as_deref(), &elicit, &tx).await {
        return;
    }
    let done = json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
        "params": {"elicitationId": elicit.id}});
    if tx.send(event(&done)).await.is_err() {
        return;
    }
    let Ok(bytes) = body.collect().await.map(http_body_util::Collected::to_bytes) else {
        return;
    };
    let answer = again(route, Request::from_parts(parts, Body::from(bytes))).await;
    relay(answer, &tx).await;
}

/// Whether the caller connected `elicit.server` before the client left
/// or the link expired.
async fn connected(route: &Route, principal: Option<&Principal>, elicit: &UrlElicitation, tx: &Tx) -> bool {
    let (Some(vault), Some(p)) = (route.shared.vault.as_ref(), principal) else {
        return false;
    };
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        tokio::select! {
            () = tx.closed() => return false,
            () = tokio::time::sleep(POLL) => {}
        }
        if let Ok(Some(_)) = vault.peek(&p.issuer, &p.subject, &elicit.server).await {
            return true;
        }
    }
    tracing::info!(server = %elicit.server, subject = %p.subject, "the user did not connect in time");
    false
}

/// The served call's answer on the stream: its events as they come, or
/// its JSON as one event.
async fn relay(answer: Response, tx: &Tx) {
    let sse = tollgate_mcp::sse::is_event_stream(answer.headers());
    let mut body = answer.into_body();
    if !sse {
        if let Ok(all) = Limited::new(body, MAX_ANSWER).collect().await {
            let all = all.to_bytes();
            let mut out = b"event: message\ndata: ".to_vec();
            out.extend_from_slice(&all);
            out.extend_from_slice(b"\n\n");
            let _ = tx.send(Bytes::from(out)).await;
        }
        return;
    }
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data()
            && tx.send(data).await.is_err()
        {
            return;
        }
    }
}

/// A POST that only answers the gateway's own requests: taken here
/// (`202`), never forwarded.
///
/// # Errors
///
/// The stop that answers it.
pub(crate) fn take_answers(identified: Identified) -> Result<Identified, Stop> {
    let ours = |m: &Message| {
        m.kind == MessageKind::Response
            && m.id
                .as_ref()
                .is_some_and(|id| id.as_json().trim_matches('"').starts_with(OURS))
    };
    if identified.messages().is_empty() || !identified.messages().iter().all(ours) {
        return Ok(identified);
    }
    let mut taken = Rejection::new(ErrorKind::UrlElicitationRequired, "");
    taken.accepted = true;
    Err(identified.stop(taken))
}
