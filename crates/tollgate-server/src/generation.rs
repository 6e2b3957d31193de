//! Building one [`Generation`] from a loaded configuration, at start and on
//! every reload.
//!
//! What the process holds for its whole life (the audit writer, the policy
//! engine, the lock, the call metrics) comes from the [`Base`]. Everything
//! else is built from the configuration, but what carries state is taken
//! over from the generation being replaced when its settings did not
//! change: the authenticator (its signing keys and verified tokens), the
//! credential broker (its upstream tokens), each rate limit's counters and
//! each budget's spend, each upstream's connections and breaker, and each
//! route's catalog snapshot. A reload thus starts warm.

mod routes;

use std::sync::Arc;

use tollgate_auth::{Authenticator, CredentialBroker, DevIssuer};
use tollgate_config::{Loaded, Server, Timeouts};
use tollgate_core::{CallObserver, Principal, PrincipalKind};
use tollgate_meter::CallMetrics;
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::Spans;

use self::routes::{RouteContext, front};
use crate::catalog::Approvals;
use crate::error::{GatewayError, auth_err};
use crate::governance::service::SyncSettings;
use crate::live::Generation;
use crate::route::Shared;
use crate::settings;
use tollgate_catalog::Mode;
use tollgate_session::Sealer;

/// What every generation is built on: the parts bound at start.
pub(crate) struct Base {
    pub(crate) audit: tollgate_audit::AuditHandle,
    pub(crate) policy: Option<Arc<PolicyEngine>>,
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) spans: Spans,
    pub(crate) call_metrics: Arc<CallMetrics>,
    /// An embedder's own observers of every call.
    pub(crate) extra: Vec<Arc<dyn CallObserver>>,
    pub(crate) dev: Option<Arc<DevIssuer>>,
    /// The authorization server (`[authorization_server]`), kept across
    /// reloads with its clients, grants and keys.
    pub(crate) issuer: Option<Arc<tollgate_issuer::Issuer>>,
    /// The vault of users' upstream grants (`user_oauth` servers), kept
    /// across reloads.
    pub(crate) vault: Option<Arc<tollgate_vault::Vault>>,
    pub(crate) workers: usize,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

/// Build generation `number` of `loaded` on `base`, taking over the state
/// of `previous` where its settings did not change.
///
/// # Errors
///
/// [`GatewayError`] when an upstream, an issuer, a credential or the limit
/// store cannot be set up.
pub(crate) fn build(
    loaded: Loaded,
    base: &Base,
    previous: Option<&Generation>,
    number: u64,
) -> Result<Generation, GatewayError> {
    let config = &loaded.config;
    let authenticator = authenticator(&loaded, base, previous)?;
    let issuers = authenticator.issuers();
    let authenticated = config.servers.iter().any(|s| config.auth_required(s))
        || config.virtual_servers.iter().any(|v| config.virtual_auth_required(v));
    let shared = Arc::new(Shared {
        authn: authenticated.then(|| authenticator.clone()),
        broker: broker(&loaded, previous)?,
        sealer: sealer(&loaded, previous)?,
        policy: base.policy.clone(),
        anonymous: Arc::new(anonymous()),
        approvals: base.approvals.clone(),
        spans: base.spans.clone(),
        estimator: settings::estimator(&config.audit),
        limiter: Arc::new(limiter(&loaded, previous)?),
        vault: base.vault.clone(),
    });
    if let Some(vault) = &base.vault {
        vault.configure(settings::user_oauth(&loaded));
    }
    let mut observers: Vec<Arc<dyn CallObserver>> = vec![
        base.call_metrics.clone(),
        Arc::new(crate::spend::SpendObserver::new(shared.limiter.clone())),
    ];
    observers.extend(base.extra.iter().cloned());
    let context = RouteContext {
        config,
        issuers: &issuers,
        shared: &shared,
        audit: &base.audit,
        observers: &observers,
        workers: base.workers,
        base: loaded.path.parent().unwrap_or(std::path::Path::new(".")),
        previous,
        issuer: base.issuer.as_ref(),
    };
    let front = Arc::new(front(config, &context)?);
    // Routes with the gate off are not synced (the gateway does not talk
    // to their upstreams on its own) unless a virtual server lists their
    // definitions.
    let synced = front
        .routes
        .values()
        .filter(|r| r.catalog.mode != Mode::Off || front.is_member(&r.name))
        .cloned()
        .collect();
    let sync = SyncSettings {
        interval: config.catalog.sync_interval,
        timeout: config.catalog.sync_timeout,
    };
    Ok(Generation {
        number,
        front,
        authenticator,
        shared,
        synced,
        sync,
        loaded,
    })
}

/// The token validator: the previous one while its settings (the issuers,
/// their secrets, the cache size) are unchanged (its keys and verified
/// tokens stay warm), else a new one.
fn authenticator(
    loaded: &Loaded,
    base: &Base,
    previous: Option<&Generation>,
) -> Result<Arc<Authenticator>, GatewayError> {
    let settings = settings::authenticator(loaded);
    match previous.filter(|p| settings::authenticator(&p.loaded) == settings) {
        Some(p) => Ok(p.authenticator.clone()),
        None => {
            let local = base.issuer.as_ref().map(tollgate_issuer::Issuer::local_issuer);
            let authn = Authenticator::with_local(&settings, base.dev.as_deref(), local).map_err(auth_err)?;
            Ok(Arc::new(authn))
        }
    }
}

