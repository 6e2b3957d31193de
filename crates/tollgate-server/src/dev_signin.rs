//! The development issuer's sign-in endpoints on the admin listener,
//! `/dev-issuer/authorize` and `/dev-issuer/token`: the authorization code
//! grant with PKCE for the console's one client and its one resource (the
//! console's URL: no code is issued for an MCP route), signing in a
//! `[[dev_issuer.users]]` user without a password. Mounted only when the
//! console signs in through the development issuer (loopback only, like
//! the issuer itself).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, StatusCode};
use tollgate_auth::{AuthorizeParams, DevClient, DevIssuer, DevLoginError, TokenParams};
use tollgate_config::DevUser;

struct SignIn {
    dev: Arc<DevIssuer>,
    client_id: String,
    secret: Option<Vec<u8>>,
    redirect_uri: String,
    resource: String,
    users: Vec<DevUser>,
}

impl SignIn {
    fn client(&self) -> DevClient<'_> {
        DevClient {
            client_id: &self.client_id,
            secret: self.secret.as_deref(),
            redirect_uri: &self.redirect_uri,
            resource: &self.resource,
        }
    }
}

/// The sign-in routes for the console described by `console`.
pub(crate) fn routes(dev: Arc<DevIssuer>, console: &tollgate_console::Settings, users: &[DevUser]) -> Router {
    let state = Arc::new(SignIn {
        dev,
        client_id: console.client_id.clone(),
        secret: console.client_secret.clone(),
        redirect_uri: console.redirect_uri(),
        resource: console.url.clone(),
        users: users.to_vec(),
    });
    Router::new()
        .route("/dev-issuer/authorize", get(authorize))
        .route("/dev-issuer/token", post(token))
        .with_state(state)
}

fn oauth_error(status: StatusCode, e: &DevLoginError) -> Response {
    let body = serde_json::json!({"error": e.code, "error_description": e.description});
    (status, Json(body)).into_response()
}

/// Back to the client with a code, or with the error when the redirect URI
/// is the client's (else the error is answered here: no open redirect).
async fn authorize(State(s): State<Arc<SignIn>>, Query(params): Query<AuthorizeParams>) -> Response {
    let result = s.dev.authorize(&params, &s.client(), &s.users);
    if let Err(e) = &result
        && params.redirect_uri.as_deref() != Some(s.redirect_uri.as_str())
    {
        return oauth_error(StatusCode::BAD_REQUEST, e);
    }
    let Ok(mut url) = url::Url::parse(&s.redirect_uri) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    {
        let mut q = url.query_pairs_mut();
        match &result {
            Ok(code) => q.append_pair("code", code),
            Err(e) => q
                .append_pair("error", e.code)
                .append_pair("error_description", &e.description),
        };
        if let Some(state) = &params.state {
            q.append_pair("state", state);
        }
    }
    Redirect::to(url.as_str()).into_response()
}

/// Redeem a code (client authentication by HTTP Basic or the form).
async fn token(State(s): State<Arc<SignIn>>, headers: HeaderMap, Form(params): Form<TokenParams>) -> Response {
    match s.dev.redeem(&params, basic(&headers), &s.client(), &s.users) {
        Ok(answer) => ([(http::header::CACHE_CONTROL, "no-store")], Json(answer)).into_response(),
        Err(e) if e.code == "invalid_client" => oauth_error(StatusCode::UNAUTHORIZED, &e),
        Err(e) => oauth_error(StatusCode::BAD_REQUEST, &e),
    }
}

/// The client id and secret of an HTTP Basic `Authorization` header.
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let decoded = STANDARD.decode(value.strip_prefix("Basic ")?.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    let unescape = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}
