//! Sign-in: the OAuth 2.1 authorization code grant with PKCE (S256), the
//! console as a confidential client. `/console/login` sends the browser to
//! the identity provider with a state and a code challenge kept in a
//! sealed cookie; `/console/callback` checks the state, redeems the code
//! at the token endpoint, verifies the access token as a console token
//! (the console issuer's, for the console's audience: [`crate::caller`]),
//! maps its groups to roles and sets the session cookie. `/console/logout`
//! clears it.

use std::sync::Arc;

use aws_lc_rs::digest;
use axum::Form;
use axum::extract::{Query, State};
use axum::response::{AppendHeaders, Html, IntoResponse, Redirect, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use http::header::SET_COOKIE;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::caller::{Caller, Session, verify_token};
use crate::cookie::{self, random_token, unix_now};
use crate::error::ConsoleError;
use crate::state::{Endpoints, Shared};

/// How long a sign-in may take at the identity provider.
const LOGIN_TTL: u64 = 600;

#[derive(Debug, Serialize, Deserialize)]
struct LoginState {
    state: String,
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
    let endpoints = endpoints(&s).await?;
    let fail = || ConsoleError::SignIn("no randomness".into());
    let login = LoginState {
        state: random_token(24).ok_or_else(fail)?,
        verifier: random_token(48).ok_or_else(fail)?,
        exp: unix_now() + LOGIN_TTL,
    };
    let challenge = URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, login.verifier.as_bytes()));
    let settings = &s.settings;
    let mut url = endpoints.authorization;
    {
        let mut pairs = url.query_pairs_mut();
        pairs
            .append_pair("response_type", "code")
            .append_pair("client_id", &settings.client_id)
            .append_pair("redirect_uri", &settings.redirect_uri())
            .append_pair("scope", &settings.scopes.join(" "))
            .append_pair("state", &login.state)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &settings.url);
        if let Some(hint) = &q.login_hint {
            pairs.append_pair("login_hint", hint);
        }
    }
    let set = s.jar.set(cookie::LOGIN, &login, LOGIN_TTL, false).ok_or_else(fail)?;
    Ok(([(SET_COOKIE, set)], Redirect::to(url.as_str())).into_response())
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
    let token = redeem(&s, &code, &login.verifier).await?;
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

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    access_token: String,
}

/// Redeem `code` at the token endpoint (client authentication: HTTP Basic).
async fn redeem(s: &Shared, code: &str, verifier: &str) -> Result<String, ConsoleError> {
    let endpoints = endpoints(s).await?;
    let settings = &s.settings;
    let redirect = settings.redirect_uri();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", &redirect),
        ("code_verifier", verifier),
        ("client_id", &settings.client_id),
        ("resource", &settings.url),
    ];
    let mut request = s.http.post(endpoints.token).form(&form);
    if let Some(secret) = &settings.client_secret {
        request = request.basic_auth(&settings.client_id, Some(String::from_utf8_lossy(secret)));
    }
    let answer = request
        .send()
        .await
        .map_err(|e| ConsoleError::SignIn(format!("token endpoint: {e}")))?;
    let status = answer.status();
    let body = answer
        .text()
        .await
        .map_err(|e| ConsoleError::SignIn(format!("token endpoint: {e}")))?;
    if !status.is_success() {
        return Err(ConsoleError::SignIn(format!(
            "token endpoint answered {status}: {body}"
        )));
    }
    serde_json::from_str::<TokenAnswer>(&body)
        .map(|t| t.access_token)
        .map_err(|e| ConsoleError::SignIn(format!("token endpoint: {e}")))
}

#[derive(Debug, Deserialize)]
struct Discovery {
    authorization_endpoint: Url,
    token_endpoint: Url,
}

/// The configured endpoints, else the issuer's discovery document's.
async fn endpoints(s: &Shared) -> Result<Endpoints, ConsoleError> {
    let settings = &s.settings;
    let found = s
        .endpoints
        .get_or_try_init(|| async {
            if let (Some(a), Some(t)) = (&settings.authorization_endpoint, &settings.token_endpoint) {
                return Ok(Endpoints {
                    authorization: a.clone(),
                    token: t.clone(),
                });
            }
            let url = format!(
                "{}/.well-known/openid-configuration",
                settings.issuer.trim_end_matches('/')
            );
            let doc: Discovery = s
                .http
                .get(&url)
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(|e| ConsoleError::SignIn(format!("discovery at {url}: {e}")))?
                .json()
                .await
                .map_err(|e| ConsoleError::SignIn(format!("discovery at {url}: {e}")))?;
            Ok::<_, ConsoleError>(Endpoints {
                authorization: settings
                    .authorization_endpoint
                    .clone()
                    .unwrap_or(doc.authorization_endpoint),
                token: settings.token_endpoint.clone().unwrap_or(doc.token_endpoint),
            })
        })
        .await?;
    Ok(found.clone())
}
