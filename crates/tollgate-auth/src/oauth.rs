//! Token endpoint requests made by the credential broker (request path
//! step 10, only when no cached upstream token is fresh): the OAuth client
//! credentials grant and RFC 8693 token exchange.

use std::time::Duration;

use serde::Deserialize;
use tollgate_config::{ClientAuthMethod, OAuthClient, Secret};
use url::Url;
use url::form_urlencoded::Serializer;

use crate::fetch::{check_url, read_body};
use crate::introspect::basic_auth;

/// Lifetime assumed when a token response has no `expires_in`.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(60);

/// The grant to request.
pub(crate) enum Grant<'a> {
    ClientCredentials,
    TokenExchange { subject_token: &'a str },
}

/// A configured client at a token endpoint, secret resolved.
pub(crate) struct OAuthParams {
    endpoint: Url,
    client_id: String,
    secret: Secret,
    basic: Secret,
    method: ClientAuthMethod,
    scope: Option<String>,
    audience: Option<String>,
    resource: Option<String>,
}

impl OAuthParams {
    /// `default_resource` is used when neither `audience` nor `resource`
    /// is configured (token exchange: the upstream's URL).
    pub(crate) fn new(cfg: &OAuthClient, secret: Secret, default_resource: Option<&str>) -> OAuthParams {
        let resource = match (&cfg.resource, &cfg.audience) {
            (None, None) => default_resource.map(str::to_owned),
            (r, _) => r.clone(),
        };
        OAuthParams {
            endpoint: cfg.token_endpoint.clone(),
            client_id: cfg.client_id.clone(),
            basic: basic_auth(&cfg.client_id, secret.expose()),
            secret,
            method: cfg.auth_method,
            scope: cfg.scope.clone(),
            audience: cfg.audience.clone(),
            resource,
        }
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// An access token from a token endpoint and its lifetime.
pub(crate) struct IssuedToken {
    pub(crate) access_token: String,
    pub(crate) lifetime: Duration,
}

/// The form body of a token request (built before any await: the
/// serializer is not `Send`).
fn form(p: &OAuthParams, grant: &Grant<'_>) -> String {
    let mut form = Serializer::new(String::new());
    match grant {
        Grant::ClientCredentials => {
            form.append_pair("grant_type", "client_credentials");
        }
        Grant::TokenExchange { subject_token } => {
            form.append_pair("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange")
                .append_pair("subject_token", subject_token)
                .append_pair("subject_token_type", "urn:ietf:params:oauth:token-type:access_token")
                .append_pair("requested_token_type", "urn:ietf:params:oauth:token-type:access_token");
        }
    }
    for (name, value) in [
        ("scope", &p.scope),
        ("audience", &p.audience),
        ("resource", &p.resource),
    ] {
        if let Some(v) = value {
            form.append_pair(name, v);
        }
    }
    if p.method == ClientAuthMethod::ClientSecretPost {
        form.append_pair("client_id", &p.client_id)
            .append_pair("client_secret", &String::from_utf8_lossy(p.secret.expose()));
    }
    form.finish()
}

/// Ask the token endpoint for a token.
///
/// # Errors
///
/// Transport failure, a non-2xx answer (with the OAuth `error` code when
/// there is one) or an unusable body; the text is for logs.
pub(crate) async fn request_token(
    http: &reqwest::Client,
    p: &OAuthParams,
    grant: Grant<'_>,
) -> Result<IssuedToken, String> {
    check_url(&p.endpoint, true)?;
    let mut req = http
        .post(p.endpoint.clone())
        .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(http::header::ACCEPT, "application/json");
    if p.method == ClientAuthMethod::ClientSecretBasic {
        req = req.header(http::header::AUTHORIZATION, p.basic.expose());
    }
    let res = req
        .body(form(p, &grant))
        .send()
        .await
        .map_err(|e| format!("POST {}: {e}", p.endpoint))?;
    let status = res.status();
    let body = read_body(res).await?;
    if !status.is_success() {
        let code = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_default();
        return Err(format!("POST {}: HTTP {status} {code}", p.endpoint));
    }
    let token: TokenResponse =
        serde_json::from_slice(&body).map_err(|e| format!("POST {}: not a token response: {e}", p.endpoint))?;
    if token.access_token.is_empty() {
        return Err(format!("POST {}: empty access_token", p.endpoint));
    }
    Ok(IssuedToken {
        access_token: token.access_token,
        lifetime: token.expires_in.map_or(DEFAULT_LIFETIME, Duration::from_secs),
    })
}
