//! A second identity provider the gateway trusts (`[[auth.issuers]]`): a
//! real JWKS endpoint over HTTP for a freshly generated ES256 key, and a
//! token endpoint that answers every code with one chosen access token (a
//! provider that hands the console someone else's token).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use serde_json::{Value, json};
use tollgate_auth::DevIssuer;

/// The provider; stops when dropped.
pub(crate) struct Idp {
    /// Its issuer URL (`http://127.0.0.1:PORT`).
    pub(crate) issuer: String,
    key: DevIssuer,
    answer: Arc<Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Idp {
    pub(crate) async fn start() -> Idp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let key = DevIssuer::from_pem(&issuer, &DevIssuer::generate_pem().unwrap()).unwrap();
        let answer = Arc::new(Mutex::new(String::new()));
        let jwks = key.jwks();
        let app = Router::new()
            .route("/jwks", get(move || async move { axum::Json(jwks) }))
            .route("/token", post(token))
            .with_state(answer.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Idp {
            issuer,
            key,
            answer,
            task,
        }
    }

    /// `[[auth.issuers]]` for this provider, with `keys` added.
    pub(crate) fn config(&self, keys: &str) -> String {
        format!(
            "[[auth.issuers]]\nissuer = \"{0}\"\njwks_uri = \"{0}/jwks\"\nallow_insecure_http = true\n{keys}\n",
            self.issuer
        )
    }

    /// A token for `sub` in the console's admin group, for `audience`,
    /// with the scope the demo route needs.
    pub(crate) fn token(&self, sub: &str, audience: &[&str]) -> String {
        let mut extra = serde_json::Map::new();
        extra.insert("groups".into(), json!(["platform-admins"]));
        let audience: Vec<String> = audience.iter().map(|a| (*a).to_owned()).collect();
        let scopes = ["mcp:tools".to_owned()];
        self.key
            .mint_with(sub, extra, &scopes, Duration::from_secs(600), &audience)
            .unwrap()
    }

    /// Answer every code at the token endpoint with `token`.
    pub(crate) fn answer_with(&self, token: &str) {
        *self.answer.lock().unwrap() = token.to_owned();
    }
}

async fn token(State(answer): State<Arc<Mutex<String>>>) -> axum::Json<Value> {
    let token = answer.lock().unwrap().clone();
    axum::Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 600}))
}
