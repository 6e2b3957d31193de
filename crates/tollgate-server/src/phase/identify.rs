//! Phase 5, identify: the MCP identity of the call — era, protocol version,
//! and for each JSON-RPC message its method and target — from the standard
//! headers, or from one bounded scan of the body.
//!
//! On an `upstream`-trust route a 2026-07-28 request is identified from its
//! headers alone and its body streams to the upstream unread. Otherwise the
//! body is read (bounded by the body-limit layer) and scanned once, reading
//! only `id`, `method`, `params.name` / `uri` / `taskId` and the `_meta`
//! version, and the headers must agree with it (400 `-32020`). A legacy GET
//! stream or session DELETE carries no message. The body facts are returned
//! even when the call is refused, so that the refusal's records name the
//! messages the scan found.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::body::Body;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{HeaderMap, HeaderName};
use http_body_util::{BodyExt, LengthLimitError};
use tollgate_core::{Era, ErrorKind, McpMethod};
use tollgate_mcp::{Call, CallPlan, Scanned, StandardHeaders, classify_post, scan};
use tollgate_telemetry::{McpCall, ServerSpan};
use tracing::field::display;

use crate::body::CountedBody;
use crate::facts::{BodyFacts, BytesIn, CallIdentity, Facts, family_of};
use crate::phase::classify::{Classified, Kind};
use crate::rescue::Rejection;
use crate::route::Endpoint;
use crate::stage::{Authenticated, Identified, Stop};

/// The W3C trace context header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// The identified call and the body to forward.
type Outcome = Result<(CallIdentity, Body), Rejection>;

/// Identify the call of a classified request and start its server span.
/// What the body told is kept even when the call is refused.
///
/// # Errors
///
/// The stop of a request that does not identify as a call this route
/// serves: a wrong method or media type, an unreadable or oversized body,
/// headers that disagree with it, an unsupported protocol version.
pub(crate) async fn identify(
    endpoint: &impl Endpoint,
    request: &Classified,
    authenticated: Authenticated,
    parts: &Parts,
    body: Body,
) -> Result<(Identified, Body), Stop> {
    let declared = authenticated.facts.arrival.declared;
    let (read, outcome) = identity(endpoint, request, (parts, declared), body).await;
    let mut facts = authenticated.facts;
    facts.read(read);
    match outcome {
        Ok((CallIdentity { call, family }, body)) => {
            let span = server_span(endpoint, &facts, (&call, family), &parts.headers);
            Ok((
                Identified {
                    facts,
                    call,
                    family,
                    span,
                },
                body,
            ))
        }
        Err(rejection) => Err(Stop { facts, rejection }),
    }
}

/// Start the request's server span once the call is known, and name the
/// call on the request's log span.
fn server_span(
    endpoint: &impl Endpoint,
    facts: &Facts,
    (call, family): (&Call, McpMethod),
    headers: &HeaderMap,
) -> ServerSpan {
    let first = call.messages.first();
    let method = first.map_or(family.as_str(), |m| m.method.as_str());
    let log = tracing::Span::current();
    log.record("era", display(call.era.as_str()));
    log.record("method", display(method));
    if let Some(name) = first.and_then(|m| m.name.as_deref()) {
        log.record("name", display(name));
    }
    endpoint.shared().spans.server_span(&McpCall {
        target: first.and_then(|m| m.name.as_deref()),
        protocol_version: call.version.map(|v| v.as_str()),
        request_id: first.and_then(|m| m.id.as_ref()).map(|id| id.as_json()),
        meta_traceparent: call.messages.iter().find_map(|m| m.traceparent.as_deref()),
        header_traceparent: headers.get(&TRACEPARENT).and_then(|v| v.to_str().ok()),
        started: Some(facts.arrival.received),
        ..McpCall::new(endpoint.name(), method, call.era)
    })
}

/// The call of a classified request, and what its body told; `declared`
/// is the body size its `Content-Length` declares, read once on arrival.
async fn identity(
    endpoint: &impl Endpoint,
    request: &Classified,
    (parts, declared): (&Parts, Option<u64>),
    body: Body,
) -> (BodyFacts, Outcome) {
    match request.kind {
        Kind::Post => post(endpoint, &request.headers, (parts, declared), body).await,
        Kind::Stream | Kind::EndSession if endpoint.serves_legacy() => {
            let family = if request.kind == Kind::Stream {
                McpMethod::StreamGet
            } else {
                McpMethod::SessionDelete
            };
            let call = Call {
                era: Era::Legacy,
                version: request.headers.version.as_ref().and_then(|v| v.as_ref().ok()).copied(),
                messages: Vec::new(),
                scanned: false,
            };
            let facts = BodyFacts {
                bytes_in: BytesIn::Known(declared.unwrap_or(0)),
                ..BodyFacts::default()
            };
            (facts, Ok((CallIdentity { call, family }, body)))
        }
        _ => (
            BodyFacts::default(),
            Err(Rejection::new(
                ErrorKind::MethodNotAllowed,
                "Method not allowed: this route accepts POST only",
            )),
        ),
    }
}

