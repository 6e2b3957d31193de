//! The configuration as the library crates' settings: the one place that
//! maps `tollgate_config` sections to the plain settings each lower crate
//! takes, as linkerd2-proxy's app crate does. The lower crates see the
//! configuration's schema only where they share a type verbatim
//! (rate-limit rules, budgets, prices, issuers, upstream credentials,
//! console roles, policy modes).

use std::path::Path;

use tollgate_audit::{CaptureSettings, CredentialKind, Durability, OtlpSettings, RouteAuditSettings, SinkSettings};
use tollgate_auth::{AuthenticatorSettings, BrokerRoute, BrokerSettings, ProtectedResource, SetupError};
use tollgate_config::{
    Audit, Config, Credential, Limits, Loaded, Server, ServerAudit, ServerAuth, Tracing, VirtualServer, redact_url,
};
use tollgate_limit::Prices;
use tollgate_meter::TokenEstimator;
use tollgate_telemetry::TracingSettings;
use url::Url;

/// The token estimate of `[audit] bytes_per_token`.
pub(crate) fn estimator(audit: &Audit) -> TokenEstimator {
    TokenEstimator::new(audit.bytes_per_token)
}

/// The span export of `[tracing]`.
pub(crate) fn tracing(t: &Tracing) -> TracingSettings {
    TracingSettings {
        enabled: t.enabled,
        traces_url: t.traces_url(),
        service_name: t.service_name.clone(),
        sample_ratio: t.sample_ratio,
        timeout: t.timeout,
        queue_capacity: t.queue_capacity,
    }
}

/// The prices of `[[limits.prices]]`, in `[limits] currency`.
pub fn prices(limits: &Limits) -> Prices {
    Prices::new(limits.prices.clone(), limits.currency.clone())
}

/// What spend reports count and price calls against: `[limits]` budgets,
/// time zone and prices.
pub fn report(config: &Config) -> tollgate_report::Settings {
    let limits = &config.limits;
    tollgate_report::Settings {
        budgets: limits.budgets.clone(),
        time_zone: limits.time_zone.clone(),
        prices: prices(limits),
    }
}

/// The console of `[console]`, when it is enabled. With the development
/// issuer, its endpoints are the admin listener's.
pub(crate) fn console(loaded: &Loaded) -> Option<tollgate_console::Settings> {
    let c = &loaded.config;
    if !c.console.enabled {
        return None;
    }
    let issuer = c.console_issuer()?;
    let dev = c.dev_issuer_url().filter(|d| *d == issuer);
    let dev_endpoint = |path: &str| dev.as_ref().and_then(|d| Url::parse(&format!("{d}/{path}")).ok());
    let url = c.console_url();
    Some(tollgate_console::Settings {
        audiences: std::iter::once(url.clone())
            .chain(c.console.audiences.iter().cloned())
            .collect(),
        url,
        authorization_endpoint: c
            .console
            .authorization_endpoint
            .clone()
            .or_else(|| dev_endpoint("authorize")),
        token_endpoint: c.console.token_endpoint.clone().or_else(|| dev_endpoint("token")),
        issuer,
        client_id: c.console.client_id.clone(),
        client_secret: loaded.console_secret.as_ref().map(|s| s.expose().to_vec()),
        scopes: c.console.scopes.clone(),
        session_ttl: c.console.session_ttl.as_secs(),
        roles: c.console.roles.clone(),
        cookie_key: loaded.session_keys.first().map(|k| k.expose().to_vec()),
    })
}

/// The policy engine of `[policy]` and each route's mode, relative to the
/// configuration file; `None` when `[policy] dir` is unset (no
/// authorization by policy).
pub(crate) fn policy(loaded: &Loaded) -> Option<tollgate_policy::Settings> {
    let (config, p) = (&loaded.config, &loaded.config.policy);
    Some(tollgate_policy::Settings {
        dir: p.resolved_dir(&loaded.path)?,
        default_mode: p.mode,
        route_modes: p.route_modes(config),
        utc_offset_seconds: p.utc_offset.seconds(),
        principal_cache_entries: config.auth.token_cache_entries.max(1),
        decision_cache_entries: p.decision_cache_entries,
    })
}

/// The token validator of `[auth]`, with the introspection secrets
/// resolved at load.
pub(crate) fn authenticator(loaded: &Loaded) -> AuthenticatorSettings {
    let auth = &loaded.config.auth;
    AuthenticatorSettings {
        issuers: auth.issuers.clone(),
        introspection_secrets: loaded.auth_secrets.introspection.clone(),
        token_cache_entries: auth.token_cache_entries,
    }
}

