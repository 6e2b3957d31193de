//! The authorization server of `[authorization_server]`, built once at
//! start (its clients, grants and keys outlive reloads) from the settings
//! resolved at load: its keys (the current key file created on first
//! use), where users sign in, the registration policy, how client
//! metadata documents are fetched, the trusted assertion issuers, and
//! where its state lives (Redis when `[limits.redis]` is configured).

use std::sync::Arc;

use tollgate_auth::DevIssuer;
use tollgate_config::{AuthorizationServer, Loaded, read_or_create_file};
use tollgate_issuer::{
    AssertionSettings, FileStore, IdentitySettings, Issuer, Keys, MemoryStore, OidcSettings, RedisSettings, RedisStore,
    RegistrationPolicy, Settings, Store,
};
use tollgate_vault::{Keyring, Vault, VaultSettings};

use crate::error::GatewayError;

/// The authorization server, when enabled.
pub(crate) fn issuer(loaded: &Loaded) -> Result<Option<Arc<Issuer>>, GatewayError> {
    let Some(resolved) = &loaded.authorization_server else {
        return Ok(None);
    };
    let config = &loaded.config.authorization_server;
    let pem = read_or_create_file(&resolved.key_file, DevIssuer::generate_pem).map_err(GatewayError::Auth)?;
    let previous: Vec<&[u8]> = resolved.previous_keys.iter().map(|k| k.expose()).collect();
    let keys = Keys::from_pems(pem.expose(), &previous)?;
    let identity = match (&config.identity_provider, &resolved.idp_secret) {
        (Some(idp), Some(secret)) => IdentitySettings::Oidc(OidcSettings {
            issuer: idp.issuer.clone(),
            client_id: idp.client_id.clone(),
            client_secret: secret.expose().to_vec(),
            scopes: idp.scopes.clone(),
            claims: idp.claims.clone(),
            allow_http: idp.allow_insecure_http,
        }),
        _ => IdentitySettings::Development(loaded.config.dev_issuer.users.clone()),
    };
    let settings = Settings {
        issuer: resolved.issuer.clone(),
        access_ttl: config.access_token_ttl,
        refresh_ttl: config.refresh_token_ttl,
        sign_in_ttl: config.sign_in_ttl,
        development: config.development,
        identity,
        registration: policy(config),
        cimd: tollgate_issuer::cimd::CimdSettings {
            development: config.development,
            allowed_hosts: config.registration.metadata_hosts.clone(),
            extra_roots: resolved.metadata_ca.iter().cloned().collect(),
            ..Default::default()
        },
        assertions: config
            .trusted_assertion_issuers
            .iter()
            .map(|t| AssertionSettings {
                issuer: t.issuer.clone(),
                jwks_uri: t.jwks_uri.clone(),
                claims: t.claims.clone(),
                allow_http: t.allow_insecure_http,
            })
            .collect(),
    };
    let issuer = Issuer::new(settings, keys, store(loaded)?)?;
    tracing::info!(issuer = %issuer.issuer(), "authorization server enabled");
    Ok(Some(Arc::new(issuer)))
}

/// The vault of users' upstream grants, when a server uses `user_oauth`
/// (configuration validation ensures the authorization server and vault
/// keys are there). Its grants live in Redis with `[limits.redis]`, else
/// in `[vault] file`.
pub(crate) fn vault(loaded: &Loaded, issuer: Option<&Arc<Issuer>>) -> Result<Option<Arc<Vault>>, GatewayError> {
    let (Some(issuer), Some(settings)) = (issuer, &loaded.vault) else {
        return Ok(None);
    };
    if crate::settings::user_oauth(loaded).is_empty() {
        return Ok(None);
    }
    let keys: Vec<(String, Vec<u8>)> = settings
        .keys
        .iter()
        .map(|(id, k)| (id.clone(), k.expose().to_vec()))
        .collect();
    let keyring = Keyring::new(&keys).map_err(|e| GatewayError::Auth(e.to_string()))?;
    let config = &loaded.config;
    let mut identity_issuers = vec![issuer.issuer().to_owned()];
    identity_issuers.extend(
        config
            .authorization_server
            .identity_provider
            .as_ref()
            .map(|i| i.issuer.clone()),
    );
    identity_issuers.extend(config.dev_issuer_url());
    let vault_settings = VaultSettings {
        public_base_url: issuer.issuer().to_owned(),
        identity_issuers,
    };
    let store: Arc<dyn Store> = match &config.limits.redis {
        Some(_) => store(loaded)?,
        None => Arc::new(FileStore::open(&settings.file).map_err(|e| GatewayError::Auth(e.to_string()))?),
    };
    let vault =
        Vault::new(vault_settings, keyring, store, issuer.clone()).map_err(|e| GatewayError::Auth(e.to_string()))?;
    tracing::info!(keys = ?vault.key_ids(), "upstream grant vault enabled");
    Ok(Some(Arc::new(vault)))
}

/// Where its state lives: the `[limits.redis]` store when one is
/// configured (every replica shares clients, sign-ins, grants and refresh
/// tokens), else this process.
fn store(loaded: &Loaded) -> Result<Arc<dyn Store>, GatewayError> {
    let Some(redis) = &loaded.config.limits.redis else {
        return Ok(Arc::new(MemoryStore::default()));
    };
    let tls = redis
        .tls
        .as_ref()
        .map(|t| crate::generation::store_tls(t, &loaded.path))
        .transpose()?;
    let settings = RedisSettings {
        url: redis.url.clone(),
        password: loaded
            .limit_store_password
            .as_ref()
            .map(|p| String::from_utf8_lossy(p.expose()).into_owned()),
        timeout: redis.timeout.max(std::time::Duration::from_secs(1)),
        key_prefix: redis.key_prefix.clone(),
        ca: tls.as_ref().and_then(|t| t.ca.clone()),
        client_cert: tls.and_then(|t| t.client),
    };
    let store = RedisStore::new(&settings).map_err(|e| GatewayError::LimitStore(e.to_string()))?;
    Ok(Arc::new(store))
}

fn policy(config: &AuthorizationServer) -> RegistrationPolicy {
    let r = &config.registration;
    RegistrationPolicy {
        dynamic: r.dynamic,
        metadata_documents: r.metadata_documents,
        loopback_redirects: r.loopback_redirects,
        redirect_schemes: r.redirect_schemes.clone(),
        web_origins: r.web_origins.clone(),
        max_per_minute: r.max_registrations_per_minute,
    }
}
