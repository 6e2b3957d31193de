//! Assembling a gateway from configuration and running it.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use prometheus::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tollgate_auth::{Authenticator, CredentialBroker, DevIssuer};
use tollgate_config::{Config, Loaded, read_or_create_file};
use tollgate_core::{CallObserver, Principal, PrincipalKind};
use tollgate_meter::{CallMetrics, TokenEstimator};
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::{Spans, TracingGuard};

mod routes;

use self::routes::{RouteContext, front};
use crate::admin::{self, Readiness};
use crate::catalog::Approvals;
use crate::catalog::reload::LockFile;
use crate::catalog::service::SyncSettings;
use crate::metrics::{CatalogCollector, LimitCollector, Metrics, StatusCollector, VirtualCollector};
use crate::phases::Front;
use crate::route::Shared;
use crate::runtime::Workers;
use crate::serve::{ServeOptions, serve};
use crate::services::{self, Background, CatalogWork};
use crate::session::Sealer;
use crate::stack::{self, Public};
use crate::tls::ListenerTls;
use crate::upstream::UpstreamError;
use tollgate_catalog::Mode;

/// Why a gateway could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// An upstream could not be set up.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// Metrics could not be registered.
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// The session sealer could not be set up.
    #[error("session key setup failed")]
    Sessions,
    /// A listener's TLS cannot be set up.
    #[error("{0}")]
    Tls(String),
    /// The shared limit store (`[limits.redis]`) cannot be set up.
    #[error("limit store: {0}")]
    LimitStore(String),
    /// Authentication or the credential broker could not be set up.
    #[error("authentication setup: {0}")]
    Auth(String),
    /// The policy directory is invalid.
    #[error("policies: {0}")]
    Policy(String),
    /// The audit trail could not be opened.
    #[error("audit: {0}")]
    Audit(String),
    /// The trace exporter could not be set up.
    #[error("tracing: {0}")]
    Tracing(String),
    /// The catalog lock is invalid.
    #[error("catalog lock: {0}")]
    Catalog(String),
}

/// A gateway built from configuration, ready to serve.
#[derive(Debug)]
pub struct Gateway {
    front: Arc<Front>,
    public: Public,
    admin: Router,
    ready: Readiness,
    authn: Option<Arc<Authenticator>>,
    options: ServeOptions,
    workers: usize,
    background: Background,
    /// TLS of the public and admin listeners, when configured.
    tls: (Option<ListenerTls>, Option<ListenerTls>),
}

impl Gateway {
    /// Build the routes, upstream clients and listeners' services from a
    /// loaded configuration, registering metrics on `registry`.
    ///
    /// # Errors
    ///
    /// [`GatewayError`] when an upstream, the metrics, the policies, the
    /// audit trail or the session keys cannot be set up.
    pub fn new(loaded: &Loaded, registry: Registry) -> Result<Gateway, GatewayError> {
        Gateway::with_observers(loaded, registry, Vec::new())
    }

