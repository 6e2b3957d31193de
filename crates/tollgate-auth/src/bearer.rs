//! Finding the bearer token in a request (request path step 5, before
//! validation): the `Authorization` header only (RFC 6750 §2.1). A token in
//! the query string is refused outright, so it cannot end up in access logs
//! as an accepted credential.

use http::HeaderMap;
use http::header::AUTHORIZATION;

use crate::{AuthError, TokenRejection};

/// The bearer token of a request.
///
/// # Errors
///
/// - [`AuthError::InvalidRequest`]: an `access_token` query parameter, or
///   more than one `Authorization` header;
/// - [`AuthError::Missing`]: no `Authorization` header, or another scheme;
/// - [`AuthError::InvalidToken`] (malformed): an empty or ill-formed token.
pub fn bearer_token<'a>(headers: &'a HeaderMap, query: Option<&str>) -> Result<&'a str, AuthError> {
    if query.is_some_and(has_access_token) {
        return Err(AuthError::InvalidRequest("Tokens in the query string are not accepted"));
    }
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthError::Missing)?;
    if values.next().is_some() {
        return Err(AuthError::InvalidRequest("More than one Authorization header"));
    }
    let malformed = AuthError::InvalidToken(TokenRejection::Malformed);
    let value = value.to_str().map_err(|_| malformed.clone())?.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Missing);
    }
    let token = token.trim_start_matches(' ');
    if token.is_empty() || !token.bytes().all(is_b64token) {
        return Err(malformed);
    }
    Ok(token)
}

/// RFC 6750 `b68token` characters (letters, digits, `-._~+/`, then `=`).
fn is_b64token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn has_access_token(query: &str) -> bool {
    url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "access_token")
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn finds_the_bearer_token_and_nothing_else() {
        assert_eq!(bearer_token(&headers(&["Bearer abc.def.ghi"]), None), Ok("abc.def.ghi"));
        assert_eq!(bearer_token(&headers(&["bearer  tok=="]), Some("x=1")), Ok("tok=="));
        assert_eq!(bearer_token(&headers(&[]), None), Err(AuthError::Missing));
        assert_eq!(
            bearer_token(&headers(&["Basic dXNlcjpw"]), None),
            Err(AuthError::Missing)
        );
        let malformed = Err(AuthError::InvalidToken(TokenRejection::Malformed));
        assert_eq!(bearer_token(&headers(&["Bearer"]), None), malformed);
        assert_eq!(bearer_token(&headers(&["Bearer a b"]), None), malformed);
        assert!(matches!(
            bearer_token(&headers(&["Bearer a", "Bearer b"]), None),
            Err(AuthError::InvalidRequest(_))
        ));
        assert!(matches!(
            bearer_token(&headers(&[]), Some("a=1&access_token=x")),
            Err(AuthError::InvalidRequest(_))
        ));
    }
}
