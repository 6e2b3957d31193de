//! The connect page: where a user whose call needed a grant goes, by the
//! URL the call was answered with. `GET /oauth/connect?request=…` signs
//! the user in at Tollgate (through the front door's sign-in), checks that
//! the signed-in user is the caller who asked (no confused deputy: a link
//! opened by someone else is refused), and sends the browser to the
//! upstream's authorization server (code + PKCE S256, a single-use
//! `state`). `GET /oauth/upstream/callback` redeems the code and keeps the
//! grant.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::header::SET_COOKIE;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::{Deserialize, Serialize};
use tollgate_issuer::notice;

use crate::records::{CONNECT_TTL, Connect, ns};
use crate::vault::Vault;
use crate::{VaultError, random};

/// A connect waiting for the upstream's answer, under its `state`.
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    connect: Connect,
    verifier: String,
}

/// The connect page's routes, on the public listener.
pub fn router(vault: Arc<Vault>) -> Router {
    Router::new()
        .route("/oauth/connect", get(connect))
        .route("/oauth/upstream/callback", get(callback))
        .route("/oauth/upstream/client.json", get(client_document))
        .with_state(vault)
}

/// Tollgate's Client ID Metadata Document as a client of upstreams'
/// authorization servers that accept one (no registration needed): a
/// public client (PKCE), redirecting to the callback only.
async fn client_document(State(v): State<Arc<Vault>>) -> Response {
    let doc = serde_json::json!({
        "client_id": v.client_document_url(),
        "client_name": "Tollgate",
        "redirect_uris": [v.callback_url()],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    });
    let mut res = axum::Json(doc).into_response();
    res.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    res
}

fn refused(status: StatusCode, why: &str) -> Response {
    notice(status, "Not connected", &[why.to_owned()])
}

#[derive(Debug, Deserialize)]
struct ConnectQuery {
    request: String,
    signin: Option<String>,
}

async fn connect(State(v): State<Arc<Vault>>, headers: HeaderMap, Query(q): Query<ConnectQuery>) -> Response {
    let request: Connect = match v.store.get(ns::CONNECT, &q.request).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return refused(
                StatusCode::NOT_FOUND,
                "This link is unknown, used or expired: call the tool again for a new one.",
            );
        }
        Err(e) => return refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let Some(signin) = q.signin else {
        return match v
            .issuer
            .sign_in_then(&format!("/oauth/connect?request={}", q.request))
            .await
        {
            Ok((cookie, to)) => {
                let mut res = Redirect::to(&to).into_response();
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    res.headers_mut().insert(SET_COOKIE, value);
                }
                res
            }
            Err(e) => refused(StatusCode::SERVICE_UNAVAILABLE, &e.description),
        };
    };
    let user = match v
        .issuer
        .signed_in_user(&signin, v.issuer.browser_cookie(&headers))
        .await
    {
        Ok(u) => u,
        Err(e) => return refused(StatusCode::FORBIDDEN, &e.description),
    };
    let same_identity = v.settings.identity_issuers.contains(&request.principal_issuer);
    if user.subject != request.subject || !same_identity {
        v.events.count(&request.server, "refused");
        tracing::warn!(signed_in = %user.subject, asked_by = %request.subject, server = %request.server, "connect link opened by another user: refused");
        return refused(
            StatusCode::FORBIDDEN,
            &format!(
                "You signed in as {}, but this link is for another user's call. Open the link from your own client.",
                user.subject
            ),
        );
    }
    // Single use from here on.
    if let Err(e) = v.store.delete(ns::CONNECT, &q.request).await {
        return refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
    }
    if v.upstream(&request.server).is_ok_and(|up| up.spec.assertion) {
        return by_assertion(&v, &request).await;
    }
    match to_upstream(&v, request).await {
        Ok(url) => Redirect::to(&url).into_response(),
        Err(e) => refused(StatusCode::BAD_GATEWAY, &e.to_string()),
    }
}

