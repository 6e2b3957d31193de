//! The one place where refusals and failures become HTTP responses.
//!
//! Every phase that stops a request returns a [`Rejection`]: its error
//! class, the JSON-RPC id when the body was read, a message for the caller,
//! optional `error.data`, and the headers the class needs (a
//! `WWW-Authenticate` challenge, `Retry-After`). [`status_and_code`] maps
//! each class to an HTTP status and a JSON-RPC code in one exhaustive
//! `match`; [`render`] writes the response, a refused legacy batch as one
//! array with an answer per request element. Internal detail goes to the
//! log, never into the body.

use std::borrow::Cow;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::StatusCode;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use serde_json::Value;
use tollgate_core::ErrorKind;
use tollgate_mcp::{McpError, RequestId, error_body, result_body};

/// HTTP status and JSON-RPC error code for an error class.
///
/// `docs/errors.md` is this table in prose; a test keeps the two in sync.
pub fn status_and_code(kind: ErrorKind) -> (StatusCode, i32) {
    match kind {
        ErrorKind::ParseError => (StatusCode::BAD_REQUEST, -32700),
        ErrorKind::InvalidRequest => (StatusCode::BAD_REQUEST, -32600),
        ErrorKind::HeaderMismatch => (StatusCode::BAD_REQUEST, -32020),
        ErrorKind::UnsupportedProtocolVersion => (StatusCode::BAD_REQUEST, -32022),
        ErrorKind::MissingMeta => (StatusCode::BAD_REQUEST, -32602),
        ErrorKind::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, -32000),
        ErrorKind::UnknownRoute => (StatusCode::NOT_FOUND, -32000),
        ErrorKind::SessionNotFound => (StatusCode::NOT_FOUND, -32000),
        ErrorKind::ForbiddenOrigin => (StatusCode::FORBIDDEN, -32000),
        ErrorKind::Unauthenticated => (StatusCode::UNAUTHORIZED, -32000),
        ErrorKind::InsufficientScope => (StatusCode::FORBIDDEN, -32000),
        ErrorKind::AuthUnavailable => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::PolicyDenied => (StatusCode::OK, -32602),
        ErrorKind::NotApproved => (StatusCode::OK, -32602),
        ErrorKind::UnknownName => (StatusCode::OK, -32602),
        ErrorKind::MethodNotFound => (StatusCode::OK, -32601),
        ErrorKind::RateLimited => (StatusCode::TOO_MANY_REQUESTS, -32029),
        ErrorKind::BudgetExhausted => (StatusCode::TOO_MANY_REQUESTS, -32030),
        ErrorKind::CircuitOpen => (StatusCode::SERVICE_UNAVAILABLE, -32001),
        ErrorKind::UrlElicitationRequired => (StatusCode::OK, -32042),
        ErrorKind::HeadersTooLarge => (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, -32000),
        ErrorKind::BodyTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, -32000),
        ErrorKind::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, -32000),
        ErrorKind::Overloaded => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::UpstreamUnavailable => (StatusCode::BAD_GATEWAY, -32001),
        ErrorKind::UpstreamTimeout => (StatusCode::GATEWAY_TIMEOUT, -32004),
        ErrorKind::ListUnfilterable => (StatusCode::BAD_GATEWAY, -32001),
        ErrorKind::AuditUnavailable => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::BatchNotForwarded => (StatusCode::OK, -32000),
        ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, -32603),
    }
}

/// The JSON-RPC code of an error class.
pub(crate) fn rpc_code(kind: ErrorKind) -> i64 {
    i64::from(status_and_code(kind).1)
}

/// The answer to one element of a refused legacy batch.
#[derive(Debug, Clone)]
pub(crate) struct ElementRejection {
    /// The element's position in the batch.
    pub(crate) index: usize,
    /// Its JSON-RPC id.
    pub(crate) id: Option<RequestId>,
    /// Why it is not answered by the upstream.
    pub(crate) kind: ErrorKind,
    /// The message for the caller.
    pub(crate) message: Cow<'static, str>,
}

