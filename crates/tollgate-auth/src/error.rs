//! Errors of the identity layer, classified for the server's rescue layer.
//!
//! [`AuthError`] is what authentication (request path step 5) and the scope
//! check answer; its [`TokenRejection`] says why a token was refused with a
//! description safe to show the caller. [`CredentialError`] is what the
//! upstream credential broker (step 10) answers; [`SetupError`] covers
//! building either from configuration.

/// Why a presented token was refused. The description is fixed text, safe
/// to put in `error_description`; details go to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenRejection {
    /// Not a well-formed bearer token or JWT.
    Malformed,
    /// Signed with an algorithm the issuer is not trusted with (incl. `none`, HMAC).
    Algorithm,
    /// Issued by no configured issuer.
    UnknownIssuer,
    /// Signed with a key the issuer does not publish.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// Past its `exp` (plus leeway).
    Expired,
    /// Before its `nbf` (minus leeway).
    NotYetValid,
    /// Its `aud` names neither this route nor a configured audience.
    Audience,
    /// Its JOSE `typ` is not the required one.
    Type,
    /// A required claim (`exp`, `iss`, subject) is missing or malformed.
    MissingClaim,
    /// Introspection says it is not active.
    Inactive,
    /// Its grant was revoked at the authorization server.
    Revoked,
}

impl TokenRejection {
    /// Text for `error_description`: printable ASCII without quotes.
    pub fn description(self) -> &'static str {
        match self {
            TokenRejection::Malformed => "The access token is malformed",
            TokenRejection::Algorithm => "The token signing algorithm is not accepted",
            TokenRejection::UnknownIssuer => "The token issuer is not trusted",
            TokenRejection::UnknownKey => "The token signing key is unknown",
            TokenRejection::Signature => "The token signature is invalid",
            TokenRejection::Expired => "The access token expired",
            TokenRejection::NotYetValid => "The access token is not valid yet",
            TokenRejection::Audience => "The access token was not issued for this resource",
            TokenRejection::Type => "The token type is not accepted",
            TokenRejection::MissingClaim => "The access token lacks a required claim",
            TokenRejection::Inactive => "The access token is not active",
            TokenRejection::Revoked => "The access token was revoked",
        }
    }

    /// A stable snake_case name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenRejection::Malformed => "malformed",
            TokenRejection::Algorithm => "algorithm",
            TokenRejection::UnknownIssuer => "unknown_issuer",
            TokenRejection::UnknownKey => "unknown_key",
            TokenRejection::Signature => "signature",
            TokenRejection::Expired => "expired",
            TokenRejection::NotYetValid => "not_yet_valid",
            TokenRejection::Audience => "audience",
            TokenRejection::Type => "type",
            TokenRejection::MissingClaim => "missing_claim",
            TokenRejection::Inactive => "inactive",
            TokenRejection::Revoked => "revoked",
        }
    }
}

/// Why a request was not authenticated or not authorized by scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No bearer token was sent (401, challenge without `error`).
    #[error("no bearer token")]
    Missing,
    /// The request is malformed: a token in the query string, or several
    /// `Authorization` headers (400, `error="invalid_request"`).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// A token was sent and refused (401, `error="invalid_token"`).
    #[error("invalid token: {}", .0.as_str())]
    InvalidToken(TokenRejection),
    /// The token is valid but lacks scopes (403,
    /// `error="insufficient_scope"`). `required` lists every scope the
    /// operation needs, not only the missing ones.
    #[error("insufficient scope: needs {}", .required.join(" "))]
    InsufficientScope {
        /// Every scope the operation needs.
        required: Vec<String>,
    },
    /// The token cannot be checked now: the issuer's keys were never
    /// loaded, or its introspection endpoint failed (503).
    #[error("issuer {issuer} unavailable")]
    Unavailable {
        /// The issuer concerned.
        issuer: String,
    },
}

impl AuthError {
    /// The `error` code of RFC 6750, if the challenge carries one.
    pub fn oauth_error(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing | AuthError::Unavailable { .. } => None,
            AuthError::InvalidRequest(_) => Some("invalid_request"),
            AuthError::InvalidToken(_) => Some("invalid_token"),
            AuthError::InsufficientScope { .. } => Some("insufficient_scope"),
        }
    }

    /// The `error_description`, safe to show.
    pub fn description(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing | AuthError::Unavailable { .. } => None,
            AuthError::InvalidRequest(why) => Some(why),
            AuthError::InvalidToken(r) => Some(r.description()),
            AuthError::InsufficientScope { .. } => Some("The access token lacks a required scope"),
        }
    }
}

/// Why no upstream credential could be obtained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The token endpoint failed or refused (the reason is for logs only).
    #[error("server {server}: token endpoint: {reason}")]
    TokenEndpoint {
        /// The route.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// Token exchange needs the caller's token and none was given.
    #[error("server {server}: token exchange needs the caller's token")]
    NoSubjectToken {
        /// The route.
        server: String,
    },
}

/// Why the authenticator, broker or development issuer could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_safe_to_quote() {
        let all = [
            TokenRejection::Malformed,
            TokenRejection::Algorithm,
            TokenRejection::UnknownIssuer,
            TokenRejection::UnknownKey,
            TokenRejection::Signature,
            TokenRejection::Expired,
            TokenRejection::NotYetValid,
            TokenRejection::Audience,
            TokenRejection::Type,
            TokenRejection::MissingClaim,
            TokenRejection::Inactive,
        ];
        for r in all {
            let d = r.description();
            assert!(d.bytes().all(|b| (0x20..=0x7E).contains(&b) && b != b'"' && b != b'\\'));
        }
    }
}