    /// [`Gateway::new`], with `extra` observers reading every finished
    /// call's summary beside the audit trail and the metrics (an embedder's
    /// own sink, or a test's recorder).
    ///
    /// # Errors
    ///
    /// As [`Gateway::new`].
    pub fn with_observers(
        loaded: &Loaded,
        registry: Registry,
        extra: Vec<Arc<dyn CallObserver>>,
    ) -> Result<Gateway, GatewayError> {
        let config = &loaded.config;
        let workers = worker_count(config);
        let dev = dev_issuer(loaded)?;
        let authn = Arc::new(Authenticator::from_loaded(loaded, dev.as_ref()).map_err(auth_err)?);
        let issuers = authn.issuers();
        let authenticated = config.servers.iter().any(|s| config.auth_required(s))
            || config.virtual_servers.iter().any(|v| config.virtual_auth_required(v));
        let authn = authenticated.then_some(authn);
        let policy = policy_engine(loaded)?;
        let (audit, worker) = services::audit_sink(loaded, &registry)?;
        let tracing = TracingGuard::new(&config.tracing).map_err(|e| GatewayError::Tracing(e.to_string()))?;
        registry.register(Box::new(StatusCollector::new(
            audit.clone(),
            policy.clone(),
            authn.clone(),
            tracing.as_ref().map(TracingGuard::span_counts),
        )?))?;
        let lock_path = config.catalog.resolved_lock(&loaded.path);
        let lock = crate::catalog::reload::load(&lock_path).map_err(GatewayError::Catalog)?;
        let shared = Arc::new(Shared {
            authn: authn.clone(),
            broker: CredentialBroker::new(config, &loaded.auth_secrets).map_err(auth_err)?,
            sealer: Sealer::new(&session_keys(loaded), config.sessions.ttl).map_err(|_| GatewayError::Sessions)?,
            policy: policy.clone(),
            anonymous: Arc::new(anonymous()),
            approvals: Arc::new(Approvals::new(lock)),
            spans: tracing.as_ref().map_or_else(Spans::disabled, TracingGuard::spans),
            estimator: TokenEstimator::from_config(&config.audit),
            limiter: Arc::new(limiter(loaded)?),
        });
        let mut observers: Vec<Arc<dyn CallObserver>> = vec![
            Arc::new(CallMetrics::register(&registry)?),
            Arc::new(crate::spend::SpendObserver::new(shared.limiter.clone())),
        ];
        observers.extend(extra);
        let context = RouteContext {
            config,
            issuers: &issuers,
            shared: &shared,
            audit: &audit,
            observers: &observers,
            workers,
            base: loaded.path.parent().unwrap_or(std::path::Path::new(".")),
        };
        let front = Arc::new(front(config, &context)?);
        let lock_file = Arc::new(LockFile::new(lock_path));
        registry.register(Box::new(CatalogCollector::new(
            front.routes.values().cloned().collect(),
            shared.approvals.clone(),
            lock_file.clone(),
        )?))?;
        registry.register(Box::new(LimitCollector::new(shared.limiter.clone())?))?;
        registry.register(Box::new(crate::metrics::UpstreamCollector::new(
            front.routes.values().cloned().collect(),
        )?))?;
        registry.register(Box::new(VirtualCollector::new(
            front.virtuals.values().cloned().collect(),
        )?))?;
        let catalog = CatalogWork {
            // Routes with the gate off are not synced (the gateway does
            // not talk to their upstreams on its own) unless a virtual
            // server lists their definitions.
            routes: front
                .routes
                .values()
                .filter(|r| r.catalog.mode != Mode::Off || front.is_member(&r.name))
                .cloned()
                .collect(),
            peers: front.routes.values().cloned().collect(),
            approvals: shared.approvals.clone(),
            lock: lock_file.clone(),
            settings: SyncSettings {
                interval: config.catalog.sync_interval,
                timeout: config.catalog.sync_timeout,
            },
            watch_lock: config.catalog.watch,
        };
        let ready = Readiness::default();
        let admin_state = admin::AdminState {
            ready: ready.clone(),
            registry: registry.clone(),
            authn: authn.clone(),
            audit,
            routes: front.routes.values().cloned().collect(),
            virtuals: front.virtuals.values().cloned().collect(),
            limiter: shared.limiter.clone(),
            approvals: shared.approvals.clone(),
            lock: lock_file,
        };
        Ok(Gateway {
            public: stack::build(front.clone(), Metrics::register(&registry)?, &config.limits),
            front,
            admin: admin::router(admin_state, dev.as_ref()),
            ready,
            authn,
            options: ServeOptions {
                max_header_bytes: config.limits.max_header_bytes,
                header_read_timeout: config.limits.header_read_timeout,
                grace: config.shutdown.grace,
            },
            workers,
            tls: listener_tls(loaded)?,
            background: Background {
                policy,
                watch_policies: config.policy.watch,
                audit_worker: worker,
                tracing,
                catalog,
            },
        })
    }

    /// Learn the address the public listener is bound to (its own origins
    /// are admitted without configuration).
    pub(crate) fn bound(&self, addr: std::net::SocketAddr) {
        self.front.admission.bound(addr);
    }

    /// The public listener's service (for in-process tests).
    #[cfg(test)]
    pub(crate) fn public_service(&self) -> Public {
        self.public.clone()
    }

    /// Serve on bound listeners until `shutdown` completes, then drain.
    /// The public listener is served by the worker threads; the admin
    /// listener and the background services by the calling runtime.
    /// Readiness turns true once serving starts and false when draining
    /// starts.
    pub async fn run(self, public: TcpListener, admin: TcpListener, shutdown: impl Future<Output = ()>) {
        if let Ok(addr) = public.local_addr() {
            self.bound(addr);
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let (public_tls, admin_tls) = self.tls;
        let acceptors = (
            public_tls.as_ref().map(ListenerTls::acceptor),
            admin_tls.as_ref().map(ListenerTls::acceptor),
        );
        let _watch_tls: Vec<_> = [public_tls, admin_tls]
            .into_iter()
            .flatten()
            .map(|t| tokio::spawn(t.watch()))
            .map(AbortOnDrop)
            .collect();
        let admin_task = tokio::spawn(serve(
            admin,
            self.admin,
            self.options,
            acceptors.1,
            stopped(stop_rx.clone()),
        ));
        // Keys are fetched in the background: the gateway serves (and
        // reports not ready) while an issuer is unreachable.
        let _refresh = self.authn.as_ref().map(|a| a.spawn_refresh());
        let running = self.background.start();
        let (service, options) = (self.public, self.options);
        let workers = Workers::start(self.workers, public, &stop_rx, move |listener, stop| {
            serve(listener, service.clone(), options, acceptors.0.clone(), stopped(stop))
        });
        let workers = match workers {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "worker threads did not start");
                let _ = stop_tx.send(true);
                let _ = admin_task.await;
                running.stop().await;
                return;
            }
        };
        self.ready.set(true);
        shutdown.await;
        tracing::info!("shutdown requested: draining");
        self.ready.set(false);
        let _ = stop_tx.send(true);
        workers.join().await;
        let _ = admin_task.await;
        running.stop().await;
    }
}

