//! Notes (`tollgate-demo --notes`): a small SaaS that acts for each user
//! with that user's own OAuth grant, like GitHub or Atlassian do, so that
//! `make run` can show Tollgate's back door (`credential = { kind =
//! "user_oauth" }`): the connect link, the user's consent, the vault.
//!
//! One port serves both halves, as a SaaS vendor would:
//!
//! - the MCP endpoint at [`MCP_PATH`], a protected resource: a request
//!   without a good access token gets 401 with `WWW-Authenticate: Bearer
//!   resource_metadata="…"`, pointing at its RFC 9728 metadata
//!   (`/.well-known/oauth-protected-resource/mcp`), which names Notes'
//!   own authorization server;
//! - that authorization server ([`oauth`], [`endpoints`]): RFC 8414
//!   metadata, `/authorize` (code + PKCE S256, the one pre-registered
//!   client and its exact redirect URI, a sign-in page picking a demo
//!   user) and `/token` (codes and rotating refresh tokens).
//!
//! Everything is kept in memory: a restart forgets every grant and note.

mod endpoints;
mod oauth;
mod page;
mod tools;

use std::{future::Future, io, sync::Arc, time::Duration};

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header::AUTHORIZATION, header::WWW_AUTHENTICATE},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use rmcp::transport::streamable_http_server::{StreamableHttpService, session::local::LocalSessionManager};
use serde_json::json;
use tokio::net::TcpListener;

use self::oauth::{AuthServer, SCOPES, Settings};
use self::tools::NotesServer;
use crate::http::{DemoConfig, MCP_PATH, access_log, mcp_config, run};

/// Where the MCP endpoint's RFC 9728 metadata is served.
const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Settings for [`serve_notes`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NotesConfig {
    /// The MCP side's settings (hosts, origins, JSON answers), as the demo server's.
    pub http: DemoConfig,
    /// The origin clients reach Notes at, e.g. `http://127.0.0.1:3003`: its
    /// OAuth issuer; the MCP URL is this plus [`MCP_PATH`]. `None`: the
    /// listener's address.
    pub public_url: Option<String>,
    /// The one registered client's id.
    pub client_id: String,
    /// Its secret.
    pub client_secret: Vec<u8>,
    /// Its redirect URI, matched exactly.
    pub redirect_uri: String,
    /// The users offered on the sign-in page.
    pub users: Vec<String>,
    /// How long access tokens last.
    pub token_ttl: Duration,
}

impl NotesConfig {
    /// Settings for the client `client_id` with `client_secret`, answered
    /// at `redirect_uri`; users alice and victor, one-hour tokens.
    pub fn new(client_id: impl Into<String>, client_secret: Vec<u8>, redirect_uri: impl Into<String>) -> Self {
        Self {
            http: DemoConfig::default(),
            public_url: None,
            client_id: client_id.into(),
            client_secret,
            redirect_uri: redirect_uri.into(),
            users: vec!["alice".to_owned(), "victor".to_owned()],
            token_ttl: Duration::from_secs(3600),
        }
    }
}

/// Serves Notes on `listener` until `shutdown` completes.
///
/// # Errors
///
/// Returns the I/O error that stopped the accept loop, or the listener's
/// missing local address.
pub async fn serve_notes(
    listener: TcpListener,
    config: NotesConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let origin = match &config.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("http://{}", listener.local_addr()?),
    };
    let auth = Arc::new(AuthServer::new(Settings {
        resource: format!("{origin}{MCP_PATH}"),
        issuer: origin,
        client_id: config.client_id,
        client_secret: config.client_secret,
        redirect_uri: config.redirect_uri,
        users: config.users,
        token_ttl: config.token_ttl,
    }));
    let mcp = mcp_config(&config.http);
    let cancel = mcp.cancellation_token.clone();
    let notebook = tools::Notebook::default();
    let service: StreamableHttpService<NotesServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(NotesServer::new(notebook.clone())),
        Arc::new(LocalSessionManager::default()),
        mcp,
    );
    let app = Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(auth.clone(), require_token))
        .merge(oauth_routes(auth))
        .fallback(not_found)
        .layer(middleware::from_fn(access_log));
    run(listener, app, move || cancel.cancel(), shutdown).await
}

/// The metadata documents and the authorization server's endpoints.
fn oauth_routes(auth: Arc<AuthServer>) -> Router {
    Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", get(endpoints::metadata))
        .route("/authorize", get(endpoints::authorize).post(endpoints::sign_in))
        .route("/token", axum::routing::post(endpoints::token))
        .with_state(auth)
}

/// `GET /.well-known/oauth-protected-resource/mcp` (RFC 9728).
async fn resource_metadata(State(auth): State<Arc<AuthServer>>) -> Json<serde_json::Value> {
    let s = auth.settings();
    Json(json!({
        "resource": s.resource,
        "authorization_servers": [s.issuer],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "Notes",
    }))
}

/// Lets a request with a good access token through, its caller in the
/// request's extensions; answers 401 with the RFC 9728 challenge otherwise.
async fn require_token(State(auth): State<Arc<AuthServer>>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_owned());
    match presented.as_deref().and_then(|token| auth.caller(token)) {
        Some(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None => challenge(&auth.settings().issuer, presented.is_some()),
    }
}

/// 401 pointing at the resource metadata; `invalid_token` when a token was
/// presented (unknown or expired).
fn challenge(issuer: &str, presented: bool) -> Response {
    let error = if presented { ", error=\"invalid_token\"" } else { "" };
    let value = format!("Bearer resource_metadata=\"{issuer}{RESOURCE_METADATA_PATH}\"{error}");
    let mut res = (StatusCode::UNAUTHORIZED, "Notes: sign in first (OAuth)\n").into_response();
    if let Ok(value) = HeaderValue::from_str(&value) {
        res.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    res
}

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "tollgate-demo (Notes): the MCP endpoint is /mcp\n",
    )
}
