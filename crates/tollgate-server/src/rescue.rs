//! The one place where failures become HTTP responses.
//!
//! Every error on the request path is classified into an
//! [`ErrorKind`](tollgate_core::ErrorKind); [`status_and_code`] maps each kind
//! to an HTTP status and a JSON-RPC error code in one exhaustive `match`, and
//! [`error_response`] writes the JSON-RPC error body echoing the request id.
//! Internal detail goes to the log, never into the body.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use tollgate_core::ErrorKind;
use tollgate_mcp::{McpError, error_body};

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
        ErrorKind::HeadersTooLarge => (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, -32000),
        ErrorKind::BodyTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, -32000),
        ErrorKind::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, -32000),
        ErrorKind::Overloaded => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::UpstreamUnavailable => (StatusCode::BAD_GATEWAY, -32001),
        ErrorKind::UpstreamTimeout => (StatusCode::GATEWAY_TIMEOUT, -32004),
        ErrorKind::ListUnfilterable => (StatusCode::BAD_GATEWAY, -32001),
        ErrorKind::AuditUnavailable => (StatusCode::SERVICE_UNAVAILABLE, -32000),
        ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, -32603),
    }
}

/// The error response for a classified failure.
pub fn error_response(err: &McpError) -> Response {
    let (status, code) = status_and_code(err.kind);
    let body = error_body(err.id.as_ref(), code, &err.message, err.data.as_ref());
    let mut res = (status, body).into_response();
    let headers = res.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if matches!(
        err.kind,
        ErrorKind::Overloaded | ErrorKind::ShuttingDown | ErrorKind::AuthUnavailable | ErrorKind::AuditUnavailable
    ) {
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    if err.kind == ErrorKind::MethodNotAllowed {
        headers.insert(http::header::ALLOW, HeaderValue::from_static("POST"));
    }
    res.extensions_mut().insert(err.kind);
    res
}

/// Shorthand: the response for a kind with a fixed message and no id.
pub fn reject(kind: ErrorKind, message: &str) -> Response {
    error_response(&McpError::new(kind, message))
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
}