/// Resolves once `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Worker threads: `[runtime] worker_threads`, else one per core.
fn worker_count(config: &Config) -> usize {
    config
        .runtime
        .worker_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1)
}

/// The TLS of the public and admin listeners (`[listen.tls]`,
/// `[listen.admin_tls]`), paths relative to the configuration file.
fn listener_tls(loaded: &Loaded) -> Result<(Option<ListenerTls>, Option<ListenerTls>), GatewayError> {
    let base = loaded.path.parent().unwrap_or(std::path::Path::new("."));
    let build = |t: &Option<tollgate_config::ListenerTls>, key: &str| {
        t.as_ref()
            .map(|t| ListenerTls::new(t, base))
            .transpose()
            .map_err(|e| GatewayError::Tls(format!("{key}: {e}")))
    };
    let listen = &loaded.config.listen;
    Ok((
        build(&listen.tls, "listen.tls")?,
        build(&listen.admin_tls, "listen.admin_tls")?,
    ))
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The rate limiter of `[limits]`: counters in Redis for every replica
/// with `[limits.redis]`, in this process otherwise.
fn limiter(loaded: &Loaded) -> Result<tollgate_limit::Limiter, GatewayError> {
    let limits = &loaded.config.limits;
    let Some(redis) = &limits.redis else {
        return Ok(tollgate_limit::Limiter::new(&limits.rules).with_budgets(&limits.budgets, &limits.time_zone));
    };
    let password = loaded
        .limit_store_password
        .as_ref()
        .map(|p| String::from_utf8_lossy(p.expose()).into_owned());
    let settings = tollgate_limit::StoreSettings {
        url: redis.url.clone(),
        password,
        timeout: redis.timeout,
        key_prefix: redis.key_prefix.clone(),
    };
    tollgate_limit::Limiter::with_store(&limits.rules, &settings, redis.replicas)
        .map(|l| l.with_budgets(&limits.budgets, &limits.time_zone))
        .map_err(|e| GatewayError::LimitStore(e.to_string()))
}

/// The legacy-session sealing keys: the current key first.
fn session_keys(loaded: &Loaded) -> Vec<&[u8]> {
    let keys: Vec<&[u8]> = loaded.session_keys.iter().map(|k| k.expose()).collect();
    if keys.is_empty() {
        tracing::warn!("no [sessions] key configured: legacy sessions will not survive a restart or cross replicas");
    }
    keys
}

/// The policy engine of `[policy]`, or `None` when no directory is set.
fn policy_engine(loaded: &Loaded) -> Result<Option<Arc<PolicyEngine>>, GatewayError> {
    let Some(settings) = tollgate_policy::Settings::from_config(&loaded.config, &loaded.path) else {
        tracing::warn!("no [policy] dir configured: every authenticated call is allowed");
        return Ok(None);
    };
    let engine = PolicyEngine::load(settings).map_err(|e| GatewayError::Policy(e.to_string()))?;
    let status = engine.status();
    tracing::info!(dir = %status.dir.display(), policies = status.policies, "policies loaded");
    Ok(Some(Arc::new(engine)))
}

/// The principal of calls on routes without authentication, so that
/// policies can still decide them (`Tollgate::Service::"anonymous"`).
fn anonymous() -> Principal {
    Principal {
        issuer: String::new(),
        subject: "anonymous".into(),
        client_id: None,
        token_id: None,
        audience: Vec::new(),
        groups: Vec::new(),
        team: None,
        cost_center: None,
        scopes: Vec::new(),
        expires_at: u64::MAX,
        kind: PrincipalKind::Service,
    }
}

fn auth_err(e: impl std::fmt::Display) -> GatewayError {
    GatewayError::Auth(e.to_string())
}

/// The development issuer, its key read or created on first use.
fn dev_issuer(loaded: &Loaded) -> Result<Option<DevIssuer>, GatewayError> {
    let Some(settings) = &loaded.dev_issuer else {
        return Ok(None);
    };
    let pem = read_or_create_file(&settings.key_file, DevIssuer::generate_pem).map_err(GatewayError::Auth)?;
    let dev = DevIssuer::from_pem(&settings.issuer, pem.expose()).map_err(auth_err)?;
    tracing::warn!(issuer = %settings.issuer, "development token issuer enabled: not for production");
    Ok(Some(dev))
}