/// The upstream credential of every `[[servers]]` entry, with the secrets
/// resolved at load.
pub(crate) fn broker(loaded: &Loaded) -> BrokerSettings {
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

/// A route as an OAuth protected resource when it `required` tokens: at
/// its canonical `url`, needing the scopes of its `auth` table,
/// vouched for by `issuers`.
///
/// # Errors
///
/// No canonical URL (configuration validation prevents it), or not an
/// http(s) URL.
pub(crate) fn resource(
    required: bool,
    url: Option<String>,
    auth: &ServerAuth,
    issuers: &[String],
) -> Result<Option<ProtectedResource>, SetupError> {
    if !required {
        return Ok(None);
    }
    let url = url.ok_or_else(|| SetupError("auth.public_base_url is required".into()))?;
    ProtectedResource::new(&url, issuers, &auth.scopes, &auth.scopes_supported).map(Some)
}

/// The audit trail of `[audit]`; a relative directory is resolved against
/// the directory of the configuration file at `config_path`.
pub(crate) fn sink(audit: &Audit, config_path: &Path) -> SinkSettings {
    let otlp = &audit.otlp;
    SinkSettings {
        directory: audit.directory_for(config_path),
        file_prefix: audit.file_prefix.clone(),
        durability: match audit.durability {
            tollgate_config::Durability::Batch => Durability::Batch,
            tollgate_config::Durability::Strict => Durability::Strict,
        },
        sync_interval: audit.sync_interval,
        sync_records: audit.sync_records.get(),
        queue_capacity: audit.queue_capacity.get(),
        rotate_bytes: audit.rotate_bytes.get(),
        rotate_interval: audit.rotate_interval,
        otlp: otlp.enabled.then(|| OtlpSettings {
            endpoint: otlp.endpoint.as_str().trim_end_matches('/').to_owned(),
            timeout: otlp.timeout,
            queue_capacity: otlp.queue_capacity.get(),
            batch_records: otlp.batch_records.get(),
            batch_interval: otlp.batch_interval,
        }),
        observer: None,
    }
}

/// The `user_oauth` servers, as the vault needs them.
pub(crate) fn user_oauth(loaded: &Loaded) -> Vec<tollgate_vault::UpstreamSpec> {
    let secrets = &loaded.auth_secrets.credentials;
    loaded
        .config
        .servers
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let u = s.credential.per_user()?;
            Some(tollgate_vault::UpstreamSpec {
                server: s.name.as_str().to_owned(),
                url: s.url.to_string(),
                authorization_server: u.authorization_server.clone(),
                client_id: u.client_id.clone(),
                client_secret: secrets.get(i).and_then(Option::as_ref).map(|s| s.expose().to_vec()),
                scopes: u.scopes.clone(),
                resource: u.resource.clone().unwrap_or_else(|| s.url.to_string()),
                allow_http: u.allow_insecure_http,
                assertion: matches!(s.credential, Credential::IdJag(_)),
            })
        })
        .collect()
}

/// What the audit records of a `[[servers]]` entry share: its upstream URL
/// redacted, its credential kind, its `audit` table.
pub(crate) fn route_audit(server: &Server, audit: &Audit) -> RouteAuditSettings {
    RouteAuditSettings {
        route: server.name.as_str().to_owned(),
        upstream: redact_url(&server.url),
        server_version: server.audit.server_version.clone(),
        approved_by: server.audit.approved_by.clone(),
        credential: match server.credential {
            Credential::None => CredentialKind::None,
            Credential::Static(_) => CredentialKind::Static,
            Credential::ClientCredentials(_) => CredentialKind::ClientCredentials,
            Credential::TokenExchange(_) => CredentialKind::TokenExchange,
            Credential::UserOauth(_) => CredentialKind::UserOauth,
            Credential::IdJag(_) => CredentialKind::IdJag,
        },
        capture: capture(&server.audit, audit),
        bytes_per_token: audit.bytes_per_token,
    }
}

/// What the records of the answers a virtual server gives itself (its
/// lists, `initialize`, `find_tools`) share: nothing is forwarded, so
/// there is no upstream or credential; `upstream` names the virtual
/// server's URL path, and its own `audit` table applies.
pub(crate) fn virtual_route_audit(v: &VirtualServer, audit: &Audit) -> RouteAuditSettings {
    let name = v.name.as_str();
    RouteAuditSettings {
        route: name.to_owned(),
        upstream: format!("virtual:/mcp/{name}"),
        server_version: v.audit.server_version.clone(),
        approved_by: v.audit.approved_by.clone(),
        credential: CredentialKind::None,
        capture: capture(&v.audit, audit),
        bytes_per_token: audit.bytes_per_token,
    }
}

/// The capture of a route's `audit` table, redacting `[audit]
/// redact_keys` and its own.
fn capture(route: &ServerAudit, audit: &Audit) -> CaptureSettings {
    CaptureSettings {
        arguments: route.capture_arguments,
        results: route.capture_results,
        max_bytes: route.capture_max_bytes.get(),
        redact_keys: audit.redact_keys.iter().chain(&route.redact_keys).cloned().collect(),
    }
}

/// The fleet store's connection of `[store] postgres`.
pub fn store(pg: &tollgate_config::PostgresSettings) -> tollgate_store::StoreSettings {
    let mut settings = tollgate_store::StoreSettings::new(pg.url.clone());
    settings.password = pg
        .password
        .as_ref()
        .map(|p| String::from_utf8_lossy(p.expose()).into_owned());
    settings.tls = tollgate_store::StoreTls {
        ca: pg.ca.clone(),
        client: pg.client.clone(),
    };
    settings.pool_size = usize::try_from(pg.pool_size).unwrap_or(usize::MAX);
    settings.statement_timeout = pg.statement_timeout;
    settings
}

#[cfg(test)]
mod tests;
