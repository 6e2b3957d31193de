//! The MCP handler for one route (`/mcp/{server}`): steps 4–13 of the
//! request path, in order.
//!
//! Every request is first authenticated when the route requires it
//! (`identity`). POST: classify the era from the standard headers, scan the
//! body when the route verifies headers or the call is legacy, check
//! header/body agreement, decide each request by policy (`authorize`),
//! unseal the legacy session, get the upstream credential, make the audit
//! record durable in strict mode, forward, filter list answers (`lists`),
//! and seal the upstream's session id in the answer. GET and DELETE (legacy
//! session streams and session end) are decided as `other_method` and
//! forwarded with the unsealed session; a modern-only route answers 405.
//! Whatever the outcome, the response leaves through the audit
//! (`audit::CallAudit::attach`), which writes the records when it ends.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::request::Parts;
use http::{Method, Request};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tollgate_config::HeaderTrust;
use tollgate_core::{Era, ErrorKind, McpMethod, Principal};
use tollgate_mcp::headers::SESSION_ID;
use tollgate_mcp::{Call, CallPlan, McpError, StandardHeaders, classify_post, scan};

use crate::audit::{CallAudit, Element};
use crate::authorize::{Refused, authorize_call, authorize_session};
use crate::body::CountedBody;
use crate::forward::{send, upstream_request};
use crate::identity::{authenticate, upstream_credential};
use crate::lists::{Asker, filter_response, list_of};
use crate::rescue::error_response;
use crate::session::{SessionClaims, SessionError};
use crate::{CallLabels, Shared, Upstream};

type Outcome = Result<Response, McpError>;

/// The peer address of the connection a request came on (set by `serve`).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// Handle one request on `up`'s route.
pub(crate) async fn handle(shared: Arc<Shared>, up: Arc<Upstream>, req: Request<Body>) -> Response {
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let client_ip = req.extensions().get::<ClientAddr>().map(|a| a.0.ip());
    let mut audit = CallAudit::start(shared.clone(), up.clone(), request_id, client_ip);
    let (parts, body) = req.into_parts();
    audit.bytes_in = content_length(&parts).unwrap_or(0);
    let outcome = match authenticate(&shared, &up, &parts).await {
        Err(refused) => Ok(refused),
        Ok(principal) => {
            audit.principal = principal;
            dispatch(&shared, &up, parts, body, &mut audit).await
        }
    };
    let res = outcome.unwrap_or_else(|e| error_response(&e));
    let res = labelled(res, &up, audit.family());
    audit.attach(res)
}

async fn dispatch(shared: &Shared, up: &Upstream, parts: Parts, body: Body, audit: &mut CallAudit) -> Outcome {
    match parts.method {
        Method::POST => post(shared, up, parts, body, audit).await,
        Method::GET | Method::DELETE if up.legacy => {
            let family = if parts.method == Method::GET {
                McpMethod::StreamGet
            } else {
                McpMethod::SessionDelete
            };
            audit.family = Some(family);
            audit.era = Some(Era::Legacy);
            audit.elements = vec![Element::http(parts.method.as_str())];
            audit.http_span(parts.method.as_str(), traceparent(&parts));
            let principal = audit.principal.clone();
            let verdict = authorize_session(shared, up, principal.as_ref(), audit.client_ip, family);
            audit.decided(vec![verdict.decisions]);
            if let Some(e) = verdict.refused {
                return Err(e);
            }
            session_request(shared, up, parts, body, audit).await
        }
        _ => Err(McpError::new(
            ErrorKind::MethodNotAllowed,
            "Method not allowed: this route accepts POST only",
        )),
    }
}

/// Leave the metrics labels on the response.
fn labelled(mut res: Response, up: &Upstream, method: McpMethod) -> Response {
    res.extensions_mut().insert(CallLabels {
        route: up.label.clone(),
        method,
    });
    res
}

/// The caller's W3C `traceparent` header.
fn traceparent(parts: &Parts) -> Option<&str> {
    parts.headers.get("traceparent").and_then(|v| v.to_str().ok())
}

/// The subject sessions are bound to (empty on an open route).
fn subject(principal: Option<&Arc<Principal>>) -> &str {
    principal.map_or("", |p| p.subject.as_str())
}

async fn post(shared: &Shared, up: &Upstream, parts: Parts, body: Body, audit: &mut CallAudit) -> Outcome {
    check_content_type(&parts)?;
    let (call, body) = classify(shared, up, &parts, body, audit).await?;
    let principal = audit.principal.clone();
    let verdict = authorize_call(shared, up, principal.as_ref(), &parts.headers, audit.client_ip, &call);
    audit.decided(verdict.decisions);
    match verdict.refused {
        Some(Refused::Error(e)) => return Err(e),
        Some(Refused::Response(res)) => return Ok(res),
        None => {}
    }
    forward_call(shared, up, parts, body, audit, &call).await
}

/// Steps 9–12 for an authorized POST: session, credential, durable audit
/// record (strict mode), forward, list filtering, session sealing.
async fn forward_call(
    shared: &Shared,
    up: &Upstream,
    mut parts: Parts,
    body: Body,
    audit: &mut CallAudit,
    call: &Call,
) -> Outcome {
    let id = call.messages.first().and_then(|m| m.id.clone());
    let with_id = |e: McpError| e.with_id(id.clone());
    let principal = audit.principal.clone();
    let legacy = call.era == Era::Legacy;
    let session = if legacy {
        unseal(shared, up, &parts, principal.as_ref()).map_err(with_id)?
    } else {
        None
    };
    let credential = upstream_credential(shared, up, &parts, principal.as_ref())
        .await
        .map_err(with_id)?;
    audit.before_forwarding().await.map_err(with_id)?;
    audit.forwarded = true;
    audit.start_client_span(&mut parts.headers);
    let req = upstream_request(up, Method::POST, parts.headers, body, session, credential);
    let mut res = send(up, req).await.map_err(with_id)?;
    audit.ttfb = Some(audit.start.elapsed());
    if list_of(audit.family()).is_some() {
        let asker = Asker {
            principal: principal.as_ref().unwrap_or(&shared.anonymous),
            era: call.era,
            client_ip: audit.client_ip,
            method: audit.family(),
        };
        res = filter_response(shared, up, &asker, res).await.map_err(with_id)?;
    }
    finish(shared, up, res, legacy, principal.as_ref())
}

