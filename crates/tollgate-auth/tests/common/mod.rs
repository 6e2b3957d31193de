//! A real identity provider for tests, over HTTP on 127.0.0.1:0: OIDC
//! discovery, a JWKS endpoint (switchable down, rotatable), a token
//! endpoint (client credentials and token exchange) and an introspection
//! endpoint, with request counters. Keys are generated per test run.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use arc_swap::ArcSwap;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tollgate_auth::{AuthenticatorSettings, BrokerRoute, BrokerSettings};
use tollgate_config::{Environment, Loaded};

pub const CLIENT_ID: &str = "gateway";
pub const CLIENT_SECRET: &str = "s3cret";
pub const ROUTE: &str = "http://127.0.0.1:8080/mcp/github";

/// A signing key of the test issuer.
pub struct TestKey {
    pub kid: String,
    pub alg: Algorithm,
    pub key: EncodingKey,
    pub jwk: Value,
    /// SubjectPublicKeyInfo PEM (for the HS256-with-public-key attack).
    pub public_pem: String,
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let lines: Vec<_> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

impl TestKey {
    pub fn rsa(kid: &str) -> TestKey {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
        let private = pem("PRIVATE KEY", pair.as_der().unwrap().as_ref());
        let public = pem("PUBLIC KEY", pair.public_key().as_der().unwrap().as_ref());
        TestKey::from_private(
            kid,
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(private.as_bytes()).unwrap(),
            public,
        )
    }

    pub fn ec(kid: &str) -> TestKey {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let private = pem("PRIVATE KEY", doc.as_ref());
        TestKey::from_private(
            kid,
            Algorithm::ES256,
            EncodingKey::from_ec_pem(private.as_bytes()).unwrap(),
            String::new(),
        )
    }

    fn from_private(kid: &str, alg: Algorithm, key: EncodingKey, public_pem: String) -> TestKey {
        let mut jwk = serde_json::to_value(Jwk::from_encoding_key(&key, alg).unwrap()).unwrap();
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        TestKey {
            kid: kid.into(),
            alg,
            key,
            jwk,
            public_pem,
        }
    }

    /// Sign `claims` with this key (header `kid` = this key's).
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// One form posted to the token endpoint, with its Authorization header.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub form: HashMap<String, String>,
    pub authorization: Option<String>,
}

#[derive(Default)]
pub struct IdpState {
    pub base: String,
    pub jwks: ArcSwap<Value>,
    pub down: AtomicBool,
    pub jwks_hits: AtomicUsize,
    pub discovery_hits: AtomicUsize,
    pub introspections: AtomicUsize,
    pub token_requests: tokio::sync::Mutex<Vec<TokenRequest>>,
    pub issued: AtomicUsize,
    pub expires_in: AtomicU64,
}

/// The running test identity provider.
pub struct TestIdp {
    pub state: Arc<IdpState>,
    pub issuer: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestIdp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestIdp {
    /// Serve a JWKS with `keys` published.
    pub async fn start(keys: &[&TestKey]) -> TestIdp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(IdpState {
            base: issuer.clone(),
            expires_in: AtomicU64::new(3600),
            ..IdpState::default()
        });
        state.jwks.store(Arc::new(jwks(keys)));
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(serve_jwks))
            .route("/token", post(token))
            .route("/introspect", post(introspect))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        TestIdp { state, issuer, task }
    }

    /// Publish exactly `keys` (rotation).
    pub fn publish(&self, keys: &[&TestKey]) {
        self.state.jwks.store(Arc::new(jwks(keys)));
    }

    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    pub fn jwks_hits(&self) -> usize {
        self.state.jwks_hits.load(Ordering::SeqCst)
    }

    /// Standard valid claims for `ROUTE`.
    pub fn claims(&self, sub: &str, scope: &str) -> Value {
        json!({
            "iss": self.issuer, "sub": sub, "aud": ROUTE, "exp": now() + 3600, "iat": now(),
            "scope": scope, "client_id": "cli", "jti": format!("jti-{sub}"), "team": "payments"
        })
    }

    pub async fn token_requests(&self) -> Vec<TokenRequest> {
        self.state.token_requests.lock().await.clone()
    }
}

fn jwks(keys: &[&TestKey]) -> Value {
    json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() })
}

async fn discovery(State(s): State<Arc<IdpState>>) -> Response {
    s.discovery_hits.fetch_add(1, Ordering::SeqCst);
    if s.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    Json(json!({
        "issuer": s.base,
        "jwks_uri": format!("{}/jwks", s.base),
        "token_endpoint": format!("{}/token", s.base),
    }))
    .into_response()
}