/// The upstream credentials: the previous broker (and its cached tokens)
/// while every server's credential, URL and secret are unchanged.
fn broker(loaded: &Loaded, previous: Option<&Generation>) -> Result<Arc<CredentialBroker>, GatewayError> {
    let settings = settings::broker(loaded);
    match previous.filter(|p| settings::broker(&p.loaded) == settings) {
        Some(p) => Ok(p.shared.broker.clone()),
        None => Ok(Arc::new(CredentialBroker::new(&settings).map_err(auth_err)?)),
    }
}

/// Whether a route of `server` can keep the connections and breaker built
/// for `old`: the same URL, HTTP, timeouts and resilience settings, and no
/// TLS files (an upstream with `tls` is rebuilt so that a replaced CA or
/// client certificate is read).
pub(super) fn same_upstream(old: (&Server, &Timeouts), new: (&Server, &Timeouts)) -> bool {
    let ((a, at), (b, bt)) = (old, new);
    a.url == b.url
        && a.http == b.http
        && a.timeouts(at) == b.timeouts(bt)
        && a.resilience == b.resilience
        && a.tls.is_none()
        && b.tls.is_none()
}

/// The rate limiter of `[limits]`: counters in Redis for every replica
/// with `[limits.redis]`, in this process otherwise; the counters and
/// spend of `previous` carry over.
fn limiter(loaded: &Loaded, previous: Option<&Generation>) -> Result<tollgate_limit::Limiter, GatewayError> {
    let limits = &loaded.config.limits;
    let old = previous.map(|p| &*p.shared.limiter);
    let limiter = match &limits.redis {
        None => tollgate_limit::Limiter::new(&limits.rules),
        Some(redis) => {
            let settings = tollgate_limit::StoreSettings {
                url: redis.url.clone(),
                password: loaded
                    .limit_store_password
                    .as_ref()
                    .map(|p| String::from_utf8_lossy(p.expose()).into_owned()),
                timeout: redis.timeout,
                key_prefix: redis.key_prefix.clone(),
                tls: redis.tls.as_ref().map(|t| store_tls(t, &loaded.path)).transpose()?,
            };
            tollgate_limit::Limiter::with_store_from(&limits.rules, &settings, redis.replicas, old)
                .map_err(|e| GatewayError::LimitStore(e.to_string()))?
        }
    };
    let limiter = limiter.with_budgets(&limits.budgets, &limits.time_zone);
    Ok(match old {
        Some(o) => limiter.inherit(o),
        None => limiter,
    })
}

/// The PEM files of `[limits.redis] tls`, relative to the configuration
/// file at `config`.
pub(crate) fn store_tls(
    t: &tollgate_config::StoreTls,
    config: &std::path::Path,
) -> Result<tollgate_limit::StoreTls, GatewayError> {
    let base = config.parent().unwrap_or(std::path::Path::new("."));
    let read = |key: &str, path: &Option<std::path::PathBuf>| {
        path.as_ref()
            .map(|p| {
                let p = base.join(p);
                std::fs::read(&p)
                    .map_err(|e| GatewayError::LimitStore(format!("limits.redis.tls.{key}: {}: {e}", p.display())))
            })
            .transpose()
    };
    let client = match (read("cert", &t.cert)?, read("key", &t.key)?) {
        (Some(cert), Some(key)) => Some((cert, key)),
        _ => None,
    };
    Ok(tollgate_limit::StoreTls {
        ca: read("ca", &t.ca)?,
        client,
    })
}

/// The legacy-session sealer: the previous one while `[sessions]` and its
/// keys are unchanged (without configured keys its random key must stay,
/// or every open session would end), else one with the keys of `loaded`,
/// the current key first.
fn sealer(loaded: &Loaded, previous: Option<&Generation>) -> Result<Arc<Sealer>, GatewayError> {
    let same = |p: &&Generation| {
        p.loaded.config.sessions == loaded.config.sessions && p.loaded.session_keys == loaded.session_keys
    };
    if let Some(p) = previous.filter(same) {
        return Ok(p.shared.sealer.clone());
    }
    let keys: Vec<&[u8]> = loaded.session_keys.iter().map(|k| k.expose()).collect();
    if keys.is_empty() {
        tracing::warn!("no [sessions] key configured: legacy sessions will not survive a restart or cross replicas");
    }
    let sealer = Sealer::new(&keys, loaded.config.sessions.ttl).map_err(|_| GatewayError::Sessions)?;
    Ok(Arc::new(sealer))
}

/// The principal of calls on routes without authentication, so that
/// policies can still decide them (`Tollgate::Service::"anonymous"`).
pub(crate) fn anonymous() -> Principal {
    Principal {
        expires_at: u64::MAX,
        ..Principal::bare("", "anonymous", PrincipalKind::Service)
    }
}
