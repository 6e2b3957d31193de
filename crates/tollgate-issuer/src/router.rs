//! The authorization server's HTTP endpoints on the public listener, and
//! the browser cookie that binds a sign-in to the browser that began it.
//! Endpoints clients call from scripts (metadata, keys, token, register,
//! revoke) answer CORS requests from any origin without credentials;
//! browser pages forbid framing and caching ([`crate::pages`]).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Json, Redirect, Response};
use axum::routing::get;
use base64::Engine as _;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, AUTHORIZATION,
    CACHE_CONTROL, COOKIE, SET_COOKIE,
};
use serde::Deserialize;

use crate::authorize::{AuthorizeQuery, Authorized, SignInTarget};
use crate::metadata::METADATA_PATHS;
use crate::pages;
use crate::signin::Next;
use crate::state::Issuer;
use crate::token::TokenForm;

/// Whether `path` is one of the authorization server's.
pub fn is_own_path(path: &str) -> bool {
    matches!(path, "/authorize" | "/token" | "/register" | "/revoke")
        || path.starts_with("/oauth/")
        || METADATA_PATHS
            .iter()
            .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

/// The endpoints of `issuer`.
pub fn router(issuer: Arc<Issuer>) -> Router {
    let mut r = Router::new();
    for p in METADATA_PATHS {
        r = r
            .route(p, get(metadata).options(preflight))
            .route(&format!("{p}/{{*rest}}"), get(metadata).options(preflight));
    }
    r.route("/oauth/jwks.json", get(jwks).options(preflight))
        .route("/authorize", get(authorize))
        .route("/token", axum::routing::post(token).options(preflight))
        .route("/register", axum::routing::post(register).options(preflight))
        .route("/revoke", axum::routing::post(revoke).options(preflight))
        .route("/oauth/callback", get(callback))
        .route("/oauth/signin", get(picker).post(dev_sign_in))
        .route("/oauth/consent", axum::routing::post(consent))
        .with_state(issuer)
}

/// CORS for script endpoints: any origin, no credentials.
fn cors(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    res
}

async fn preflight() -> Response {
    let mut res = cors(StatusCode::NO_CONTENT.into_response());
    let h = res.headers_mut();
    h.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, mcp-protocol-version"),
    );
    res
}

async fn metadata(State(s): State<Arc<Issuer>>) -> Response {
    cors(Json(s.metadata()).into_response())
}

async fn jwks(State(s): State<Arc<Issuer>>) -> Response {
    cors(Json(s.jwks()).into_response())
}

fn json_answer(result: Result<serde_json::Value, crate::OAuthError>, status: StatusCode) -> Response {
    let res = match result {
        Ok(body) => (status, [(CACHE_CONTROL, "no-store")], Json(body)).into_response(),
        Err(e) => e.into_response(),
    };
    cors(res)
}

/// HTTP Basic client credentials (RFC 6749 §2.3.1: each form-decoded).
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, b64) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?;
    let raw = String::from_utf8(raw).ok()?;
    let (id, secret) = raw.split_once(':')?;
    let decode = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((decode(id)?, decode(secret)?))
}

async fn token(State(s): State<Arc<Issuer>>, headers: HeaderMap, body: Bytes) -> Response {
    json_answer(s.token(TokenForm::parse(&body), basic(&headers)).await, StatusCode::OK)
}

async fn register(State(s): State<Arc<Issuer>>, body: Bytes) -> Response {
    json_answer(s.register(&body).await, StatusCode::CREATED)
}

async fn revoke(State(s): State<Arc<Issuer>>, headers: HeaderMap, body: Bytes) -> Response {
    match s.revoke(TokenForm::parse(&body), basic(&headers)).await {
        Ok(()) => cors(StatusCode::OK.into_response()),
        Err(e) => cors(e.into_response()),
    }
}

/// The sign-in cookie's value, when the browser sent it.
fn cookie<'h>(s: &Issuer, headers: &'h HeaderMap) -> Option<&'h str> {
    let name = s.cookie_name();
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v))
}

impl Issuer {
    /// The `Set-Cookie` value binding a sign-in to the browser.
    pub(crate) fn set_cookie(&self, value: &str) -> String {
        let secure = if self.settings.development { "" } else { "; Secure" };
        format!(
            "{}={value}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
            self.cookie_name(),
            self.settings.sign_in_ttl.as_secs()
        )
    }

    /// The sign-in cookie of a request, when the browser sent it.
    pub fn browser_cookie<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        cookie(self, headers)
    }
}

fn next(n: Next) -> Response {
    match n {
        Next::Page(page) => page,
        Next::Client(url) => Redirect::to(url.as_str()).into_response(),
    }
}

async fn authorize(State(s): State<Arc<Issuer>>, RawQuery(q): RawQuery) -> Response {
    let query = AuthorizeQuery::parse(q.as_deref().unwrap_or(""));
    match s.authorize(query).await {
        Authorized::Page(e) => pages::error_page(&e),
        Authorized::Client(url) => Redirect::to(url.as_str()).into_response(),
        Authorized::SignIn { cookie, to } => {
            let target = match to {
                SignInTarget::Idp(url) => url.to_string(),
                SignInTarget::Picker(path) => path,
            };
            let mut res = Redirect::to(&target).into_response();
            if let Ok(v) = HeaderValue::from_str(&s.set_cookie(&cookie)) {
                res.headers_mut().insert(SET_COOKIE, v);
            }
            res
        }
    }
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

async fn callback(State(s): State<Arc<Issuer>>, headers: HeaderMap, Query(q): Query<CallbackQuery>) -> Response {
    let Some(state) = q.state else {
        return pages::error_page(&crate::OAuthError::invalid_request("no state"));
    };
    next(
        s.idp_callback(&state, q.code.as_deref(), q.error.as_deref(), cookie(&s, &headers))
            .await,
    )
}

#[derive(Debug, Deserialize)]
struct PickerQuery {
    request: String,
}

async fn picker(State(s): State<Arc<Issuer>>, headers: HeaderMap, Query(q): Query<PickerQuery>) -> Response {
    s.picker(&q.request, cookie(&s, &headers)).await
}

#[derive(Debug, Deserialize)]
struct SignInForm {
    request: String,
    login: String,
}

async fn dev_sign_in(
    State(s): State<Arc<Issuer>>,
    headers: HeaderMap,
    axum::Form(f): axum::Form<SignInForm>,
) -> Response {
    next(s.dev_sign_in(&f.request, &f.login, cookie(&s, &headers)).await)
}

#[derive(Debug, Deserialize)]
struct ConsentForm {
    request: String,
    csrf: String,
    decision: String,
}

async fn consent(State(s): State<Arc<Issuer>>, headers: HeaderMap, axum::Form(f): axum::Form<ConsentForm>) -> Response {
    let allow = f.decision == "allow";
    next(s.consent(&f.request, &f.csrf, allow, cookie(&s, &headers)).await)
}