/// Step 4: identify the call from the headers, or by scanning the body.
async fn classify(
    shared: &Shared,
    up: &Upstream,
    parts: &Parts,
    body: Body,
    audit: &mut CallAudit,
) -> Result<(Call, Body), McpError> {
    let max = shared.limits.max_body_bytes;
    if content_length(parts).is_some_and(|n| n > max as u64) {
        return Err(McpError::new(ErrorKind::BodyTooLarge, "Request body too large"));
    }
    let std_headers = StandardHeaders::read(&parts.headers);
    match CallPlan::from_headers(&std_headers, up.trust == HeaderTrust::Upstream, up.legacy) {
        Ok(CallPlan::HeadersOnly(call)) => {
            audit.classified(&call, traceparent(parts));
            let body = Limited::new(body, max);
            if content_length(parts).is_some() {
                return Ok((call, Body::new(body)));
            }
            // Chunked and forwarded unread: count the bytes as they pass.
            let count = audit.streamed_in.insert(Arc::default()).clone();
            Ok((call, Body::new(CountedBody::new(body, count))))
        }
        Ok(CallPlan::ScanBody) => {
            let bytes = read_body(body, max).await?;
            audit.bytes_in = bytes.len() as u64;
            let scanned = scan(&bytes)?;
            audit.scanned(scanned.messages());
            let call = classify_post(&std_headers, &scanned, up.legacy)?;
            audit.classified(&call, traceparent(parts));
            audit.capture_arguments(&bytes);
            Ok((call, Body::from(bytes)))
        }
        Err(e) => {
            let bytes = read_body(body, max).await.ok();
            audit.bytes_in = bytes.as_ref().map_or(0, |b| b.len() as u64);
            let scanned = bytes.and_then(|b| scan(&b).ok());
            if let Some(s) = &scanned {
                audit.scanned(s.messages());
            }
            Err(e.with_id(scanned.and_then(|s| s.first_id())))
        }
    }
}

async fn session_request(
    shared: &Shared,
    up: &Upstream,
    mut parts: Parts,
    body: Body,
    audit: &mut CallAudit,
) -> Outcome {
    let principal = audit.principal.clone();
    let session = unseal(shared, up, &parts, principal.as_ref())?;
    let credential = upstream_credential(shared, up, &parts, principal.as_ref()).await?;
    audit.before_forwarding().await?;
    audit.forwarded = true;
    audit.start_client_span(&mut parts.headers);
    let req = upstream_request(up, parts.method, parts.headers, body, session, credential);
    let res = send(up, req).await?;
    audit.ttfb = Some(audit.start.elapsed());
    finish(shared, up, res, true, principal.as_ref())
}

fn check_content_type(parts: &Parts) -> Result<(), McpError> {
    let ok = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if ok {
        Ok(())
    } else {
        Err(McpError::new(
            ErrorKind::UnsupportedMediaType,
            "Unsupported media type: use application/json",
        ))
    }
}

fn content_length(parts: &Parts) -> Option<u64> {
    parts.headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

async fn read_body(body: Body, max: usize) -> Result<Bytes, McpError> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(McpError::new(ErrorKind::BodyTooLarge, "Request body too large")),
        Err(_) => Err(McpError::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: the body could not be read",
        )),
    }
}

/// Replace the client's sealed session id with the upstream's.
fn unseal(
    shared: &Shared,
    up: &Upstream,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Option<HeaderValue>, McpError> {
    let Some(sealed) = parts.headers.get(SESSION_ID) else {
        return Ok(None);
    };
    let not_found = |why: SessionError| {
        tracing::debug!(route = %up.name, reason = %why, "session refused");
        McpError::new(ErrorKind::SessionNotFound, "Session not found")
    };
    let sealed = sealed.to_str().map_err(|_| not_found(SessionError::Invalid))?;
    let claims = shared
        .sealer
        .unseal(sealed.trim(), &up.name, subject(principal))
        .map_err(not_found)?;
    HeaderValue::from_str(&claims.upstream_id)
        .map(Some)
        .map_err(|_| not_found(SessionError::Invalid))
}

/// Seal the upstream's session id (legacy) or drop it (modern).
fn finish(
    shared: &Shared,
    up: &Upstream,
    mut res: Response,
    legacy: bool,
    principal: Option<&Arc<Principal>>,
) -> Outcome {
    let Some(upstream_id) = res.headers_mut().remove(SESSION_ID) else {
        return Ok(res);
    };
    if !legacy {
        return Ok(res);
    }
    let upstream_id = upstream_id
        .to_str()
        .map_err(|_| McpError::new(ErrorKind::UpstreamUnavailable, "Upstream sent an invalid session id"))?;
    let claims = SessionClaims {
        route: up.name.clone(),
        subject: subject(principal).to_owned(),
        upstream_id: upstream_id.to_owned(),
    };
    let sealed = shared
        .sealer
        .seal(&claims)
        .ok()
        .and_then(|s| HeaderValue::from_str(&s).ok())
        .ok_or_else(|| McpError::new(ErrorKind::Internal, "Internal error"))?;
    res.headers_mut().insert(SESSION_ID, sealed);
    Ok(res)
}
