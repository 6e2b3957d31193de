//! The console's OpenID Connect client, on the `openidconnect` crate: the
//! provider's metadata and keys from discovery (endpoints may be
//! overridden by `[console]`), the authorization URL with state, nonce and
//! a PKCE S256 challenge, the code exchange with the client secret sent as
//! HTTP Basic over form-urlencoded credentials (RFC 6749 §2.3.1), and the
//! ID token's checks when the provider sends one.

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreJwsSigningAlgorithm, CoreProviderMetadata};
use openidconnect::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, OAuth2TokenResponse as _, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    TokenResponse as _, TokenUrl,
};

use crate::error::ConsoleError;
use crate::settings::Settings;

/// The client with its authorization and token endpoints known.
type Client = CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet, EndpointMaybeSet>;

/// Signature algorithms an ID token may use.
const ALGORITHMS: [CoreJwsSigningAlgorithm; 5] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// A sign-in's start: where to send the browser, and what to keep.
pub(crate) struct Start {
    pub(crate) url: url::Url,
    pub(crate) state: String,
    pub(crate) nonce: String,
    pub(crate) verifier: String,
}

fn fail(what: &str) -> impl Fn(String) -> ConsoleError + '_ {
    move |e| ConsoleError::SignIn(format!("{what}: {e}"))
}

/// The client, from the issuer's discovery document (fetched for each
/// sign-in step, so that rotated keys are seen).
async fn client(settings: &Settings, http: &reqwest::Client) -> Result<Client, ConsoleError> {
    let issuer = IssuerUrl::new(settings.issuer.clone()).map_err(|e| fail("the issuer")(e.to_string()))?;
    let metadata = CoreProviderMetadata::discover_async(issuer, http)
        .await
        .map_err(|e| fail("discovery")(chain(&e)))?;
    let token = match (&settings.token_endpoint, metadata.token_endpoint()) {
        (Some(url), _) => TokenUrl::from_url(url.clone()),
        (None, Some(url)) => url.clone(),
        (None, None) => return Err(ConsoleError::SignIn("discovery: no token endpoint".into())),
    };
    let secret = settings
        .client_secret
        .as_ref()
        .map(|s| ClientSecret::new(String::from_utf8_lossy(s).into_owned()));
    let redirect = RedirectUrl::new(settings.redirect_uri()).map_err(|e| fail("the redirect URI")(e.to_string()))?;
    let mut client = CoreClient::from_provider_metadata(metadata, ClientId::new(settings.client_id.clone()), secret)
        .set_redirect_uri(redirect)
        .set_auth_type(AuthType::BasicAuth)
        .set_token_uri(token);
    if let Some(url) = &settings.authorization_endpoint {
        client = client.set_auth_uri(AuthUrl::from_url(url.clone()));
    }
    Ok(client)
}

/// The authorization URL for a new sign-in (`resource` = the console's
/// URL, RFC 8707; `login_hint` passed on).
pub(crate) async fn start(
    settings: &Settings,
    http: &reqwest::Client,
    login_hint: Option<&str>,
) -> Result<Start, ConsoleError> {
    let client = client(settings, http).await?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let scopes = settings.scopes.iter().filter(|s| *s != "openid");
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scopes(scopes.map(|s| Scope::new(s.clone())))
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", settings.url.clone());
    if let Some(hint) = login_hint {
        request = request.add_extra_param("login_hint", hint.to_owned());
    }
    let (url, state, nonce) = request.url();
    Ok(Start {
        url,
        state: state.into_secret(),
        nonce: nonce.secret().clone(),
        verifier: verifier.into_secret(),
    })
}

/// Redeem `code`: the access token, after the ID token (if any) passed
/// its checks — signature under the provider's keys with an allowed
/// algorithm, issuer, audience = the client id, expiry, and `nonce`.
pub(crate) async fn redeem(
    settings: &Settings,
    http: &reqwest::Client,
    code: &str,
    verifier: &str,
    nonce: &str,
) -> Result<String, ConsoleError> {
    let client = client(settings, http).await?;
    let answer = client
        .exchange_code(AuthorizationCode::new(code.to_owned()))
        .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_owned()))
        .add_extra_param("resource", settings.url.clone())
        .request_async(http)
        .await
        .map_err(|e| fail("token endpoint")(chain(&e)))?;
    if let Some(id_token) = answer.id_token() {
        let checks = client.id_token_verifier().set_allowed_algs(ALGORITHMS);
        id_token
            .claims(&checks, &Nonce::new(nonce.to_owned()))
            .map_err(|e| fail("the ID token")(e.to_string()))?;
    }
    Ok(answer.access_token().secret().clone())
}

/// An error and its sources, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
