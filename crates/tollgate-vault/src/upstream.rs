//! Tollgate as an OAuth client of one upstream's authorization server:
//! the server found from the upstream's RFC 9728 metadata (its 401
//! challenge) or configured, Tollgate's client there pre-registered or
//! registered on first use (a Client ID Metadata Document where the
//! server accepts one, else RFC 7591), the authorization request (code +
//! PKCE S256, `resource` = the upstream, RFC 8707), the code exchange and
//! refresh (client_secret_basic, form-encoded per RFC 6749 §2.3.1).

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::VaultError;

/// One `user_oauth` server, as the vault needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// The route name.
    pub server: String,
    /// The upstream MCP URL (where its 401 challenge is read).
    pub url: String,
    /// The upstream's authorization server, when configured.
    pub authorization_server: Option<Url>,
    /// Tollgate's client id there, when pre-registered.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<Vec<u8>>,
    /// Scopes asked for.
    pub scopes: Vec<String>,
    /// The RFC 8707 resource.
    pub resource: String,
    /// Allow `http://` on a loopback host.
    pub allow_http: bool,
    /// `id_jag`: tokens are obtained with an identity assertion from the
    /// company identity provider (RFC 7523 JWT bearer), not by consent.
    pub assertion: bool,
}

/// The parts of RFC 8414 metadata the client reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AsMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Url,
    pub(crate) token_endpoint: Url,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<Url>,
    /// The server accepts a Client ID Metadata Document URL as client id.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
}

/// A token endpoint's answer.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TokenSet {
    pub(crate) access_token: String,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    #[serde(default)]
    pub(crate) expires_in: Option<u64>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

const TIMEOUT: Duration = Duration::from_secs(10);

fn failed(server: &str, what: impl std::fmt::Display) -> VaultError {
    VaultError::Upstream(format!("{server}: {what}"))
}

fn check_url(spec: &UpstreamSpec, url: &Url) -> Result<(), VaultError> {
    tollgate_auth::check_url(url, spec.allow_http).map_err(|e| failed(&spec.server, e))
}

/// A JSON document, under the identity layer's rules: `https` (or `http`
/// on loopback when allowed), at most 1 MiB.
async fn get_json(http: &reqwest::Client, spec: &UpstreamSpec, url: &str) -> Result<Value, String> {
    let url = Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    tollgate_auth::get_json(http, &url, spec.allow_http).await
}

/// The upstream's authorization server issuer: configured, or the first
/// of its RFC 9728 metadata's `authorization_servers` (the 401 challenge's
/// `resource_metadata`, else the well-known path).
async fn issuer_of(http: &reqwest::Client, spec: &UpstreamSpec) -> Result<Url, VaultError> {
    if let Some(url) = &spec.authorization_server {
        return Ok(url.clone());
    }
    let challenge = http
        .post(&spec.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .timeout(TIMEOUT)
        .send()
        .await
        .ok()
        .and_then(|res| res.headers().get("www-authenticate")?.to_str().ok().map(str::to_owned));
    let from_header = challenge.as_deref().and_then(|c| {
        let at = c.find("resource_metadata=\"")? + "resource_metadata=\"".len();
        c[at..].split('"').next().map(str::to_owned)
    });
    let url = Url::parse(&spec.url).map_err(|e| failed(&spec.server, e))?;
    let well_known = format!(
        "{}/.well-known/oauth-protected-resource{}",
        url.origin().ascii_serialization(),
        url.path().trim_end_matches('/')
    );
    let doc = get_json(http, spec, from_header.as_deref().unwrap_or(&well_known))
        .await
        .map_err(|e| failed(&spec.server, format!("its protected resource metadata: {e}")))?;
    let first = doc["authorization_servers"][0].as_str().ok_or_else(|| {
        failed(
            &spec.server,
            "its protected resource metadata names no authorization server",
        )
    })?;
    Url::parse(first).map_err(|e| failed(&spec.server, e))
}

/// RFC 8414 metadata of `issuer`, at the paths RFC 8414 and OpenID
/// Connect define (with the issuer's path inserted, then appended).
pub(crate) async fn metadata(http: &reqwest::Client, spec: &UpstreamSpec) -> Result<AsMetadata, VaultError> {
    let issuer = issuer_of(http, spec).await?;
    check_url(spec, &issuer)?;
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let tries = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ];
    let mut last = String::new();
    for url in &tries {
        match get_json(http, spec, url).await {
            Ok(doc) => {
                let meta: AsMetadata =
                    serde_json::from_value(doc).map_err(|e| failed(&spec.server, format!("{url}: {e}")))?;
                if meta.issuer.trim_end_matches('/') != issuer.as_str().trim_end_matches('/') {
                    return Err(failed(&spec.server, format!("{url} names issuer {}", meta.issuer)));
                }
                check_url(spec, &meta.token_endpoint)?;
                return Ok(meta);
            }
            Err(e) => last = e,
        }
    }
    Err(failed(
        &spec.server,
        format!("no authorization server metadata ({last})"),
    ))
}

