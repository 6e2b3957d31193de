//! Phase 4, authenticate: who is calling.
//!
//! A route that requires authentication has a [`ProtectedResource`]: the
//! bearer token must be valid for the route's resource URL and carry its
//! scopes, or the caller gets 401/403 with a `WWW-Authenticate` challenge
//! pointing at the route's RFC 9728 metadata. The verified principal comes
//! from the authenticator's cache in the common case. On an open route the
//! caller is anonymous (`None`). On a virtual server the caller is
//! authenticated once, for the virtual server's URL, before the call is
//! resolved to a member.

use std::sync::Arc;

use http::HeaderValue;
use http::request::Parts;
use tollgate_auth::{AuthError, ProtectedResource};
use tollgate_core::{Classify, ErrorKind, Principal};

use crate::rescue::Rejection;
use crate::route::{Endpoint, Shared};
use crate::stage::{Admitted, Authenticated, Stage, Stop};

/// Authenticate the caller of `endpoint` (no principal: it is open).
///
/// # Errors
///
/// `unauthenticated` (401), `insufficient_scope` (403), `invalid_request`
/// (400) or `auth_unavailable` (503), with the endpoint's challenge.
pub(crate) async fn authenticate(
    endpoint: &impl Endpoint,
    admitted: Admitted,
    parts: &Parts,
) -> Result<Authenticated, Stop> {
    let principal = authenticate_for(endpoint.resource(), endpoint.shared(), parts).await;
    let (admitted, principal) = admitted.check(principal)?;
    let mut facts = admitted.facts;
    facts.principal = principal;
    Ok(Authenticated { facts })
}

/// Authenticate a caller of the protected resource `resource`.
/// `Ok(None)`: no resource, the endpoint is open.
/// A resource without a token checker fails closed (the gateway builds
/// one whenever an endpoint requires tokens).
///
/// # Errors
///
/// As [`authenticate`].
async fn authenticate_for(
    resource: Option<&ProtectedResource>,
    shared: &Shared,
    parts: &Parts,
) -> Result<Option<Arc<Principal>>, Rejection> {
    let Some(resource) = resource else {
        return Ok(None);
    };
    let Some(authn) = &shared.authn else {
        return Err(Rejection::new(
            ErrorKind::AuthUnavailable,
            "Authorization server unavailable",
        ));
    };
    // Boxed: a token-cache miss fetches keys or introspects, a large future
    // that would otherwise sit in every request's state.
    match Box::pin(resource.authenticate(authn, &parts.headers, parts.uri.query())).await {
        Ok(principal) => Ok(Some(principal)),
        Err(e) => Err(refusal(resource, &e)),
    }
}

/// The rejection of a refused token: class and challenge from the error,
/// the reason in the log only.
pub(crate) fn refusal(resource: &ProtectedResource, err: &AuthError) -> Rejection {
    tracing::info!(resource = %resource.resource(), reason = %err, "caller refused");
    let message = match err.kind() {
        ErrorKind::InsufficientScope => "Forbidden: insufficient scope",
        ErrorKind::AuthUnavailable => "Authorization server unavailable",
        ErrorKind::InvalidRequest => "Invalid Request: send the token in the Authorization header only",
        _ => "Unauthorized",
    };
    let challenge = resource.challenge(err).and_then(|c| HeaderValue::from_str(&c).ok());
    Rejection::new(err.kind(), message).with_challenge(challenge)
}