async fn serve_jwks(State(s): State<Arc<IdpState>>) -> Response {
    s.jwks_hits.fetch_add(1, Ordering::SeqCst);
    if s.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    Json((**s.jwks.load()).clone()).into_response()
}

fn parse_form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn client_ok(headers: &HeaderMap, form: &HashMap<String, String>) -> bool {
    let basic = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
    let header = headers.get("authorization").and_then(|v| v.to_str().ok());
    header == Some(basic.as_str())
        || (form.get("client_id").map(String::as_str) == Some(CLIENT_ID)
            && form.get("client_secret").map(String::as_str) == Some(CLIENT_SECRET))
}

async fn token(State(s): State<Arc<IdpState>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let form = parse_form(&body);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    s.token_requests.lock().await.push(TokenRequest {
        form: form.clone(),
        authorization,
    });
    if s.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if !client_ok(&headers, &form) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "invalid_client"}))).into_response();
    }
    // Simulate a slow endpoint so concurrent callers overlap.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let n = s.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let token = match form.get("grant_type").map(String::as_str) {
        Some("client_credentials") => format!("cc-{n}"),
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
            let subject = form.get("subject_token").cloned().unwrap_or_default();
            format!("tx-{n}-for-{}", subject.len())
        }
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "unsupported_grant_type"})),
            )
                .into_response();
        }
    };
    Json(json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": s.expires_in.load(Ordering::SeqCst),
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
    }))
    .into_response()
}

async fn introspect(State(s): State<Arc<IdpState>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    s.introspections.fetch_add(1, Ordering::SeqCst);
    if s.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let form = parse_form(&body);
    if !client_ok(&headers, &form) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let answer = match form.get("token").map(String::as_str) {
        Some("opaque-good") => json!({
            "active": true, "iss": s.base, "sub": "svc-batch", "client_id": "svc-batch",
            "aud": [ROUTE], "scope": "mcp:tools", "exp": now() + 3600
        }),
        Some("opaque-other-route") => json!({
            "active": true, "sub": "bob", "aud": "http://127.0.0.1:8080/mcp/other", "scope": "mcp:tools"
        }),
        _ => json!({ "active": false }),
    };
    Json(answer).into_response()
}

/// Secrets for configurations: every variable is the test client secret.
pub struct TestEnv;

impl Environment for TestEnv {
    fn var(&self, _: &str) -> Option<String> {
        Some(CLIENT_SECRET.into())
    }
    fn read_file(&self, path: &Path) -> Result<Vec<u8>, String> {
        Err(format!("no file {}", path.display()))
    }
}

/// Load a configuration (TOML text) for the gateway on 127.0.0.1:8080.
pub fn load(text: &str) -> Loaded {
    let full = format!("[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n{text}");
    tollgate_config::load_str(Path::new("test.toml"), &full, &TestEnv).unwrap_or_else(|e| panic!("{e}"))
}

/// The authenticator of `loaded`'s `[auth]` (as the server maps it).
pub fn authenticator_settings(loaded: &Loaded) -> AuthenticatorSettings {
    AuthenticatorSettings {
        issuers: loaded.config.auth.issuers.clone(),
        introspection_secrets: loaded.auth_secrets.introspection.clone(),
        token_cache_entries: loaded.config.auth.token_cache_entries,
    }
}

/// The credential broker of `loaded`'s `[[servers]]` (as the server maps
/// it).
pub fn broker_settings(loaded: &Loaded) -> BrokerSettings {
    let secrets = &loaded.auth_secrets.credentials;
    let routes = loaded.config.servers.iter().enumerate().map(|(i, s)| BrokerRoute {
        name: s.name.as_str().to_owned(),
        url: s.url.as_str().to_owned(),
        credential: s.credential.clone(),
        secret: secrets.get(i).cloned().flatten(),
    });
    BrokerSettings {
        routes: routes.collect(),
    }
}

/// An authenticator trusting `idp` (discovery, short refetch interval),
/// as for a `github` route needing `mcp:tools`.
pub fn issuer_settings(idp: &TestIdp, extra_issuer_keys: &str) -> AuthenticatorSettings {
    authenticator_settings(&load(&format!(
        r#"
[[auth.issuers]]
issuer = "{}"
allow_insecure_http = true
audiences = ["api://tollgate"]
{extra_issuer_keys}

[[servers]]
name = "github"
url = "http://127.0.0.1:3001/mcp"
auth = {{ scopes = ["mcp:tools"] }}
"#,
        idp.issuer
    )))
}
