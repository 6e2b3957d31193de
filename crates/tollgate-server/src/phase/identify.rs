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
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http_body_util::{BodyExt, LengthLimitError};
use tollgate_core::{Era, ErrorKind, McpMethod};
use tollgate_mcp::{Call, CallPlan, Scanned, StandardHeaders, classify_post, scan};

use crate::body::CountedBody;
use crate::facts::{BodyFacts, BytesIn, Identified, family_of};
use crate::phase::classify::{Classified, Kind};
use crate::rescue::Rejection;
use crate::route::Route;
use crate::vserver::Delegated;

/// The identified call and the body to forward.
pub(crate) type Outcome = Result<(Identified, Body), Rejection>;

/// Identify the call of a classified request.
pub(crate) async fn identify(route: &Route, request: &Classified, parts: &Parts, body: Body) -> (BodyFacts, Outcome) {
    match request.kind {
        Kind::Post => post(route, &request.headers, parts, body).await,
        Kind::Stream | Kind::EndSession if route.legacy() => {
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
                bytes_in: BytesIn::Known(content_length(parts).unwrap_or(0)),
                ..BodyFacts::default()
            };
            (facts, Ok((Identified { call, family }, body)))
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

async fn post(route: &Route, headers: &StandardHeaders, parts: &Parts, body: Body) -> (BodyFacts, Outcome) {
    if let Err(e) = check_content_type(parts) {
        return (BodyFacts::default(), Err(e));
    }
    let trusted = route.trusts_headers();
    match CallPlan::from_headers(headers, trusted, route.served_versions()) {
        Ok(CallPlan::HeadersOnly(call)) => unread(parts, body, call),
        Ok(CallPlan::ScanBody) => match read(body).await {
            Err(e) => (BodyFacts::default(), Err(e)),
            Ok(bytes) => {
                let known = parts.extensions.get::<Delegated>().and_then(|d| d.scanned.clone());
                scanned(route, headers, bytes, known)
            }
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
            (facts, Err(route.version_error(e).with_id(id).into()))
        }
    }
}

/// A call identified from its headers: the body streams upstream unread.
fn unread(parts: &Parts, body: Body, call: Call) -> (BodyFacts, Outcome) {
    let family = family_of(&call.messages);
    let (bytes_in, body) = match content_length(parts) {
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
    (facts, Ok((Identified { call, family }, body)))
}

/// A call identified by scanning its body — or by the scan a virtual
/// server made before routing it here (`known`, renamed with the body).
fn scanned(route: &Route, headers: &StandardHeaders, bytes: Bytes, known: Option<Scanned>) -> (BodyFacts, Outcome) {
    let found = known.map_or_else(|| scan(&bytes), Ok);
    let mut facts = BodyFacts {
        bytes_in: BytesIn::Known(bytes.len() as u64),
        messages: found.as_ref().map(|s| s.messages().to_vec()).unwrap_or_default(),
        captured: None,
        bytes: Some(bytes.clone()),
    };
    let call = found.and_then(|s: Scanned| classify_post(headers, &s, route.served_versions()));
    match call {
        Ok(call) => {
            if route.captures(&call) {
                facts.captured = Some(bytes.clone());
            }
            let family = family_of(&call.messages);
            (facts, Ok((Identified { call, family }, Body::from(bytes))))
        }
        Err(e) => (facts, Err(route.version_error(e).into())),
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

/// The declared body length.
pub(crate) fn content_length(parts: &Parts) -> Option<u64> {
    parts.headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
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
