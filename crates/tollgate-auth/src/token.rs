//! The first look at a bearer token, before any key is chosen: its size,
//! whether it is a JWT or an opaque token for introspection, and for a JWT
//! its header and `iss` claim, read without verifying anything. This is
//! the part of authentication that parses attacker-chosen bytes; the
//! `authn` phase reaches it through [`crate::Authenticator::authenticate`].

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Header;
use serde::Deserialize;
use serde_json::Value;

use crate::{AuthError, TokenRejection};

/// Longest token looked at; anything longer is malformed.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// What a bearer token looks like before verification.
#[derive(Debug)]
pub enum TokenShape {
    /// Three dot-separated parts: a JWT with its parsed header and the
    /// issuer it names (unverified: it only selects the issuer's keys).
    Jwt {
        /// The JOSE header.
        header: Box<Header>,
        /// The unverified `iss` claim.
        issuer: String,
    },
    /// Anything else of an acceptable size: an opaque token, checked by
    /// introspection when an issuer offers it.
    Opaque,
}

#[derive(Deserialize)]
struct IssOnly {
    iss: Option<String>,
}

/// Read a bearer token's shape.
///
/// ```
/// use tollgate_auth::{TokenShape, read_token};
///
/// assert!(matches!(read_token("opaque-token"), Ok(TokenShape::Opaque)));
/// assert!(read_token("a.b.c").is_err());
/// ```
///
/// # Errors
///
/// [`AuthError::InvalidToken`]: empty or oversized (`Malformed`), a header
/// naming an algorithm Tollgate does not accept (`Algorithm`), an
/// unreadable header or claims (`Malformed`), no `iss` (`MissingClaim`).
pub fn read_token(token: &str) -> Result<TokenShape, AuthError> {
    let malformed = AuthError::InvalidToken(TokenRejection::Malformed);
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
        return Err(malformed);
    }
    if token.split('.').count() != 3 {
        return Ok(TokenShape::Opaque);
    }
    let header = jsonwebtoken::decode_header(token).map_err(|_| header_rejection(token))?;
    let issuer = jsonwebtoken::dangerous::insecure_decode_claims::<IssOnly>(token)
        .map_err(|_| malformed)?
        .iss
        .ok_or(AuthError::InvalidToken(TokenRejection::MissingClaim))?;
    Ok(TokenShape::Jwt {
        header: Box::new(header),
        issuer,
    })
}

/// A header that does not parse: refused for its algorithm when it names
/// one we do not know (`none`, …), malformed otherwise.
fn header_rejection(token: &str) -> AuthError {
    let alg = token
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|json| serde_json::from_slice::<Value>(&json).ok())
        .is_some_and(|v| v.get("alg").is_some_and(Value::is_string));
    AuthError::InvalidToken(if alg {
        TokenRejection::Algorithm
    } else {
        TokenRejection::Malformed
    })
}