async fn post(
    endpoint: &impl Endpoint,
    headers: &StandardHeaders,
    (parts, declared): (&Parts, Option<u64>),
    body: Body,
) -> (BodyFacts, Outcome) {
    if let Err(e) = check_content_type(parts) {
        return (BodyFacts::default(), Err(e));
    }
    let trusted = endpoint.trusts_headers();
    match CallPlan::from_headers(headers, trusted, endpoint.versions()) {
        Ok(CallPlan::HeadersOnly(call)) => unread(declared, body, call),
        Ok(CallPlan::ScanBody) => match read(body).await {
            Err(e) => (BodyFacts::default(), Err(e)),
            Ok(bytes) => scanned(endpoint, headers, bytes),
        },
        Err(e) => {
            // Read what there is to echo the id and record the messages.
            let bytes = read(body).await.ok();
            let found = bytes.as_deref().and_then(|b| scan(b).ok());
            let facts = BodyFacts {
                bytes_in: BytesIn::Known(bytes.map_or(0, |b| b.len() as u64)),
                messages: found.as_ref().map(|s| s.messages().to_vec()).unwrap_or_default(),
                captured: None,
                bytes: None,
            };
            let id = found.and_then(|s| s.first_id());
            (facts, Err(endpoint.version_refusal(e).with_id(id).into()))
        }
    }
}

/// A call identified from its headers: the body streams upstream unread.
fn unread(declared: Option<u64>, body: Body, call: Call) -> (BodyFacts, Outcome) {
    let family = family_of(&call.messages);
    let (bytes_in, body) = match declared {
        Some(n) => (BytesIn::Known(n), body),
        None => {
            let count = Arc::new(AtomicU64::new(0));
            let body = Body::new(CountedBody::new(body, count.clone()));
            (BytesIn::Counted(count), body)
        }
    };
    let facts = BodyFacts {
        bytes_in,
        ..BodyFacts::default()
    };
    (facts, Ok((CallIdentity { call, family }, body)))
}

/// A call identified by scanning its body.
fn scanned(endpoint: &impl Endpoint, headers: &StandardHeaders, bytes: Bytes) -> (BodyFacts, Outcome) {
    let found = scan(&bytes);
    let mut facts = BodyFacts {
        bytes_in: BytesIn::Known(bytes.len() as u64),
        messages: found.as_ref().map(|s| s.messages().to_vec()).unwrap_or_default(),
        captured: None,
        bytes: Some(bytes.clone()),
    };
    let call = found.and_then(|s: Scanned| classify_post(headers, &s, endpoint.versions()));
    match call {
        Ok(call) => {
            if endpoint.captures(&call) {
                facts.captured = Some(bytes.clone());
            }
            let family = family_of(&call.messages);
            (facts, Ok((CallIdentity { call, family }, Body::from(bytes))))
        }
        Err(e) => (facts, Err(endpoint.version_refusal(e).into())),
    }
}

fn check_content_type(parts: &Parts) -> Result<(), Rejection> {
    let is_json = |v: &[u8]| v.trim_ascii().eq_ignore_ascii_case(b"application/json");
    let ok = parts.headers.get(CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        // `application/json`, possibly with parameters (`; charset=utf-8`).
        is_json(v.split(|b| *b == b';').next().unwrap_or(v))
    });
    if ok {
        Ok(())
    } else {
        Err(Rejection::new(
            ErrorKind::UnsupportedMediaType,
            "Unsupported media type: use application/json",
        ))
    }
}

/// Read the whole body (the body-limit layer bounds it).
async fn read(body: Body) -> Result<Bytes, Rejection> {
    match body.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if is_too_large(&e) => Err(Rejection::new(ErrorKind::BodyTooLarge, "Request body too large")),
        Err(_) => Err(Rejection::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: the body could not be read",
        )),
    }
}

/// Whether a body error is the size limit.
pub(crate) fn is_too_large(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<LengthLimitError>() {
            return true;
        }
        cur = err.source();
    }
    false
}
