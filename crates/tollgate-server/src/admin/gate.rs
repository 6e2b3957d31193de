//! The admin token in front of the admin listener's detail: `/readyz?detail`
//! and `/catalog` answer only a request that presents `[admin] token` as
//! `Authorization: Bearer <token>`, when a token is configured.
//!
//! The token of the configuration in force is used, so a reload rotates
//! it. Both sides are hashed and the digests compared in constant time, so
//! the response time tells nothing about the token's content or length.

use aws_lc_rs::constant_time::verify_slices_are_equal;
use aws_lc_rs::digest::{SHA256, digest};
use axum::Json;
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::live::Live;

/// The challenge of a request without a token.
const CHALLENGE: &str = "Bearer realm=\"tollgate-admin\"";
/// The challenge of a request with a wrong token (RFC 6750 section 3.1).
const CHALLENGE_INVALID: &str = "Bearer realm=\"tollgate-admin\", error=\"invalid_token\"";

/// `None` when the request may read the detail, else its 401 answer.
pub(crate) fn refusal(live: &Live, headers: &HeaderMap) -> Option<Response> {
    let g = live.current();
    let expected = g.loaded.admin_token.as_ref()?;
    match bearer(headers) {
        Some(presented) if same(presented, expected.expose()) => None,
        Some(_) => {
            tracing::info!("admin request with a wrong token refused");
            Some(unauthorized(true))
        }
        None => Some(unauthorized(false)),
    }
}

/// The credentials of an `Authorization: Bearer …` header.
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(AUTHORIZATION)?.as_bytes();
    let (scheme, rest) = value.split_at_checked(6)?;
    let token = rest.strip_prefix(b" ")?.trim_ascii();
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty()).then_some(token)
}

fn same(presented: &[u8], expected: &[u8]) -> bool {
    let (a, b) = (digest(&SHA256, presented), digest(&SHA256, expected));
    verify_slices_are_equal(a.as_ref(), b.as_ref()).is_ok()
}

/// 401 with a challenge and a JSON body saying what is needed.
fn unauthorized(invalid: bool) -> Response {
    let (challenge, error, message) = if invalid {
        (
            CHALLENGE_INVALID,
            "invalid_token",
            "the admin token is not the one configured",
        )
    } else {
        (
            CHALLENGE,
            "unauthorized",
            "this admin endpoint needs the [admin] token: Authorization: Bearer <token>",
        )
    };
    let body = Json(serde_json::json!({"error": error, "message": message}));
    let challenge = [(WWW_AUTHENTICATE, HeaderValue::from_static(challenge))];
    (StatusCode::UNAUTHORIZED, challenge, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn the_bearer_token_is_read_whatever_the_scheme_case() {
        assert_eq!(bearer(&headers("Bearer abc")), Some(&b"abc"[..]));
        assert_eq!(bearer(&headers("bearer  abc ")), Some(&b"abc"[..]));
        assert_eq!(bearer(&headers("Basic abc")), None);
        assert_eq!(bearer(&headers("Bearer")), None);
        assert_eq!(bearer(&headers("Bearer ")), None);
        assert_eq!(bearer(&headers("Bearerabc")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(same(b"a-long-enough-admin-token", b"a-long-enough-admin-token"));
        assert!(!same(b"a-long-enough-admin-token", b"a-long-enough-admin-tokeN"));
        assert!(!same(
            b"a-long-enough-admin-token",
            b"a-long-enough-admin-token-and-more"
        ));
        assert!(!same(b"", b"a-long-enough-admin-token"));
    }

    #[test]
    fn refusals_challenge_and_explain() {
        let missing = unauthorized(false);
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(missing.headers()[WWW_AUTHENTICATE], CHALLENGE);
        let wrong = unauthorized(true);
        assert_eq!(wrong.headers()[WWW_AUTHENTICATE], CHALLENGE_INVALID);
        assert_eq!(wrong.headers()["content-type"], "application/json");
    }
}