/// Why a request stops at the gateway: one type for every refusal.
#[derive(Debug, Clone)]
pub(crate) struct Rejection {
    /// The error class (status and code).
    pub(crate) kind: ErrorKind,
    /// The JSON-RPC id to echo, when the body was read.
    pub(crate) id: Option<RequestId>,
    /// For the caller; never internal detail.
    pub(crate) message: Cow<'static, str>,
    /// `error.data`, when the spec defines one.
    pub(crate) data: Option<Box<Value>>,
    /// A `WWW-Authenticate` challenge (401, 403 `insufficient_scope`).
    pub(crate) challenge: Option<Box<HeaderValue>>,
    /// Seconds for `Retry-After`, when the class is transient.
    pub(crate) retry_after: Option<u32>,
    /// A refused legacy batch: one answer per request element.
    pub(crate) batch: Option<Box<[ElementRejection]>>,
    /// Answered with this JSON-RPC result instead of an error: the MRTR
    /// `input_required` result a 2026-07-28 client retries from.
    pub(crate) result: Option<Box<Value>>,
    /// A legacy client that takes URL-mode elicitation is asked on the
    /// call's own stream instead (`elicit`): the error is not sent.
    pub(crate) elicit: Option<Box<UrlElicitation>>,
    /// The gateway took the message itself (a client's answer to the
    /// gateway's own request): `202`, no body.
    pub(crate) accepted: bool,
}

/// A URL-mode elicitation the gateway sends a client itself.
#[derive(Debug, Clone)]
pub(crate) struct UrlElicitation {
    /// Its id (`elicitationId`).
    pub(crate) id: String,
    /// Where the user goes.
    pub(crate) url: String,
    /// What the client shows.
    pub(crate) message: String,
    /// The route whose grant it asks for.
    pub(crate) server: String,
}

impl ElementRejection {
    /// A request element of a refused batch that was refused for another
    /// element's sake.
    pub(crate) fn not_forwarded(index: usize, id: Option<RequestId>) -> ElementRejection {
        ElementRejection {
            index,
            id,
            kind: ErrorKind::BatchNotForwarded,
            message: "Batch not forwarded: another element was refused".into(),
        }
    }
}

impl Rejection {
    /// A rejection of class `kind` without id.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Rejection {
        let retry_after = matches!(
            kind,
            ErrorKind::Overloaded | ErrorKind::ShuttingDown | ErrorKind::AuthUnavailable | ErrorKind::AuditUnavailable
        )
        .then_some(1);
        Rejection {
            kind,
            id: None,
            message: message.into(),
            data: None,
            challenge: None,
            retry_after,
            batch: None,
            result: None,
            elicit: None,
            accepted: false,
        }
    }

    /// Echo `id` unless an id is already set.
    pub(crate) fn with_id(mut self, id: Option<RequestId>) -> Rejection {
        if self.id.is_none() {
            self.id = id;
        }
        self
    }

    /// Attach a `WWW-Authenticate` challenge.
    pub(crate) fn with_challenge(mut self, challenge: Option<HeaderValue>) -> Rejection {
        self.challenge = challenge.map(Box::new);
        self
    }

    /// A refused batch: `kind` for the request, per-element answers.
    pub(crate) fn batch(kind: ErrorKind, elements: Vec<ElementRejection>) -> Rejection {
        Rejection {
            batch: Some(elements.into_boxed_slice()),
            ..Rejection::new(kind, "")
        }
    }

    /// The JSON-RPC code answered to the element at `index` (none when
    /// the answer is a result).
    pub(crate) fn code_of(&self, index: usize) -> Option<i64> {
        if self.result.is_some() || self.accepted {
            return None;
        }
        match &self.batch {
            None => Some(rpc_code(self.kind)),
            Some(all) => all.iter().find(|e| e.index == index).map(|e| rpc_code(e.kind)),
        }
    }
}

impl From<McpError> for Rejection {
    fn from(e: McpError) -> Rejection {
        Rejection {
            id: e.id,
            data: e.data,
            ..Rejection::new(e.kind, e.message)
        }
    }
}

