//! The HTTP side of Notes' authorization server: its RFC 8414 metadata,
//! `/authorize` (the sign-in page and its answer) and `/token`. The rules
//! themselves are in [`super::oauth`].

use std::sync::Arc;

use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Query, State};
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Redirect, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::json;

use super::oauth::{AuthServer, AuthorizeError, AuthorizeQuery, ClientAuth, SCOPES, TokenError, TokenForm};
use super::page::{self, Picker};

/// `GET /.well-known/oauth-authorization-server` (RFC 8414).
pub(crate) async fn metadata(State(auth): State<Arc<AuthServer>>) -> Json<serde_json::Value> {
    let issuer = &auth.settings().issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "scopes_supported": SCOPES,
        "authorization_response_iss_parameter_supported": true,
    }))
}

/// `GET /authorize`: the sign-in page for a good request; an error shown
/// or redirected to the client otherwise.
pub(crate) async fn authorize(State(auth): State<Arc<AuthServer>>, Query(q): Query<AuthorizeQuery>) -> Response {
    match auth.begin(&q) {
        Ok(id) => {
            let s = auth.settings();
            let hint = q
                .login_hint
                .as_deref()
                .filter(|h| auth.knows(h))
                .or(s.users.first().map(String::as_str))
                .unwrap_or_default();
            let picker = Picker {
                request: &id,
                client: &s.client_id,
                users: &s.users,
                hint,
                warning: None,
            };
            page::picker(StatusCode::OK, &picker)
        }
        Err(e) => refused(e),
    }
}

/// The sign-in page's answer.
#[derive(Debug, Deserialize)]
pub(crate) struct SignIn {
    request: String,
    login: String,
}

/// `POST /authorize`: the user picked who they are; back to the client
/// with a code, or the page again for an unknown user.
pub(crate) async fn sign_in(State(auth): State<Arc<AuthServer>>, Form(answer): Form<SignIn>) -> Response {
    let login = answer.login.trim();
    if !auth.knows(login) {
        let s = auth.settings();
        let warning = format!("Notes has no user {login:?}: pick one of the list.");
        let picker = Picker {
            request: &answer.request,
            client: &s.client_id,
            users: &s.users,
            hint: "",
            warning: Some(&warning),
        };
        return page::picker(StatusCode::BAD_REQUEST, &picker);
    }
    match auth.complete(&answer.request, login) {
        Ok(back) => {
            tracing::info!(user = login, "notes: signed in, code sent back");
            Redirect::to(&back).into_response()
        }
        Err(e) => refused(e),
    }
}

fn refused(e: AuthorizeError) -> Response {
    match e {
        AuthorizeError::Page(message) => page::error(StatusCode::BAD_REQUEST, &message),
        AuthorizeError::Redirect(back) => Redirect::to(&back).into_response(),
    }
}

/// `POST /token`: a code or refresh token redeemed by the client.
pub(crate) async fn token(
    State(auth): State<Arc<AuthServer>>,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return token_error(&error("invalid_request", "a form-encoded body is expected"), false);
    };
    let basic = headers.contains_key(AUTHORIZATION);
    let answer = client_auth(&headers).and_then(|client| auth.token(&client, &form));
    match answer {
        Ok(set) => ([(CACHE_CONTROL, "no-store")], Json(set)).into_response(),
        Err(e) => {
            tracing::info!(error = e.error, description = %e.description, "notes: token request refused");
            token_error(&e, basic)
        }
    }
}

fn error(code: &'static str, description: &str) -> TokenError {
    TokenError {
        error: code,
        description: description.to_owned(),
    }
}

/// How the client presents itself: HTTP Basic (RFC 6749 §2.3.1: id and
/// secret form-encoded, then base64), else the form.
fn client_auth(headers: &HeaderMap) -> Result<ClientAuth, TokenError> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Ok(ClientAuth::Form);
    };
    let malformed = || error("invalid_client", "malformed Basic credentials");
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, encoded) = value.split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(malformed());
    }
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    match (form_decode(id), form_decode(secret)) {
        (Some(id), Some(secret)) => Ok(ClientAuth::Basic(id, secret)),
        _ => Err(malformed()),
    }
}

/// `application/x-www-form-urlencoded` decoding of one value: `+` is a
/// space, `%XX` a byte; `None` when the bytes are not UTF-8 or an escape
/// is broken.
fn form_decode(text: &str) -> Option<String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = [bytes.next()?, bytes.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
            }
            b => out.push(b),
        }
    }
    String::from_utf8(out).ok()
}

/// A refusal as RFC 6749 §5.2 says: JSON, 400, or 401 with a Basic
/// challenge when the client's Basic credentials were wrong.
fn token_error(e: &TokenError, basic: bool) -> Response {
    let body = Json(json!({"error": e.error, "error_description": e.description}));
    if e.error == "invalid_client" {
        let mut res = (StatusCode::UNAUTHORIZED, [(CACHE_CONTROL, "no-store")], body).into_response();
        if basic {
            res.headers_mut().insert(
                WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Basic realm=\"Notes\""),
            );
        }
        return res;
    }
    (StatusCode::BAD_REQUEST, [(CACHE_CONTROL, "no-store")], body).into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn form_decoding_reads_plus_and_escapes() {
        assert_eq!(form_decode("a+b%26c%3D%2B").as_deref(), Some("a b&c=+"));
        assert_eq!(form_decode("plain-id_1.2~").as_deref(), Some("plain-id_1.2~"));
        assert_eq!(form_decode("%zz"), None);
        assert_eq!(form_decode("%4"), None);
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let mut headers = HeaderMap::new();
        // RFC 6749 §2.3.1: "s3cret&=+" form-encoded is "s3cret%26%3D%2B".
        let encoded = STANDARD.encode("tollgate-demo:s3cret%26%3D%2B");
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {encoded}")).unwrap(),
        );
        assert_eq!(
            client_auth(&headers).unwrap(),
            ClientAuth::Basic("tollgate-demo".into(), "s3cret&=+".into())
        );
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert_eq!(client_auth(&headers).unwrap_err().error, "invalid_client");
        assert_eq!(client_auth(&HeaderMap::new()).unwrap(), ClientAuth::Form);
    }
}
