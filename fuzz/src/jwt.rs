//! A bearer token's first read: size, shape, JOSE header and `iss`.

use tollgate_auth::{AuthError, TokenShape, read_token};

/// Reading never panics; a token read as a JWT has three parts, and a
/// refusal is always an invalid token (answered 401), never another error.
pub(crate) fn jwt_header(data: &[u8]) {
    let token = String::from_utf8_lossy(data);
    match read_token(&token) {
        Ok(TokenShape::Jwt { issuer, .. }) => {
            assert_eq!(token.split('.').count(), 3);
            let _ = issuer.len();
        }
        Ok(TokenShape::Opaque) => assert_ne!(token.split('.').count(), 3),
        Err(AuthError::InvalidToken(_)) => {}
        Err(other) => panic!("a token was refused with {other:?}"),
    }
}