/// The response for a rejection.
pub(crate) fn render(r: &Rejection) -> Response {
    if r.accepted {
        let mut res = Response::new(Body::empty());
        *res.status_mut() = StatusCode::ACCEPTED;
        return res;
    }
    let (status, code) = status_and_code(r.kind);
    let body = match (&r.batch, &r.result) {
        (Some(elements), _) => batch_body(elements),
        (None, Some(result)) => result_body(r.id.as_ref(), result),
        (None, None) => error_body(r.id.as_ref(), code, &r.message, r.data.as_deref()),
    };
    let mut res = Response::new(Body::from(body));
    *res.status_mut() = status;
    let headers = res.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(secs) = r.retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(challenge) = &r.challenge {
        headers.insert(WWW_AUTHENTICATE, (**challenge).clone());
    }
    if r.kind == ErrorKind::MethodNotAllowed {
        headers.insert(ALLOW, HeaderValue::from_static("POST"));
    }
    res
}

/// Shorthand: the response for a class with a fixed message and no id.
pub(crate) fn reject(kind: ErrorKind, message: &'static str) -> Response {
    render(&Rejection::new(kind, message))
}

/// One JSON-RPC error per refused element, as a JSON array.
fn batch_body(elements: &[ElementRejection]) -> Bytes {
    let mut out = Vec::with_capacity(64 * elements.len() + 2);
    out.push(b'[');
    for (i, e) in elements.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let (_, code) = status_and_code(e.kind);
        out.extend_from_slice(&error_body(e.id.as_ref(), code, &e.message, None));
    }
    out.push(b']');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_documented_row() {
        let doc = include_str!("../../../docs/errors.md");
        for kind in ErrorKind::ALL {
            let (status, code) = status_and_code(kind);
            let row = format!("| `{}` | {} | {} |", kind.as_str(), status.as_u16(), code);
            assert!(doc.contains(&row), "docs/errors.md lacks the row {row}");
        }
        let rows = doc.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(
            rows,
            ErrorKind::ALL.len(),
            "docs/errors.md has rows for kinds that do not exist"
        );
    }

    #[test]
    fn a_rejection_renders_status_code_id_and_headers() {
        let id: RequestId = RequestId::from_raw(&serde_json::value::RawValue::from_string("4".into()).unwrap());
        let r = Rejection::new(ErrorKind::InsufficientScope, "Forbidden: insufficient scope")
            .with_id(Some(id))
            .with_challenge(Some(HeaderValue::from_static("Bearer error=\"insufficient_scope\"")));
        let res = render(&r);
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(res.headers()[WWW_AUTHENTICATE], "Bearer error=\"insufficient_scope\"");
        assert_eq!(r.code_of(0), Some(-32000));
        let shed = render(&Rejection::new(ErrorKind::Overloaded, "Server overloaded"));
        assert_eq!(shed.headers()[RETRY_AFTER], "1");
    }

    #[test]
    fn a_refused_batch_answers_each_request_element() {
        let id = |t: &str| {
            Some(RequestId::from_raw(
                &serde_json::value::RawValue::from_string(t.into()).unwrap(),
            ))
        };
        let r = Rejection::batch(
            ErrorKind::PolicyDenied,
            vec![
                ElementRejection {
                    index: 0,
                    id: id("1"),
                    kind: ErrorKind::PolicyDenied,
                    message: "Unknown tool: x".into(),
                },
                ElementRejection {
                    index: 2,
                    id: id("\"b\""),
                    kind: ErrorKind::BatchNotForwarded,
                    message: "Batch not forwarded: another element was refused".into(),
                },
            ],
        );
        assert_eq!(render(&r).status(), StatusCode::OK);
        let body = batch_body(r.batch.as_deref().unwrap());
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v[0]["id"], 1);
        assert_eq!(v[0]["error"]["code"], -32602);
        assert_eq!(v[1]["id"], "b");
        assert_eq!(v[1]["error"]["code"], -32000);
        assert_eq!(
            (r.code_of(0), r.code_of(1), r.code_of(2)),
            (Some(-32602), None, Some(-32000))
        );
    }
}
