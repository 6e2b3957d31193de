//! Step 11 of the request path: forward one call upstream and stream the
//! answer back.
//!
//! The request body is passed through as received (or as the bytes already
//! scanned); the response body is wrapped, not read: JSON and SSE frames
//! reach the client as they arrive. Hop-by-hop headers are dropped in both
//! directions; the client's `Authorization` never leaves the gateway.

use axum::body::Body;
use axum::response::Response;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Version};
use tollgate_auth::UpstreamCredential;
use tollgate_config::UpstreamHttp;
use tollgate_core::ErrorKind;
use tollgate_mcp::McpError;
use tollgate_mcp::headers::SESSION_ID;

use crate::body::IdleBody;
use crate::upstream::Upstream;

/// Headers that describe one connection, never forwarded (RFC 9110 §7.6.1).
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

/// Remove hop-by-hop headers, including those the `Connection` header names.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
    headers.remove(header::UPGRADE);
}

/// The upstream request: same method and body, the upstream's URI and
/// `Host`, client headers minus hop-by-hop, `Authorization` and `Expect`.
/// `session` replaces any `Mcp-Session-Id` the client sent; `credential`
/// is the brokered upstream credential.
pub(crate) fn upstream_request(
    up: &Upstream,
    method: http::Method,
    mut headers: HeaderMap,
    body: Body,
    session: Option<HeaderValue>,
    credential: Option<UpstreamCredential>,
) -> Request<Body> {
    strip_hop_by_hop(&mut headers);
    // The caller's token never leaves the gateway; the broker's credential
    // for this upstream, if any, takes its place.
    headers.remove(header::AUTHORIZATION);
    if let Some(c) = credential {
        headers.insert(c.name, c.value);
    }
    headers.remove(header::EXPECT);
    headers.insert(header::HOST, up.host.clone());
    match session {
        Some(id) => headers.insert(SESSION_ID, id),
        None => headers.remove(SESSION_ID),
    };
    let mut req = Request::new(body);
    *req.method_mut() = method;
    *req.uri_mut() = up.uri();
    *req.version_mut() = if up.http == UpstreamHttp::Http2 {
        Version::HTTP_2
    } else {
        Version::HTTP_11
    };
    *req.headers_mut() = headers;
    req
}

/// Send `req` upstream with the first-byte deadline and wrap the response
/// body with the idle deadline.
///
/// # Errors
///
/// `UpstreamTimeout` (504) or `UpstreamUnavailable` (502).
pub(crate) async fn send(up: &Upstream, req: Request<Body>) -> Result<Response, McpError> {
    let res = match tokio::time::timeout(up.timeouts.first_byte, up.client.request(req)).await {
        Err(_) => return Err(McpError::new(ErrorKind::UpstreamTimeout, "Upstream timed out")),
        Ok(Err(e)) => return Err(classify_client_error(up, &e)),
        Ok(Ok(res)) => res,
    };
    let (mut parts, incoming) = res.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let is_sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if is_sse {
        parts.headers.insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
    }
    parts.version = Version::HTTP_11;
    Ok(Response::from_parts(
        parts,
        Body::new(IdleBody::new(incoming, up.timeouts.idle)),
    ))
}

fn classify_client_error(up: &Upstream, e: &hyper_util::client::legacy::Error) -> McpError {
    if chain_any(e, |err| err.is::<http_body_util::LengthLimitError>()) {
        return McpError::new(ErrorKind::BodyTooLarge, "Request body too large");
    }
    let timed_out = e.is_connect()
        && chain_any(e, |err| {
            err.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        });
    tracing::warn!(upstream = %up.name, error = %e, source = ?std::error::Error::source(e), "upstream request failed");
    if timed_out {
        McpError::new(ErrorKind::UpstreamTimeout, "Upstream timed out")
    } else {
        McpError::new(ErrorKind::UpstreamUnavailable, "Upstream unavailable")
    }
}

/// Whether any error in the source chain of `e` satisfies `pred`.
fn chain_any(e: &(dyn std::error::Error + 'static), pred: impl Fn(&(dyn std::error::Error + 'static)) -> bool) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if pred(err) {
            return true;
        }
        cur = err.source();
    }
    false
}
