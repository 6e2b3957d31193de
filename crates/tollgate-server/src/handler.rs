//! The MCP handler for one route (`/mcp/{server}`): steps 4–6 and 10–11 of
//! the request path.
//!
//! Every request is first authenticated when the route requires it
//! (`identity`). POST: classify the era from the standard headers, scan the body when the
//! route verifies headers or the call is legacy, check header/body agreement,
//! unseal the legacy session, forward, and seal the upstream's session id in
//! the answer. GET and DELETE (legacy session streams and session end) are
//! forwarded with the unsealed session; a modern-only route answers 405.

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

use crate::forward::{send, upstream_request};
use crate::identity::{authenticate, upstream_credential};
use crate::rescue::error_response;
use crate::session::{SessionClaims, SessionError};
use crate::{CallLabels, Shared, Upstream};

type Outcome = Result<Response, McpError>;

/// Handle one request on `up`'s route.
pub(crate) async fn handle(shared: Arc<Shared>, up: Arc<Upstream>, req: Request<Body>) -> Response {
    let (parts, body) = req.into_parts();
    let mut method = McpMethod::Other;
    let principal = match authenticate(&shared, &up, &parts).await {
        Ok(p) => p,
        Err(refused) => return labelled(refused, &up, method),
    };
    let caller = Caller {
        principal: principal.as_ref(),
    };
    let outcome = match parts.method {
        Method::POST => post(&shared, &up, parts, body, caller, &mut method).await,
        Method::GET | Method::DELETE if up.legacy => {
            method = if parts.method == Method::GET {
                McpMethod::StreamGet
            } else {
                McpMethod::SessionDelete
            };
            session_request(&shared, &up, parts, body, caller).await
        }
        _ => Err(McpError::new(
            ErrorKind::MethodNotAllowed,
            "Method not allowed: this route accepts POST only",
        )),
    };
    labelled(outcome.unwrap_or_else(|e| error_response(&e)), &up, method)
}

/// Leave the metrics labels on the response.
fn labelled(mut res: Response, up: &Upstream, method: McpMethod) -> Response {
    res.extensions_mut().insert(CallLabels {
        route: up.label.clone(),
        method,
    });
    res
}

/// Who is calling, once authenticated (`None` on an open route).
#[derive(Clone, Copy)]
struct Caller<'a> {
    principal: Option<&'a Arc<Principal>>,
}

impl Caller<'_> {
    /// The subject sessions are bound to (empty on an open route).
    fn subject(&self) -> &str {
        self.principal.map_or("", |p| p.subject.as_str())
    }
}

async fn post(
    shared: &Shared,
    up: &Upstream,
    parts: Parts,
    body: Body,
    caller: Caller<'_>,
    method: &mut McpMethod,
) -> Outcome {
    check_content_type(&parts)?;
    let max = shared.limits.max_body_bytes;
    if content_length(&parts).is_some_and(|n| n > max as u64) {
        return Err(McpError::new(ErrorKind::BodyTooLarge, "Request body too large"));
    }
    let std_headers = StandardHeaders::read(&parts.headers);
    let (call, body) = match CallPlan::from_headers(&std_headers, up.trust == HeaderTrust::Upstream, up.legacy) {
        Ok(CallPlan::HeadersOnly(call)) => (call, Body::new(Limited::new(body, max))),
        Ok(CallPlan::ScanBody) => {
            let bytes = read_body(body, max).await?;
            let scanned = scan(&bytes)?;
            (classify_post(&std_headers, &scanned, up.legacy)?, Body::from(bytes))
        }
        Err(e) => {
            let id = read_body(body, max)
                .await
                .ok()
                .and_then(|b| scan(&b).ok())
                .and_then(|s| s.first_id());
            return Err(e.with_id(id));
        }
    };
    *method = call_family(&call);
    let id = call.messages.first().and_then(|m| m.id.clone());
    let legacy = call.era == Era::Legacy;
    let session = if legacy {
        unseal(shared, up, &parts, caller).map_err(|e| e.with_id(id.clone()))?
    } else {
        None
    };
    let credential = upstream_credential(shared, up, &parts, caller.principal)
        .await
        .map_err(|e| e.with_id(id.clone()))?;
    let req = upstream_request(up, Method::POST, parts.headers, body, session, credential);
    let res = send(up, req).await.map_err(|e| e.with_id(id))?;
    finish(shared, up, res, legacy, caller)
}

async fn session_request(shared: &Shared, up: &Upstream, parts: Parts, body: Body, caller: Caller<'_>) -> Outcome {
    let session = unseal(shared, up, &parts, caller)?;
    let credential = upstream_credential(shared, up, &parts, caller.principal).await?;
    let req = upstream_request(up, parts.method, parts.headers, body, session, credential);
    let res = send(up, req).await?;
    finish(shared, up, res, true, caller)
}

/// The family of a call for metrics: a batch counts as its first element.
fn call_family(call: &Call) -> McpMethod {
    call.messages.first().map_or(McpMethod::Other, |m| {
        if m.method.is_empty() {
            McpMethod::Response
        } else {
            McpMethod::from_name(&m.method)
        }
    })
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
fn unseal(shared: &Shared, up: &Upstream, parts: &Parts, caller: Caller<'_>) -> Result<Option<HeaderValue>, McpError> {
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
        .unseal(sealed.trim(), &up.name, caller.subject())
        .map_err(not_found)?;
    HeaderValue::from_str(&claims.upstream_id)
        .map(Some)
        .map_err(|_| not_found(SessionError::Invalid))
}

/// Seal the upstream's session id (legacy) or drop it (modern).
fn finish(shared: &Shared, up: &Upstream, mut res: Response, legacy: bool, caller: Caller<'_>) -> Outcome {
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
        subject: caller.subject().to_owned(),
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
