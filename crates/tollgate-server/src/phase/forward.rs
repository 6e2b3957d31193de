//! Phase 10, forward: send the call upstream and take the answer's head.
//!
//! In strict audit durability the call's `forwarding` record is made
//! durable first ([`durable`]); the gateway refuses the call rather than
//! forward it unrecorded. The request goes out with its body as received
//! (or as the bytes already scanned), the upstream's `Host`, the brokered
//! credential instead of the caller's token, the upstream session id, and
//! the client span's `traceparent`. Hop-by-hop headers are dropped both
//! ways. The answer's body is not read here: it streams to the client.

use std::future::Future;
use std::pin::Pin;

use axum::body::Body;
use axum::response::Response;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Request, Version};
use tokio::time::timeout;
use tollgate_core::ErrorKind;
use tollgate_mcp::headers::SESSION_ID;

use crate::body::IdleBody;
use crate::facts::ForwardFacts;
use crate::phase::identify::is_too_large;
use crate::rescue::Rejection;
use crate::route::Route;
use crate::stage::{Credentialed, Forwarded, Outbound, Stage, Stop};
use crate::summary;
use crate::upstream::{GuardRejection, SendError};

/// `traceparent` (W3C trace context).
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// `X-Accel-Buffering`, which tells proxies in front not to buffer SSE.
const ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// Whether a header describes one connection and is never forwarded (RFC
/// 9110 §7.6.1).
fn is_hop_by_hop(name: &HeaderName) -> bool {
    *name == header::CONNECTION
        || *name == header::PROXY_AUTHENTICATE
        || *name == header::PROXY_AUTHORIZATION
        || *name == header::TE
        || *name == header::TRAILER
        || *name == header::TRANSFER_ENCODING
        || *name == header::UPGRADE
        || matches!(name.as_str(), "keep-alive" | "proxy-connection")
}

/// Send the credentialed call upstream; the answer's head.
///
/// # Errors
///
/// The stop of a call whose record could not be made durable (strict
/// audit), that the upstream's guard refused, or that got no answer.
pub(crate) async fn forward(
    route: &Route,
    call: Credentialed,
    parts: Parts,
    body: Body,
) -> Result<(Forwarded, Response), Stop> {
    if route.strict_audit {
        let durable = durable(route, &call).await;
        let (call, ()) = call.check(durable)?;
        return send(route, call, parts, body).await;
    }
    send(route, call, parts, body).await
}

/// Strict durability: the call's `forwarding` record must be on disk
/// before it is forwarded; `audit_unavailable` (503) when it could not be
/// made durable. Boxed: rare, and the audit writer's wait is large.
fn durable<'a>(
    route: &'a Route,
    call: &Credentialed,
) -> Pin<Box<dyn Future<Output = Result<(), Rejection>> + Send + 'a>> {
    let intent = summary::intent(route, call);
    let id = call.first_id();
    Box::pin(async move {
        route.audit.before_forwarding(&intent).await.map_err(|e| {
            tracing::error!(error = %e, "audit record not durable: call refused");
            Rejection::new(ErrorKind::AuditUnavailable, "Audit trail unavailable").with_id(id)
        })
    })
}

/// Send the call; the next stage records the upstream's timing either way.
async fn send(route: &Route, call: Credentialed, parts: Parts, body: Body) -> Result<(Forwarded, Response), Stop> {
    let span = call.span.client_span(&route.upstream.authority);
    let mut headers = parts.headers;
    match span.traceparent() {
        Some(tp) => headers.insert(TRACEPARENT, tp.header_value()),
        None => headers.remove(TRACEPARENT),
    };
    let id = call.first_id();
    let start = call.facts.arrival.start;
    let Credentialed { limited, outbound } = call;
    let up = &route.upstream;
    let admitted = match up.guard.admit() {
        Ok(admitted) => admitted,
        Err(refused) => {
            let upstream = ForwardFacts {
                ttfb: None,
                span: Some(span),
            };
            return Err(Forwarded { limited, upstream }.stop(guarded(refused).with_id(id)));
        }
    };
    let req = upstream_request(route, parts.method, headers, body, outbound);
    let sent = timeout(up.first_byte(), up.client.send(&up.origin, &up.absolute, req)).await;
    let ttfb = start.elapsed();
    let ok = matches!(&sent, Ok(Ok(res)) if !res.status().is_server_error());
    up.guard.record(admitted, ok);
    let answer = match sent {
        Err(_) => Err(Rejection::new(ErrorKind::UpstreamTimeout, "Upstream timed out")),
        Ok(Err(e)) => Err(send_failure(&e)),
        Ok(Ok(res)) => Ok(downstream(res, up.timeouts.idle)),
    };
    let upstream = ForwardFacts {
        ttfb: answer.as_ref().ok().map(|_| ttfb),
        span: Some(span),
    };
    let forwarded = Forwarded { limited, upstream };
    match answer {
        Ok(res) => Ok((forwarded, res)),
        Err(rejection) => Err(forwarded.stop(rejection.with_id(id))),
    }
}

