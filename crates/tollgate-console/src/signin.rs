//! Sign-in: the OpenID Connect authorization code flow with PKCE (S256),
//! the console as a confidential client ([`crate::oidc`]).
//! `/console/login` sends the browser to the identity provider with a
//! state, a nonce and a code challenge kept in a sealed cookie;
//! `/console/callback` checks the state, redeems the code at the token
//! endpoint (checking the ID token when one comes back), verifies the
//! access token as a console token
//! (the console issuer's, for the console's audience: [`crate::caller`]),
//! maps its groups to roles and sets the session cookie. `/console/logout`
//! clears it.

use std::sync::Arc;

use axum::Form;
use axum::extract::{Query, State};
use axum::response::{AppendHeaders, Html, IntoResponse, Redirect, Response};
use http::HeaderMap;
use http::header::SET_COOKIE;
use serde::{Deserialize, Serialize};

use crate::caller::{Caller, Session, verify_token};
use crate::cookie::{self, random_token, unix_now};
use crate::error::ConsoleError;
use crate::oidc;
use crate::state::Shared;

/// How long a sign-in may take at the identity provider.
const LOGIN_TTL: u64 = 600;

#[derive(Debug, Serialize, Deserialize)]
struct LoginState {
    state: String,
    nonce: String,
    verifier: String,
    exp: u64,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LoginQuery {
    login_hint: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /console/login`: off to the identity provider.
pub(crate) async fn login(State(s): State<Arc<Shared>>, Query(q): Query<LoginQuery>) -> Result<Response, ConsoleError> {
    let started = oidc::start(&s.settings, &s.http, q.login_hint.as_deref()).await?;
    let login = LoginState {
        state: started.state,
        nonce: started.nonce,
        verifier: started.verifier,
        exp: unix_now() + LOGIN_TTL,
    };
    let set = s
        .jar
        .set(cookie::LOGIN, &login, LOGIN_TTL, false)
        .ok_or_else(|| ConsoleError::SignIn("cannot seal the sign-in state".into()))?;
    Ok(([(SET_COOKIE, set)], Redirect::to(started.url.as_str())).into_response())
}

/// `GET /console/callback`: redeem the code, start the session.
pub(crate) async fn callback(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Result<Response, ConsoleError> {
    if let Some(error) = q.error {
        let detail = q.error_description.unwrap_or_default();
        return Err(ConsoleError::SignIn(format!(
            "the identity provider answered {error}: {detail}"
        )));
    }
    let login: LoginState = s
        .jar
        .open(&headers, cookie::LOGIN)
        .filter(|l: &LoginState| l.exp > unix_now())
        .ok_or_else(|| ConsoleError::SignIn("no sign-in in progress (or it took too long): start again".into()))?;
    if q.state.as_deref() != Some(login.state.as_str()) {
        return Err(ConsoleError::SignIn("the state does not match this sign-in".into()));
    }
    let code = q.code.ok_or_else(|| ConsoleError::SignIn("no code".into()))?;
    let token = oidc::redeem(&s.settings, &s.http, &code, &login.verifier, &login.nonce).await?;
    let principal = verify_token(&s, &token).await.map_err(ConsoleError::TokenRefused)?;
    let csrf = random_token(24).ok_or_else(|| ConsoleError::SignIn("no randomness".into()))?;
    let caller = Caller::from_principal(&s, &principal, Some(csrf.clone())).ok_or(ConsoleError::Forbidden("viewer"))?;
    let session = Session {
        sub: caller.subject,
        iss: caller.issuer,
        team: caller.team,
        cost_center: caller.cost_center,
        roles: caller.roles,
        csrf,
        exp: unix_now() + s.settings.session_ttl,
    };
    let set = s
        .jar
        .set(cookie::SESSION, &session, s.settings.session_ttl, true)
        .ok_or_else(|| ConsoleError::SignIn("cannot seal the session".into()))?;
    tracing::info!(subject = %session.sub, roles = ?session.roles, "console sign-in");
    let cookies = AppendHeaders([(SET_COOKIE, set), (SET_COOKIE, s.jar.clear(cookie::LOGIN))]);
    // A page of our own rather than a redirect: the browser then sends the
    // SameSite=Strict cookie on the next, same-site navigation.
    Ok((
        cookies,
        Html(continue_page("Signed in", "/console/", "Continue to the console", true)),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct LogoutForm {
    csrf: String,
}

/// `POST /console/logout`: end the session (with the form's CSRF token).
pub(crate) async fn logout(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Form(form): Form<LogoutForm>,
) -> Result<Response, ConsoleError> {
    let caller = Caller::from_cookie(&s, &headers).ok_or(ConsoleError::Unauthenticated)?;
    let mut with_token = HeaderMap::new();
    if let Ok(v) = form.csrf.parse() {
        with_token.insert(crate::caller::CSRF_HEADER, v);
    }
    caller.check_csrf(&with_token)?;
    // No refresh: straight back to the identity provider would sign the
    // user in again while it still holds a session.
    let page = continue_page("Signed out", "/console/login", "Sign in again", false);
    Ok(([(SET_COOKIE, s.jar.clear(cookie::SESSION))], Html(page)).into_response())
}

/// A small page with a link to `href` (and, with `refresh`, going there
/// at once).
fn continue_page(title: &str, href: &str, link: &str, refresh: bool) -> String {
    let refresh = if refresh {
        format!("<meta http-equiv=\"refresh\" content=\"0;url={href}\">")
    } else {
        String::new()
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Tollgate console — {title}</title>\
         {refresh}<link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/console/assets/console.css\">\
         </head><body><main><h1>{title}</h1><p><a href=\"{href}\">{link}</a></p></main></body></html>"
    )
}
