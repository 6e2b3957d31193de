//! The Tollgate console: a web UI and JSON API on the admin listener,
//! under `/console`, for the gateway's three kinds of users — security
//! reviewers (audit search and one call's whole story), finance (spend by
//! team, cost centre, user, server and tool; budgets) and platform teams
//! (traffic, catalog approvals, policies, upstream health).
//!
//! Off the request path: the console reads what the gateway writes (the
//! audit trail through its index, the live configuration through
//! [`Backend`]) and changes only the catalog lock. Users sign in through
//! the configured identity provider ([`signin`]); scripts use a bearer
//! token for the console's URL. Either way the token must be the console
//! issuer's and name the console in its audience ([`caller`]). Every page is a shell whose scripts draw
//! it from `/console/api`; the assets are embedded in the binary and
//! served under a strict Content-Security-Policy.

mod api;
mod backend;
mod caller;
mod cookie;
mod error;
mod oidc;
mod pages;
mod roles;
mod settings;
mod signin;
mod state;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use axum::Router;
use axum::response::{Redirect, Response};
use axum::routing::{get, post};
use http::HeaderValue;
use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS};

pub use backend::{ApprovalError, ApprovalRequest, Backend, CheckRequest};
pub use error::ConsoleError;
pub use roles::{Role, roles_of};
pub use settings::Settings;

/// The console's Content-Security-Policy: its own scripts, styles and API
/// only; no inline code, no framing.
pub const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// The console's routes, to merge into the admin router.
///
/// # Errors
///
/// No randomness for the cookie key.
pub fn router(settings: Settings, backend: Arc<dyn Backend>) -> Result<Router, ConsoleError> {
    let jar = cookie::Jar::new(settings.cookie_key.as_deref(), settings.secure())
        .ok_or_else(|| ConsoleError::Gateway("cannot derive the console's cookie key".into()))?;
    let http = tollgate_auth::identity_client().map_err(|e| ConsoleError::Gateway(e.to_string()))?;
    let shared = Arc::new(state::Shared {
        settings,
        jar,
        backend,
        http,
        update_lock: std::sync::Mutex::new(()),
    });
    let mut router = Router::new()
        .route("/console", get(|| async { Redirect::permanent("/console/") }))
        .route("/console/login", get(signin::login))
        .route("/console/callback", get(signin::callback))
        .route("/console/logout", post(signin::logout))
        .route("/console/assets/{*path}", get(pages::assets))
        .route("/console/api/me", get(api::me))
        .route("/console/api/overview", get(api::overview::overview))
        .route("/console/api/audit", get(api::audit::search))
        .route("/console/api/audit/call", get(api::audit::call))
        .route("/console/api/audit/export", get(api::audit::export))
        .route("/console/api/fleet", get(api::fleet::fleet))
        .route("/console/api/spend", get(api::spend::spend))
        .route("/console/api/spend.csv", get(api::spend::spend_csv))
        .route("/console/api/catalog", get(api::gateway::catalog))
        .route("/console/api/catalog/approve", post(api::gateway::approve))
        .route("/console/api/policies", get(api::gateway::policies))
        .route("/console/api/policies/check", post(api::gateway::check))
        .route("/console/api/upstreams", get(api::gateway::upstreams))
        .route("/console/api/access", get(api::access::access))
        .route("/console/api/access/revoke", post(api::access::revoke))
        .route("/console/api/access/client", post(api::access::client));
    for (path, _, _) in pages::PAGES {
        router = router.route(path, get(pages::page));
    }
    Ok(router.layer(axum::middleware::map_response(protect)).with_state(shared))
}

/// Headers on every console answer: the CSP, no sniffing, no framing, no
/// referrer, and no caching of anything but the assets.
async fn protect(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    if !h.contains_key(CACHE_CONTROL) {
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