/// The refusal of a call the upstream's guard did not let through.
fn guarded(refused: GuardRejection) -> Rejection {
    match refused {
        GuardRejection::Full => {
            let mut r = Rejection::new(ErrorKind::Overloaded, "Upstream busy: at its concurrency limit");
            r.retry_after = Some(1);
            r
        }
        GuardRejection::Open(left) => {
            let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
            let secs = u32::try_from(secs.max(1)).unwrap_or(u32::MAX);
            let mut r = Rejection::new(ErrorKind::CircuitOpen, "Upstream unavailable: circuit open");
            r.data = Some(Box::new(serde_json::json!({"retryAfter": secs})));
            r.retry_after = Some(secs);
            r
        }
    }
}

/// The upstream request: same method and body, the upstream's target and
/// `Host`, the client's headers minus hop-by-hop, `Authorization` and
/// `Expect`, with the brokered credential and the upstream session.
fn upstream_request(
    route: &Route,
    method: http::Method,
    mut headers: HeaderMap,
    body: Body,
    out: Outbound,
) -> Request<Body> {
    strip_hop_by_hop(&mut headers);
    headers.remove(header::AUTHORIZATION);
    if let Some(c) = out.credential {
        headers.insert(c.name, c.value);
    }
    headers.remove(header::EXPECT);
    headers.insert(header::HOST, route.upstream.host.clone());
    match out.session {
        Some(id) => headers.insert(SESSION_ID, id),
        None => headers.remove(SESSION_ID),
    };
    let mut req = Request::new(body);
    *req.method_mut() = method;
    *req.uri_mut() = route.upstream.path.clone();
    *req.headers_mut() = headers;
    req
}

/// The upstream's answer as it goes to the client: hop-by-hop headers
/// dropped, SSE marked unbuffered, the body under the idle deadline.
fn downstream(res: http::Response<crate::upstream::Pooled>, idle: std::time::Duration) -> Response {
    let (mut parts, body) = res.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let sse = tollgate_mcp::sse::is_event_stream(&parts.headers);
    if sse {
        parts.headers.insert(ACCEL_BUFFERING, HeaderValue::from_static("no"));
    }
    parts.version = Version::HTTP_11;
    Response::from_parts(parts, Body::new(IdleBody::new(body, idle)))
}

/// The rejection for a failed upstream call.
fn send_failure(e: &SendError) -> Rejection {
    if is_too_large(e) {
        return Rejection::new(ErrorKind::BodyTooLarge, "Request body too large");
    }
    tracing::warn!(error = %e, source = ?std::error::Error::source(e), "upstream request failed");
    if matches!(e, SendError::Connect(_)) && e.is_timeout() {
        Rejection::new(ErrorKind::UpstreamTimeout, "Upstream timed out")
    } else {
        Rejection::new(ErrorKind::UpstreamUnavailable, "Upstream unavailable")
    }
}

/// Remove hop-by-hop headers, including those the `Connection` header
/// names. One pass over the names finds them; most requests have none.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    if !headers.keys().any(is_hop_by_hop) {
        return;
    }
    // The common case: `Connection: keep-alive` (or `close`) alone.
    let connection = headers.get_all(header::CONNECTION);
    let simple = connection.iter().all(|v| {
        let v = v.as_bytes();
        v.eq_ignore_ascii_case(b"keep-alive") || v.eq_ignore_ascii_case(b"close")
    });
    if simple && headers.keys().filter(|k| is_hop_by_hop(k)).count() == 1 {
        headers.remove(header::CONNECTION);
        return;
    }
    let mut named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    named.extend(headers.keys().filter(|k| is_hop_by_hop(k)).cloned());
    for name in &named {
        headers.remove(name);
    }
}
