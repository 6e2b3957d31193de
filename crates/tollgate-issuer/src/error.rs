//! The authorization server's errors: [`IssuerError`] when it cannot be
//! set up, [`OAuthError`] for an OAuth error answered to a client (RFC 6749
//! §4.1.2.1 and §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1), and the one place
//! that gives each OAuth error its HTTP status.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::{CACHE_CONTROL, WWW_AUTHENTICATE};

/// The authorization server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum IssuerError {
    /// A key, a URL or a client could not be set up.
    #[error("authorization server: {0}")]
    Setup(String),
}

/// An OAuth error for a client: its `error` code and a description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    /// The registered error code (`invalid_request`, `invalid_grant`, ...).
    pub code: &'static str,
    /// What went wrong, for the developer of the client.
    pub description: String,
}

macro_rules! codes {
    ($($name:ident => $code:literal),* $(,)?) => {
        impl OAuthError {
            $(
                #[doc = concat!("`", $code, "`.")]
                pub fn $name(description: impl Into<String>) -> OAuthError {
                    OAuthError { code: $code, description: description.into() }
                }
            )*
        }
    };
}

codes! {
    invalid_request => "invalid_request",
    invalid_client => "invalid_client",
    invalid_grant => "invalid_grant",
    unauthorized_client => "unauthorized_client",
    unsupported_grant_type => "unsupported_grant_type",
    unsupported_response_type => "unsupported_response_type",
    invalid_scope => "invalid_scope",
    invalid_target => "invalid_target",
    access_denied => "access_denied",
    server_error => "server_error",
    temporarily_unavailable => "temporarily_unavailable",
    invalid_redirect_uri => "invalid_redirect_uri",
    invalid_client_metadata => "invalid_client_metadata",
    unsupported_token_type => "unsupported_token_type",
    slow_down => "slow_down",
}

impl OAuthError {
    /// Its HTTP status at the token, registration and revocation endpoints.
    pub fn status(&self) -> StatusCode {
        match self.code {
            "invalid_client" => StatusCode::UNAUTHORIZED,
            "server_error" => StatusCode::INTERNAL_SERVER_ERROR,
            "temporarily_unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            "slow_down" => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = serde_json::json!({"error": self.code, "error_description": self.description});
        let mut res = (status, [(CACHE_CONTROL, "no-store")], Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED
            && let Ok(v) = http::HeaderValue::from_str("Basic realm=\"tollgate\"")
        {
            res.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
        res
    }
}
