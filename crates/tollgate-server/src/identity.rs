//! Steps 5 and 10 of the request path: who is calling, and what the
//! upstream gets instead of the caller's token.
//!
//! A route with authentication required has a [`ProtectedResource`]: the
//! bearer token must be valid for that route's resource URL and carry its
//! scopes, or the caller gets 401/403 with a `WWW-Authenticate` challenge
//! pointing at the route's RFC 9728 metadata, and a JSON-RPC body. The
//! caller's `Authorization` header is always removed before forwarding
//! (`forward::upstream_request`); the broker's credential for the upstream,
//! if any, takes its place.

use std::sync::Arc;

use axum::response::Response;
use http::HeaderValue;
use http::header::WWW_AUTHENTICATE;
use http::request::Parts;
use tollgate_auth::{AuthError, Caller, ProtectedResource, UpstreamCredential, bearer_token};
use tollgate_core::{Classify, Principal};
use tollgate_mcp::McpError;

use crate::rescue::error_response;
use crate::{Shared, Upstream};

/// Authenticate the caller of `up`'s route. `Ok(None)`: the route is open.
///
/// # Errors
///
/// The ready 401/403/400/503 response.
pub(crate) async fn authenticate(
    shared: &Shared,
    up: &Upstream,
    parts: &Parts,
) -> Result<Option<Arc<Principal>>, Response> {
    let (Some(resource), Some(authn)) = (&up.resource, &shared.authn) else {
        return Ok(None);
    };
    match resource.authenticate(authn, &parts.headers, parts.uri.query()).await {
        Ok(principal) => Ok(Some(principal)),
        Err(e) => Err(refusal(resource, &e)),
    }
}

/// The response for a refused token: status and JSON-RPC body from the
/// error class, plus the challenge. The reason goes to the log only.
pub(crate) fn refusal(resource: &ProtectedResource, err: &AuthError) -> Response {
    tracing::info!(resource = %resource.resource(), reason = %err, "caller refused");
    let message = match err.kind() {
        tollgate_core::ErrorKind::InsufficientScope => "Forbidden: insufficient scope",
        tollgate_core::ErrorKind::AuthUnavailable => "Authorization server unavailable",
        tollgate_core::ErrorKind::InvalidRequest => "Invalid Request: send the token in the Authorization header only",
        _ => "Unauthorized",
    };
    let mut res = error_response(&McpError::new(err.kind(), message));
    if let Some(value) = resource.challenge(err).and_then(|c| HeaderValue::from_str(&c).ok()) {
        res.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    res
}

/// The credential the broker issues for `up` on behalf of `principal`.
///
/// # Errors
///
/// The token endpoint failed (502) or token exchange has no caller.
pub(crate) async fn upstream_credential(
    shared: &Shared,
    up: &Upstream,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Option<UpstreamCredential>, McpError> {
    let token = bearer_token(&parts.headers, None).ok();
    let caller = match (token, principal) {
        (Some(token), Some(principal)) => Some(Caller { token, principal }),
        _ => None,
    };
    shared.broker.credential(&up.name, caller).await.map_err(|e| {
        tracing::warn!(upstream = %up.name, error = %e, "upstream credential unavailable");
        McpError::new(e.kind(), "Upstream credential unavailable")
    })
}