/// Register Tollgate at the upstream's authorization server (RFC 7591)
/// as a confidential web client redirecting to `callback`.
pub(crate) async fn register(
    http: &reqwest::Client,
    spec: &UpstreamSpec,
    meta: &AsMetadata,
    callback: &str,
) -> Result<(String, Option<String>), VaultError> {
    let endpoint = meta.registration_endpoint.as_ref().ok_or_else(|| {
        failed(
            &spec.server,
            "no client_id is configured and its authorization server offers no registration",
        )
    })?;
    let body = serde_json::json!({
        "client_name": "Tollgate",
        "redirect_uris": [callback],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
        "application_type": "web",
        "scope": spec.scopes.join(" "),
    });
    let res = http
        .post(endpoint.as_str())
        .json(&body)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| failed(&spec.server, e))?;
    let status = res.status();
    let answer: Value = res.json().await.map_err(|e| failed(&spec.server, e))?;
    if !status.is_success() {
        return Err(failed(
            &spec.server,
            format!("registration answered {status}: {answer}"),
        ));
    }
    let id = answer["client_id"]
        .as_str()
        .ok_or_else(|| failed(&spec.server, "registration gave no client_id"))?;
    Ok((id.to_owned(), answer["client_secret"].as_str().map(str::to_owned)))
}

/// A token request with `form`, as client `client`.
pub(crate) async fn token(
    http: &reqwest::Client,
    spec: &UpstreamSpec,
    meta: &AsMetadata,
    client: &(String, Option<String>),
    form: &[(&str, &str)],
) -> Result<TokenSet, TokenError> {
    let mut req = http.post(meta.token_endpoint.as_str()).form(form).timeout(TIMEOUT);
    req = match &client.1 {
        Some(secret) => req.basic_auth(
            tollgate_issuer::form_encode(&client.0),
            Some(tollgate_issuer::form_encode(secret)),
        ),
        None => req.form(&[form, &[("client_id", client.0.as_str())]].concat()),
    };
    let res = req
        .send()
        .await
        .map_err(|e| TokenError::Other(failed(&spec.server, e)))?;
    let status = res.status();
    let answer: Value = res
        .json()
        .await
        .map_err(|e| TokenError::Other(failed(&spec.server, e)))?;
    if status.is_success() {
        return serde_json::from_value(answer).map_err(|e| TokenError::Other(failed(&spec.server, e)));
    }
    if answer["error"] == "invalid_grant" {
        return Err(TokenError::InvalidGrant);
    }
    Err(TokenError::Other(failed(
        &spec.server,
        format!("its token endpoint answered {status}: {answer}"),
    )))
}

/// Why a token request failed.
#[derive(Debug)]
pub(crate) enum TokenError {
    /// The grant is no longer good (revoked at the upstream, expired).
    InvalidGrant,
    /// Anything else.
    Other(VaultError),
}