/// An `id_jag` server: the sign-in just made gives the assertion; no
/// consent at the upstream.
async fn by_assertion(v: &Vault, request: &Connect) -> Response {
    match v.assert_grant(request).await {
        Ok(Some((_, info))) => connected(&info),
        Ok(None) => refused(
            StatusCode::FORBIDDEN,
            "Your sign-in gave no identity assertion for this server: sign in at the company identity provider.",
        ),
        Err(e) => {
            v.events.count(&request.server, "refused");
            refused(StatusCode::BAD_GATEWAY, &e.to_string())
        }
    }
}

/// The page a user sees once their grant is kept.
fn connected(info: &crate::GrantInfo) -> Response {
    let paragraphs = [
        format!(
            "Tollgate now calls {} with your own grant ({}).",
            info.server,
            info.scopes.join(" ")
        ),
        "Go back to your client and try again. You can disconnect on the console.".to_owned(),
    ];
    notice(StatusCode::OK, "Connected", &paragraphs)
}

/// Keep the connect under a fresh `state`; the upstream's authorization URL.
async fn to_upstream(v: &Vault, connect: Connect) -> Result<String, VaultError> {
    let up = v.upstream(&connect.server)?;
    let meta = v.meta(&up).await?;
    let client = v.client(&up).await?;
    let (state, verifier) = (random(24)?, random(48)?);
    let challenge = tollgate_issuer::s256(&verifier);
    let mut url = meta.authorization_endpoint.clone();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &client.0)
        .append_pair("redirect_uri", &v.callback_url())
        .append_pair("scope", &up.spec.scopes.join(" "))
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &up.spec.resource);
    v.store
        .put(ns::STATE, &state, &Pending { connect, verifier }, CONNECT_TTL)
        .await?;
    Ok(url.to_string())
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

async fn callback(State(v): State<Arc<Vault>>, Query(q): Query<CallbackQuery>) -> Response {
    let Some(state) = q.state else {
        return refused(StatusCode::BAD_REQUEST, "No state.");
    };
    let pending: Pending = match v.store.take(ns::STATE, &state).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return refused(
                StatusCode::BAD_REQUEST,
                "This answer is unknown, used or expired (state): connect again.",
            );
        }
        Err(e) => return refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let server = pending.connect.server.clone();
    let code = match (q.code, q.error) {
        (_, Some(error)) => {
            v.events.count(&server, "refused");
            return refused(
                StatusCode::FORBIDDEN,
                &format!("{server} answered {error}: not connected."),
            );
        }
        (None, None) => return refused(StatusCode::BAD_REQUEST, "No code."),
        (Some(code), None) => code,
    };
    match redeem(&v, &pending, &code).await {
        Ok(info) => {
            tracing::info!(server = %server, subject = %info.subject, grant = %info.id, upstream = %info.upstream_issuer, "upstream grant made");
            connected(&info)
        }
        Err(e) => {
            v.events.count(&server, "refused");
            refused(StatusCode::BAD_GATEWAY, &e.to_string())
        }
    }
}

async fn redeem(v: &Vault, pending: &Pending, code: &str) -> Result<crate::GrantInfo, VaultError> {
    let up = v.upstream(&pending.connect.server)?;
    let (meta, client) = (v.meta(&up).await?, v.client(&up).await?);
    let callback = v.callback_url();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", callback.as_str()),
        ("code_verifier", pending.verifier.as_str()),
        ("resource", up.spec.resource.as_str()),
    ];
    let set = crate::upstream::token(&v.http, &up.spec, meta, client, &form)
        .await
        .map_err(|e| match e {
            crate::upstream::TokenError::InvalidGrant => {
                VaultError::Upstream("the code was refused (invalid_grant)".into())
            }
            crate::upstream::TokenError::Other(e) => e,
        })?;
    v.keep(&pending.connect, &up, set).await
}
